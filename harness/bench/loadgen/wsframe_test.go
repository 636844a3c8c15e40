package main

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// serverFrame builds an unmasked server frame.
func serverFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, byte(n))
	case n <= 0xFFFF:
		out = append(out, 126, byte(n>>8), byte(n))
	default:
		out = append(out, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, payload...)
}

func TestParseFrameLengths(t *testing.T) {
	for _, size := range []int{0, 1, 125, 126, 1000, 65535, 65536, 200_000} {
		payload := bytes.Repeat([]byte{'x'}, size)
		b := serverFrame(true, opText, payload)
		f, n, err := parseFrame(b)
		if err != nil || n != len(b) || !f.fin || f.op != opText || !bytes.Equal(f.payload, payload) {
			t.Fatalf("size %d: n=%d/%d err=%v fin=%v op=%d len=%d", size, n, len(b), err, f.fin, f.op, len(f.payload))
		}
		// Every strict prefix is incomplete, not an error.
		for _, cut := range []int{0, 1, 2, 3, 9, len(b) - 1} {
			if cut >= len(b) {
				continue
			}
			if _, n, err := parseFrame(b[:cut]); n != 0 || err != nil {
				t.Fatalf("size %d, prefix %d: n=%d err=%v", size, cut, n, err)
			}
		}
	}
}

func TestParseFrameSequence(t *testing.T) {
	b := append(serverFrame(false, opText, []byte(`{"op":"snap",`)), serverFrame(true, opPing, []byte("hi"))...)
	b = append(b, serverFrame(true, opContinuation, []byte(`"x":1}`))...)
	var got []frame
	for off := 0; off < len(b); {
		f, n, err := parseFrame(b[off:])
		if err != nil || n == 0 {
			t.Fatalf("at %d: n=%d err=%v", off, n, err)
		}
		got = append(got, f)
		off += n
	}
	if len(got) != 3 || got[0].fin || got[1].op != opPing || string(got[1].payload) != "hi" || got[2].op != opContinuation || !got[2].fin {
		t.Fatalf("frames: %+v", got)
	}
}

func TestParseFrameRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"reserved bits":      {0xC1, 0},
		"long control frame": serverFrame(true, opPing, bytes.Repeat([]byte{'p'}, 126)),
		"fragmented control": serverFrame(false, opClose, nil),
		"too big":            {0x81, 127, 0, 0, 0, 0, 0x10, 0, 0, 0},
	} {
		if _, _, err := parseFrame(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAppendFrameIsMaskedAndParses(t *testing.T) {
	for _, size := range []int{3, 300, 70_000} {
		payload := bytes.Repeat([]byte("abc"), size/3)
		mask := [4]byte{1, 2, 3, 4}
		b := appendFrame(nil, opText, payload, mask)
		if b[1]&0x80 == 0 {
			t.Fatalf("size %d: client frame not masked", size)
		}
		if bytes.Contains(b, payload) {
			t.Fatalf("size %d: payload sent in clear", size)
		}
		f, n, err := parseFrame(b)
		if err != nil || n != len(b) || !bytes.Equal(f.payload, payload) {
			t.Fatalf("size %d: n=%d err=%v", size, n, err)
		}
	}
}

func TestUpgradeResponse(t *testing.T) {
	key := wsKey(42)
	ok := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + wsAccept(key) + "\r\n\r\n"
	frame := serverFrame(true, opText, []byte("hi"))
	b := append([]byte(ok), frame...)
	if n, err := upgradeResponse(b, key); err != nil || n != len(ok) {
		t.Fatalf("101: n=%d err=%v", n, err)
	}
	if n, err := upgradeResponse(b[:len(ok)-1], key); n != 0 || err != nil {
		t.Fatalf("partial: n=%d err=%v", n, err)
	}
	// The accept for RFC 6455's example key.
	if got := wsAccept("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("accept: %s", got)
	}
	if _, err := upgradeResponse([]byte("HTTP/1.1 503 Service Unavailable\r\n\r\n"), key); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("503: %v", err)
	}
	if _, err := upgradeResponse([]byte(strings.Replace(ok, wsAccept(key), wsAccept(wsKey(7)), 1)), key); err == nil {
		t.Fatal("wrong accept accepted")
	}
}

func TestAccountSnapshotThenQuotes(t *testing.T) {
	st := &stats{}
	var state connState
	s := newSubs([]int{1, 42})
	if s.account(FrameAck, []byte(`{"op":"ack"}`), st, &state, true) {
		t.Fatal("ready before the snapshot")
	}
	if !s.account(FrameSnap, []byte(`{"op":"snap","quotes":[{"symbol":"S0001","seq":5,"ts":1},{"symbol":"S0042","seq":9,"ts":1}]}`), st, &state, true) {
		t.Fatal("not ready after the snapshot")
	}
	s.account(FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":6,"ts":1},{"symbol":"S0042","seq":12,"base":10,"ts":1},{"symbol":"S0001","seq":6,"ts":1}]}`), st, &state, true)
	if st.snaps.Load() != 2 || st.entries.Load() != 3 || st.covered.Load() != 4 || st.gaps.Load() != 1 || st.dups.Load() != 1 || state.lastQuoteUs.Load() == 0 {
		t.Fatalf("snaps %d entries %d covered %d gaps %d dups %d", st.snaps.Load(), st.entries.Load(), st.covered.Load(), st.gaps.Load(), st.dups.Load())
	}
}
