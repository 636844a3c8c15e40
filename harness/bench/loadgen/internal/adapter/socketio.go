package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gorilla/websocket"
)

// Socket.IO 4 (Engine.IO v4) over a plain WebSocket: "0{...}" open,
// "40" connect, "2"/"3" ping/pong, "42[event,data]" events.
type socketioAdapter struct{}

func (socketioAdapter) Path() string { return "/socket.io/?EIO=4&transport=websocket" }
func (socketioAdapter) Open(c *websocket.Conn) error {
	_, d, err := c.ReadMessage()
	if err != nil {
		return err
	}
	if len(d) == 0 || d[0] != '0' {
		return fmt.Errorf("engine.io: expected open packet, got %q", d)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("40")); err != nil {
		return err
	}
	for {
		_, d, err = c.ReadMessage()
		if err != nil {
			return err
		}
		if bytes.HasPrefix(d, []byte("40")) {
			return nil
		}
		if bytes.HasPrefix(d, []byte("44")) {
			return fmt.Errorf("socket.io connect refused: %s", d)
		}
	}
}
func (socketioAdapter) Subscribe(c *websocket.Conn, symbols []string) error {
	b, _ := json.Marshal([]any{"sub", symbols})
	return c.WriteMessage(websocket.TextMessage, append([]byte("42"), b...))
}

var socketioFrames = framePrefixes{{[]byte(`42["q",`), FrameQuotes}, {[]byte(`42["snap",`), FrameSnap}, {[]byte(`42["ack"`), FrameAck}}

func (socketioAdapter) Classify(c *websocket.Conn, d []byte) (FrameKind, error) {
	if len(d) == 1 && d[0] == '2' { // an engine.io ping, answered with a pong
		return FrameOther, c.WriteMessage(websocket.TextMessage, []byte("3"))
	}
	return socketioFrames.kind(d), nil
}
