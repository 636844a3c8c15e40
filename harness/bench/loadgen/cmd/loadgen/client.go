package main

// -mode=goroutine: one goroutine and one gorilla connection per connection,
// for every adapter.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"wsps/bench/loadgen/internal/account"
	"wsps/bench/loadgen/internal/adapter"
)

// client is one connection of the goroutine mode.
type client struct {
	state   *account.ConnState
	o       *options
	a       adapter.Adapter
	st      *account.Stats
	syms    []string
	src     string
	ws      *websocket.Conn
	subs    account.Subs
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
	if c.subs.Apply(kind, buf, c.st, c.state, c.o.waitSnap, 0) {
		c.onReady()
	}
	return nil
}
