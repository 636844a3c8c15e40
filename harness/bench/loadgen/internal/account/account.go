// Package account is what a load client counts: what one connection's
// inbound text messages mean for the counters (Subs), the counters of a
// process (Stats) and what the per-connection check needs of each
// connection (ConnState). Shared by both modes (goroutine per connection,
// epoll).
package account

import (
	"fmt"
	"math"
	"time"

	"wsps/bench/loadgen/internal/adapter"
)

// noSeq marks a planned symbol with no quote held yet.
const noSeq = math.MinInt64

// Subs is one connection's subscription state: the last seq held of each
// planned symbol (plan order). A slice, not a map: K is small and a map
// costs hundreds of bytes per connection.
type Subs struct {
	plan  []int // symbol ranks (shared with the plan, not copied)
	held  []int64
	acked bool
	ready bool
}

// NewSubs is the state of a connection that will subscribe to plan
// (symbol ranks, see SymbolName), holding nothing yet.
func NewSubs(plan []int) Subs {
	held := make([]int64, len(plan))
	for i := range held {
		held[i] = noSeq
	}
	return Subs{plan: plan, held: held}
}

// Plan is the symbol ranks the connection subscribes to (not a copy).
func (s *Subs) Plan() []int { return s.plan }

// Ready: acked and, with waitSnap, a snapshot of every planned symbol held.
func (s *Subs) Ready() bool { return s.ready }

// SymbolName is the name of the symbol of rank in the universe: S0000, S0001, ...
func SymbolName(rank int) string { return fmt.Sprintf("S%04d", rank) }

// slot is the index of symbol ("S0042") in the plan, -1 if not planned.
func (s *Subs) slot(symbol []byte) int {
	if len(symbol) < 2 || symbol[0] != 'S' {
		return -1
	}
	rank := 0
	for _, c := range symbol[1:] {
		if c < '0' || c > '9' {
			return -1
		}
		rank = rank*10 + int(c-'0')
	}
	for i, r := range s.plan {
		if r == rank {
			return i
		}
	}
	return -1
}

// Apply accounts for one classified text message d. It returns true when
// the connection has just become ready: acked and, with waitSnap, a
// snapshot of every planned symbol.
//
// Gaps and ticks lost, by the receiver rules (services/protocol/receiver.js):
// a `q` entry of seq s with base b (b = s-1 when it has none: always so in
// distinct mode) continues a held seq h only when b == h. Any other b > h
// is one gap, and it loses the b-h ticks h+1..b: the entry delivers (b, s]
// (its fields are exact from b on) and nothing delivered what lies between.
// A snap of seq s > h+1 for a held symbol loses the s-h-1 ticks it jumps
// over. So in distinct mode every seq must arrive as an entry of its own,
// and a merged delta (merge mode) loses nothing when its base is the held
// seq. Entries at or below h are duplicates and lose nothing; before a
// symbol's first quote nothing is held and nothing counts.
//
// arrivedUs, when not 0, is when the read that carried d reached the
// socket (the kernel's receive timestamp of its last segment): each quote
// entry's latency to the socket goes to Stats.Arrived as well.
func (s *Subs) Apply(kind adapter.FrameKind, d []byte, st *Stats, state *ConnState, waitSnap bool, arrivedUs int64) bool {
	switch kind {
	case adapter.FrameAck:
		s.acked = true
	case adapter.FrameSnap:
		adapter.ScanQuotes(d, func(e *adapter.Entry) {
			st.Snaps.Add(1)
			if i := s.slot(e.Symbol); i >= 0 && e.Seq > s.held[i] {
				if h := s.held[i]; h != noSeq && e.Seq > h+1 {
					// Rule 1 replaces the held quote; the ticks between
					// never arrived (a `"recovered":false` snap, a
					// resubscribe): lost.
					st.TicksLost.Add(e.Seq - h - 1)
				}
				s.held[i] = e.Seq
			}
		})
	case adapter.FrameQuotes:
		nowUs := time.Now().UnixMicro()
		state.LastQuoteUs.Store(nowUs)
		st.Frames.Add(1)
		n := adapter.ScanQuotes(d, func(e *adapter.Entry) {
			st.Hist[BucketOf(nowUs-e.TsMilli*1000)].Add(1)
			if arrivedUs != 0 {
				st.Arrived[BucketOf(arrivedUs-e.TsMilli*1000)].Add(1)
			}
			base := e.Base
			if base < 0 {
				base = e.Seq - 1
			}
			i := s.slot(e.Symbol)
			if i < 0 { // not subscribed: counted, not tracked
				st.Covered.Add(1)
				return
			}
			h := s.held[i]
			switch {
			case h == noSeq:
				st.Covered.Add(1)
				s.held[i] = e.Seq
			case e.Seq <= h:
				st.Dups.Add(1)
			default:
				// The entry delivers (max(base, h), seq]: what it skipped
				// over is lost, not covered.
				from := h
				if base != h {
					st.Gaps.Add(1)
				}
				if base > h {
					st.TicksLost.Add(base - h)
					from = base
				}
				st.Covered.Add(e.Seq - from)
				s.held[i] = e.Seq
			}
		})
		st.Entries.Add(int64(n))
		return false
	case adapter.FrameBook, adapter.FrameLevels:
		if s.book(kind, d, st, state, arrivedUs) {
			return false
		}
	default:
		return false
	}
	if s.ready || !s.acked {
		return false
	}
	if waitSnap {
		for _, h := range s.held {
			if h == noSeq {
				return false
			}
		}
	}
	s.ready = true
	return true
}

// book accounts for one order book frame (docs/protocol.md, Order books);
// true when it was a delivery (not a connection's first snapshot of a
// symbol, which counts towards readiness as a quote snap does).
//
// A delivery is every `levels` frame and every `book` frame after the
// first (the naive server sends each change whole; a gateway sends one
// after a resync): one frame, one entry, one covered, its latency from the
// frame's ts. A `levels` frame continues the held seq when prev <= held <
// seq, else it is a gap (the load generator does not resubscribe: it
// counts and goes on); a `book` frame replaces what is held. Either at or
// below the held seq is a duplicate. The books held are not checked here:
// the bench checks their checksums with the reference receiver in a few
// clients of its own (sections/books.js).
func (s *Subs) book(kind adapter.FrameKind, d []byte, st *Stats, state *ConnState, arrivedUs int64) bool {
	h, _ := adapter.ScanBookHead(d)
	i := s.slot(h.Symbol)
	if kind == adapter.FrameBook && (i < 0 || s.held[i] == noSeq) {
		st.Snaps.Add(1)
		if i >= 0 {
			s.held[i] = h.Seq
		}
		return false
	}
	nowUs := time.Now().UnixMicro()
	state.LastQuoteUs.Store(nowUs)
	st.Frames.Add(1)
	st.Entries.Add(1)
	if h.TsMilli >= 0 {
		st.Hist[BucketOf(nowUs-h.TsMilli*1000)].Add(1)
		if arrivedUs != 0 {
			st.Arrived[BucketOf(arrivedUs-h.TsMilli*1000)].Add(1)
		}
	}
	if i < 0 {
		st.Covered.Add(1)
		return true
	}
	held := s.held[i]
	switch {
	case h.Seq <= held:
		st.Dups.Add(1)
		return true
	case kind == adapter.FrameLevels && !(h.Prev <= held && held < h.Seq):
		st.Gaps.Add(1)
	}
	st.Covered.Add(1)
	s.held[i] = h.Seq
	return true
}
