//go:build linux

// Command hiccup is the bench's host hiccup meter (internal/hiccup): one
// per core, pinned there by the caller (taskset), at SCHED_FIFO priority.
//
//	hiccup -core=1 [-interval-ms=100] [-sleep-us=1000] [-rt=50] [-max-seconds=7200]
//
// Prints {"type":"ready","core":N,"rt":true|false,"rtError":"..."} and then,
// for every interval, one line
//
//	{"type":"hiccup","core":N,"tUs":T,"atUs":A,"maxUs":M,"n":W}
//
// (internal/hiccup says what they mean). When SCHED_FIFO is refused it runs
// at normal priority and says why in rtError: then it also sees the load of
// whatever shares its core.
//
// Ends when stdin closes or after -max-seconds.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"wsps/bench/loadgen/internal/hiccup"
)

func main() {
	fs := flag.NewFlagSet("hiccup", flag.ExitOnError)
	core := fs.Int("core", -1, "the core it is pinned to (only reported: pin it with taskset)")
	intervalMs := fs.Int("interval-ms", 100, "report the max lateness of each interval this long")
	sleepUs := fs.Int("sleep-us", 1000, "sleep this long between wake-ups")
	rt := fs.Int("rt", 50, "SCHED_FIFO priority (0: stay at normal priority)")
	maxSeconds := fs.Int("max-seconds", 7200, "hard stop")
	_ = fs.Parse(os.Args[1:])

	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1) // the loop allocates nothing: no collector to wait for
	runtime.LockOSThread()
	rtError := "not asked (-rt=0)"
	if *rt > 0 {
		rtError = ""
		if err := hiccup.SetFIFO(*rt); err != nil {
			rtError = err.Error()
		}
	}
	ready, _ := json.Marshal(map[string]any{"type": "ready", "core": *core, "rt": rtError == "", "rtError": rtError, "intervalMs": *intervalMs, "sleepUs": *sleepUs})
	os.Stdout.Write(append(ready, '\n'))
	go func() { // the orchestrator went away
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	hiccup.Run(hiccup.Options{Core: *core, IntervalMs: *intervalMs, SleepUs: *sleepUs, MaxSeconds: *maxSeconds}, os.Stdout)
}
