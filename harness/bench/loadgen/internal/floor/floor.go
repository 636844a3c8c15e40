//go:build linux

// Package floor is the floor of the bench's hot-symbol section, the least
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
// The program is cmd/floor.
package floor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"unsafe"

	"wsps/bench/loadgen/internal/resp"
	"wsps/bench/loadgen/internal/wsframe"
)

// maxOut bounds what one connection may owe (bytes the socket did not take):
// a reader that far behind is closed, as every real server must.
const maxOut = 1 << 20

// Options are the floor's flags.
type Options struct {
	Port   int    // -port: listen on 127.0.0.1:Port
	Redis  string // -redis: the Redis the bench's publisher publishes on (redis://host:port)
	Prefix string // -prefix: key prefix of the quote stream
}

type conn struct {
	fd     int
	open   bool     // upgraded
	dead   bool     // closed at the end of this batch of events
	in     []byte   // an incomplete request or frame; nil when none
	out    []byte   // bytes the socket did not take; nil when none
	topics []*topic // what it subscribed to
}

type topic struct {
	symbol string
	conns  []*conn
	last   []byte // the latest quote seen (the snapshot); nil before the first
}

// Server is the floor: New connects it to Redis and listens, Run serves.
type Server struct {
	prefix  string
	ep, lfd int
	sub     int    // the PSUBSCRIBE connection (non-blocking, in the loop)
	cmd     int    // a blocking connection for GET (subscribes only)
	subIn   []byte // pushes not parsed yet
	conns   map[int]*conn
	topics  map[string]*topic
	buf     []byte
	frame   []byte
	dead    []*conn
}

// New subscribes to the quote stream and listens on o.Port. The caller
// runs it on one locked OS thread (cmd/floor: GOMAXPROCS 1).
func New(o Options) (*Server, error) {
	s := &Server{prefix: o.Prefix, conns: map[int]*conn{}, topics: map[string]*topic{}, buf: make([]byte, 256<<10)}
	u, err := url.Parse(o.Redis)
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
	if _, err := s.request(s.sub, resp.Command("PSUBSCRIBE", o.Prefix+":{*}:q")); err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(s.sub, true); err != nil {
		return nil, err
	}
	if s.lfd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0); err != nil {
		return nil, err
	}
	_ = syscall.SetsockoptInt(s.lfd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err := syscall.Bind(s.lfd, &syscall.SockaddrInet4{Port: o.Port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
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
func (s *Server) request(fd int, cmd []byte) ([][]byte, error) {
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
		vals, m, err := resp.Parse(in)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		if m > 0 {
			return vals, nil
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

// Run serves until a socket of its own fails (it does not return otherwise).
func (s *Server) Run() error {
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

func (s *Server) accept() {
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
		s.conns[fd] = &conn{fd: fd}
	}
}

// quotes reads the pub/sub stream and fans every complete quote out.
func (s *Server) quotes() error {
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
		vals, m, err := resp.Parse(in[off:])
		if err != nil {
			return fmt.Errorf("floor: %w", err)
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
func (s *Server) fanOut(channel, quote []byte) {
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
func (s *Server) send(c *conn, b []byte) {
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

func (s *Server) flush(c *conn) {
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

func (s *Server) readable(c *conn) {
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
		m, answer, err := wsframe.UpgradeAnswer(c.in)
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
		f, m, err := wsframe.Parse(c.in[off:])
		if err != nil || (m > 0 && !f.Fin) { // clients here send whole small frames
			s.kill(c)
			return
		}
		if m == 0 {
			break
		}
		off += m
		switch f.Op {
		case wsframe.OpText:
			s.subscribe(c, f.Payload)
		case wsframe.OpPing:
			s.send(c, wsframe.AppendServer(nil, wsframe.OpPong, f.Payload))
		case wsframe.OpClose:
			s.send(c, wsframe.AppendServer(nil, wsframe.OpClose, f.Payload))
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
func (s *Server) subscribe(c *conn, d []byte) {
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
			t = &topic{symbol: sym}
			s.topics[sym] = t
			// Before its first quote on the stream: the publisher's key.
			if v, err := s.request(s.cmd, resp.Command("GET", s.prefix+":{"+sym+"}:last")); err == nil && len(v) == 1 && v[0] != nil {
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
	s.send(c, wsframe.AppendServer(nil, wsframe.OpText, []byte(`{"op":"ack","id":`+string(id)+`,"symbols":`+string(syms)+`}`)))
	if len(quotes) > 0 {
		s.send(c, snapFrame(quotes))
	}
}

func (c *conn) subscribed(t *topic) bool {
	for _, x := range c.topics {
		if x == t {
			return true
		}
	}
	return false
}

// kill marks c closed; run removes it after the batch.
func (s *Server) kill(c *conn) {
	if !c.dead {
		c.dead = true
		s.dead = append(s.dead, c)
	}
}

func (s *Server) remove(c *conn) {
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
