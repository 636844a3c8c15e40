package account

import "sync/atomic"

// Latency histogram: 0.1 ms buckets below 100 ms, 1 ms buckets up to 10 s
// (harness/bench/src/fleet.js reads the buckets back).
const (
	fineBuckets = 1000
	NBuckets    = fineBuckets + 9900 + 1
)

// BucketOf is the histogram bucket of a latency of us microseconds.
func BucketOf(us int64) int {
	if us < 0 {
		us = 0
	}
	if us < 100_000 {
		return int(us / 100)
	}
	b := fineBuckets + int((us-100_000)/1000)
	if b >= NBuckets {
		b = NBuckets - 1
	}
	return b
}

// Stats are the counters of one load generator process, over all its
// connections: frames and quote entries received, ticks covered, snapshot
// entries, sequence gaps, ticks lost and duplicates, errors, and the
// latency histogram. A gap is one entry that does not continue the held
// seq; TicksLost counts the seqs such gaps skipped (Subs.Apply says how).
// Wait (the epoll mode only) is the load generator's own share of the
// latency, one sample per text frame in the same buckets: how long the
// bytes of the read that carried it had sat in the socket, from the
// kernel's receive timestamp of the read's last segment to the read. The
// frame's own bytes may have come earlier, so it is a lower bound.
// Arrived (the epoll mode only) is Hist to the socket instead of to the
// read: each quote entry's ts to that same receive timestamp, so an upper
// bound of when it reached the client's socket, without the load
// generator's own lag.
type Stats struct {
	Frames, Entries, Covered, Snaps, Gaps, TicksLost, Dups, Errors atomic.Int64
	Hist                                                           [NBuckets]atomic.Int64
	Wait                                                           [NBuckets]atomic.Int64
	Arrived                                                        [NBuckets]atomic.Int64
}

// Counters are Stats read at one moment.
type Counters struct {
	Frames, Entries, Covered, Snaps, Gaps, TicksLost, Dups, Errors int64
	Hist                                                           []int64
	Wait                                                           []int64
	Arrived                                                        []int64
}

// Snapshot reads every counter.
func (st *Stats) Snapshot() Counters {
	c := Counters{
		Frames: st.Frames.Load(), Entries: st.Entries.Load(), Covered: st.Covered.Load(),
		Snaps: st.Snaps.Load(), Gaps: st.Gaps.Load(), TicksLost: st.TicksLost.Load(), Dups: st.Dups.Load(), Errors: st.Errors.Load(),
		Hist: make([]int64, NBuckets), Wait: make([]int64, NBuckets), Arrived: make([]int64, NBuckets),
	}
	for i := range c.Hist {
		c.Hist[i] = st.Hist[i].Load()
		c.Wait[i] = st.Wait[i].Load()
		c.Arrived[i] = st.Arrived[i].Load()
	}
	return c
}

// ConnState is what the per-connection check needs of one connection: 17
// bytes, kept for every planned connection whether it connected or not.
type ConnState struct {
	LastQuoteUs atomic.Int64 // receive time of its last quote frame (unix µs)
	Closed      atomic.Bool  // its read loop ended (server close, error or the end)
}
