package main

// The numbers on stdout besides the counters: percentiles of durations
// (handshakes, readiness) and the tick line.

import (
	"math"
	"sort"
	"sync"
	"time"

	"wsps/bench/loadgen/internal/account"
)

// samples keeps durations for percentiles.
type samples struct {
	mu sync.Mutex
	v  []float64
}

func newSamples(n int) *samples { return &samples{v: make([]float64, 0, n)} }
func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.v = append(s.v, ms(d))
	s.mu.Unlock()
}
func (s *samples) summary() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := append([]float64(nil), s.v...)
	if len(v) == 0 {
		return map[string]float64{"n": 0}
	}
	sort.Float64s(v)
	q := func(p float64) float64 { return v[int(math.Min(float64(len(v)-1), math.Floor(p*float64(len(v)))))] }
	return map[string]float64{"n": float64(len(v)), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": v[len(v)-1]}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// diff is the tick line of the interval that ended at now: what the
// counters grew by from a to b, and the buckets of the latency, read wait
// and latency-to-the-socket histograms that changed.
func diff(now time.Time, a, b account.Counters) map[string]any {
	h, w, arr := map[int]int64{}, map[int]int64{}, map[int]int64{}
	for i := range b.Hist {
		if d := b.Hist[i] - a.Hist[i]; d != 0 {
			h[i] = d
		}
		if d := b.Wait[i] - a.Wait[i]; d != 0 {
			w[i] = d
		}
		if d := b.Arrived[i] - a.Arrived[i]; d != 0 {
			arr[i] = d
		}
	}
	return map[string]any{
		"type": "tick", "t": now.UnixMilli(),
		"frames": b.Frames - a.Frames, "entries": b.Entries - a.Entries, "covered": b.Covered - a.Covered,
		"snaps": b.Snaps - a.Snaps, "gaps": b.Gaps - a.Gaps, "ticksLost": b.TicksLost - a.TicksLost,
		"dups": b.Dups - a.Dups, "errors": b.Errors - a.Errors,
		"hist": h, "wait": w, "arrived": arr,
	}
}
