package main

// Who subscribes to what: each connection's K distinct symbols, drawn from
// a Zipf-like popularity with a seed of its own.

import (
	"math"
	"math/rand"

	"wsps/bench/loadgen/internal/account"
)

// plan draws each connection's symbols: their ranks (what it counts) and,
// in the goroutine mode, their names (what it subscribes with; the epoll
// mode names them only to subscribe). Connection i's draw is seeded by
// -seed and its global index, so a fleet's processes draw as one.
func plan(o *options) (names [][]string, ranks [][]int) {
	sampler := newZipf(o.symbols, o.zipf)
	names = make([][]string, o.conns)
	ranks = make([][]int, o.conns)
	for i := range ranks {
		rng := rand.New(rand.NewSource(o.seed*1_000_003 + int64(o.first+i)))
		idx := sampler.distinct(rng, o.k)
		syms := make([]string, len(idx))
		for j, r := range idx {
			syms[j] = account.SymbolName(r)
		}
		if o.mode != "epoll" {
			names[i] = syms
		}
		ranks[i] = idx
	}
	return names, ranks
}

// Zipf-like popularity over ranks 0..n-1.
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) *zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for r := 0; r < n; r++ {
		sum += 1 / math.Pow(float64(r+1), s)
		cdf[r] = sum
	}
	for r := range cdf {
		cdf[r] /= sum
	}
	return &zipf{cdf}
}

func (z *zipf) distinct(rng *rand.Rand, k int) []int {
	if k > len(z.cdf) {
		k = len(z.cdf)
	}
	seen := make(map[int]bool, k)
	out := make([]int, 0, k)
	for len(out) < k {
		u := rng.Float64()
		lo, hi := 0, len(z.cdf)-1
		for lo < hi {
			mid := (lo + hi) / 2
			if z.cdf[mid] < u {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if !seen[lo] {
			seen[lo] = true
			out = append(out, lo)
		}
	}
	return out
}
