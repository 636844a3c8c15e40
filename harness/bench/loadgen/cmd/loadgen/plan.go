package main

// Who subscribes to what: each connection's K distinct symbols, drawn from
// a Zipf-like popularity with a seed of its own.

import (
	"math"
	"math/rand"
)

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
