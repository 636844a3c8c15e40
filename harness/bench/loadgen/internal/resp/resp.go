// Package resp reads and writes the Redis wire protocol (RESP2) as far as the
// floor needs it: commands out; pub/sub pushes, their confirmations and a
// GET's answer in. It works on whatever bytes a read returned.
package resp

import (
	"bytes"
	"errors"
	"strconv"
)

var errMalformed = errors.New("malformed Redis reply")

// Parse reads one Redis reply from the start of b: an array of bulk
// strings, integers or simple strings (pub/sub pushes and their
// confirmations), or one such value alone (a GET's answer). n is its length
// (0: incomplete); a nil bulk string is a nil element. An error reply is an
// error saying "Redis: <its text>".
func Parse(b []byte) (vals [][]byte, n int, err error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	if b[0] != '*' {
		v, n, err := value(b)
		if n == 0 || err != nil {
			return nil, n, err
		}
		return [][]byte{v}, n, nil
	}
	count, pos, ok := readLine(b, 0)
	if !ok {
		return nil, 0, nil
	}
	c, err := strconv.Atoi(string(count))
	if err != nil || c < 0 {
		return nil, 0, errMalformed
	}
	vals = make([][]byte, 0, c)
	for range c {
		v, m, err := value(b[pos:])
		if err != nil || m == 0 {
			return nil, 0, err
		}
		vals = append(vals, v)
		pos += m
	}
	return vals, pos, nil
}

// value reads one bulk string ($), integer (:) or simple string (+)
// from the start of b; an error reply (-) is an error.
func value(b []byte) (v []byte, n int, err error) {
	line, pos, ok := readLine(b, 0)
	if !ok {
		return nil, 0, nil
	}
	switch b[0] {
	case ':', '+':
		return line, pos, nil
	case '-':
		return nil, 0, errors.New("Redis: " + string(line))
	case '$':
		size, err := strconv.Atoi(string(line))
		if err != nil {
			return nil, 0, errMalformed
		}
		if size < 0 {
			return nil, pos, nil
		}
		if len(b) < pos+size+2 {
			return nil, 0, nil
		}
		return b[pos : pos+size], pos + size + 2, nil
	}
	return nil, 0, errMalformed
}

// readLine is the rest of the line starting at b[at] after its type byte,
// and where the next line starts.
func readLine(b []byte, at int) (line []byte, next int, ok bool) {
	i := bytes.Index(b[at:], []byte("\r\n"))
	if i < 1 {
		return nil, 0, false
	}
	return b[at+1 : at+i], at + i + 2, true
}

// Command is one Redis command as RESP.
func Command(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}
