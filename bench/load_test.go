package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fasthttp's connection cleaner (the stat scenario's lean lane) ends by itself once a
// host client has no connection left, at its next wake-up, seconds after the last test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"))
}

// serviceMix is a deterministic service-time model: of every 100 consecutive operations,
// 80 take 1 ms, 15 take 5 ms and 5 take 50 ms. Its p50 is 1 ms, p90 5 ms, p99 50 ms.
func serviceMix(seq uint64) time.Duration {
	switch r := seq % 100; {
	case r < 80:
		return time.Millisecond
	case r < 95:
		return 5 * time.Millisecond
	default:
		return 50 * time.Millisecond
	}
}

func constant(d time.Duration) func(uint64) time.Duration {
	return func(uint64) time.Duration { return d }
}

// within reports whether got is within frac of want.
func within(got, want int64, frac float64) bool {
	return math.Abs(float64(got-want)) <= frac*float64(want)
}

func runSim(t *testing.T, load Load, srv *fakeServer) *Phase {
	t.Helper()
	ph, err := RunLoad(t.Context(), srv, load, srv.clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ph
}

func TestKnownServiceTimesYieldTheirPercentiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		load Load
	}{
		{"closed loop with 4 clients", Load{Concurrency: 4, Duration: 10 * time.Second}},
		{"open loop below capacity", Load{Rate: 500, MaxInFlight: 64, Duration: 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newSimClock()
			ph := runSim(t, tc.load, &fakeServer{clk: clk, service: serviceMix})
			l := ph.Latency
			for _, c := range []struct {
				name      string
				got, want int64
			}{
				{"min", l.MinMicros, 1000},
				{"p50", l.P50Micros, 1000},
				{"p90", l.P90Micros, 5000},
				{"p99", l.P99Micros, 50000},
				{"p99.9", l.P999Micros, 50000},
				{"max", l.MaxMicros, 50000},
			} {
				if !within(c.got, c.want, 0.01) {
					t.Errorf("%s = %d µs, want %d µs ± 1%%", c.name, c.got, c.want)
				}
			}
			if ph.Errors != 0 || ph.Ops != ph.OK || ph.Ops != l.Count {
				t.Errorf("ops %d, ok %d, errors %d, histogram count %d: want all ok and all counted", ph.Ops, ph.OK, ph.Errors, l.Count)
			}
			if tc.load.Rate > 0 {
				if ph.Ops != 5000 {
					t.Errorf("open loop measured %d operations, want 500/s × 10 s = 5000", ph.Ops)
				}
				if ph.OfferedRate != 500 || !within(int64(ph.AchievedRate), 500, 0.01) {
					t.Errorf("offered %v/s, achieved %v/s; want 500 and ≈500", ph.OfferedRate, ph.AchievedRate)
				}
				if ph.LateSends != 0 {
					t.Errorf("%d late sends below capacity, want 0", ph.LateSends)
				}
			} else {
				// 4 clients × 10 s / 4.05 ms mean service time.
				if want := int64(4 * 10 * time.Second / (4050 * time.Microsecond)); !within(ph.Ops, want, 0.01) {
					t.Errorf("closed loop measured %d operations, want ≈%d", ph.Ops, want)
				}
			}
			if len(ph.Series) < 10 || len(ph.Series) > 11 {
				t.Fatalf("series has %d seconds, want 10 (plus a partial one)", len(ph.Series))
			}
			var sum int64
			for _, s := range ph.Series {
				sum += s.OK
			}
			if sum != ph.OK {
				t.Errorf("series adds up to %d ok operations, phase says %d", sum, ph.OK)
			}
		})
	}
}

