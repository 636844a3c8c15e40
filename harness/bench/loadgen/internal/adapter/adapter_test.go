package adapter

import "testing"

// What each adapter makes of the frames its server sends.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		adapter Adapter
		frame   string
		kind    FrameKind
		err     bool
	}{
		{wspsAdapter{}, `{"op":"q","quotes":[]}`, FrameQuotes, false},
		{wspsAdapter{}, `{"op":"snap","quotes":[]}`, FrameSnap, false},
		{wspsAdapter{}, `{"op":"ack","id":1}`, FrameAck, false},
		{wspsAdapter{}, `{"op":"error","code":"BAD_FRAME"}`, FrameOther, true},
		{wspsAdapter{}, `{"op":"hello","v":1}`, FrameOther, false},
		{socketioAdapter{}, `42["q",{}]`, FrameQuotes, false},
		{socketioAdapter{}, `42["snap",{}]`, FrameSnap, false},
		{socketioAdapter{}, `42["ack"]`, FrameAck, false},
		{socketioAdapter{}, `40{"sid":"x"}`, FrameOther, false},
		{pushpinAdapter{}, `{"seq":3,"symbol":"S0001"}`, FrameQuotes, false},
		{pushpinAdapter{}, `{"op":"snap","quotes":[]}`, FrameSnap, false},
		{pushpinAdapter{}, `{"op":"ack","id":1}`, FrameAck, false},
		{pushpinAdapter{}, `{"op":"q","quotes":[]}`, FrameOther, false},
	} {
		kind, err := c.adapter.Classify(nil, []byte(c.frame))
		if kind != c.kind || (err != nil) != c.err {
			t.Errorf("%T %s: kind %d err %v, want kind %d err %v", c.adapter, c.frame, kind, err, c.kind, c.err)
		}
	}
}
