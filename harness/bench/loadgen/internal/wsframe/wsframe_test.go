package wsframe

import (
	"bytes"
	"encoding/binary"
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
		b := serverFrame(true, OpText, payload)
		f, n, err := Parse(b)
		if err != nil || n != len(b) || !f.Fin || f.Op != OpText || !bytes.Equal(f.Payload, payload) {
			t.Fatalf("size %d: n=%d/%d err=%v fin=%v op=%d len=%d", size, n, len(b), err, f.Fin, f.Op, len(f.Payload))
		}
		// Every strict prefix is incomplete, not an error.
		for _, cut := range []int{0, 1, 2, 3, 9, len(b) - 1} {
			if cut >= len(b) {
				continue
			}
			if _, n, err := Parse(b[:cut]); n != 0 || err != nil {
				t.Fatalf("size %d, prefix %d: n=%d err=%v", size, cut, n, err)
			}
		}
	}
}

func TestParseFrameSequence(t *testing.T) {
	b := append(serverFrame(false, OpText, []byte(`{"op":"snap",`)), serverFrame(true, OpPing, []byte("hi"))...)
	b = append(b, serverFrame(true, OpContinuation, []byte(`"x":1}`))...)
	var got []Frame
	for off := 0; off < len(b); {
		f, n, err := Parse(b[off:])
		if err != nil || n == 0 {
			t.Fatalf("at %d: n=%d err=%v", off, n, err)
		}
		got = append(got, f)
		off += n
	}
	if len(got) != 3 || got[0].Fin || got[1].Op != OpPing || string(got[1].Payload) != "hi" || got[2].Op != OpContinuation || !got[2].Fin {
		t.Fatalf("frames: %+v", got)
	}
}

func TestParseFrameRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"reserved bits":      {0xC1, 0},
		"long control frame": serverFrame(true, OpPing, bytes.Repeat([]byte{'p'}, 126)),
		"fragmented control": serverFrame(false, OpClose, nil),
		"too big":            {0x81, 127, 0, 0, 0, 0, 0x10, 0, 0, 0},
	} {
		if _, _, err := Parse(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAppendFrameIsMaskedAndParses(t *testing.T) {
	for _, size := range []int{3, 300, 70_000} {
		payload := bytes.Repeat([]byte("abc"), size/3)
		mask := [4]byte{1, 2, 3, 4}
		b := AppendClient(nil, OpText, payload, mask)
		if b[1]&0x80 == 0 {
			t.Fatalf("size %d: client frame not masked", size)
		}
		if bytes.Contains(b, payload) {
			t.Fatalf("size %d: payload sent in clear", size)
		}
		f, n, err := Parse(b)
		if err != nil || n != len(b) || !bytes.Equal(f.Payload, payload) {
			t.Fatalf("size %d: n=%d err=%v", size, n, err)
		}
	}
}
