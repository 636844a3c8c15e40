//go:build linux

// Package hiccup is a host hiccup meter (the idea of jHiccup and
// cyclictest). One OS thread, pinned by the caller (taskset) and raised to
// SCHED_FIFO (SetFIFO), sleeps 1 ms in a loop and measures how late each
// wake-up was. At real-time priority no ordinary (CFS) process can delay it,
// the servers under test included: whatever lateness it sees is the
// platform's (the hypervisor taking the CPU, interrupts, kernel sections
// that do not preempt), and it stalls every process on that core alike.
//
// For every interval Run writes one line
//
//	{"type":"hiccup","core":N,"tUs":T,"atUs":A,"maxUs":M,"n":W}
//
// T is the interval's end, A the wake-up that was latest, M its lateness
// (the stall covered [A-M, A]), W the wake-ups in the interval; times are
// CLOCK_MONOTONIC in µs (Node's process.hrtime is the same clock).
//
// The program is cmd/hiccup.
package hiccup

import (
	"io"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// Options are the meter's flags that Run reads.
type Options struct {
	Core       int // -core: the core it is pinned to (only reported)
	IntervalMs int // -interval-ms: report the max lateness of each interval this long
	SleepUs    int // -sleep-us: sleep this long between wake-ups
	MaxSeconds int // -max-seconds: hard stop
}

// book keeps the max lateness of the current interval. Times are
// monotonic ns. It allocates nothing.
type book struct {
	intervalNs int64
	end        int64 // the current interval ends here (exclusive)
	max        int64 // its latest wake-up's lateness
	at         int64 // ...and when that wake-up was
	n          int64 // wake-ups seen in it
}

// interval is what one output line reports.
type interval struct{ end, at, max, n int64 }

func newBook(start, intervalNs int64) book {
	return book{intervalNs: intervalNs, end: start + intervalNs, max: -1}
}

// observe records a wake-up at now that came late ns after its due time.
// When now is at or past the current interval's end, the interval is closed
// first and returned (ok true): the wake-up belongs to the next interval,
// whose end is the first boundary after now (a stall longer than an interval
// leaves no empty intervals behind: the one wake-up that ends it reports it
// whole, and A-M says where it began).
func (b *book) observe(now, late int64) (closed interval, ok bool) {
	if late < 0 {
		late = 0
	}
	if now >= b.end {
		closed, ok = interval{end: b.end, at: b.at, max: b.max, n: b.n}, b.n > 0
		b.end += ((now-b.end)/b.intervalNs + 1) * b.intervalNs
		b.max, b.at, b.n = -1, 0, 0
	}
	b.n++
	if late > b.max {
		b.max, b.at = late, now
	}
	return closed, ok
}

// appendLine appends the JSON line of a closed interval (µs) to buf.
func appendLine(buf []byte, core int, c interval) []byte {
	buf = append(buf, `{"type":"hiccup","core":`...)
	buf = strconv.AppendInt(buf, int64(core), 10)
	buf = append(buf, `,"tUs":`...)
	buf = strconv.AppendInt(buf, c.end/1000, 10)
	buf = append(buf, `,"atUs":`...)
	buf = strconv.AppendInt(buf, c.at/1000, 10)
	buf = append(buf, `,"maxUs":`...)
	buf = strconv.AppendInt(buf, c.max/1000, 10)
	buf = append(buf, `,"n":`...)
	buf = strconv.AppendInt(buf, c.n, 10)
	return append(buf, "}\n"...)
}

// monotonicNs reads CLOCK_MONOTONIC (the clock Go's time.Since runs on,
// but time.Time does not expose its origin).
func monotonicNs() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// SetFIFO puts the calling thread (the locked one) in SCHED_FIFO at prio.
func SetFIFO(prio int) error {
	param := struct{ prio int32 }{int32(prio)}
	const schedFIFO = 1
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedFIFO, uintptr(unsafe.Pointer(&param))); e != 0 {
		return e
	}
	return nil
}

// Run measures until o.MaxSeconds have passed, writing one line per
// interval to w. Call it on the locked, pinned thread; the loop allocates
// nothing (the caller may turn the collector off).
func Run(o Options, w io.Writer) {
	origin := time.Now()
	base := monotonicNs()
	sleepNs := int64(o.SleepUs) * 1000
	stopAt := int64(o.MaxSeconds) * 1e9
	b := newBook(base, int64(o.IntervalMs)*1e6)
	req := syscall.NsecToTimespec(sleepNs)
	buf := make([]byte, 0, 160)
	before := int64(time.Since(origin))
	for before < stopAt {
		// A raw syscall: the runtime does not hand this thread's P to
		// another one at every sleep (that costs more than the sleep), and
		// sysmon, seeing a goroutine that runs, backs off to polling every
		// 10 ms. Its preemption signal ends a sleep early now and then
		// (EINTR: a wake-up that is early counts as 0 late).
		syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&req)), 0, 0)
		after := int64(time.Since(origin))
		if c, ok := b.observe(base+after, after-before-sleepNs); ok {
			buf = appendLine(buf[:0], o.Core, c)
			_, _ = w.Write(buf)
		}
		before = int64(time.Since(origin))
	}
}
