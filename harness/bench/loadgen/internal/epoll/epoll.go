//go:build linux

// Package epoll is the load generator's -mode=epoll: every connection of
// the process on one event loop (or -loops of them), non-blocking sockets
// and one shared read buffer per loop. A connection is a small struct (~150
// bytes at K = 3) instead of a goroutine with its stack, a gorilla Conn and
// the net poller's descriptor (~10 KiB): the load generator's memory is what
// bounds how many connections one machine holds with both ends on it
// (docs/capacity.md).
//
// It speaks the adapters whose client only subscribes (wsps, wsps-distinct,
// naive, pushpin); Socket.IO's and Centrifugo's handshakes and pings stay in
// the goroutine mode.
package epoll

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"wsps/bench/loadgen/internal/account"
	"wsps/bench/loadgen/internal/adapter"
	"wsps/bench/loadgen/internal/wsframe"
)

// Options are what every loop of one run shares. Nothing here changes them.
type Options struct {
	Adapter     string   // -adapter: wsps, wsps-distinct, naive, pushpin, wsps-books or naive-books (a client that only subscribes)
	URL         string   // -url: a ws:// base URL; the adapter adds its path
	Src         []string // -src: IPv4 source addresses; connection i dials from Src[i%len(Src)]
	First       int      // -first: global index of connection 0 (names its Sec-WebSocket-Key)
	DialRetries int      // -dial-retries: retries of a failed connect or upgrade
	WaitSnap    bool     // -wait-snap: ready only once a snapshot of every planned symbol is held
	Loops       int      // -loops: event loops the connections are split between (Start)
	Concurrency int      // -concurrency: handshakes in flight, split between the loops (Start)
	CoalesceUs  int      // -coalesce-us: after a batch of events, wait this long before the next epoll_wait (0: never)

	Plan   [][]int             // each connection's symbol ranks: len(Plan) connections
	Stats  *account.Stats      // the process's counters
	States []account.ConnState // one per connection, for the per-connection check
	Hooks  Hooks
}

// Hooks tell the caller what happened to connection i (its index in Plan).
type Hooks struct {
	Connected func(i int, d time.Duration) // upgraded, d after its first dial
	Ready     func(i int)                  // acked with its snapshots
	Failed    func(i int, err error)       // never became ready
	Lost      func(i int, err error)       // closed after it became ready
	Fatal     func(err error)              // a loop stopped (epoll_wait failed): the run cannot go on (Start)
}

// The kernel's software receive timestamps (linux/net_tstamp.h): asked
// for with SO_TIMESTAMPING, they come back with each read as an
// SCM_TIMESTAMPING control message of three timespecs, the first one the
// software stamp.
const (
	soTimestamping  = 37 // SO_TIMESTAMPING (SO_TIMESTAMPING_OLD on 64-bit)
	scmTimestamping = soTimestamping
	sofRxSoftware   = 1 << 3
	sofSoftware     = 1 << 4
	cmsgHeaderLen   = 16 // struct cmsghdr on 64-bit Linux: len uint64, level, type int32
)

// rxTimestampUs finds the software receive timestamp (unix µs) in a read's
// control messages, without allocating (the read loop's hot path).
func rxTimestampUs(oob []byte) (int64, bool) {
	for len(oob) >= cmsgHeaderLen {
		n := int(binary.LittleEndian.Uint64(oob[0:8]))
		if n < cmsgHeaderLen || n > len(oob) {
			return 0, false
		}
		level := int32(binary.LittleEndian.Uint32(oob[8:12]))
		typ := int32(binary.LittleEndian.Uint32(oob[12:16]))
		if level == syscall.SOL_SOCKET && typ == scmTimestamping && n >= cmsgHeaderLen+16 {
			sec := int64(binary.LittleEndian.Uint64(oob[16:24]))
			nsec := int64(binary.LittleEndian.Uint64(oob[24:32]))
			if sec == 0 && nsec == 0 {
				return 0, false
			}
			return sec*1_000_000 + nsec/1000, true
		}
		oob = oob[(n+7)&^7:]
	}
	return 0, false
}

// LoopOptions are one loop's share of a run (Start makes one per loop).
type LoopOptions struct {
	*Options
	Lo, Hi   int          // its connections: [Lo, Hi) of Plan
	MaxDials int          // handshakes in flight (started, not ready)
	Cut      *atomic.Bool // set: stop connecting, close what is not ready
	Stop     *atomic.Bool // set: close everything and return
}

