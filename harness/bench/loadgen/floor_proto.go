package main

// The wire pieces of `loadgen floor` (floor.go) that are pure functions:
// server frames, the upgrade answer, Redis replies and channel names. Kept
// apart from the event loop so they are tested on their own.

import (
	"bytes"
	"errors"
	"strconv"
)

// appendServerFrame appends one final, unmasked server frame to dst.
func appendServerFrame(dst []byte, op byte, payload []byte) []byte {
	return append(appendHeader(dst, op, len(payload), 0), payload...)
}

var (
	quotesHead = []byte(`{"op":"q","quotes":[`)
	snapHead   = []byte(`{"op":"snap","quotes":[`)
	listTail   = []byte(`]}`)
)

// quoteFrame is the text frame of one quote as the wsps protocol's `q`
// (one entry: the publisher's JSON as is), built into dst[:0].
func quoteFrame(dst, quote []byte) []byte {
	dst = appendHeader(dst[:0], opText, len(quotesHead)+len(quote)+len(listTail), 0)
	dst = append(dst, quotesHead...)
	dst = append(dst, quote...)
	return append(dst, listTail...)
}

// snapFrame is the `snap` text frame holding quotes (JSON objects).
func snapFrame(quotes [][]byte) []byte {
	p := append([]byte(nil), snapHead...)
	p = append(p, bytes.Join(quotes, []byte{','})...)
	return appendServerFrame(nil, opText, append(p, listTail...))
}

var (
	errBadUpgrade = errors.New("floor: not a WebSocket upgrade request")
	keyHeader     = []byte("\r\nsec-websocket-key:")
)

// upgradeAnswer reads an upgrade request from the start of b. n is its
// length (0: incomplete), answer the 101 to write back.
func upgradeAnswer(b []byte) (n int, answer []byte, err error) {
	end := bytes.Index(b, headerEnd)
	if end < 0 {
		if len(b) > 8192 {
			return 0, nil, errBadUpgrade
		}
		return 0, nil, nil
	}
	head := b[:end+2]
	i := bytes.Index(bytes.ToLower(head), keyHeader)
	if i < 0 {
		return 0, nil, errBadUpgrade
	}
	key, _, _ := bytes.Cut(head[i+len(keyHeader):], []byte("\r\n"))
	answer = []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		wsAccept(string(bytes.TrimSpace(key))) + "\r\n\r\n")
	return end + len(headerEnd), answer, nil
}

var errResp = errors.New("floor: malformed Redis reply")

// parseResp reads one Redis reply from the start of b: an array of bulk
// strings, integers or simple strings (pub/sub pushes and their
// confirmations), or one such value alone (a GET's answer). n is its length
// (0: incomplete); a nil bulk string is a nil element.
func parseResp(b []byte) (vals [][]byte, n int, err error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	if b[0] != '*' {
		v, n, err := respValue(b)
		if n == 0 || err != nil {
			return nil, n, err
		}
		return [][]byte{v}, n, nil
	}
	count, pos, ok := respLine(b, 0)
	if !ok {
		return nil, 0, nil
	}
	c, err := strconv.Atoi(string(count))
	if err != nil || c < 0 {
		return nil, 0, errResp
	}
	vals = make([][]byte, 0, c)
	for range c {
		v, m, err := respValue(b[pos:])
		if err != nil || m == 0 {
			return nil, 0, err
		}
		vals = append(vals, v)
		pos += m
	}
	return vals, pos, nil
}

// respValue reads one bulk string ($), integer (:) or simple string (+)
// from the start of b; an error reply (-) is an error.
func respValue(b []byte) (v []byte, n int, err error) {
	line, pos, ok := respLine(b, 0)
	if !ok {
		return nil, 0, nil
	}
	switch b[0] {
	case ':', '+':
		return line, pos, nil
	case '-':
		return nil, 0, errors.New("floor: Redis: " + string(line))
	case '$':
		size, err := strconv.Atoi(string(line))
		if err != nil {
			return nil, 0, errResp
		}
		if size < 0 {
			return nil, pos, nil
		}
		if len(b) < pos+size+2 {
			return nil, 0, nil
		}
		return b[pos : pos+size], pos + size + 2, nil
	}
	return nil, 0, errResp
}

// respLine is the rest of the line starting at b[at] after its type byte,
// and where the next line starts.
func respLine(b []byte, at int) (line []byte, next int, ok bool) {
	i := bytes.Index(b[at:], []byte("\r\n"))
	if i < 1 {
		return nil, 0, false
	}
	return b[at+1 : at+i], at + i + 2, true
}

// respCommand is one Redis command as RESP.
func respCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// symbolOfChannel is SYM of "<prefix>:{SYM}:q", nil when the channel is not one.
func symbolOfChannel(prefix string, ch []byte) []byte {
	head := prefix + ":{"
	if !bytes.HasPrefix(ch, []byte(head)) || !bytes.HasSuffix(ch, []byte("}:q")) || len(ch) < len(head)+3 {
		return nil
	}
	return ch[len(head) : len(ch)-3]
}
