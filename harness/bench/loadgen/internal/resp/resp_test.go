package resp

import (
	"strings"
	"testing"
)

// A pub/sub push split anywhere parses only once it is whole.
func TestParseResp(t *testing.T) {
	push := "*4\r\n$8\r\npmessage\r\n$9\r\nwsps:{*}:q\r\n$12\r\nwsps:{S1}:q\r\n$7\r\n{\"a\":1}\r\n"
	push = strings.Replace(push, "$9\r\nwsps:{*}:q", "$10\r\nwsps:{*}:q", 1)
	push = strings.Replace(push, "$12\r\nwsps:{S1}:q", "$11\r\nwsps:{S1}:q", 1)
	for cut := 0; cut < len(push); cut++ {
		if _, n, err := Parse([]byte(push[:cut])); n != 0 || err != nil {
			t.Fatalf("cut at %d: n %d err %v", cut, n, err)
		}
	}
	vals, n, err := Parse([]byte(push + "*3"))
	if err != nil || n != len(push) || len(vals) != 4 || string(vals[2]) != "wsps:{S1}:q" || string(vals[3]) != `{"a":1}` {
		t.Fatalf("vals %q n %d err %v", vals, n, err)
	}
	if vals, n, _ := Parse([]byte("$-1\r\n")); n != 5 || len(vals) != 1 || vals[0] != nil {
		t.Fatalf("nil GET: %q %d", vals, n)
	}
	if vals, _, _ := Parse([]byte("*3\r\n$10\r\npsubscribe\r\n$10\r\nwsps:{*}:q\r\n:1\r\n")); len(vals) != 3 || string(vals[2]) != "1" {
		t.Fatalf("confirmation: %q", vals)
	}
	if _, _, err := Parse([]byte("-ERR no\r\n")); err == nil {
		t.Fatal("an error reply must be an error")
	}
}
