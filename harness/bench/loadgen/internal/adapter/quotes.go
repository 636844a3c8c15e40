package adapter

import "bytes"

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

// ScanQuotes calls fn for every quote object in d: every {...} holding
// "symbol". Quote objects are flat (no nested objects), which holds for the
// fetcher's quotes, wsps deltas and everything the bench servers send.
func ScanQuotes(d []byte, fn func(e *Entry)) int {
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
