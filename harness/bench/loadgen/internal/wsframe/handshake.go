package wsframe

// The opening handshake: the client's upgrade request and how it reads the
// answer, and the server's answer to a request.

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Key is the Sec-WebSocket-Key of one connection: derived from its number
// (servers only echo it hashed; nothing here needs it unpredictable).
func Key(conn int) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(conn))
	copy(b[8:], "loadgen!")
	return base64.StdEncoding.EncodeToString(b[:])
}

// Accept is the Sec-WebSocket-Accept a server must answer to key.
func Accept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// UpgradeRequest is the client's GET asking to upgrade path on host.
func UpgradeRequest(host, path, key string) []byte {
	return []byte("GET " + path + " HTTP/1.1\r\nHost: " + host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
		"\r\nSec-WebSocket-Version: 13\r\n\r\n")
}

var (
	headerEnd    = []byte("\r\n\r\n")
	acceptHeader = []byte("\r\nsec-websocket-accept:")
)

// UpgradeResponse reads the answer to an upgrade request from the start of
// b. n is the header's length (0: incomplete); the bytes after it are
// already WebSocket frames. A refusal reads "bad handshake (HTTP 503)", as
// the orchestrator classifies gorilla's.
func UpgradeResponse(b []byte, key string) (n int, err error) {
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
	if string(bytes.TrimSpace(v)) != Accept(key) {
		return 0, errors.New("websocket: bad handshake (Sec-WebSocket-Accept mismatch)")
	}
	return end + len(headerEnd), nil
}

var (
	errBadUpgrade = errors.New("websocket: not an upgrade request")
	keyHeader     = []byte("\r\nsec-websocket-key:")
)

// UpgradeAnswer reads an upgrade request from the start of b (the server's
// side). n is its length (0: incomplete), answer the 101 to write back.
func UpgradeAnswer(b []byte) (n int, answer []byte, err error) {
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
		Accept(string(bytes.TrimSpace(key))) + "\r\n\r\n")
	return end + len(headerEnd), answer, nil
}
