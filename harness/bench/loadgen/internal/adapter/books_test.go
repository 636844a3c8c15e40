package adapter

import "testing"

// The head of a `levels` frame, its levels skipped; a `book` frame has no prev.
func TestScanBookHead(t *testing.T) {
	h, ok := ScanBookHead([]byte(`{"op":"levels","symbol":"S0003","depth":25,"seq":42,"prev":41,"ts":1763800000187,"bids":[["100.5","0"],["100.3","4"]],"asks":[],"checksum":2463534139}`))
	if !ok || string(h.Symbol) != "S0003" || h.Seq != 42 || h.Prev != 41 || h.TsMilli != 1763800000187 {
		t.Fatalf("levels: %+v ok %v", h, ok)
	}
	h, ok = ScanBookHead([]byte(`{"op":"book","symbol":"S0001","depth":25,"seq":7,"epoch":"e1","ts":5,"bids":[["1","2"]],"asks":[["3","4"]],"checksum":1}`))
	if !ok || string(h.Symbol) != "S0001" || h.Seq != 7 || h.Prev != -1 || h.TsMilli != 5 {
		t.Fatalf("book: %+v ok %v", h, ok)
	}
	if _, ok := ScanBookHead([]byte(`{"op":"levels","symbol":"S0003","bids":[["1","2"]`)); ok {
		t.Fatal("a cut frame read as whole")
	}
}

func TestClassifyBooks(t *testing.T) {
	a, err := New("wsps-books")
	if err != nil {
		t.Fatal(err)
	}
	for frame, want := range map[string]FrameKind{
		`{"op":"levels","symbol":"S0001"}`: FrameLevels,
		`{"op":"book","symbol":"S0001"}`:   FrameBook,
		`{"op":"ack","id":1,"book":25}`:    FrameAck,
		`{"op":"q","quotes":[]}`:           FrameOther,
	} {
		if kind, err := a.Classify(nil, []byte(frame)); kind != want || err != nil {
			t.Errorf("%s: kind %d err %v, want %d", frame, kind, err, want)
		}
	}
	if _, err := a.Classify(nil, []byte(`{"op":"error","code":"NO_BOOK"}`)); err == nil {
		t.Error("an error frame passed")
	}
	if got := string(BookSubFrame([]string{"S0001"}, 25)); got != `{"book":25,"id":1,"op":"sub","symbols":["S0001"]}` {
		t.Errorf("sub frame %s", got)
	}
}