// Connection states.
const (
	stIdle       = iota // not started
	stConnecting        // TCP connect in progress (waiting for writable)
	stUpgrading         // upgrade request sent, reading the answer
	stOpen              // WebSocket open
	stRetry             // a failed attempt, redialled at deadline
	stDone              // closed for good
)

// econn is one connection's whole state in epoll mode.
type econn struct {
	fd       int32
	state    uint8
	attempts uint8
	msgOp    byte         // opcode of the fragmented message being reassembled
	subs     account.Subs // what it holds
	in       []byte       // an incomplete frame or upgrade answer; nil when none
	msg      []byte       // a fragmented message so far; nil when none
	out      []byte       // bytes the socket did not take; nil when none
	startUs  int64        // first dial (handshake time)
	deadline int64        // unix µs: this attempt's timeout, or when to redial
}

// Loop owns connections [Lo, Hi) of the process.
type Loop struct {
	o        LoopOptions
	a        adapter.Adapter
	subMode  string // the sub frame's delivery mode ("" for the server's default)
	books    bool   // subscribes to order books (wsps-books, naive-books), not quotes
	next     int    // next connection to start
	inflight map[int]struct{}
	conns    []econn
	ep       int
	dst      syscall.SockaddrInet4
	src      [][4]byte
	host     string
	path     string
	buf      []byte // shared read buffer
	oob      []byte // a read's control messages: the kernel's receive timestamp
	texts    int64  // text frames read so far: a read's share of Stats.Wait
	rxUs     int64  // the current read's receive timestamp (unix µs; 0: none)
	wbuf     []byte // frame being written
	rng      *rand.Rand
}

const (
	dialTimeout = 30 * time.Second
	tickUs      = 100_000 // epoll_wait timeout: cut/stop/timeouts latency
)

// NewLoop makes one loop; Run turns it.
func NewLoop(o LoopOptions) (*Loop, error) {
	switch o.Adapter {
	case "wsps", "wsps-distinct", "naive", "pushpin", "wsps-books", "naive-books":
	default:
		return nil, fmt.Errorf("-mode=epoll does not speak -adapter=%s (use -mode=goroutine)", o.Adapter)
	}
	a, err := adapter.New(o.Adapter)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(o.URL + a.Path())
	if err != nil || u.Scheme != "ws" {
		return nil, fmt.Errorf("-mode=epoll needs a ws:// URL, got %q", o.URL)
	}
	addr, err := net.ResolveTCPAddr("tcp4", u.Host)
	if err != nil {
		return nil, err
	}
	o.MaxDials = max(1, o.MaxDials)
	l := &Loop{
		o: o, a: a, next: o.Lo, inflight: map[int]struct{}{}, conns: make([]econn, o.Hi-o.Lo),
		dst: syscall.SockaddrInet4{Port: addr.Port}, host: u.Host, path: u.RequestURI(),
		buf: make([]byte, 64<<10), oob: make([]byte, 128), rng: rand.New(rand.NewSource(int64(o.Lo))),
	}
	if o.Adapter == "wsps-distinct" {
		l.subMode = "distinct"
	}
	l.books = o.Adapter == "wsps-books" || o.Adapter == "naive-books"
	copy(l.dst.Addr[:], addr.IP.To4())
	for _, s := range o.Src {
		ip := net.ParseIP(s).To4()
		if ip == nil {
			return nil, fmt.Errorf("-src: %q is not an IPv4 address", s)
		}
		l.src = append(l.src, [4]byte(ip))
	}
	for i := range l.conns {
		l.conns[i].fd = -1
		l.conns[i].subs = account.NewSubs(o.Plan[o.Lo+i])
	}
	if l.ep, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	return l, nil
}

