package adapter

import "bytes"

// Entry is one quote (full or delta) found in a frame.
type Entry struct {
	Symbol  []byte
	Seq     int64
	Base    int64 // -1: none (applies on seq-1)
	TsMilli int64
}

// ScanQuotes calls fn for every quote object in d: every flat {...} (no
// object or array among its values) holding "symbol". Quote objects are
// flat, which holds for the fetcher's quotes, wsps deltas and everything
// the bench servers send; what wraps them (a wsps frame's "quotes" array,
// a Centrifugo push, a Socket.IO event) is looked into, not reported.
//
// One pass over each object, reading only seq, ts, base and symbol: the
// load generator runs it for every entry it receives, on the load core it
// shares with Redis and the publisher. The scanner before this one searched
// each object once per field: about an eighth of that core at the
// fan-out's bound (perf, 2026-11-27), and 1.8x this one's time in
// BenchmarkScanQuotes.
func ScanQuotes(d []byte, fn func(e *Entry)) int {
	n := 0
	var e Entry
	for pos := 0; ; {
		i := bytes.IndexByte(d[pos:], '{')
		if i < 0 {
			return n
		}
		pos += i + 1
		end, ok := scanObject(d, pos, &e)
		if ok && e.Symbol != nil {
			fn(&e)
			n++
		}
		if end > pos {
			pos = end
		}
	}
}

// scanObject reads the members of the object whose '{' is just before
// d[p] into e. ok: it is flat and closed, and end is just past its '}'.
// Otherwise end is where reading stopped: the '{' or '[' of a nested value (the scan
// resumes there and reads what it holds), or the end of d.
func scanObject(d []byte, p int, e *Entry) (end int, ok bool) {
	*e = Entry{Seq: -1, Base: -1, TsMilli: -1}
	p = skipSpace(d, p)
	if p < len(d) && d[p] == '}' {
		return p + 1, true
	}
	for {
		if p >= len(d) || d[p] != '"' {
			return p, false
		}
		k := closeQuote(d, p+1)
		if k < 0 {
			return len(d), false
		}
		key := d[p+1 : k]
		p = skipSpace(d, k+1)
		if p >= len(d) || d[p] != ':' {
			return p, false
		}
		p = skipSpace(d, p+1)
		if p >= len(d) {
			return p, false
		}
		switch d[p] {
		case '"':
			q := closeQuote(d, p+1)
			if q < 0 {
				return len(d), false
			}
			if string(key) == "symbol" {
				e.Symbol = d[p+1 : q]
			}
			p = q + 1
		case '{', '[':
			return p, false
		default: // a number, true, false or null
			v := p
			for p < len(d) && !valueEnd[d[p]] {
				p++
			}
			switch string(key) {
			case "seq":
				e.Seq = parseInt(d[v:p])
			case "ts":
				e.TsMilli = parseInt(d[v:p])
			case "base":
				e.Base = parseInt(d[v:p])
			}
		}
		p = skipSpace(d, p)
		if p >= len(d) {
			return p, false
		}
		switch d[p] {
		case ',':
			p = skipSpace(d, p+1)
		case '}':
			return p + 1, true
		default:
			return p, false
		}
	}
}

// valueEnd: the bytes that end a number or literal.
var valueEnd = [256]bool{',': true, '}': true, ']': true, ' ': true, '\n': true, '\r': true, '\t': true}

// closeQuote is the index of the first '"' in d from p (-1: none). Keys and
// the strings of quotes are short: a loop beats a call to bytes.IndexByte.
func closeQuote(d []byte, p int) int {
	for ; p < len(d); p++ {
		if d[p] == '"' {
			return p
		}
	}
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(d []byte, p int) int {
	for p < len(d) && isSpace(d[p]) {
		p++
	}
	return p
}

// parseInt is an integer's value, -1 when b is not one.
func parseInt(b []byte) int64 {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return -1
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v
}
