package account

import (
	"fmt"
	"testing"
	"time"

	"wsps/bench/loadgen/internal/adapter"
)

func TestAccountSnapshotThenQuotes(t *testing.T) {
	st := &Stats{}
	var state ConnState
	s := NewSubs([]int{1, 42})
	if s.Apply(adapter.FrameAck, []byte(`{"op":"ack"}`), st, &state, true, 0) {
		t.Fatal("ready before the snapshot")
	}
	if !s.Apply(adapter.FrameSnap, []byte(`{"op":"snap","quotes":[{"symbol":"S0001","seq":5,"ts":1},{"symbol":"S0042","seq":9,"ts":1}]}`), st, &state, true, 0) {
		t.Fatal("not ready after the snapshot")
	}
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":6,"ts":1},{"symbol":"S0042","seq":12,"base":10,"ts":1},{"symbol":"S0001","seq":6,"ts":1}]}`), st, &state, true, 0)
	// S0001 5 -> 6 covers 6; S0042 held 9, base 10, seq 12 loses 10 and
	// covers 11 and 12; the second S0001 6 is a duplicate.
	if st.Snaps.Load() != 2 || st.Entries.Load() != 3 || st.Covered.Load() != 3 || st.TicksLost.Load() != 1 || st.Gaps.Load() != 1 || st.Dups.Load() != 1 || state.LastQuoteUs.Load() == 0 {
		t.Fatalf("snaps %d entries %d covered %d lost %d gaps %d dups %d", st.Snaps.Load(), st.Entries.Load(), st.Covered.Load(), st.TicksLost.Load(), st.Gaps.Load(), st.Dups.Load())
	}
}

// ready is a connection acked and holding S0001 at seq 5 and S0042 at seq 9.
func ready(t *testing.T) (*Subs, *Stats, *ConnState) {
	t.Helper()
	st := &Stats{}
	var state ConnState
	s := NewSubs([]int{1, 42})
	s.Apply(adapter.FrameAck, []byte(`{"op":"ack"}`), st, &state, true, 0)
	if !s.Apply(adapter.FrameSnap, []byte(`{"op":"snap","quotes":[{"symbol":"S0001","seq":5,"ts":1},{"symbol":"S0042","seq":9,"ts":1}]}`), st, &state, true, 0) {
		t.Fatal("not ready after the snapshot")
	}
	return &s, st, &state
}

// Distinct mode: every seq must arrive. One seq skipped is one tick lost.
func TestTicksLostOneSkippedSeq(t *testing.T) {
	s, st, state := ready(t)
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":6,"ts":1},{"symbol":"S0001","seq":8,"ts":1}]}`), st, state, true, 0)
	if st.TicksLost.Load() != 1 || st.Gaps.Load() != 1 {
		t.Fatalf("seq 7 skipped: ticks lost %d gaps %d, want 1 and 1", st.TicksLost.Load(), st.Gaps.Load())
	}
}

// Every seq in order, across frames and symbols, and duplicates: nothing lost.
func TestTicksLostNoneInOrder(t *testing.T) {
	s, st, state := ready(t)
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":6,"ts":1},{"symbol":"S0042","seq":10,"ts":1},{"symbol":"S0001","seq":7,"ts":1}]}`), st, state, true, 0)
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":7,"ts":1},{"symbol":"S0001","seq":8,"ts":1},{"symbol":"S0042","seq":11,"ts":1}]}`), st, state, true, 0)
	if st.TicksLost.Load() != 0 || st.Gaps.Load() != 0 || st.Dups.Load() != 1 {
		t.Fatalf("ticks lost %d gaps %d dups %d, want 0, 0 and 1", st.TicksLost.Load(), st.Gaps.Load(), st.Dups.Load())
	}
}

// Merge mode: a delta whose base is the held seq covers the seqs it merged;
// one whose base is past it loses the seqs up to its base.
func TestTicksLostBaseCovers(t *testing.T) {
	s, st, state := ready(t)
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":9,"base":5,"ts":1}]}`), st, state, true, 0)
	if st.TicksLost.Load() != 0 || st.Gaps.Load() != 0 {
		t.Fatalf("base = held: ticks lost %d gaps %d, want 0", st.TicksLost.Load(), st.Gaps.Load())
	}
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0042","seq":15,"base":12,"ts":1}]}`), st, state, true, 0)
	if st.TicksLost.Load() != 3 || st.Gaps.Load() != 1 || st.Covered.Load() != 4+3 {
		t.Fatalf("held 9, base 12: ticks lost %d gaps %d covered %d, want 3 (10, 11, 12), 1 and 7 (6..9, then 13..15)", st.TicksLost.Load(), st.Gaps.Load(), st.Covered.Load())
	}
}