// Run turns the loop until Stop, then closes every connection with 1000.
// An error is epoll_wait's: the loop stopped there, its connections as they were.
func (l *Loop) Run() error {
	defer syscall.Close(l.ep)
	events := make([]syscall.EpollEvent, 256)
	lastSweep := int64(0)
	cutDone := false
	for !l.o.Stop.Load() {
		if l.o.Cut.Load() && !cutDone {
			cutDone = true
			l.cutPending()
		}
		if !cutDone {
			for l.next < l.o.Hi && len(l.inflight) < l.o.MaxDials {
				i := l.next
				l.next++
				l.inflight[i] = struct{}{}
				l.conns[i-l.o.Lo].startUs = time.Now().UnixMicro()
				l.dial(i)
			}
		}
		n, err := syscall.EpollWait(l.ep, events, tickUs/1000)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:max(n, 0)] {
			l.event(int(ev.Fd), ev.Events)
		}
		// A loop that wakes for every frame spends most of its core on
		// wake-ups and one small read each (the load core is shared with
		// Redis and the publisher). Waiting a little after a batch lets
		// frames pile up in the socket buffers: one wake-up then serves many
		// sockets and one read takes several frames. It adds at most
		// CoalesceUs to a measured latency; a full batch means more are
		// already waiting, so no pause then.
		if l.o.CoalesceUs > 0 && n > 0 && n < len(events) {
			time.Sleep(time.Duration(l.o.CoalesceUs) * time.Microsecond)
		}
		if now := time.Now().UnixMicro(); now-lastSweep >= tickUs {
			lastSweep = now
			l.sweep(now)
		}
	}
	for i := range l.conns {
		c := &l.conns[i]
		if c.state == stOpen {
			l.write(i+l.o.Lo, wsframe.OpClose, wsframe.ClosePayload(1000, ""))
		}
		l.finish(i+l.o.Lo, nil)
	}
	return nil
}

func (l *Loop) conn(i int) *econn { return &l.conns[i-l.o.Lo] }

// dial starts one attempt: a non-blocking connect from the connection's
// source address (a port of that address per connection, as Go's dialer).
func (l *Loop) dial(i int) {
	c := l.conn(i)
	c.attempts++
	c.deadline = time.Now().Add(dialTimeout).UnixMicro()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		l.attemptFailed(i, fmt.Errorf("dial: socket: %w", err))
		return
	}
	c.fd = int32(fd)
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	// Each read then carries when its last segment reached the socket
	// (Stats.Wait, Stats.Arrived); without it the reads carry none and
	// both stay empty.
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soTimestamping, sofRxSoftware|sofSoftware)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: l.src[i%len(l.src)]}); err != nil {
		l.attemptFailed(i, fmt.Errorf("dial: bind: %w", err))
		return
	}
	if err := syscall.Connect(fd, &l.dst); err != nil && !errors.Is(err, syscall.EINPROGRESS) {
		l.attemptFailed(i, fmt.Errorf("dial: connect: %w", err))
		return
	}
	c.state = stConnecting
	if err := l.ctl(syscall.EPOLL_CTL_ADD, i, syscall.EPOLLOUT); err != nil {
		l.attemptFailed(i, fmt.Errorf("dial: epoll: %w", err))
	}
}

func (l *Loop) ctl(op, i int, events uint32) error {
	return syscall.EpollCtl(l.ep, op, int(l.conn(i).fd), &syscall.EpollEvent{Events: events, Fd: int32(i)})
}

func (l *Loop) closeFd(c *econn) {
	if c.fd >= 0 {
		_ = syscall.Close(int(c.fd)) // also leaves the epoll set
		c.fd = -1
	}
	c.in, c.msg, c.out = nil, nil, nil
}

// attemptFailed retries a dial or upgrade after 100 ms × attempts (as the
// goroutine mode does), or gives the connection up.
func (l *Loop) attemptFailed(i int, err error) {
	c := l.conn(i)
	l.closeFd(c)
	if int(c.attempts) <= l.o.DialRetries && !l.o.Cut.Load() {
		c.state = stRetry
		c.deadline = time.Now().UnixMicro() + int64(c.attempts)*100_000
		return
	}
	l.finish(i, err)
}

// finish closes connection i for good and tells main why (err nil: our own stop).
func (l *Loop) finish(i int, err error) {
	c := l.conn(i)
	if c.state == stDone {
		return
	}
	wasStarted := c.state != stIdle
	l.closeFd(c)
	c.state = stDone
	delete(l.inflight, i)
	if !wasStarted {
		return
	}
	l.o.States[i].Closed.Store(true)
	if err == nil {
		return
	}
	if c.subs.Ready() {
		l.o.Hooks.Lost(i, err)
	} else {
		l.o.Hooks.Failed(i, err)
	}
}

// cutPending closes the connections that are not ready (the ready timeout
// or "cut"): deliveries are then counted only for known subscriptions.
func (l *Loop) cutPending() {
	for i := range l.inflight {
		l.finish(i, errors.New("context canceled"))
	}
}

// sweep redials what waited its turn and times out slow handshakes.
func (l *Loop) sweep(now int64) {
	for i := range l.inflight {
		c := l.conn(i)
		if now < c.deadline {
			continue
		}
		switch c.state {
		case stRetry:
			l.dial(i)
		case stConnecting, stUpgrading:
			l.attemptFailed(i, errors.New("dial: i/o timeout"))
		}
	}
}

