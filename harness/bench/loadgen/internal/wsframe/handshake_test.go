package wsframe

import (
	"bytes"
	"strings"
	"testing"
)

func TestUpgradeResponse(t *testing.T) {
	key := Key(42)
	ok := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + Accept(key) + "\r\n\r\n"
	frame := serverFrame(true, OpText, []byte("hi"))
	b := append([]byte(ok), frame...)
	if n, err := UpgradeResponse(b, key); err != nil || n != len(ok) {
		t.Fatalf("101: n=%d err=%v", n, err)
	}
	if n, err := UpgradeResponse(b[:len(ok)-1], key); n != 0 || err != nil {
		t.Fatalf("partial: n=%d err=%v", n, err)
	}
	// The accept for RFC 6455's example key.
	if got := Accept("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("accept: %s", got)
	}
	if _, err := UpgradeResponse([]byte("HTTP/1.1 503 Service Unavailable\r\n\r\n"), key); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("503: %v", err)
	}
	if _, err := UpgradeResponse([]byte(strings.Replace(ok, Accept(key), Accept(Key(7)), 1)), key); err == nil {
		t.Fatal("wrong accept accepted")
	}
}

// RFC 6455's own example key; an incomplete request asks for more bytes.
func TestUpgradeAnswer(t *testing.T) {
	req := "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	n, answer, err := UpgradeAnswer([]byte(req + "\x81"))
	if err != nil || n != len(req) || !bytes.Contains(answer, []byte("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n")) || !bytes.HasPrefix(answer, []byte("HTTP/1.1 101 ")) {
		t.Fatalf("n %d answer %q err %v", n, answer, err)
	}
	if n, _, err := UpgradeAnswer([]byte(req[:40])); n != 0 || err != nil {
		t.Fatalf("partial: n %d err %v", n, err)
	}
	if _, _, err := UpgradeAnswer([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err == nil {
		t.Fatal("a request with no key must be refused")
	}
}
