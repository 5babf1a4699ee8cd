package bench

import (
	"fmt"
	"io"
	"time"
)

// Progress display intervals: a terminal's line is rewritten often; a log (a file, a CI
// job) gets a line every logProgressInterval.
const (
	ttyProgressInterval = 500 * time.Millisecond
	logProgressInterval = 5 * time.Second
)

// progress shows one phase's running tally on w: one line rewritten in place when w is
// a terminal, else a line every logProgressInterval. It reads wall time, not the run's
// Clock: it is a display, not a measurement.
type progress struct {
	w        io.Writer
	tty      bool
	label    string
	duration time.Duration
	live     *Live
	stop     chan struct{}
	done     chan struct{}
}

// startProgress starts the display of the phase label, which runs for about duration;
// the returned function ends it (printing the final tally) and waits for its goroutine.
// A nil w shows nothing.
func startProgress(w io.Writer, tty bool, label string, duration time.Duration, live *Live) (stop func()) {
	if w == nil {
		return func() {}
	}
	p := &progress{w: w, tty: tty, label: label, duration: duration, live: live,
		stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return func() {
		close(p.stop)
		<-p.done
	}
}

func (p *progress) run() {
	defer close(p.done)
	interval := logProgressInterval
	if p.tty {
		interval = ttyProgressInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	start := time.Now()
	last, lastOK := start, int64(0)
	for {
		select {
		case now := <-ticker.C:
			ok := p.live.OK()
			rate := float64(ok-lastOK) / now.Sub(last).Seconds()
			last, lastOK = now, ok
			p.print(now.Sub(start), rate, false)
		case <-p.stop:
			elapsed := time.Since(start)
			p.print(elapsed, float64(p.live.OK())/elapsed.Seconds(), true)
			return
		}
	}
}

// print writes one tally: elapsed of the planned duration, the recent rate (the average
// on the final line), errors and operations in flight.
func (p *progress) print(elapsed time.Duration, rate float64, final bool) {
	what := "now"
	if final {
		what = "avg"
	}
	line := fmt.Sprintf("%s  %5.1fs/%gs  ok %d  %s/s %s  errors %d  in flight %d",
		p.label, elapsed.Seconds(), p.duration.Seconds(), p.live.OK(), FormatRate(rate), what, p.live.Failed(), p.live.InFlight())
	switch {
	case p.tty && final:
		fmt.Fprintf(p.w, "\r\x1b[K%s\n", line)
	case p.tty:
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	default:
		fmt.Fprintln(p.w, line)
	}
}
