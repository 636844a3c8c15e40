//go:build linux

package hiccup

import (
	"encoding/json"
	"testing"
)

const msNs = int64(1e6) // one millisecond in ns

func TestHiccupBookKeepsTheLatestWakeUpOfEachInterval(t *testing.T) {
	b := newBook(1000*msNs, 100*msNs)
	for _, w := range []struct{ at, late int64 }{{1010 * msNs, msNs / 10}, {1050 * msNs, 7 * msNs}, {1090 * msNs, 2 * msNs}} {
		if _, ok := b.observe(w.at, w.late); ok {
			t.Fatalf("closed an interval before its end at %d", w.at)
		}
	}
	c, ok := b.observe(1100*msNs, 0)
	if !ok || c != (interval{end: 1100 * msNs, at: 1050 * msNs, max: 7 * msNs, n: 3}) {
		t.Fatalf("closed %+v %v, want the 7 msNs wake-up at 1050 msNs of 3", c, ok)
	}
	if b.end != 1200*msNs || b.n != 1 || b.max != 0 {
		t.Fatalf("the next interval: %+v", b)
	}
}

func TestHiccupBookReportsAStallLongerThanAnIntervalOnceWhole(t *testing.T) {
	b := newBook(0, 100*msNs)
	b.observe(50*msNs, msNs/10)
	// Asleep from 60 msNs to 410 msNs: the wake-up at 410 msNs is 349 msNs late.
	if c, ok := b.observe(410*msNs, 349*msNs); !ok || c.max != msNs/10 {
		t.Fatalf("the interval before the stall: %+v %v", c, ok)
	}
	if b.end != 500*msNs {
		t.Fatalf("the next interval ends at %d msNs, want 500 (no empty intervals)", b.end/msNs)
	}
	c, ok := b.observe(500*msNs, 0)
	if !ok || c.max != 349*msNs || c.at != 410*msNs {
		t.Fatalf("the stall is reported with its end: %+v %v", c, ok)
	}
}

func TestHiccupBookClampsEarlyWakeUps(t *testing.T) {
	b := newBook(0, 100*msNs)
	b.observe(10*msNs, -5000)
	if c, _ := b.observe(100*msNs, 0); c.max != 0 || c.n != 1 {
		t.Fatalf("an early wake-up counts as 0 late: %+v", c)
	}
}

func TestHiccupLineIsJSONInMicroseconds(t *testing.T) {
	line := appendLine(nil, 1, interval{end: 2_000_000_000, at: 1_950_000_500, max: 12_345_678, n: 97})
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	want := map[string]any{"type": "hiccup", "core": 1.0, "tUs": 2_000_000.0, "atUs": 1_950_000.0, "maxUs": 12_345.0, "n": 97.0}
	for k, v := range want {
		if m[k] != v {
			t.Fatalf("%s: %s = %v, want %v", line, k, m[k], v)
		}
	}
	if line[len(line)-1] != '\n' {
		t.Fatal("one line each")
	}
}

func TestHiccupBookAllocatesNothing(t *testing.T) {
	b := newBook(0, 100*msNs)
	buf := make([]byte, 0, 160)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += msNs
		if c, ok := b.observe(now, msNs/20); ok {
			buf = appendLine(buf[:0], 0, c)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per wake-up", allocs)
	}
}

func TestMonotonicNsNeverGoesBack(t *testing.T) {
	a := monotonicNs()
	b := monotonicNs()
	if a <= 0 || b < a {
		t.Fatalf("CLOCK_MONOTONIC went %d -> %d", a, b)
	}
}
