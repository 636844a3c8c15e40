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
// `loadgen floor ...` is not a client: it runs the hot-symbol section's
// floor server (floor.go), kept in this binary to share its frame code.
// `loadgen hiccup ...` is the bench's host hiccup meter (hiccup.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Latency histogram: 0.1 ms buckets below 100 ms, 1 ms buckets up to 10 s.
const (
	fineBuckets = 1000
	nBuckets    = fineBuckets + 9900 + 1
)

func bucketOf(us int64) int {
	if us < 0 {
		us = 0
	}
	if us < 100_000 {
		return int(us / 100)
	}
	b := fineBuckets + int((us-100_000)/1000)
	if b >= nBuckets {
		b = nBuckets - 1
	}
	return b
}

type stats struct {
	frames, entries, covered, snaps, gaps, dups, errors atomic.Int64
	hist                                                [nBuckets]atomic.Int64
}

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
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" { // the hot section's floor server (floor.go)
		floorMain(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "hiccup" { // the bench's host hiccup meter (hiccup.go)
		hiccupMain(os.Args[2:])
		return
	}
	var o options
	var src string
	flag.StringVar(&o.adapter, "adapter", "wsps", "server protocol: wsps, naive, socketio, pushpin")
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
	gogc := flag.Int("gogc", 100, "GC target percentage (lower: less memory per connection, more GC CPU)")
	flag.Parse()
	debug.SetGCPercent(*gogc)
	o.src = strings.Split(src, ",")

	adapter, err := newAdapter(o.adapter)
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

	st := &stats{}
	sampler := newZipf(o.symbols, o.zipf)
	plans := make([][]string, o.conns)
	planIdx := make([][]int, o.conns)
	readyConn := make([]atomic.Bool, o.conns)
	conns := make([]connState, o.conns)
	for i := range planIdx {
		rng := rand.New(rand.NewSource(o.seed*1_000_003 + int64(o.first+i)))
		idx := sampler.distinct(rng, o.k)
		syms := make([]string, len(idx))
		for j, r := range idx {
			syms[j] = symbolName(r)
		}
		if o.mode != "epoll" { // the epoll mode names them only to subscribe
			plans[i] = syms
		}
		planIdx[i] = idx
	}

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
		hooks := epollHooks{
			connected: func(i int, d time.Duration) {
				connected.Add(1)
				handshake.add(d)
			},
			ready: func(i int) {
				readyConn[i].Store(true)
				readyAt.add(time.Since(start))
				ready.Add(1)
				checkReady()
			},
			failed: func(i int, err error) {
				failed.Add(1)
				st.errors.Add(1)
				if cutCtx.Err() == nil {
					emit(map[string]any{"type": "error", "conn": o.first + i, "error": err.Error()})
				}
				checkReady()
			},
			lost: func(i int, err error) {
				st.errors.Add(1)
				emit(map[string]any{"type": "error", "conn": o.first + i, "error": err.Error()})
			},
		}
		if err := startEpoll(ctx, cutCtx, &o, adapter, st, conns, planIdx, hooks, &wg); err != nil {
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
					c := &client{o: &o, a: adapter, st: st, syms: plans[i], src: o.src[i%len(o.src)], state: &conns[i], subs: newSubs(planIdx[i])}
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
						st.errors.Add(1)
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
						conns[i].closed.Store(true)
						if err != nil && ctx.Err() == nil {
							st.errors.Add(1)
							if !c.subs.ready {
								failed.Add(1)
								checkReady()
							}
							if cutCtx.Err() == nil || c.subs.ready {
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
	prev := snapshot(st)
	for {
		select {
		case <-ctx.Done():
			// Close every socket so the servers see clean closes, then exit.
			wg.Wait()
			emit(map[string]any{"type": "done"})
			return
		case now := <-tick.C:
			cur := snapshot(st)
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

type counters struct {
	frames, entries, covered, snaps, gaps, dups, errors int64
	hist                                                []int64
}

func snapshot(st *stats) counters {
	c := counters{
		frames: st.frames.Load(), entries: st.entries.Load(), covered: st.covered.Load(),
		snaps: st.snaps.Load(), gaps: st.gaps.Load(), dups: st.dups.Load(), errors: st.errors.Load(),
		hist: make([]int64, nBuckets),
	}
	for i := range c.hist {
		c.hist[i] = st.hist[i].Load()
	}
	return c
}

func diff(now time.Time, a, b counters) map[string]any {
	h := map[int]int64{}
	for i := range b.hist {
		if d := b.hist[i] - a.hist[i]; d != 0 {
			h[i] = d
		}
	}
	return map[string]any{
		"type": "tick", "t": now.UnixMilli(),
		"frames": b.frames - a.frames, "entries": b.entries - a.entries, "covered": b.covered - a.covered,
		"snaps": b.snaps - a.snaps, "gaps": b.gaps - a.gaps, "dups": b.dups - a.dups, "errors": b.errors - a.errors,
		"hist": h,
	}
}

type client struct {
	state   *connState
	o       *options
	a       Adapter
	st      *stats
	syms    []string
	src     string
	ws      *websocket.Conn
	subs    subs
	onReady func()
}

var writePool = &sync.Pool{}

func (c *client) dial(ctx context.Context) error {
	local := &net.TCPAddr{IP: net.ParseIP(c.src)}
	d := websocket.Dialer{
		NetDialContext:   (&net.Dialer{LocalAddr: local, Timeout: 30 * time.Second}).DialContext,
		HandshakeTimeout: 30 * time.Second,
		ReadBufferSize:   c.o.readBuffer,
		WriteBufferSize:  512,
		WriteBufferPool:  writePool,
	}
	var err error
	for attempt := 0; attempt <= c.o.dialRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(100*attempt) * time.Millisecond):
			}
		}
		var ws *websocket.Conn
		var resp *http.Response
		ws, resp, err = d.DialContext(ctx, c.o.url+c.a.Path(), nil)
		if err != nil {
			if resp != nil {
				err = fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
			}
			continue
		}
		if err = c.a.Open(ws); err != nil {
			ws.Close()
			continue
		}
		c.ws = ws
		return nil
	}
	return err
}

func (c *client) run(ctx context.Context) error {
	ws := c.ws
	stop := context.AfterFunc(ctx, func() {
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = ws.Close()
	})
	defer stop()
	defer ws.Close()
	if err := c.a.Subscribe(ws, c.syms); err != nil {
		return err
	}
	for {
		mt, r, err := ws.NextReader()
		if err != nil {
			return err
		}
		// A frame buffer from the pool only while a frame is read: an idle
		// connection (most of them, most of the time) holds none.
		bp := framePool.Get().(*[]byte)
		buf := (*bp)[:0]
		err = c.frame(mt, r, &buf)
		*bp = buf
		framePool.Put(bp)
		if err != nil {
			return err
		}
	}
}

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// frame reads one frame into *bufp and accounts for it.
func (c *client) frame(mt int, r io.Reader, bufp *[]byte) error {
	ws := c.ws
	buf := *bufp
	defer func() { *bufp = buf }()
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if mt != websocket.TextMessage {
		return nil
	}
	kind, err := c.a.Classify(ws, buf)
	if err != nil {
		return err
	}
	if c.subs.account(kind, buf, c.st, c.state, c.o.waitSnap) {
		c.onReady()
	}
	return nil
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

func symbolName(rank int) string { return fmt.Sprintf("S%04d", rank) }

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

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}
