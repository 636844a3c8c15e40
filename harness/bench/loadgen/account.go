package main

// What one connection's inbound text messages mean for the counters, shared
// by both modes (goroutine per connection, epoll).

import (
	"math"
	"time"
)

// noSeq marks a planned symbol with no quote held yet.
const noSeq = math.MinInt64

// subs is one connection's subscription state: the last seq held of each
// planned symbol (plan order). A slice, not a map: K is small and a map
// costs hundreds of bytes per connection.
type subs struct {
	plan  []int // symbol ranks (shared with the plan, not copied)
	held  []int64
	acked bool
	ready bool
}

func newSubs(plan []int) subs {
	held := make([]int64, len(plan))
	for i := range held {
		held[i] = noSeq
	}
	return subs{plan: plan, held: held}
}

// slot is the index of symbol ("S0042") in the plan, -1 if not planned.
func (s *subs) slot(symbol []byte) int {
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

// account applies one classified text message d. It returns true when the
// connection has just become ready: acked and, with waitSnap, a snapshot
// of every planned symbol.
func (s *subs) account(kind FrameKind, d []byte, st *stats, state *connState, waitSnap bool) bool {
	switch kind {
	case FrameAck:
		s.acked = true
	case FrameSnap:
		scanQuotes(d, func(e *Entry) {
			st.snaps.Add(1)
			if i := s.slot(e.Symbol); i >= 0 && e.Seq > s.held[i] {
				s.held[i] = e.Seq
			}
		})
	case FrameQuotes:
		nowUs := time.Now().UnixMicro()
		state.lastQuoteUs.Store(nowUs)
		st.frames.Add(1)
		n := scanQuotes(d, func(e *Entry) {
			st.hist[bucketOf(nowUs-e.TsMilli*1000)].Add(1)
			base := e.Base
			if base < 0 {
				base = e.Seq - 1
			}
			i := s.slot(e.Symbol)
			if i < 0 { // not subscribed: counted, not tracked
				st.covered.Add(1)
				return
			}
			h := s.held[i]
			switch {
			case h == noSeq:
				st.covered.Add(1)
				s.held[i] = e.Seq
			case e.Seq <= h:
				st.dups.Add(1)
			default:
				st.covered.Add(e.Seq - h)
				if base != h {
					st.gaps.Add(1)
				}
				s.held[i] = e.Seq
			}
		})
		st.entries.Add(int64(n))
		return false
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
