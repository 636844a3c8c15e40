//go:build linux

package main

// `loadgen floor`: the floor of the bench's hot-symbol section, the least
// work any server can do for it. One OS thread runs one epoll loop over
// non-blocking sockets; for every quote it builds one WebSocket text frame
// ({"op":"q","quotes":[<the published JSON as is>]}) and writes it to every
// connection subscribed to its symbol with one write() each. No goroutine
// per connection, no per-connection encoding, no batching, no heartbeat, no
// limits: what is left is the kernel's work per write, which no server can
// avoid when each reader must get each quote.
//
// Its quotes come from the bench's one Redis publisher, like every other
// server's (one PSUBSCRIBE to <prefix>:{*}:q, on a raw socket in the same
// loop), so the offered load, the publish timestamp each quote carries and
// the loadgen's latency and delivery counts are exactly those of the other
// servers. It speaks the wsps frames the naive adapter reads: a sub gets an
// ack and a snapshot (the latest quote seen on the stream, or the symbol's
// Redis key before the first), then `q` frames.
//
//   loadgen floor -port=8090 -redis=redis://127.0.0.1:6379 -prefix=wsps
//
// Prints {"type":"listening","port":N} when it takes connections; ends on
// SIGTERM (the default action: nothing to drain).

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"syscall"
	"unsafe"
)

// maxOut bounds what one connection may owe (bytes the socket did not take):
// a reader that far behind is closed, as every real server must.
const maxOut = 1 << 20

type floorConn struct {
	fd     int
	open   bool          // upgraded
	dead   bool          // closed at the end of this batch of events
	in     []byte        // an incomplete request or frame; nil when none
	out    []byte        // bytes the socket did not take; nil when none
	topics []*floorTopic // what it subscribed to
}

type floorTopic struct {
	symbol string
	conns  []*floorConn
	last   []byte // the latest quote seen (the snapshot); nil before the first
}

type floorServer struct {
	prefix  string
	ep, lfd int
	sub     int    // the PSUBSCRIBE connection (non-blocking, in the loop)
	cmd     int    // a blocking connection for GET (subscribes only)
	subIn   []byte // pushes not parsed yet
	conns   map[int]*floorConn
	topics  map[string]*floorTopic
	buf     []byte
	frame   []byte
	dead    []*floorConn
}

func floorMain(args []string) {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	port := fs.Int("port", 8090, "listen on 127.0.0.1:port")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379", "Redis the bench's publisher publishes on")
	prefix := fs.String("prefix", "wsps", "key prefix of the quote stream")
	_ = fs.Parse(args)
	// One thread does the work: the loop below never blocks in Go's
	// scheduler, so with one P nothing else runs beside it but the runtime.
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	s, err := newFloor(*port, *redisURL, *prefix)
	if err != nil {
		fatal(err)
	}
	fmt.Printf("{\"type\":\"listening\",\"port\":%d}\n", *port)
	fatal(s.run())
}

