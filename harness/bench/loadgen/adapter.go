package main

// Server adapters: everything the load generator knows about one server's
// wire protocol. To plug in another server that speaks a documented
// subscribe/publish model (Centrifugo, Ably-style, MQTT over WebSocket, ...)
// add one Adapter here and one server adapter in harness/bench/src/servers.js
// (how to start it and how it is fed from the shared Redis publisher).

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gorilla/websocket"
)

// FrameKind classifies one inbound frame.
type FrameKind int

const (
	FrameOther  FrameKind = iota // control, heartbeat, hello, ...
	FrameAck                     // the subscription request was applied
	FrameSnap                    // snapshot: full quotes that set the held state
	FrameQuotes                  // live updates (one or more entries)
)

// Adapter is one server's client protocol.
type Adapter interface {
	// Path is appended to the base URL given with -url.
	Path() string
	// Open runs the protocol handshake after the WebSocket upgrade (may be a no-op).
	Open(c *websocket.Conn) error
	// Subscribe sends the subscription request for symbols.
	Subscribe(c *websocket.Conn, symbols []string) error
	// Classify tells what an inbound text frame is and answers protocol
	// pings that need an answer. Entries of snapshot and quote frames are
	// read by scanQuotes, which every adapter here shares.
	Classify(c *websocket.Conn, data []byte) (FrameKind, error)
}

func newAdapter(name string) (Adapter, error) {
	switch name {
	case "wsps", "naive":
		return wspsAdapter{}, nil
	case "wsps-distinct":
		return wspsAdapter{mode: "distinct"}, nil
	case "socketio":
		return socketioAdapter{}, nil
	case "pushpin":
		return pushpinAdapter{}, nil
	}
	return nil, fmt.Errorf("unknown adapter %q", name)
}

func subFrame(symbols []string, mode string) []byte {
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
	return c.WriteMessage(websocket.TextMessage, subFrame(symbols, a.mode))
}

// framePrefixes are the starts of the frames whose kind the start tells.
type framePrefixes []struct {
	prefix []byte
	kind   FrameKind
}

// kind is the kind of the first prefix d starts with, FrameOther if none.
func (ps framePrefixes) kind(d []byte) FrameKind {
	for _, p := range ps {
		if bytes.HasPrefix(d, p.prefix) {
			return p.kind
		}
	}
	return FrameOther
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

// Pushpin: the client speaks to the bench's GRIP backend through Pushpin
// (WebSocket-over-HTTP). The backend answers a sub with channel subscribe
// control messages, then an ack and a snapshot; published items arrive as
// the raw quote JSON.
type pushpinAdapter struct{}

func (pushpinAdapter) Path() string                 { return "/ws" }
func (pushpinAdapter) Open(c *websocket.Conn) error { return nil }
func (pushpinAdapter) Subscribe(c *websocket.Conn, symbols []string) error {
	return c.WriteMessage(websocket.TextMessage, subFrame(symbols, ""))
}

// A published item is the raw quote; ack and snapshot are wsps frames.
var pushpinFrames = framePrefixes{{[]byte(`{"seq":`), FrameQuotes}, {opSnap, FrameSnap}, {opAck, FrameAck}}

func (pushpinAdapter) Classify(c *websocket.Conn, d []byte) (FrameKind, error) {
	return pushpinFrames.kind(d), nil
}

// Entry is one quote (full or delta) found in a frame.
type Entry struct {
	Symbol  []byte
	Seq     int64
	Base    int64 // -1: none (applies on seq-1)
	TsMilli int64
}

var (
	kSymbol = []byte(`"symbol":"`)
	kSeq    = []byte(`"seq":`)
	kTs     = []byte(`"ts":`)
	kBase   = []byte(`"base":`)
)

// scanQuotes calls fn for every quote object in d: every {...} holding
// "symbol". Quote objects are flat (no nested objects), which holds for the
// fetcher's quotes, wsps deltas and everything the bench servers send.
func scanQuotes(d []byte, fn func(e *Entry)) int {
	n := 0
	var e Entry
	pos := 0
	for {
		i := bytes.Index(d[pos:], kSymbol)
		if i < 0 {
			return n
		}
		i += pos
		start := bytes.LastIndexByte(d[:i], '{')
		end := bytes.IndexByte(d[i:], '}')
		if start < 0 || end < 0 {
			return n
		}
		end += i
		obj := d[start:end]
		s := i + len(kSymbol)
		q := bytes.IndexByte(d[s:end], '"')
		if q < 0 {
			return n
		}
		e.Symbol = d[s : s+q]
		e.Seq = intField(obj, kSeq)
		e.TsMilli = intField(obj, kTs)
		e.Base = -1
		if bytes.Contains(obj, kBase) {
			e.Base = intField(obj, kBase)
		}
		fn(&e)
		n++
		pos = end + 1
	}
}

func intField(obj, key []byte) int64 {
	i := bytes.Index(obj, key)
	if i < 0 {
		return -1
	}
	i += len(key)
	j := i
	for j < len(obj) && (obj[j] == '-' || (obj[j] >= '0' && obj[j] <= '9')) {
		j++
	}
	if i == j {
		return -1
	}
	neg := obj[i] == '-'
	if neg {
		i++
	}
	var v int64
	for ; i < j; i++ {
		v = v*10 + int64(obj[i]-'0')
	}
	if neg {
		v = -v
	}
	return v
}
