// Command loadgen opens many WebSocket subscribers against one server, reads
// every frame, and reports deliveries and publish->client latency as JSON
// lines on stdout (one "ready" line, then one "tick" line per interval).
//
// It stops by itself: when stdin closes (the orchestrator went away) or
// after -max-seconds, whichever comes first.
//
// stdin takes JSON lines (commands.go): "cut" stops connecting (as the
// ready timeout does), "hold" marks the start of a hold, "check" reports
// exactly how many ready connections are still open and how many received
// a quote since the hold mark.
//
// The floor server of the hot-symbol section and the host hiccup meter are
// programs of their own beside this one: cmd/floor, cmd/hiccup.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"wsps/bench/loadgen/internal/account"
	"wsps/bench/loadgen/internal/adapter"
	"wsps/bench/loadgen/internal/epoll"
)

// options are the flags (main says what each one means).
type options struct {
	adapter      string
	url          string
	conns        int
	first        int
	src          []string
	symbols      int
	k            int
	zipf         float64
	seed         int64
	concurrency  int
	reportMs     int
	maxSeconds   int
	waitSnap     bool
	dialRetries  int
	readyTimeout int
	readBuffer   int
	mode         string
	loops        int
	coalesceUs   int
}

func main() {
	var o options
	var src string
	flag.StringVar(&o.adapter, "adapter", "wsps", "server protocol: wsps, wsps-distinct, naive, socketio, pushpin, centrifugo; wsps-books, naive-books: order books at depth 25")
	flag.StringVar(&o.url, "url", "ws://127.0.0.1:8080", "server base URL (the adapter adds its path)")
	flag.IntVar(&o.conns, "conns", 1000, "connections to open")
	flag.IntVar(&o.first, "first", 0, "global index of the first connection (seeds its subscriptions)")
	flag.StringVar(&src, "src", "127.0.0.1", "comma-separated loopback source addresses, used round-robin")
	flag.IntVar(&o.symbols, "symbols", 1000, "symbols in the universe (S0000...)")
	flag.IntVar(&o.k, "k", 10, "symbols per connection")
	flag.Float64Var(&o.zipf, "zipf", 1.0, "popularity skew: P(rank r) ~ 1/(r+1)^zipf")
	flag.Int64Var(&o.seed, "seed", 1, "subscription seed")
	flag.IntVar(&o.concurrency, "concurrency", 64, "handshakes in flight")
	flag.IntVar(&o.reportMs, "report-ms", 1000, "tick interval")
	flag.IntVar(&o.maxSeconds, "max-seconds", 600, "hard stop")
	flag.BoolVar(&o.waitSnap, "wait-snap", true, "a connection is ready when it holds a snapshot of every symbol (else: on ack)")
	flag.IntVar(&o.dialRetries, "dial-retries", 5, "retries of a failed handshake")
	flag.IntVar(&o.readyTimeout, "ready-timeout", 0, "seconds: then report ready with the connections ready so far and close the others (0: wait for all)")
	flag.IntVar(&o.readBuffer, "read-buffer", 2048, "read buffer per connection, bytes (smaller: less memory, more read calls)")
	flag.StringVar(&o.mode, "mode", "goroutine", "goroutine: one goroutine and gorilla connection per connection (every adapter); epoll: event loops over non-blocking sockets, ~1% of the memory per connection (wsps, naive, pushpin)")
	flag.IntVar(&o.loops, "loops", 1, "event loops with -mode=epoll (connections split between them)")
	flag.IntVar(&o.coalesceUs, "coalesce-us", 0, "-mode=epoll: pause this long after a batch of socket events, so one wake-up serves many frames (adds at most this to a measured latency; 0: never)")
	gogc := flag.Int("gogc", 100, "GC target percentage (lower: less memory per connection, more GC CPU)")
	profileDir := flag.String("cpuprofile-dir", "", "write a CPU profile of this process to DIR/loadgen-<pid>.pprof (go tool pprof), from start to a clean exit")
	flag.Parse()
	if flag.NArg() > 0 { // `loadgen floor ...` and `loadgen hiccup ...` are cmd/floor and cmd/hiccup now
		fatal(fmt.Errorf("unexpected argument %q: loadgen takes flags only (the floor and the hiccup meter are the programs floor and hiccup)", flag.Arg(0)))
	}
	debug.SetGCPercent(*gogc)
	if *profileDir != "" {
		f, err := os.Create(filepath.Join(*profileDir, fmt.Sprintf("loadgen-%d.pprof", os.Getpid())))
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		// main returns on a clean exit (stdin closed or -max-seconds).
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	o.src = strings.Split(src, ",")

	adapt, err := adapter.New(o.adapter)
	if err != nil {
		fatal(err)
	}
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	emit := func(v any) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = out.Encode(v)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.maxSeconds)*time.Second)
	defer cancel()
	cmds := make(chan string, 16)
	go func() { // stdin closed: the orchestrator is gone or done with us
		readCommands(os.Stdin, cmds)
		cancel()
	}()

	st := &account.Stats{}
	plans, planIdx := plan(&o)
	readyConn := make([]atomic.Bool, o.conns)
	conns := make([]account.ConnState, o.conns)

	var connected, ready, failed atomic.Int64
	handshake := newSamples(o.conns)
	readyAt := newSamples(o.conns)
	start := time.Now()
	sem := make(chan struct{}, o.concurrency)
	var wg sync.WaitGroup
	allReady := make(chan struct{})
	var readyOnce sync.Once
	checkReady := func() {
		if ready.Load()+failed.Load() == int64(o.conns) {
			readyOnce.Do(func() { close(allReady) })
		}
	}
	// cut: the ready timeout (or the end). Connections not ready by then
	// close, so deliveries are counted only for known subscriptions.
	cutCtx, cut := context.WithCancel(ctx)
	defer cut()
	if o.mode == "epoll" {
		eo := &epoll.Options{
			Adapter: o.adapter, URL: o.url, Src: o.src, First: o.first, DialRetries: o.dialRetries, WaitSnap: o.waitSnap,
			Loops: o.loops, Concurrency: o.concurrency, CoalesceUs: o.coalesceUs, Plan: planIdx, Stats: st, States: conns,
		}
		eo.Hooks = epoll.Hooks{
			Connected: func(i int, d time.Duration) {
				connected.Add(1)
				handshake.add(d)
			},
			Ready: func(i int) {
				readyConn[i].Store(true)
				readyAt.add(time.Since(start))
				ready.Add(1)
				checkReady()
			},
			Failed: func(i int, err error) {
				failed.Add(1)
				st.Errors.Add(1)
				if cutCtx.Err() == nil {
					emit(map[string]any{"type": "error", "conn": o.first + i, "error": err.Error()})
				}
				checkReady()
			},
			Lost: func(i int, err error) {
				st.Errors.Add(1)
				emit(map[string]any{"type": "error", "conn": o.first + i, "error": err.Error()})
			},
			Fatal: fatal,
		}
		if err := epoll.Start(ctx, cutCtx, eo, &wg); err != nil {
			fatal(err)
		}
	} else {
		go func() {
			for i := 0; i < o.conns; i++ {
				select {
				case sem <- struct{}{}:
				case <-cutCtx.Done():
					return
				}
				wg.Add(1)
				go func(i int) {
					c := &client{o: &o, a: adapt, st: st, syms: plans[i], src: o.src[i%len(o.src)], state: &conns[i], subs: account.NewSubs(planIdx[i])}
					released := false
					release := func() {
						if !released {
							released = true
							<-sem
						}
					}
					t0 := time.Now()
					if err := c.dial(cutCtx); err != nil {
						failed.Add(1)
						st.Errors.Add(1)
						emit(map[string]any{"type": "error", "conn": o.first + i, "error": err.Error()})
						checkReady()
						release()
						wg.Done()
						return
					}
					connected.Add(1)
					handshake.add(time.Since(t0))
					// The connection lives on a goroutine of its own: the handshake
					// grew this one's stack (HTTP parsing), which a fresh goroutine
					// does not inherit, and with tens of thousands of idle
					// connections stacks are most of the load generator's memory.
					go func() {
						defer wg.Done()
						defer release()
						ws := c.ws
						stop := context.AfterFunc(cutCtx, func() {
							if !readyConn[i].Load() {
								_ = ws.Close()
							}
						})
						defer stop()
						c.onReady = func() {
							readyConn[i].Store(true)
							readyAt.add(time.Since(start))
							ready.Add(1)
							release()
							checkReady()
						}
						err := c.run(ctx)
						conns[i].Closed.Store(true)
						if err != nil && ctx.Err() == nil {
							st.Errors.Add(1)
							if !c.subs.Ready() {
								failed.Add(1)
								checkReady()
							}
							if cutCtx.Err() == nil || c.subs.Ready() {
								emit(map[string]any{"type": "error", "conn": o.first + i, "error": err.Error()})
							}
						}
					}()
				}(i)
			}
		}()
	}

	var timeout <-chan time.Time
	if o.readyTimeout > 0 {
		timeout = time.After(time.Duration(o.readyTimeout) * time.Second)
	}
