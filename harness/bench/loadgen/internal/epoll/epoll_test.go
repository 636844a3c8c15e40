//go:build linux

package epoll

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"wsps/bench/loadgen/internal/account"
)

// One connection of the epoll loop against a gorilla server on loopback:
// the subscription, a snapshot in fragments, a ping, a quote, the server's close.
// The same conversation with and without the pause after a batch of events
// (-coalesce-us): pausing must not lose or misorder anything.
func TestEpollLoopAgainstServer(t *testing.T) {
	holdRxTimestamps(t)
	for _, us := range []int{0, 500} {
		t.Run(fmt.Sprintf("coalesce-us=%d", us), func(t *testing.T) { againstServer(t, us) })
	}
}

func againstServer(t *testing.T, coalesceUs int) {
	pong := make(chan string, 1)
	sub := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A small write buffer makes gorilla send the snapshot in fragments.
		ws, err := (&websocket.Upgrader{WriteBufferSize: 64}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		ws.SetPongHandler(func(d string) error { pong <- d; return nil })
		_, d, err := ws.ReadMessage()
		if err != nil {
			return
		}
		sub <- string(d)
		go func() { // the pong arrives through the reader
			for {
				if _, _, err := ws.NextReader(); err != nil {
					return
				}
			}
		}()
		send := func(s string) { _ = ws.WriteMessage(websocket.TextMessage, []byte(s)) }
		send(`{"op":"ack","id":1}`)
		// NextWriter (not WriteMessage) goes through the 64-byte buffer: fragments.
		if w, err := ws.NextWriter(websocket.TextMessage); err == nil {
			_, _ = w.Write([]byte(`{"op":"snap","quotes":[{"symbol":"S0003","seq":1,"ts":1,"pad":"` + strings.Repeat("x", 300) + `"},{"symbol":"S0007","seq":4,"ts":1}]}`))
			_ = w.Close()
		}
		_ = ws.WriteControl(websocket.PingMessage, []byte("beat"), time.Now().Add(time.Second))
		select {
		case <-time.After(30 * time.Second):
		case d := <-pong:
			pong <- d
		}
		send(`{"op":"q","quotes":[{"symbol":"S0007","seq":5,"ts":1}]}`)
		time.Sleep(200 * time.Millisecond)
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1001, "bye"), time.Now().Add(time.Second))
		time.Sleep(200 * time.Millisecond)
	}))
	defer srv.Close()

	st := &account.Stats{}
	states := make([]account.ConnState, 1)
	var mu sync.Mutex
	var events []string
	note := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	lostErr := make(chan error, 1)
	hooks := Hooks{
		Connected: func(int, time.Duration) { note("connected") },
		Ready:     func(int) { note("ready") },
		Failed:    func(_ int, err error) { note("failed: " + err.Error()) },
		Lost:      func(_ int, err error) { lostErr <- err },
	}
	o := &Options{Adapter: "wsps", URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Src: []string{"127.0.0.1"}, WaitSnap: true, DialRetries: 0,
		CoalesceUs: coalesceUs, Plan: [][]int{{3, 7}}, Stats: st, States: states, Hooks: hooks}
	_, stopLoop := startLoop(t, o)
	defer stopLoop()

	awaitError(t, lostErr, "close 1001", "the server's close never reached the loop")
	// The loop tells the close from inside the read that brought it, and
	// counts that read's samples after: a starved loop reads ack, snap, q
	// and close at once, so the counts are final only once it has returned.
	stopLoop()
	if s := <-sub; s != `{"id":1,"op":"sub","symbols":["S0003","S0007"]}` {
		t.Fatalf("subscription %s", s)
	}
	select {
	case d := <-pong:
		if d != "beat" {
			t.Fatalf("pong %q", d)
		}
	default:
		t.Fatal("the ping got no pong")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(events, ",") != "connected,ready" {
		t.Fatalf("events %v", events)
	}
	if st.Snaps.Load() != 2 || st.Entries.Load() != 1 || st.Covered.Load() != 1 || st.Gaps.Load() != 0 || !states[0].Closed.Load() || states[0].LastQuoteUs.Load() == 0 {
		t.Fatalf("snaps %d entries %d covered %d gaps %d closed %v", st.Snaps.Load(), st.Entries.Load(), st.Covered.Load(), st.Gaps.Load(), states[0].Closed.Load())
	}
	// Every text message (ack, snap, q) is a read-wait sample: the kernel
	// stamped each read, so none went without.
	var waits, arrived int64
	for i := range st.Wait {
		waits += st.Wait[i].Load()
		arrived += st.Arrived[i].Load()
	}
	if waits != 3 {
		t.Fatalf("%d read-wait samples, want one per text message (3)", waits)
	}
	if arrived != 1 {
		t.Fatalf("%d latency-to-the-socket samples, want one per quote entry (1)", arrived)
	}
}

