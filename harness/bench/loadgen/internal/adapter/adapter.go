// Package adapter holds the server adapters: everything the load generator
// knows about one server's wire protocol. To plug in another server that
// speaks a documented subscribe/publish model (Ably-style, MQTT over
// WebSocket, ...) add one Adapter here and one server adapter in
// harness/bench/src/servers.js (how to start it and how it is fed from the
// shared Redis publisher).
package adapter

import (
	"bytes"
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
	FrameBook                    // an order book snapshot (`book`: the whole top of the book)
	FrameLevels                  // an order book delta (`levels`)
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
	// read by ScanQuotes, which every adapter here shares.
	Classify(c *websocket.Conn, data []byte) (FrameKind, error)
}

// New is the adapter of -adapter=name.
func New(name string) (Adapter, error) {
	switch name {
	case "wsps", "naive":
		return wspsAdapter{}, nil
	case "wsps-distinct":
		return wspsAdapter{mode: "distinct"}, nil
	case "wsps-books", "naive-books":
		return booksAdapter{}, nil
	case "socketio":
		return socketioAdapter{}, nil
	case "pushpin":
		return pushpinAdapter{}, nil
	case "centrifugo":
		return centrifugoAdapter{}, nil
	}
	return nil, fmt.Errorf("unknown adapter %q", name)
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