wait:
	for {
		select {
		case <-allReady:
			break wait
		case <-ctx.Done():
			break wait
		case <-timeout:
			cut()
			break wait
		case cmd := <-cmds:
			if cmd == "cut" {
				cut()
				break wait
			}
		}
	}
	subsPerSymbol := make([]int, o.symbols)
	for i := range planIdx {
		if readyConn[i].Load() {
			for _, r := range planIdx[i] {
				subsPerSymbol[r]++
			}
		}
	}
	emit(map[string]any{
		"type":          "ready",
		"conns":         ready.Load(),
		"failed":        int64(o.conns) - ready.Load(),
		"elapsedMs":     ms(time.Since(start)),
		"handshakeMs":   handshake.summary(),
		"readyMs":       readyAt.summary(),
		"subsPerSymbol": subsPerSymbol,
	})

	tick := time.NewTicker(time.Duration(o.reportMs) * time.Millisecond)
	defer tick.Stop()
	prev := st.Snapshot()
	for {
		select {
		case <-ctx.Done():
			// Close every socket so the servers see clean closes, then exit.
			wg.Wait()
			emit(map[string]any{"type": "done"})
			return
		case now := <-tick.C:
			cur := st.Snapshot()
			emit(diff(now, prev, cur))
			prev = cur
		case cmd := <-cmds:
			switch cmd {
			case "hold":
				holdMark.Store(time.Now().UnixMicro())
				emit(map[string]any{"type": "hold", "t": time.Now().UnixMilli()})
			case "check":
				emit(check(o.first, readyConn, conns))
			}
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}
