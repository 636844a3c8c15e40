//go:build linux

// Command floor is the floor server of the bench's hot-symbol section
// (internal/floor: one thread, one pre-built frame per quote, one write()
// per subscriber), fed by the bench's Redis publisher.
//
//	floor -port=8090 -redis=redis://127.0.0.1:6379 -prefix=wsps
//
// Prints {"type":"listening","port":N} when it takes connections; ends on
// SIGTERM (the default action: nothing to drain).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"wsps/bench/loadgen/internal/floor"
)

func main() {
	var o floor.Options
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	fs.IntVar(&o.Port, "port", 8090, "listen on 127.0.0.1:port")
	fs.StringVar(&o.Redis, "redis", "redis://127.0.0.1:6379", "Redis the bench's publisher publishes on")
	fs.StringVar(&o.Prefix, "prefix", "wsps", "key prefix of the quote stream")
	_ = fs.Parse(os.Args[1:])
	// One thread does the work: the loop never blocks in Go's scheduler, so
	// with one P nothing else runs beside it but the runtime.
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	s, err := floor.New(o)
	if err != nil {
		fatal(err)
	}
	fmt.Printf("{\"type\":\"listening\",\"port\":%d}\n", o.Port)
	fatal(s.Run())
}

// fatal ends the floor with exit status 2. Its errors read "loadgen: ..." as
// they did when the floor was the `floor` command of the loadgen binary.
func fatal(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}
