package adapter

import "github.com/gorilla/websocket"

// Pushpin: the client speaks to the bench's GRIP backend through Pushpin
// (WebSocket-over-HTTP). The backend answers a sub with channel subscribe
// control messages, then an ack and a snapshot; published items arrive as
// the raw quote JSON.
type pushpinAdapter struct{}

func (pushpinAdapter) Path() string                 { return "/ws" }
func (pushpinAdapter) Open(c *websocket.Conn) error { return nil }
func (pushpinAdapter) Subscribe(c *websocket.Conn, symbols []string) error {
	return c.WriteMessage(websocket.TextMessage, SubFrame(symbols, ""))
}

// A published item is the raw quote; ack and snapshot are wsps frames.
var pushpinFrames = framePrefixes{{[]byte(`{"seq":`), FrameQuotes}, {opSnap, FrameSnap}, {opAck, FrameAck}}

func (pushpinAdapter) Classify(c *websocket.Conn, d []byte) (FrameKind, error) {
	return pushpinFrames.kind(d), nil
}
