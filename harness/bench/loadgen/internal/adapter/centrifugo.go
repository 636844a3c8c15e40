package adapter

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/gorilla/websocket"
)

// Centrifugo v6, its bidirectional JSON protocol (client protocol v2):
// commands and replies are JSON objects, several per frame separated by
// newlines; `{"id":1,"connect":{}}` opens, one `{"id":N,"subscribe":
// {"channel":C}}` per channel subscribes, publications arrive as
// `{"push":{"channel":C,"pub":{"data":<the quote>}}}`, and an empty object
// `{}` is the server's ping, answered with `{}`. The bench runs it in
// insecure client mode (anyone may connect and subscribe): the comparison is
// of delivery, not of auth. Channels are named by the symbol.
type centrifugoAdapter struct{}

// subscribeLastID is the id of a connection's last subscribe command: its
// reply is the "ack" (Centrifugo answers commands in order).
const subscribeLastID = 1_000_000

func (centrifugoAdapter) Path() string { return "/connection/websocket" }

func (centrifugoAdapter) Open(c *websocket.Conn) error {
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"connect":{}}`)); err != nil {
		return err
	}
	for {
		_, d, err := c.ReadMessage()
		if err != nil {
			return err
		}
		if bytes.HasPrefix(d, []byte(`{"id":1,"error"`)) {
			return fmt.Errorf("centrifugo connect refused: %s", d)
		}
		if bytes.HasPrefix(d, []byte(`{"id":1,"connect"`)) {
			return nil
		}
	}
}

// SubscribeFrame is one frame holding a subscribe command per symbol, the
// last one with id subscribeLastID.
func centrifugoSubscribeFrame(symbols []string) []byte {
	var b bytes.Buffer
	for i, s := range symbols {
		id := 2 + i
		if i == len(symbols)-1 {
			id = subscribeLastID
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(`{"id":`)
		b.WriteString(strconv.Itoa(id))
		b.WriteString(`,"subscribe":{"channel":"`)
		b.WriteString(s)
		b.WriteString(`"}}`)
	}
	return b.Bytes()
}

func (centrifugoAdapter) Subscribe(c *websocket.Conn, symbols []string) error {
	return c.WriteMessage(websocket.TextMessage, centrifugoSubscribeFrame(symbols))
}

var (
	cfAck   = []byte(`{"id":` + strconv.Itoa(subscribeLastID) + `,"subscribe"`)
	cfError = []byte(`"error":{`)
	cfPub   = []byte(`"pub":{`)
)

// Classify: a frame may hold several replies and pushes (newline-separated).
// The last subscribe reply makes it an ack (a publication in the same frame
// is then not counted: the symbol's next one is, with nothing held before
// it, so no gap is made up); otherwise any publication makes it quotes.
func (centrifugoAdapter) Classify(c *websocket.Conn, d []byte) (FrameKind, error) {
	if len(d) == 2 && d[0] == '{' && d[1] == '}' { // ping
		if c == nil {
			return FrameOther, nil
		}
		return FrameOther, c.WriteMessage(websocket.TextMessage, []byte(`{}`))
	}
	if bytes.Contains(d, cfError) {
		return FrameOther, fmt.Errorf("centrifugo error: %s", d)
	}
	if bytes.Contains(d, cfAck) {
		return FrameAck, nil
	}
	if bytes.Contains(d, cfPub) {
		return FrameQuotes, nil
	}
	return FrameOther, nil
}
