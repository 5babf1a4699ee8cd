package shard

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// TestLoadMeterRatesTheLastCompleteWindow: a rate is the last complete window's count over
// its length, whatever happens in the current one; a window without a command resets it;
// the top roots are the highest rates, ties by name.
func TestLoadMeterRatesTheLastCompleteWindow(t *testing.T) {
	var m loadMeter
	t0 := time.Unix(1_000_000, 0)
	if l := m.load(t0, 5); l.Rate != 0 || len(l.Top) != 0 || l.Commands != 0 {
		t.Fatalf("an empty meter: %+v", l)
	}
	for i := range 120 {
		m.record("hot", t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	for i := range 60 {
		m.record([]string{"b", "a"}[i%2], t0.Add(time.Duration(i)*time.Second))
	}
	m.record("", t0.Add(59*time.Second)) // a command of no root: the total only
	if l := m.load(t0.Add(59*time.Second), 5); l.Rate != 0 || l.Commands != 181 {
		t.Fatalf("within the first window: %+v", l)
	}
	at := t0.Add(LoadWindow + time.Second)
	m.record("hot", at) // the second window's: not in the rate yet
	l := m.load(at, 2)
	want := []RootRate{{"hot", 2}, {"a", 0.5}}
	if l.Commands != 182 || l.Rate != 181.0/60 || fmt.Sprint(l.Top) != fmt.Sprint(want) {
		t.Fatalf("after one window: %+v, want rate %v top %v", l, 181.0/60, want)
	}
	if l := m.load(at, 0); len(l.Top) != 0 {
		t.Fatalf("top 0: %+v", l.Top)
	}
	if l := m.load(t0.Add(2*LoadWindow+time.Second), 5); l.Rate != 1.0/60 || fmt.Sprint(l.Top) != fmt.Sprint([]RootRate{{"hot", 1.0 / 60}}) {
		t.Fatalf("after the second window: %+v", l)
	}
	if l := m.load(t0.Add(4*LoadWindow), 5); l.Rate != 0 || len(l.Top) != 0 || l.Commands != 182 {
		t.Fatalf("after a window without commands: %+v", l)
	}
}

// TestLoadMeterBoundsItsRoots: past MaxMeteredRoots roots in a window, a new root counts
// in the shard's total only; a root already counted goes on counting.
func TestLoadMeterBoundsItsRoots(t *testing.T) {
	var m loadMeter
	t0 := time.Unix(1_000_000, 0)
	for i := range MaxMeteredRoots + 10 {
		m.record(fmt.Sprintf("r%05d", i), t0)
	}
	m.record("r00000", t0)
	l := m.load(t0.Add(LoadWindow), MaxMeteredRoots+100)
	if len(l.Top) != MaxMeteredRoots || l.Top[0] != (RootRate{"r00000", 2.0 / 60}) {
		t.Fatalf("%d roots, first %+v", len(l.Top), l.Top[0])
	}
	if l.Rate != float64(MaxMeteredRoots+11)/60 {
		t.Fatalf("the shard's rate %v", l.Rate)
	}
}

// TestWriteLoadCountsAppliedProposals: the commands a leader proposed that applied count,
// by their root (a tick, of no root, in the total only).
func TestWriteLoadCountsAppliedProposals(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	s := openReady(t, t.TempDir(), Config{Clock: func() time.Time { return time.Unix(0, now.Load()) }})
	defer s.Close()
	for i := range 3 {
		if _, err := s.Propose(context.Background(), meta.Header{}, put(fmt.Sprintf("f%d", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Propose(context.Background(), meta.Header{}, meta.Tick{}); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(LoadWindow))
	l := s.WriteLoad(5)
	if l.Commands < 4 || fmt.Sprint(l.Top) != fmt.Sprint([]RootRate{{"a", 3.0 / 60}}) {
		t.Fatalf("%+v", l)
	}
}
