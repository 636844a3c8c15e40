package adapter

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type found struct {
	Symbol          string
	Seq, Base, TsMs int64
}

func scanAll(frame string) []found {
	var out []found
	n := ScanQuotes([]byte(frame), func(e *Entry) {
		out = append(out, found{string(e.Symbol), e.Seq, e.Base, e.TsMilli})
	})
	if n != len(out) {
		panic(fmt.Sprintf("ScanQuotes returned %d, called fn %d times", n, len(out)))
	}
	return out
}

// The entries of every server's frames: wrappers looked into, flat quote
// objects reported, fields other than symbol, seq, ts and base skipped.
func TestScanQuotes(t *testing.T) {
	for _, c := range []struct {
		name, frame string
		want        []found
	}{
		{"wsps q, merged deltas", `{"op":"q","quotes":[{"symbol":"S0001","seq":12,"ts":1764240000123,"base":9,"bid":101.25,"delayed":true},{"symbol":"S0420","seq":7,"ts":1764240000124,"last":-0.5}]}`,
			[]found{{"S0001", 12, 9, 1764240000123}, {"S0420", 7, -1, 1764240000124}}},
		{"wsps snap, full quotes seq first", `{"op":"snap","quotes":[{"seq":3,"symbol":"S0002","ts":5,"bid":1,"ask":2,"last":1.5,"bidSize":1,"askSize":2,"volume":10,"open":1,"high":2,"low":1,"prevClose":1}],"recovered":false}`,
			[]found{{"S0002", 3, -1, 5}}},
		{"naive and pushpin: one quote", `{"seq":3,"symbol":"S0001","ts":77}`, []found{{"S0001", 3, -1, 77}}},
		{"socket.io event", `42["q",{"seq":4,"symbol":"S0003","ts":8}]`, []found{{"S0003", 4, -1, 8}}},
		{"centrifugo pushes, one per line", "{\"push\":{\"channel\":\"S0001\",\"pub\":{\"data\":{\"seq\":5,\"symbol\":\"S0001\",\"ts\":9},\"offset\":2}}}\n{\"push\":{\"channel\":\"S0004\",\"pub\":{\"data\":{\"seq\":6,\"symbol\":\"S0004\",\"ts\":10}}}}",
			[]found{{"S0001", 5, -1, 9}, {"S0004", 6, -1, 10}}},
		{"whitespace between tokens", "{ \"quotes\" : [ { \"symbol\" : \"S0005\" , \"seq\" : 8 ,\n\t\"ts\" : 11 , \"base\" : 6 } ] }", []found{{"S0005", 8, 6, 11}}},
		{"no symbol: not a quote", `{"op":"ack","id":1}`, nil},
		{"empty quotes", `{"op":"q","quotes":[]}`, nil},
		{"missing fields are -1", `{"symbol":"S0006"}`, []found{{"S0006", -1, -1, -1}}},
		{"cut short", `{"op":"q","quotes":[{"symbol":"S0007","seq":1`, nil},
		{"a nested value: the wrapper is not a quote", `{"symbol":"S0008","seq":1,"extra":{"seq":2}}`, nil},
	} {
		if got := scanAll(c.frame); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A wsps `q` frame of merged deltas as the fan-out's bound sends them
// (about ten entries a frame): go test -bench=ScanQuotes ./internal/adapter/
func BenchmarkScanQuotes(b *testing.B) {
	var parts []string
	for i := 0; i < 10; i++ {
		parts = append(parts, fmt.Sprintf(`{"symbol":"S%04d","seq":%d,"ts":1764240000%03d,"base":%d,"bid":101.%02d,"ask":101.%02d,"last":101.%02d,"bidSize":%d,"volume":%d}`, i*37, 100000+i, i, 99990+i, i, i+2, i+1, 100+i, 1234567+i))
	}
	frame := []byte(`{"op":"q","quotes":[` + strings.Join(parts, ",") + `]}`)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if ScanQuotes(frame, func(*Entry) {}) != 10 {
			b.Fatal("entries")
		}
	}
}