// A server that sends every tick as its own message (no base) and drops
// some: the ticks it dropped are lost, and only what arrived is covered.
func TestCoveredNotLost(t *testing.T) {
	s, st, state := ready(t)
	s.Apply(adapter.FrameQuotes, []byte(`{"op":"q","quotes":[{"symbol":"S0001","seq":6,"ts":1},{"symbol":"S0001","seq":10,"ts":1},{"symbol":"S0042","seq":10,"ts":1}]}`), st, state, true, 0)
	if st.Covered.Load() != 3 || st.TicksLost.Load() != 3 || st.Gaps.Load() != 1 {
		t.Fatalf("S0001 5 -> 6 -> 10, S0042 9 -> 10: covered %d ticks lost %d gaps %d, want 3 (6, 10, 10), 3 (7, 8, 9) and 1", st.Covered.Load(), st.TicksLost.Load(), st.Gaps.Load())
	}
}

// A snapshot that jumps over seqs of a held symbol (`"recovered":false`)
// loses them; the first snapshot of a symbol loses nothing.
func TestTicksLostSnapJump(t *testing.T) {
	s, st, state := ready(t)
	if st.TicksLost.Load() != 0 {
		t.Fatalf("first snapshot: ticks lost %d", st.TicksLost.Load())
	}
	s.Apply(adapter.FrameSnap, []byte(`{"op":"snap","quotes":[{"symbol":"S0001","seq":9,"ts":1}],"recovered":false}`), st, state, true, 0)
	s.Apply(adapter.FrameSnap, []byte(`{"op":"snap","quotes":[{"symbol":"S0042","seq":10,"ts":1}]}`), st, state, true, 0)
	if st.TicksLost.Load() != 3 || st.Gaps.Load() != 0 {
		t.Fatalf("snap 5 -> 9 and 9 -> 10: ticks lost %d gaps %d, want 3 and 0", st.TicksLost.Load(), st.Gaps.Load())
	}
}

// With a receive timestamp each quote entry's latency to the socket is
// counted too, in the same buckets; without one, only the latency to the read.
func TestAccountArrived(t *testing.T) {
	s, st, state := ready(t)
	tsMs := time.Now().UnixMilli() - 50
	frame := func(seq int) []byte {
		return []byte(fmt.Sprintf(`{"op":"q","quotes":[{"symbol":"S0001","seq":%d,"ts":%d}]}`, seq, tsMs))
	}
	s.Apply(adapter.FrameQuotes, frame(6), st, state, true, 0)
	s.Apply(adapter.FrameQuotes, frame(7), st, state, true, tsMs*1000+20_000)
	var arrived, read int64
	for i := range st.Arrived {
		arrived += st.Arrived[i].Load()
		read += st.Hist[i].Load()
	}
	if read != 2 || arrived != 1 {
		t.Fatalf("latency samples %d (want 2), to the socket %d (want 1)", read, arrived)
	}
	if n := st.Arrived[BucketOf(20_000)].Load(); n != 1 {
		t.Fatalf("the sample to the socket is not in the 20 ms bucket (%d there)", n)
	}
}

// Order books: the first `book` frame of a symbol makes it ready; then
// every `levels` and `book` frame is a delivery, a `levels` frame that
// does not continue the held seq a gap.
func TestAccountBooks(t *testing.T) {
	st := &Stats{}
	var state ConnState
	s := NewSubs([]int{1})
	s.Apply(adapter.FrameAck, []byte(`{"op":"ack","book":25}`), st, &state, true, 0)
	if !s.Apply(adapter.FrameBook, []byte(`{"op":"book","symbol":"S0001","seq":5,"ts":1,"bids":[],"asks":[]}`), st, &state, true, 0) {
		t.Fatal("not ready after the book")
	}
	frames := []string{
		`{"op":"levels","symbol":"S0001","seq":7,"prev":5,"ts":1,"bids":[["1","2"]],"asks":[]}`,  // continues (prev <= 5 < 7)
		`{"op":"levels","symbol":"S0001","seq":7,"prev":6,"ts":1,"bids":[],"asks":[]}`,           // duplicate
		`{"op":"levels","symbol":"S0001","seq":10,"prev":8,"ts":1,"bids":[],"asks":[["3","1"]]}`, // gap: held 7 < prev 8
		`{"op":"book","symbol":"S0001","seq":12,"ts":1,"bids":[],"asks":[]}`,                     // a whole book: no gap
	}
	for _, f := range frames {
		kind := adapter.FrameLevels
		if f[7] == 'b' {
			kind = adapter.FrameBook
		}
		s.Apply(kind, []byte(f), st, &state, true, 0)
	}
	if st.Snaps.Load() != 1 || st.Frames.Load() != 4 || st.Covered.Load() != 3 || st.Dups.Load() != 1 || st.Gaps.Load() != 1 || state.LastQuoteUs.Load() == 0 {
		t.Fatalf("snaps %d frames %d covered %d dups %d gaps %d", st.Snaps.Load(), st.Frames.Load(), st.Covered.Load(), st.Dups.Load(), st.Gaps.Load())
	}
}