func (l *Loop) event(i int, events uint32) {
	if i < l.o.Lo || i >= l.o.Hi {
		return
	}
	c := l.conn(i)
	switch c.state {
	case stConnecting:
		l.connected(i)
	case stUpgrading, stOpen:
		if events&syscall.EPOLLOUT != 0 && len(c.out) > 0 {
			l.flush(i)
		}
		if events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
			l.readable(i)
		}
	}
}

// connected: the TCP connect finished (or failed); send the upgrade.
func (l *Loop) connected(i int) {
	c := l.conn(i)
	soErr, err := syscall.GetsockoptInt(int(c.fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
	if err == nil && soErr != 0 {
		err = syscall.Errno(soErr)
	}
	if err != nil {
		l.attemptFailed(i, fmt.Errorf("dial: connect: %w", err))
		return
	}
	c.state = stUpgrading
	if err := l.ctl(syscall.EPOLL_CTL_MOD, i, syscall.EPOLLIN); err != nil {
		l.attemptFailed(i, err)
		return
	}
	l.send(i, wsframe.UpgradeRequest(l.host, l.path, wsframe.Key(l.o.First+i)))
}

// readable drains the socket through the shared buffer.
func (l *Loop) readable(i int) {
	c := l.conn(i)
	for c.state == stUpgrading || c.state == stOpen {
		n, oobn, _, _, err := syscall.Recvmsg(int(c.fd), l.buf, l.oob, 0)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			return
		}
		if err != nil || n == 0 {
			if err == nil {
				err = errors.New("unexpected EOF")
			}
			if c.state == stUpgrading {
				l.attemptFailed(i, fmt.Errorf("websocket: handshake: %w", err))
			} else {
				l.finish(i, fmt.Errorf("read: %w", err))
			}
			return
		}
		l.rxUs, _ = rxTimestampUs(l.oob[:oobn])
		texts := l.texts
		l.consume(i, l.buf[:n])
		if read := l.texts - texts; read > 0 && l.rxUs != 0 {
			l.o.Stats.Wait[account.BucketOf(time.Now().UnixMicro()-l.rxUs)].Add(read)
		}
		if n < len(l.buf) {
			return
		}
	}
}

// consume parses what a read returned, after what an earlier read left.
func (l *Loop) consume(i int, b []byte) {
	c := l.conn(i)
	if len(c.in) > 0 {
		c.in = append(c.in, b...)
		b = c.in
	}
	off := 0
	if c.state == stUpgrading {
		n, err := wsframe.UpgradeResponse(b, wsframe.Key(l.o.First+i))
		if err != nil {
			l.attemptFailed(i, err)
			return
		}
		if n == 0 {
			l.keep(c, b, 0)
			return
		}
		off = n
		c.state = stOpen
		l.o.Hooks.Connected(i, time.Duration(time.Now().UnixMicro()-c.startUs)*time.Microsecond)
		names := make([]string, len(c.subs.Plan()))
		for j, r := range c.subs.Plan() {
			names[j] = account.SymbolName(r)
		}
		sub := adapter.SubFrame(names, l.subMode)
		if l.books {
			sub = adapter.BookSubFrame(names, adapter.BookDepth)
		}
		if !l.write(i, wsframe.OpText, sub) {
			return
		}
	}
	for c.state == stOpen {
		f, n, err := wsframe.Parse(b[off:])
		if err != nil {
			l.finish(i, err)
			return
		}
		if n == 0 {
			break
		}
		off += n
		if !l.onFrame(i, f) {
			return
		}
	}
	l.keep(c, b, off)
}

// keep holds the unparsed tail b[off:] for the next read (nil when none,
// so an idle connection holds no buffer).
func (l *Loop) keep(c *econn, b []byte, off int) {
	rest := len(b) - off
	switch {
	case rest == 0:
		c.in = nil
	case len(c.in) > 0 && &b[0] == &c.in[0]:
		c.in = c.in[:copy(c.in, b[off:])]
	default:
		c.in = append(make([]byte, 0, rest), b[off:]...)
	}
}

// onFrame handles one frame; false when the connection closed.
func (l *Loop) onFrame(i int, f wsframe.Frame) bool {
	c := l.conn(i)
	switch f.Op {
	case wsframe.OpPing:
		return l.write(i, wsframe.OpPong, f.Payload)
	case wsframe.OpPong:
		return true
	case wsframe.OpClose:
		code := 1005
		if len(f.Payload) >= 2 {
			code = int(f.Payload[0])<<8 | int(f.Payload[1])
		}
		if code != 1005 {
			l.write(i, wsframe.OpClose, wsframe.ClosePayload(code, ""))
		} else {
			l.write(i, wsframe.OpClose, nil)
		}
		l.finish(i, wsframe.CloseError(f.Payload))
		return false
	case wsframe.OpText, wsframe.OpBinary:
		if c.msg != nil {
			l.finish(i, errors.New("websocket: data frame inside a fragmented message"))
			return false
		}
		if f.Fin {
			return l.message(i, f.Op, f.Payload)
		}
		c.msgOp = f.Op
		c.msg = append(make([]byte, 0, 2*len(f.Payload)), f.Payload...)
		return true
	case wsframe.OpContinuation:
		if c.msg == nil {
			l.finish(i, errors.New("websocket: continuation without a message"))
			return false
		}
		if len(c.msg)+len(f.Payload) > wsframe.MaxFrame {
			l.finish(i, wsframe.ErrFrameTooBig)
			return false
		}
		c.msg = append(c.msg, f.Payload...)
		if !f.Fin {
			return true
		}
		msg := c.msg
		c.msg = nil
		return l.message(i, c.msgOp, msg)
	}
	l.finish(i, fmt.Errorf("websocket: unknown opcode %d", f.Op))
	return false
}

// message accounts for one whole text message; false when it closed the connection.
func (l *Loop) message(i int, op byte, d []byte) bool {
	if op != wsframe.OpText {
		return true
	}
	l.texts++
	c := l.conn(i)
	kind, err := l.a.Classify(nil, d)
	if err != nil {
		l.finish(i, err)
		return false
	}
	if c.subs.Apply(kind, d, l.o.Stats, &l.o.States[i], l.o.WaitSnap, l.rxUs) {
		delete(l.inflight, i)
		l.o.Hooks.Ready(i)
	}
	return true
}

// write sends one masked frame; false when the connection closed.
func (l *Loop) write(i int, op byte, payload []byte) bool {
	var mask [4]byte
	l.rng.Read(mask[:])
	l.wbuf = wsframe.AppendClient(l.wbuf[:0], op, payload, mask)
	return l.send(i, l.wbuf)
}

// send writes b, or queues what the socket did not take until it is
// writable; false when the connection closed.
func (l *Loop) send(i int, b []byte) bool {
	c := l.conn(i)
	if len(c.out) > 0 {
		c.out = append(c.out, b...)
		return true
	}
	n, err := syscall.Write(int(c.fd), b)
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		l.finish(i, fmt.Errorf("write: %w", err))
		return false
	}
	if n = max(n, 0); n < len(b) {
		c.out = append([]byte(nil), b[n:]...)
		if err := l.ctl(syscall.EPOLL_CTL_MOD, i, syscall.EPOLLIN|syscall.EPOLLOUT); err != nil {
			l.finish(i, err)
			return false
		}
	}
	return true
}