func TestOpenLoopReportsAStallThatClosedLoopHides(t *testing.T) {
	const stall = time.Second
	newServer := func() *fakeServer {
		clk := newSimClock()
		start := clk.Now()
		return &fakeServer{clk: clk, service: constant(time.Millisecond),
			stallFrom: start.Add(4 * time.Second), stallTo: start.Add(4*time.Second + stall)}
	}
	stallUs := int64(stall / time.Microsecond)

	open := runSim(t, Load{Rate: 1000, MaxInFlight: 16, Duration: 10 * time.Second, DrainTimeout: 10 * time.Second}, newServer())
	if open.Latency.MaxMicros < stallUs {
		t.Errorf("open loop max = %d µs, want ≥ the %d µs stall", open.Latency.MaxMicros, stallUs)
	}
	// The operations due during the stall wait for what is left of it: 10% of them (1% of
	// the run) wait ≥ 0.9 s, so p99 is about 0.9 s.
	if open.Latency.P99Micros < stallUs*8/10 {
		t.Errorf("open loop p99 = %d µs, want ≥ 80%% of the %d µs stall", open.Latency.P99Micros, stallUs)
	}
	if open.Ops != 10000 || open.Errors != 0 {
		t.Errorf("open loop: %d ops, %d errors; want all 10000 scheduled operations sent and ok", open.Ops, open.Errors)
	}
	if open.LateSends == 0 {
		t.Error("open loop reports no late sends although every worker was stuck in the stall")
	}
	if s := open.Series[4]; s.OK > 1 {
		// Only the operation due at 3.999 s completes, at 4.000 s.
		t.Errorf("open loop second 4 (the stall) completed %d operations, want ≤ 1", s.OK)
	}
	if s := open.Series[5]; s.P99Micros < stallUs*8/10 {
		t.Errorf("open loop second 5 (after the stall) p99 = %d µs, want ≈ the stall", s.P99Micros)
	}

	closed := runSim(t, Load{Concurrency: 1, Duration: 10 * time.Second}, newServer())
	if closed.Latency.MaxMicros < stallUs {
		t.Errorf("closed loop max = %d µs, want ≥ the stall (its one stalled request)", closed.Latency.MaxMicros)
	}
	if closed.Latency.P99Micros >= stallUs/10 {
		t.Errorf("closed loop p99 = %d µs: the model is wrong, a naive closed loop should not see the stall in p99", closed.Latency.P99Micros)
	}
}

func TestOpenLoopRecordsOperationsItCouldNotSend(t *testing.T) {
	clk := newSimClock()
	start := clk.Now()
	// The server stalls from 8 s until long after the run and its 2 s drain have ended.
	srv := &fakeServer{clk: clk, service: constant(time.Millisecond),
		stallFrom: start.Add(8 * time.Second), stallTo: start.Add(30 * time.Second)}
	ph := runSim(t, Load{Rate: 100, MaxInFlight: 4, Duration: 10 * time.Second, DrainTimeout: 2 * time.Second}, srv)

	if ph.Ops != 1000 {
		t.Errorf("measured %d operations, want every one of the 1000 scheduled", ph.Ops)
	}
	// 200 were due during the stall; the 4 workers each sent one, the other 196 never left.
	if got := ph.ErrorClasses[ClassNotSent]; got != 196 {
		t.Errorf("%q = %d, want 196 (classes %v)", ClassNotSent, got, ph.ErrorClasses)
	}
	if ph.OK != 804 {
		t.Errorf("ok = %d, want 800 before the stall + 4 sent into it", ph.OK)
	}
	// An unsent operation counts from its due time (≤ 10 s) to when the run gave up (30 s).
	if min := int64(20 * time.Second / time.Microsecond); ph.Latency.MaxMicros < min {
		t.Errorf("max = %d µs, want ≥ %d µs", ph.Latency.MaxMicros, min)
	}
	if ph.Latency.P90Micros < int64(20*time.Second/time.Microsecond) {
		t.Errorf("p90 = %d µs: 20%% of the run waited ≥ 20 s and p90 must show it", ph.Latency.P90Micros)
	}
}

func TestOpenLoopAboveCapacityShowsTheKnee(t *testing.T) {
	// 4 slots × 10 ms service = 400 ops/s capacity.
	run := func(rate float64) *Phase {
		clk := newSimClock()
		srv := &fakeServer{clk: clk, service: constant(10 * time.Millisecond), slots: make([]time.Time, 4)}
		return runSim(t, Load{Rate: rate, MaxInFlight: 1000, Duration: 5 * time.Second, DrainTimeout: 30 * time.Second}, srv)
	}
	below, above := run(200), run(800)
	if !within(below.Latency.P99Micros, 10000, 0.01) || !within(int64(below.AchievedRate), 200, 0.01) {
		t.Errorf("at 200/s: p99 %d µs, achieved %.1f/s; want 10 ms and 200/s", below.Latency.P99Micros, below.AchievedRate)
	}
	if !within(int64(above.AchievedRate), 400, 0.02) {
		t.Errorf("at 800/s: achieved %.1f/s, want capped at the 400/s capacity", above.AchievedRate)
	}
	// The backlog grows by 400 operations a second for 5 s: the last wait ≈ 5 s.
	if above.Latency.MaxMicros < int64(4*time.Second/time.Microsecond) || above.Latency.P50Micros < int64(time.Second/time.Microsecond) {
		t.Errorf("at 800/s: p50 %d µs, max %d µs; want the queue's seconds of waiting", above.Latency.P50Micros, above.Latency.MaxMicros)
	}
	if above.Ops != 4000 || above.Errors != 0 {
		t.Errorf("at 800/s: %d ops, %d errors; want 4000 sent within the drain, none failed", above.Ops, above.Errors)
	}
}