// The receive timestamp is found after another control message, and not
// in a truncated or empty one.
func TestRxTimestamp(t *testing.T) {
	cmsg := func(level, typ uint32, data []byte) []byte {
		b := make([]byte, 16, 16+len(data)+8)
		binary.LittleEndian.PutUint64(b[0:8], uint64(16+len(data)))
		binary.LittleEndian.PutUint32(b[8:12], level)
		binary.LittleEndian.PutUint32(b[12:16], typ)
		b = append(b, data...)
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		return b
	}
	ts := make([]byte, 48) // three timespecs: software, (deprecated), hardware
	binary.LittleEndian.PutUint64(ts[0:8], 1_795_000_000)
	binary.LittleEndian.PutUint64(ts[8:16], 123_456_789)
	other := cmsg(syscall.SOL_IP, 8, []byte{1, 2, 3, 4})
	oob := append(other, cmsg(syscall.SOL_SOCKET, scmTimestamping, ts)...)
	if us, ok := rxTimestampUs(oob); !ok || us != 1_795_000_000_123_456 {
		t.Fatalf("got %d %v", us, ok)
	}
	if _, ok := rxTimestampUs(other); ok {
		t.Fatal("found a timestamp where there is none")
	}
	if _, ok := rxTimestampUs(oob[:len(oob)-40]); ok {
		t.Fatal("read a truncated control message")
	}
	if _, ok := rxTimestampUs(cmsg(syscall.SOL_SOCKET, scmTimestamping, make([]byte, 48))); ok {
		t.Fatal("a zero stamp (the kernel had none) counted")
	}
}

// A refused upgrade is retried, then reported as the orchestrator reads it.
func TestEpollLoopRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "full", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	failed := make(chan error, 1)
	o := &Options{Adapter: "wsps", URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Src: []string{"127.0.0.1"}, WaitSnap: true, DialRetries: 2,
		Plan: [][]int{{1}}, Stats: &account.Stats{}, States: make([]account.ConnState, 1), Hooks: failuresTo(failed)}
	_, stopLoop := startLoop(t, o)
	defer stopLoop()
	awaitError(t, failed, "HTTP 503", "never gave up")
	if hits.Load() != 3 {
		t.Fatalf("gave up after %d attempts", hits.Load())
	}
}

// "cut" (or the ready timeout) closes the connections not ready yet and
// says so; a connection stuck in its upgrade does not hold the loop.
func TestEpollLoopCut(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() { // accepts and never answers the upgrade
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	failed := make(chan error, 2)
	states := make([]account.ConnState, 2)
	o := &Options{Adapter: "wsps", URL: "ws://" + ln.Addr().String(), Src: []string{"127.0.0.1"}, WaitSnap: true,
		Plan: [][]int{{1}, {2}}, Stats: &account.Stats{}, States: states, Hooks: failuresTo(failed)}
	cut, stopLoop := startLoop(t, o)
	defer stopLoop()
	for range 2 {
		select {
		case c := <-accepted:
			defer c.Close()
		case <-time.After(60 * time.Second):
			t.Fatal("the loop did not connect")
		}
	}
	cut.Store(true)
	for range 2 {
		awaitError(t, failed, "context canceled", "cut did not close the pending connections")
	}
	if !states[0].Closed.Load() || !states[1].Closed.Load() {
		t.Fatal("cut connections not marked closed")
	}
}

// startLoop runs one epoll loop over every connection of o.Plan: setting
// cut cuts it, stopLoop stops it.
func startLoop(t *testing.T, o *Options) (cut *atomic.Bool, stopLoop func()) {
	t.Helper()
	cut = &atomic.Bool{}
	var stop atomic.Bool
	l, err := NewLoop(LoopOptions{Options: o, Lo: 0, Hi: len(o.Plan), MaxDials: 4, Cut: cut, Stop: &stop})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		if err := l.Run(); err != nil {
			t.Error(err)
		}
		close(done)
	}()
	return cut, func() { stop.Store(true); <-done }
}

