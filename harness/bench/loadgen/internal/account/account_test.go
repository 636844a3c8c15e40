package account

import (
	"testing"

	"wsps/bench/loadgen/internal/adapter"
)

func TestAccountSnapshotThenQuotes(t *testing.T) {
	st := &Stats{}
	var state ConnState
	s := NewSubs([]int{1, 42})
	if s.Apply(adapter.FrameAck, []byte(`{"op":"ack"}`), st, &state, true) {
		t.Fatal("ready before the snapshot")
	}
	if !s.Apply(adapter.FrameSnap, []byte(`{"op":"snap","quotes":[{"symbol":"S0001","seq":5,"ts":1},{"symbol":"S0042","seq":9,"ts":1}]}`), st, &state, true) {
		t.Fatal("not ready after the snapshot")
	}
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":6,"ts":1},{"symbol":"S0042","seq":12,"base":10,"ts":1},{"symbol":"S0001","seq":6,"ts":1}]}`), st, &state, true)
	if st.Snaps.Load() != 2 || st.Entries.Load() != 3 || st.Covered.Load() != 4 || st.Gaps.Load() != 1 || st.Dups.Load() != 1 || state.LastQuoteUs.Load() == 0 {
		t.Fatalf("snaps %d entries %d covered %d gaps %d dups %d", st.Snaps.Load(), st.Entries.Load(), st.Covered.Load(), st.Gaps.Load(), st.Dups.Load())
	}
}
