package main

// The WebSocket client side of -mode=epoll (RFC 6455), kept to what the load
// generator needs: the upgrade request and its answer, masked client frames,
// and a frame parser that works on whatever bytes a read returned.

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// maxFrame bounds one frame and one reassembled message: the servers under
// test send quote batches of a few KiB; more is a broken stream.
const maxFrame = 1 << 22

var errFrameTooBig = errors.New("websocket: frame too big")

// frame is one parsed frame; payload aliases the parsed bytes.
type frame struct {
	fin     bool
	op      byte
	payload []byte
}

// parseFrame reads one frame from the start of b. n is the bytes it used,
// 0 when b holds only part of a frame (read more and call again). Server
// frames are unmasked; a masked one is unmasked in place.
func parseFrame(b []byte) (f frame, n int, err error) {
	if len(b) < 2 {
		return f, 0, nil
	}
	f.fin = b[0]&0x80 != 0
	f.op = b[0] & 0x0F
	if b[0]&0x70 != 0 {
		return f, 0, errors.New("websocket: reserved bits set")
	}
	masked := b[1]&0x80 != 0
	length := uint64(b[1] & 0x7F)
	h := 2
	switch length {
	case 126:
		if len(b) < 4 {
			return f, 0, nil
		}
		length = uint64(binary.BigEndian.Uint16(b[2:4]))
		h = 4
	case 127:
		if len(b) < 10 {
			return f, 0, nil
		}
		length = binary.BigEndian.Uint64(b[2:10])
		h = 10
	}
	if f.op >= opClose && (length > 125 || !f.fin) {
		return f, 0, errors.New("websocket: bad control frame")
	}
	if length > maxFrame {
		return f, 0, errFrameTooBig
	}
	var key []byte
	if masked {
		if len(b) < h+4 {
			return f, 0, nil
		}
		key = b[h : h+4]
		h += 4
	}
	end := h + int(length)
	if len(b) < end {
		return f, 0, nil
	}
	f.payload = b[h:end]
	if masked {
		for i := range f.payload {
			f.payload[i] ^= key[i&3]
		}
	}
	return f, end, nil
}

// appendFrame appends one final client frame (masked with mask, as RFC 6455
// requires of clients) to dst.
func appendFrame(dst []byte, op byte, payload []byte, mask [4]byte) []byte {
	dst = appendHeader(dst, op, len(payload), maskBit)
	dst = append(dst, mask[:]...)
	start := len(dst)
	dst = append(dst, payload...)
	for i := range payload {
		dst[start+i] ^= mask[i&3]
	}
	return dst
}

// maskBit in a header's length byte says a masking key follows (client frames).
const maskBit = 0x80

// appendHeader appends a final frame header for a payload of n bytes: masked
// is maskBit for a client's frame (its key is appended next), 0 for a
// server's (loadgen floor).
func appendHeader(dst []byte, op byte, n int, masked byte) []byte {
	dst = append(dst, 0x80|op)
	switch {
	case n < 126:
		return append(dst, masked|byte(n))
	case n <= 0xFFFF:
		return append(dst, masked|126, byte(n>>8), byte(n))
	}
	dst = append(dst, masked|127)
	return binary.BigEndian.AppendUint64(dst, uint64(n))
}

// closePayload is a close frame's body: the code and an optional reason.
func closePayload(code int, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

// closeError names a close frame the way gorilla's CloseError does
// ("websocket: close 1001 ..."), so the orchestrator reads both modes alike.
func closeError(payload []byte) error {
	if len(payload) < 2 {
		return errors.New("websocket: close 1005 (no status)")
	}
	return fmt.Errorf("websocket: close %d %s", binary.BigEndian.Uint16(payload), payload[2:])
}

// wsKey is the Sec-WebSocket-Key of one connection: derived from its number
// (servers only echo it hashed; nothing here needs it unpredictable).
func wsKey(conn int) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(conn))
	copy(b[8:], "loadgen!")
	return base64.StdEncoding.EncodeToString(b[:])
}

// wsAccept is the Sec-WebSocket-Accept a server must answer to key.
func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

func upgradeRequest(host, path, key string) []byte {
	return []byte("GET " + path + " HTTP/1.1\r\nHost: " + host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n")
}

var (
	headerEnd    = []byte("\r\n\r\n")
	acceptHeader = []byte("\r\nsec-websocket-accept:")
)

// upgradeResponse reads the answer to an upgrade request from the start of
// b. n is the header's length (0: incomplete); the bytes after it are
// already WebSocket frames. A refusal reads "bad handshake (HTTP 503)", as
// the orchestrator classifies gorilla's.
func upgradeResponse(b []byte, key string) (n int, err error) {
	end := bytes.Index(b, headerEnd)
	if end < 0 {
		if len(b) > 8192 {
			return 0, errors.New("websocket: handshake response too long")
		}
		return 0, nil
	}
	head := b[:end+2]
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	fields := bytes.Fields(line)
	if len(fields) < 2 || !bytes.HasPrefix(fields[0], []byte("HTTP/1.")) {
		return 0, fmt.Errorf("websocket: bad handshake (status line %q)", line)
	}
	status, _ := strconv.Atoi(string(fields[1]))
	if status != 101 {
		return 0, fmt.Errorf("websocket: bad handshake (HTTP %d)", status)
	}
	i := bytes.Index(bytes.ToLower(head), acceptHeader)
	if i < 0 {
		return 0, errors.New("websocket: bad handshake (no Sec-WebSocket-Accept)")
	}
	v := head[i+len(acceptHeader):]
	v, _, _ = bytes.Cut(v, []byte("\r\n"))
	if string(bytes.TrimSpace(v)) != wsAccept(key) {
		return 0, errors.New("websocket: bad handshake (Sec-WebSocket-Accept mismatch)")
	}
	return end + len(headerEnd), nil
}