func newFloor(port int, redisURL, prefix string) (*floorServer, error) {
	s := &floorServer{prefix: prefix, conns: map[int]*floorConn{}, topics: map[string]*floorTopic{}, buf: make([]byte, 256<<10)}
	u, err := url.Parse(redisURL)
	if err != nil {
		return nil, err
	}
	addr, err := net.ResolveTCPAddr("tcp4", u.Host)
	if err != nil {
		return nil, err
	}
	if s.cmd, err = dialBlocking(addr); err != nil {
		return nil, err
	}
	if s.sub, err = dialBlocking(addr); err != nil {
		return nil, err
	}
	// Subscribed before the first client can ask: no quote is missed
	// between an ack and a subscription.
	if _, err := s.request(s.sub, respCommand("PSUBSCRIBE", prefix+":{*}:q")); err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(s.sub, true); err != nil {
		return nil, err
	}
	if s.lfd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0); err != nil {
		return nil, err
	}
	_ = syscall.SetsockoptInt(s.lfd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err := syscall.Bind(s.lfd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, err
	}
	if err := syscall.Listen(s.lfd, 4096); err != nil {
		return nil, err
	}
	if s.ep, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	for _, fd := range []int{s.lfd, s.sub} {
		if err := syscall.EpollCtl(s.ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// dialBlocking is a blocking TCP socket to addr, outside Go's poller (the
// loop owns its descriptors).
func dialBlocking(addr *net.TCPAddr) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	sa := &syscall.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("floor: redis %s: %w", addr, err)
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	return fd, nil
}

// request writes cmd on the blocking connection fd and reads one reply.
func (s *floorServer) request(fd int, cmd []byte) ([][]byte, error) {
	if err := writeAll(fd, cmd); err != nil {
		return nil, err
	}
	var in []byte
	for {
		n, err := syscall.Read(fd, s.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return nil, fmt.Errorf("floor: redis read: %v", err)
		}
		in = append(in, s.buf[:n]...)
		vals, m, err := parseResp(in)
		if err != nil || m > 0 {
			return vals, err
		}
	}
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (s *floorServer) run() error {
	events := make([]syscall.EpollEvent, 512)
	for {
		n, err := syscall.EpollWait(s.ep, events, -1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			switch fd := int(ev.Fd); fd {
			case s.lfd:
				s.accept()
			case s.sub:
				if err := s.quotes(); err != nil {
					return err
				}
			default:
				if c := s.conns[fd]; c != nil && !c.dead {
					if ev.Events&syscall.EPOLLOUT != 0 {
						s.flush(c)
					}
					if ev.Events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 && !c.dead {
						s.readable(c)
					}
				}
			}
		}
		// Closed only now: a descriptor is never reused within one batch,
		// and no topic's list changes while a fan-out walks it.
		for _, c := range s.dead {
			s.remove(c)
		}
		s.dead = s.dead[:0]
	}
}

func (s *floorServer) accept() {
	for {
		fd, _, err := syscall.Accept4(s.lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN: all taken; anything else: the next event retries
		}
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if syscall.EpollCtl(s.ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}) != nil {
			syscall.Close(fd)
			continue
		}
		s.conns[fd] = &floorConn{fd: fd}
	}
}

// quotes reads the pub/sub stream and fans every complete quote out.
func (s *floorServer) quotes() error {
	n, err := syscall.Read(s.sub, s.buf)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return nil
	}
	if err != nil || n == 0 {
		return fmt.Errorf("floor: redis subscription closed: %v", err)
	}
	in := s.buf[:n]
	if len(s.subIn) > 0 {
		in = append(s.subIn, in...)
	}
	off := 0
	for {
		vals, m, err := parseResp(in[off:])
		if err != nil {
			return err
		}
		if m == 0 {
			break
		}
		off += m
		// pmessage, pattern, channel, payload
		if len(vals) == 4 && string(vals[0]) == "pmessage" {
			s.fanOut(vals[2], vals[3])
		}
	}
	s.subIn = append(s.subIn[:0], in[off:]...)
	return nil
}

// fanOut is the whole per-quote work: one frame, one write per subscriber.
func (s *floorServer) fanOut(channel, quote []byte) {
	sym := symbolOfChannel(s.prefix, channel)
	if sym == nil {
		return
	}
	t := s.topics[string(sym)]
	if t == nil {
		return
	}
	t.last = append(t.last[:0], quote...)
	s.frame = quoteFrame(s.frame, quote)
	for _, c := range t.conns {
		s.send(c, s.frame)
	}
}

// send writes b with one write(); what the socket does not take waits in
// the connection's outbox (in order) until it is writable.
func (s *floorServer) send(c *floorConn, b []byte) {
	if c.dead {
		return
	}
	if len(c.out) > 0 {
		if len(c.out)+len(b) > maxOut {
			s.kill(c)
			return
		}
		c.out = append(c.out, b...)
		return
	}
	n, err := write(c.fd, b)
	if errors.Is(err, syscall.EAGAIN) {
		n, err = 0, nil
	}
	if err != nil {
		s.kill(c)
		return
	}
	if n < len(b) {
		c.out = append(c.out, b[n:]...)
		_ = syscall.EpollCtl(s.ep, syscall.EPOLL_CTL_MOD, c.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT, Fd: int32(c.fd)})
	}
}

