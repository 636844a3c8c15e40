// Package wsframe is the WebSocket wire (RFC 6455) kept to what the load
// generator's epoll client and the floor server need: the upgrade request,
// its answer and how each side reads the other's, client (masked) and server
// frames, and a frame parser that works on whatever bytes a read returned.
package wsframe

import (
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// MaxFrame bounds one frame and one reassembled message: the servers under
// test send quote batches of a few KiB; more is a broken stream.
const MaxFrame = 1 << 22

var ErrFrameTooBig = errors.New("websocket: frame too big")

// Frame is one parsed frame; Payload aliases the parsed bytes.
type Frame struct {
	Fin     bool
	Op      byte
	Payload []byte
}

// Parse reads one frame from the start of b. n is the bytes it used,
// 0 when b holds only part of a frame (read more and call again). Server
// frames are unmasked; a masked one is unmasked in place.
func Parse(b []byte) (f Frame, n int, err error) {
	if len(b) < 2 {
		return f, 0, nil
	}
	f.Fin = b[0]&0x80 != 0
	f.Op = b[0] & 0x0F
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
	if f.Op >= OpClose && (length > 125 || !f.Fin) {
		return f, 0, errors.New("websocket: bad control frame")
	}
	if length > MaxFrame {
		return f, 0, ErrFrameTooBig
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
	f.Payload = b[h:end]
	if masked {
		for i := range f.Payload {
			f.Payload[i] ^= key[i&3]
		}
	}
	return f, end, nil
}

// AppendServer appends one final, unmasked server frame to dst.
func AppendServer(dst []byte, op byte, payload []byte) []byte {
	return append(AppendHeader(dst, op, len(payload), 0), payload...)
}

// AppendClient appends one final client frame (masked with mask, as RFC 6455
// requires of clients) to dst.
func AppendClient(dst []byte, op byte, payload []byte, mask [4]byte) []byte {
	dst = AppendHeader(dst, op, len(payload), maskBit)
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

// AppendHeader appends a final frame header for a payload of n bytes: masked
// is maskBit for a client's frame (its key is appended next), 0 for a
// server's (AppendServer).
func AppendHeader(dst []byte, op byte, n int, masked byte) []byte {
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

// ClosePayload is a close frame's body: the code and an optional reason.
func ClosePayload(code int, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

// CloseError names a close frame the way gorilla's CloseError does
// ("websocket: close 1001 ..."), so the orchestrator reads both modes alike.
func CloseError(payload []byte) error {
	if len(payload) < 2 {
		return errors.New("websocket: close 1005 (no status)")
	}
	return fmt.Errorf("websocket: close %d %s", binary.BigEndian.Uint16(payload), payload[2:])
}
