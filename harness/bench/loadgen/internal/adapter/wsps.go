package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gorilla/websocket"
)

// SubFrame is the wsps subscription request for symbols; mode is the
// delivery mode ("" for the server's default).
func SubFrame(symbols []string, mode string) []byte {
	frame := map[string]any{"op": "sub", "symbols": symbols, "id": 1}
	if mode != "" {
		frame["mode"] = mode
	}
	b, _ := json.Marshal(frame)
	return b
}

// wsps protocol v1 (docs/protocol.md); the naive baseline speaks the same
// frames. mode: the sub's delivery mode ("" for the default, merge).
type wspsAdapter struct{ mode string }

func (wspsAdapter) Path() string                 { return "/ws" }
func (wspsAdapter) Open(c *websocket.Conn) error { return nil }
func (a wspsAdapter) Subscribe(c *websocket.Conn, symbols []string) error {
	return c.WriteMessage(websocket.TextMessage, SubFrame(symbols, a.mode))
}

var (
	opSnap     = []byte(`{"op":"snap"`)
	opAck      = []byte(`{"op":"ack"`)
	opError    = []byte(`{"op":"error"`)
	wspsFrames = framePrefixes{{[]byte(`{"op":"q"`), FrameQuotes}, {opSnap, FrameSnap}, {opAck, FrameAck}}
)

func (wspsAdapter) Classify(c *websocket.Conn, d []byte) (FrameKind, error) {
	if bytes.HasPrefix(d, opError) {
		return FrameOther, fmt.Errorf("server error: %s", d)
	}
	return wspsFrames.kind(d), nil
}
