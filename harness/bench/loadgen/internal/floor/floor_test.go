//go:build linux

package floor

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"wsps/bench/loadgen/internal/resp"
	"wsps/bench/loadgen/internal/wsframe"
)

// The quote frame is a final unmasked text frame whose payload is the
// quote inside a wsps `q`, with the header's three length forms.
func TestQuoteFrame(t *testing.T) {
	for _, size := range []int{10, 105, 106, 200, 65535, 70000} {
		quote := []byte(`{"symbol":"S0000","x":"` + strings.Repeat("a", size) + `"}`)
		b := quoteFrame(make([]byte, 3), quote) // built into dst[:0]: the 3 bytes are not kept
		f, n, err := wsframe.Parse(append([]byte(nil), b...))
		if err != nil || n != len(b) || !f.Fin || f.Op != wsframe.OpText {
			t.Fatalf("size %d: frame %+v n %d of %d, err %v", size, f, n, len(b), err)
		}
		want := `{"op":"q","quotes":[` + string(quote) + `]}`
		if string(f.Payload) != want {
			t.Fatalf("size %d: payload %.60q", size, f.Payload)
		}
		if b[1]&0x80 != 0 {
			t.Fatalf("size %d: a server frame must not be masked", size)
		}
	}
}

func TestSnapFrame(t *testing.T) {
	f, _, err := wsframe.Parse(snapFrame([][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)}))
	if err != nil || string(f.Payload) != `{"op":"snap","quotes":[{"a":1},{"b":2}]}` {
		t.Fatalf("%q %v", f.Payload, err)
	}
}

// The quote stream's channels name their symbol; another prefix's are not ours.
func TestSymbolOfChannel(t *testing.T) {
	if got := string(symbolOfChannel("wsps", []byte("wsps:{S0042}:q"))); got != "S0042" {
		t.Fatalf("symbol %q", got)
	}
	if symbolOfChannel("wsps", []byte("other:{S0042}:q")) != nil {
		t.Fatal("another prefix's channel is not ours")
	}
}

// fakeRedis answers the floor's two connections: GET with the symbol's
// last quote, PSUBSCRIBE with its confirmation; pushes go to the
// subscriber.
type fakeRedis struct {
	ln  net.Listener
	mu  sync.Mutex
	sub net.Conn
	got chan struct{}
}

func newFakeRedis(t *testing.T) *fakeRedis {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeRedis{ln: ln, got: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

func (r *fakeRedis) serve(c net.Conn) {
	var in []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		in = append(in, buf[:n]...)
		for {
			args, m, _ := resp.Parse(in)
			if m == 0 {
				break
			}
			in = in[m:]
			switch string(args[0]) {
			case "GET": // wsps:{S1}:last
				sym := string(bytes.TrimSuffix(bytes.TrimPrefix(args[1], []byte("wsps:{")), []byte("}:last")))
				q := fmt.Sprintf(`{"seq":1,"symbol":"%s","ts":0}`, sym)
				fmt.Fprintf(c, "$%d\r\n%s\r\n", len(q), q)
			case "PSUBSCRIBE":
				fmt.Fprintf(c, "*3\r\n$10\r\npsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(args[1]), args[1])
				r.mu.Lock()
				r.sub = c
				r.mu.Unlock()
				close(r.got)
			}
		}
	}
}

func (r *fakeRedis) publish(t *testing.T, sym string, seq int) {
	ch := "wsps:{" + sym + "}:q"
	q := fmt.Sprintf(`{"seq":%d,"symbol":"%s","ts":%d}`, seq, sym, time.Now().UnixMilli())
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := fmt.Fprintf(r.sub, "*4\r\n$8\r\npmessage\r\n$10\r\nwsps:{*}:q\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(ch), ch, len(q), q); err != nil {
		t.Fatal(err)
	}
}

// The floor on real sockets: every subscriber of a symbol gets its ack,
// its snapshot, then every quote of that symbol in order and nothing of
// the others'; one that left costs the others nothing.
func TestFloorFansOutEveryQuote(t *testing.T) {
	r := newFakeRedis(t)
	port := r.ln.Addr().(*net.TCPAddr).Port
	ln, _ := net.Listen("tcp4", "127.0.0.1:0")
	wsPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s, err := New(Options{Port: wsPort, Redis: fmt.Sprintf("redis://127.0.0.1:%d", port), Prefix: "wsps"})
	if err != nil {
		t.Fatal(err)
	}
	<-r.got
	go func() { _ = s.Run() }()

	dial := func(sym string) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/ws", wsPort), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"op":"sub","symbols":["`+sym+`"],"id":7}`)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`{"op":"ack","id":7,"symbols":["` + sym + `"]}`, `{"op":"snap","quotes":[{"seq":1,"symbol":"` + sym + `","ts":0}]}`} {
			if _, d, err := c.ReadMessage(); err != nil || string(d) != want {
				t.Fatalf("got %q (%v), want %q", d, err, want)
			}
		}
		return c
	}
	hot := []*websocket.Conn{dial("S1"), dial("S1"), dial("S1")}
	cold := dial("S2")
	gone := dial("S1")
	gone.Close()
	for seq := 2; seq <= 50; seq++ {
		r.publish(t, "S1", seq)
	}
	r.publish(t, "S2", 2)
	for i, c := range append(hot, cold) {
		from, to := 2, 50
		if c == cold {
			to = 2
		}
		for seq := from; seq <= to; seq++ {
			_, d, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("conn %d seq %d: %v", i, seq, err)
			}
			if !bytes.HasPrefix(d, []byte(fmt.Sprintf(`{"op":"q","quotes":[{"seq":%d,"symbol":"S`, seq))) {
				t.Fatalf("conn %d: want seq %d, got %q", i, seq, d)
			}
		}
	}
}
