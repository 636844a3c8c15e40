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
		{centrifugoAdapter{}, `{"push":{"channel":"S0001","pub":{"data":{"seq":3,"symbol":"S0001"}}}}`, FrameQuotes, false},
		{centrifugoAdapter{}, `{"id":7,"subscribe":{}}`, FrameOther, false},
		{centrifugoAdapter{}, "{\"id\":999999,\"subscribe\":{}}\n{\"id\":1000000,\"subscribe\":{}}", FrameAck, false},
		{centrifugoAdapter{}, `{"id":3,"error":{"code":103,"message":"permission denied"}}`, FrameOther, true},
		{centrifugoAdapter{}, `{}`, FrameOther, false},
	} {
		kind, err := c.adapter.Classify(nil, []byte(c.frame))
		if kind != c.kind || (err != nil) != c.err {
			t.Errorf("%T %s: kind %d err %v, want kind %d err %v", c.adapter, c.frame, kind, err, c.kind, c.err)
		}
	}
}

// One frame, one subscribe command per symbol, the last one the ack's id.
func TestCentrifugoSubscribeFrame(t *testing.T) {
	got := string(centrifugoSubscribeFrame([]string{"S0001", "S0002"}))
	want := "{\"id\":2,\"subscribe\":{\"channel\":\"S0001\"}}\n{\"id\":1000000,\"subscribe\":{\"channel\":\"S0002\"}}"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