func (l *Loop) flush(i int) {
	c := l.conn(i)
	n, err := syscall.Write(int(c.fd), c.out)
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		l.finish(i, fmt.Errorf("write: %w", err))
		return
	}
	if c.out = c.out[max(n, 0):]; len(c.out) == 0 {
		c.out = nil
		if err := l.ctl(syscall.EPOLL_CTL_MOD, i, syscall.EPOLLIN); err != nil {
			l.finish(i, err)
		}
	}
}

// Start splits the connections of o.Plan between o.Loops event loops and
// runs them: they stop connecting when cutCtx ends and close everything
// when ctx ends (wg then returns).
func Start(ctx, cutCtx context.Context, o *Options, wg *sync.WaitGroup) error {
	var cut, stop atomic.Bool
	context.AfterFunc(cutCtx, func() { cut.Store(true) })
	context.AfterFunc(ctx, func() { stop.Store(true) })
	conns := len(o.Plan)
	n := max(1, min(o.Loops, conns))
	loops := make([]*Loop, 0, n)
	for k := 0; k < n; k++ {
		l, err := NewLoop(LoopOptions{Options: o, Lo: conns * k / n, Hi: conns * (k + 1) / n, MaxDials: o.Concurrency / n, Cut: &cut, Stop: &stop})
		if err != nil {
			return err
		}
		loops = append(loops, l)
	}
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Run(); err != nil {
				o.Hooks.Fatal(err)
			}
		}()
	}
	return nil
}