func TestRunLoadStopsWhenCancelled(t *testing.T) {
	for _, load := range []Load{
		{Concurrency: 3, Duration: time.Hour},
		{Rate: 1000, MaxInFlight: 3, Duration: time.Hour},
	} {
		t.Run(load.Mode(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			op := OpFunc(func(ctx context.Context, seq uint64) error {
				if seq == 50 {
					cancel()
				}
				<-time.After(time.Millisecond)
				return ctx.Err()
			})
			ph, err := RunLoad(ctx, op, load, SystemClock{}, nil)
			if err != context.Canceled {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if ph == nil || !ph.Aborted || ph.Ops < 50 {
				t.Fatalf("phase %+v: want an aborted phase with the ≥ 50 operations that ran", ph)
			}
		})
	}
}

func TestLoadValidateNamesTheBrokenField(t *testing.T) {
	for _, tc := range []struct {
		name string
		load Load
	}{
		{"zero duration", Load{Concurrency: 1}},
		{"closed loop without workers", Load{Duration: time.Second}},
		{"open loop without in-flight bound", Load{Rate: 10, Duration: time.Second}},
		{"negative rate", Load{Rate: -1, Concurrency: 1, Duration: time.Second}},
		{"NaN rate", Load{Rate: math.NaN(), Concurrency: 1, Duration: time.Second}},
		{"negative drain", Load{Concurrency: 1, Duration: time.Second, DrainTimeout: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.load.Validate(); err == nil {
				t.Errorf("Validate(%+v) = nil, want an error", tc.load)
			}
			if _, err := RunLoad(t.Context(), OpFunc(func(context.Context, uint64) error { return nil }), tc.load, SystemClock{}, nil); err == nil {
				t.Error("RunLoad accepted an invalid load")
			}
		})
	}
}

func TestScheduleLenCountsSlotsDueBeforeTheEnd(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		d    time.Duration
		want uint64
	}{
		{1000, time.Second, 1000},
		{3, time.Second, 3},
		{0.5, 3 * time.Second, 2}, // due at 0 s and 2 s
		{1e6, 10 * time.Millisecond, 10000},
		{7, 1500 * time.Millisecond, 11}, // 10.5 → slots 0..10
	} {
		if got := scheduleLen(tc.rate, tc.d); got != tc.want {
			t.Errorf("scheduleLen(%v, %v) = %d, want %d", tc.rate, tc.d, got, tc.want)
		}
	}
}

func TestLabelledOperationsGetTheirOwnPercentiles(t *testing.T) {
	// One operation in four is "slow" (20 ms), the others "fast" (1 ms), in an open loop
	// below capacity: each label's percentiles are its own service time.
	clk := newSimClock()
	label := func(seq uint64) string {
		if seq%4 == 0 {
			return "slow"
		}
		return "fast"
	}
	srv := &fakeServer{clk: clk, service: func(seq uint64) time.Duration {
		if label(seq) == "slow" {
			return 20 * time.Millisecond
		}
		return time.Millisecond
	}}
	ph, err := RunLoad(t.Context(), labeledOp{op: srv, label: label}, Load{Rate: 400, MaxInFlight: 64, Duration: 5 * time.Second}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, fast := ph.Breakdown["slow"], ph.Breakdown["fast"]
	if slow == nil || fast == nil || len(ph.Breakdown) != 2 {
		t.Fatalf("breakdown %v: want exactly slow and fast", ph.Breakdown)
	}
	if slow.Ops != 500 || fast.Ops != 1500 || slow.Ops+fast.Ops != ph.Ops {
		t.Errorf("slow %d + fast %d operations, phase %d: want 500 + 1500", slow.Ops, fast.Ops, ph.Ops)
	}
	if !within(slow.Latency.P50Micros, 20000, 0.01) || !within(slow.Latency.P99Micros, 20000, 0.01) {
		t.Errorf("slow p50 %d µs, p99 %d µs: want 20 ms", slow.Latency.P50Micros, slow.Latency.P99Micros)
	}
	if !within(fast.Latency.P50Micros, 1000, 0.01) || !within(fast.Latency.MaxMicros, 1000, 0.01) {
		t.Errorf("fast p50 %d µs, max %d µs: want 1 ms", fast.Latency.P50Micros, fast.Latency.MaxMicros)
	}
	// The phase as a whole mixes them: a quarter slow puts p50 at fast and p90 at slow.
	if !within(ph.Latency.P50Micros, 1000, 0.01) || !within(ph.Latency.P90Micros, 20000, 0.01) {
		t.Errorf("phase p50 %d µs, p90 %d µs: want 1 ms and 20 ms", ph.Latency.P50Micros, ph.Latency.P90Micros)
	}
}