// holdRxTimestamps keeps the kernel stamping received packets for the
// test's length. Linux turns receive timestamps on for everyone while some
// socket asks for them, but only a moment after the first one does (a
// deferred static key) and off again after the last closes: a loop whose
// connection is the only such socket may read its first messages
// unstamped. A UDP socket asking for them, held open until a datagram to
// itself comes back stamped, makes every read of the test stamped.
func holdRxTimestamps(t *testing.T) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soTimestamping, sofRxSoftware|sofSoftware); err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &syscall.Timeval{Usec: 100_000}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	self, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 16), make([]byte, 512)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if err := syscall.Sendto(fd, []byte("stamp"), 0, self); err != nil {
			t.Fatal(err)
		}
		if _, oobn, _, _, err := syscall.Recvmsg(fd, buf, oob, 0); err == nil {
			if _, ok := rxTimestampUs(oob[:oobn]); ok {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the kernel stamped no received datagram within 5 s (SO_TIMESTAMPING)")
}

// failuresTo: hooks that send every failure to failed and ignore the rest.
func failuresTo(failed chan<- error) Hooks {
	return Hooks{Connected: func(int, time.Duration) {}, Ready: func(int) {}, Failed: func(_ int, err error) { failed <- err }, Lost: func(int, error) {}}
}

// awaitError fails the test unless errs gives, within a minute, an error
// that says want; never says what did not happen otherwise.
func awaitError(t *testing.T, errs <-chan error, want, never string) {
	t.Helper()
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%v, want an error saying %q", err, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatal(never)
	}
}

// The book adapters in the epoll loop: the sub names the depth, the first
// `book` frame makes the connection ready, a `levels` frame is a delivery.
func TestEpollLoopBooks(t *testing.T) {
	holdRxTimestamps(t)
	sub := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_, d, err := ws.ReadMessage()
		if err != nil {
			return
		}
		sub <- string(d)
		send := func(s string) { _ = ws.WriteMessage(websocket.TextMessage, []byte(s)) }
		send(`{"op":"ack","id":1,"book":25,"symbols":["S0002"]}`)
		send(`{"op":"book","symbol":"S0002","depth":25,"seq":3,"epoch":"e","ts":1,"bids":[["1","2"]],"asks":[["3","4"]],"checksum":1}`)
		send(`{"op":"levels","symbol":"S0002","depth":25,"seq":5,"prev":3,"ts":1,"bids":[["1","0"]],"asks":[],"checksum":2}`)
		time.Sleep(200 * time.Millisecond)
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1001, "bye"), time.Now().Add(time.Second))
		time.Sleep(200 * time.Millisecond)
	}))
	defer srv.Close()
	st := &account.Stats{}
	var ready atomic.Int32
	lostErr := make(chan error, 1)
	hooks := Hooks{
		Connected: func(int, time.Duration) {},
		Ready:     func(int) { ready.Add(1) },
		Failed:    func(_ int, err error) { lostErr <- err },
		Lost:      func(_ int, err error) { lostErr <- err },
	}
	o := &Options{Adapter: "wsps-books", URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Src: []string{"127.0.0.1"}, WaitSnap: true,
		Plan: [][]int{{2}}, Stats: st, States: make([]account.ConnState, 1), Hooks: hooks}
	_, stopLoop := startLoop(t, o)
	defer stopLoop()
	awaitError(t, lostErr, "close 1001", "the server's close never reached the loop")
	stopLoop()
	if s := <-sub; s != `{"book":25,"id":1,"op":"sub","symbols":["S0002"]}` {
		t.Fatalf("subscription %s", s)
	}
	if ready.Load() != 1 || st.Snaps.Load() != 1 || st.Frames.Load() != 1 || st.Covered.Load() != 1 || st.Gaps.Load() != 0 {
		t.Fatalf("ready %d snaps %d frames %d covered %d gaps %d", ready.Load(), st.Snaps.Load(), st.Frames.Load(), st.Covered.Load(), st.Gaps.Load())
	}
}
