package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gorilla/websocket"
)

// BookDepth is the depth the books adapters subscribe at (docs/protocol.md,
// Order books): the bench's book section measures top-25 books.
const BookDepth = 25

// BookSubFrame is the wsps order book subscription for symbols at depth.
func BookSubFrame(symbols []string, depth int) []byte {
	b, _ := json.Marshal(map[string]any{"op": "sub", "symbols": symbols, "book": depth, "id": 1})
	return b
}

// booksAdapter subscribes to the order books of its symbols (wsps-books,
// and naive-books: the bench's naive book server speaks the same frames).
// A `book` frame is a snapshot, a `levels` frame a delta; the naive server
// sends every change as a `book` frame.
type booksAdapter struct{}

func (booksAdapter) Path() string                 { return "/ws" }
func (booksAdapter) Open(c *websocket.Conn) error { return nil }
func (booksAdapter) Subscribe(c *websocket.Conn, symbols []string) error {
	return c.WriteMessage(websocket.TextMessage, BookSubFrame(symbols, BookDepth))
}

var bookFrames = framePrefixes{{[]byte(`{"op":"levels"`), FrameLevels}, {[]byte(`{"op":"book"`), FrameBook}, {opAck, FrameAck}}

func (booksAdapter) Classify(c *websocket.Conn, d []byte) (FrameKind, error) {
	if bytes.HasPrefix(d, opError) {
		return FrameOther, fmt.Errorf("server error: %s", d)
	}
	return bookFrames.kind(d), nil
}

// BookHead is what the load generator reads of a `book` or `levels` frame:
// its top-level scalars (Prev -1 when absent, as on a `book` frame).
type BookHead struct {
	Symbol  []byte
	Seq     int64
	Prev    int64
	TsMilli int64
}

// ScanBookHead reads the top-level symbol, seq, prev and ts of a book
// frame (one flat object whose only nested values are the level arrays,
// skipped over without reading them). ok: the object was read to its end.
func ScanBookHead(d []byte) (h BookHead, ok bool) {
	h = BookHead{Seq: -1, Prev: -1, TsMilli: -1}
	p := skipSpace(d, 0)
	if p >= len(d) || d[p] != '{' {
		return h, false
	}
	p = skipSpace(d, p+1)
	for p < len(d) {
		if d[p] == '}' {
			return h, true
		}
		if d[p] != '"' {
			return h, false
		}
		k := closeQuote(d, p+1)
		if k < 0 {
			return h, false
		}
		key := d[p+1 : k]
		p = skipSpace(d, k+1)
		if p >= len(d) || d[p] != ':' {
			return h, false
		}
		p = skipSpace(d, p+1)
		if p >= len(d) {
			return h, false
		}
		switch d[p] {
		case '"':
			q := closeQuote(d, p+1)
			if q < 0 {
				return h, false
			}
			if string(key) == "symbol" {
				h.Symbol = d[p+1 : q]
			}
			p = q + 1
		case '[', '{':
			// Levels: arrays of two strings of digits; no bracket inside a string.
			depth := 0
			for ; p < len(d); p++ {
				if d[p] == '[' || d[p] == '{' {
					depth++
				} else if d[p] == ']' || d[p] == '}' {
					depth--
					if depth == 0 {
						p++
						break
					}
				}
			}
			if depth != 0 {
				return h, false
			}
		default:
			v := p
			for p < len(d) && !valueEnd[d[p]] {
				p++
			}
			switch string(key) {
			case "seq":
				h.Seq = parseInt(d[v:p])
			case "prev":
				h.Prev = parseInt(d[v:p])
			case "ts":
				h.TsMilli = parseInt(d[v:p])
			}
		}
		p = skipSpace(d, p)
		if p < len(d) && d[p] == ',' {
			p = skipSpace(d, p+1)
		}
	}
	return h, false
}
