package floor

// The wire pieces of the floor (floor.go) that are pure functions: its
// frames and the quote stream's channel names. Kept apart from the event
// loop so they are tested on their own.

import (
	"bytes"

	"wsps/bench/loadgen/internal/wsframe"
)

var (
	quotesHead = []byte(`{"op":"q","quotes":[`)
	snapHead   = []byte(`{"op":"snap","quotes":[`)
	listTail   = []byte(`]}`)
)

// quoteFrame is the text frame of one quote as the wsps protocol's `q`
// (one entry: the publisher's JSON as is), built into dst[:0].
func quoteFrame(dst, quote []byte) []byte {
	dst = wsframe.AppendHeader(dst[:0], wsframe.OpText, len(quotesHead)+len(quote)+len(listTail), 0)
	dst = append(dst, quotesHead...)
	dst = append(dst, quote...)
	return append(dst, listTail...)
}

// snapFrame is the `snap` text frame holding quotes (JSON objects).
func snapFrame(quotes [][]byte) []byte {
	p := append([]byte(nil), snapHead...)
	p = append(p, bytes.Join(quotes, []byte{','})...)
	return wsframe.AppendServer(nil, wsframe.OpText, append(p, listTail...))
}

// symbolOfChannel is SYM of "<prefix>:{SYM}:q", nil when the channel is not one.
func symbolOfChannel(prefix string, ch []byte) []byte {
	head := prefix + ":{"
	if !bytes.HasPrefix(ch, []byte(head)) || !bytes.HasSuffix(ch, []byte("}:q")) || len(ch) < len(head)+3 {
		return nil
	}
	return ch[len(head) : len(ch)-3]
}
