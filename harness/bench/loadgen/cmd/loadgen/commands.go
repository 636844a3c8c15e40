package main

// Commands on stdin and the exact per-connection check of `make capacity`:
// no sampling, every connection's own state is counted.

import (
	"bufio"
	"encoding/json"
	"io"
	"runtime"
	"sync/atomic"

	"wsps/bench/loadgen/internal/account"
)

// holdMark is the start of the hold (unix µs); 0 until "hold".
var holdMark atomic.Int64

// readCommands forwards {"cmd": "..."} lines from r until it closes. Lines
// that are not commands are ignored: the orchestrator is the only writer.
func readCommands(r io.Reader, out chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var m struct {
			Cmd string `json:"cmd"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Cmd != "" {
			out <- m.Cmd
		}
	}
}

// maxListed bounds the connection numbers a check names (the counts are exact).
const maxListed = 20

// check counts, over the connections that became ready: those still open,
// and those that received at least one quote frame since the hold mark.
// Their snapshot was checked when they became ready (-wait-snap).
func check(first int, ready []atomic.Bool, conns []account.ConnState) map[string]any {
	mark := holdMark.Load()
	var nReady, open, quoted int64
	lost := []int{}
	unquoted := []int{}
	for i := range conns {
		if !ready[i].Load() {
			continue
		}
		nReady++
		if conns[i].Closed.Load() {
			if len(lost) < maxListed {
				lost = append(lost, first+i)
			}
		} else {
			open++
		}
		if mark > 0 && conns[i].LastQuoteUs.Load() >= mark {
			quoted++
		} else if len(unquoted) < maxListed {
			unquoted = append(unquoted, first+i)
		}
	}
	// Where the load generator's own memory goes (its RSS per connection
	// is what bounds one machine): goroutine stacks vs heap.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return map[string]any{
		"type": "check", "ready": nReady, "open": open, "quoted": quoted,
		"lost": lost, "unquoted": unquoted,
		"mem": map[string]any{
			"stackInuse": ms.StackInuse, "heapInuse": ms.HeapInuse, "heapAlloc": ms.HeapAlloc,
			"sys": ms.Sys, "goroutines": runtime.NumGoroutine(),
		},
	}
}