func (s *floorServer) flush(c *floorConn) {
	n, err := write(c.fd, c.out)
	if errors.Is(err, syscall.EAGAIN) {
		return
	}
	if err != nil {
		s.kill(c)
		return
	}
	if n < len(c.out) {
		c.out = c.out[:copy(c.out, c.out[n:])]
		return
	}
	c.out = nil
	_ = syscall.EpollCtl(s.ep, syscall.EPOLL_CTL_MOD, c.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.fd)})
}

func (s *floorServer) readable(c *floorConn) {
	n, err := syscall.Read(c.fd, s.buf)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return
	}
	if err != nil || n == 0 {
		s.kill(c)
		return
	}
	c.in = append(c.in, s.buf[:n]...)
	off := 0
	if !c.open {
		m, answer, err := upgradeAnswer(c.in)
		if err != nil {
			s.kill(c)
			return
		}
		if m == 0 {
			return
		}
		c.open = true
		off = m
		s.send(c, answer)
	}
	for !c.dead {
		f, m, err := parseFrame(c.in[off:])
		if err != nil || (m > 0 && !f.fin) { // clients here send whole small frames
			s.kill(c)
			return
		}
		if m == 0 {
			break
		}
		off += m
		switch f.op {
		case opText:
			s.subscribe(c, f.payload)
		case opPing:
			s.send(c, appendServerFrame(nil, opPong, f.payload))
		case opClose:
			s.send(c, appendServerFrame(nil, opClose, f.payload))
			s.kill(c)
		}
	}
	if c.in = c.in[:copy(c.in, c.in[off:])]; len(c.in) == 0 {
		c.in = nil
	}
}

// subscribe answers {"op":"sub","symbols":[...],"id":N} with an ack and a
// snapshot of the symbols' latest quotes. Anything else is ignored (the
// naive baseline does the same).
func (s *floorServer) subscribe(c *floorConn, d []byte) {
	var m struct {
		Op      string          `json:"op"`
		Symbols []string        `json:"symbols"`
		ID      json.RawMessage `json:"id"`
	}
	if json.Unmarshal(d, &m) != nil || m.Op != "sub" {
		return
	}
	var quotes [][]byte
	for _, sym := range m.Symbols {
		t := s.topics[sym]
		if t == nil {
			t = &floorTopic{symbol: sym}
			s.topics[sym] = t
			// Before its first quote on the stream: the publisher's key.
			if v, err := s.request(s.cmd, respCommand("GET", s.prefix+":{"+sym+"}:last")); err == nil && len(v) == 1 && v[0] != nil {
				t.last = append([]byte(nil), v[0]...)
			}
		}
		if !c.subscribed(t) {
			t.conns = append(t.conns, c)
			c.topics = append(c.topics, t)
		}
		if t.last != nil {
			quotes = append(quotes, t.last)
		}
	}
	id := m.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	syms, _ := json.Marshal(m.Symbols)
	s.send(c, appendServerFrame(nil, opText, []byte(`{"op":"ack","id":`+string(id)+`,"symbols":`+string(syms)+`}`)))
	if len(quotes) > 0 {
		s.send(c, snapFrame(quotes))
	}
}

func (c *floorConn) subscribed(t *floorTopic) bool {
	for _, x := range c.topics {
		if x == t {
			return true
		}
	}
	return false
}

// kill marks c closed; run removes it after the batch.
func (s *floorServer) kill(c *floorConn) {
	if !c.dead {
		c.dead = true
		s.dead = append(s.dead, c)
	}
}

func (s *floorServer) remove(c *floorConn) {
	for _, t := range c.topics {
		for i, x := range t.conns {
			if x == c {
				last := len(t.conns) - 1
				t.conns[i] = t.conns[last]
				t.conns = t.conns[:last]
				break
			}
		}
	}
	delete(s.conns, c.fd)
	_ = syscall.Close(c.fd) // also leaves the epoll set
}

// write is write(2) on a non-blocking socket without Go's syscall
// bookkeeping (entersyscall/exitsyscall): it never blocks, and with one P
// a write long enough for the runtime's monitor to hand the P to another
// thread only adds thread switches on the one core. Measured at 3,000 hot
// connections: 20-21 µs of server CPU per write, 29-33 with syscall.Write.
func write(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
