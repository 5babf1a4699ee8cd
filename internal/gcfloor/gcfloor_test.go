package gcfloor

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

func TestPercentForAimsTheGoalAtTheFloorNeverBelowBase(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, roots, floor uint64
		base, want         int
	}{
		{16 * mib, 0, 64 * mib, 100, 300},       // goal 16 + 16·3 = 64 MiB
		{16 * mib, 8 * mib, 64 * mib, 100, 200}, // goal 16 + 24·2 = 64 MiB
		{10 * mib, 0, 64 * mib, 100, 540},       // goal 10 + 10·5.4 = 64 MiB
		{4 * mib, 12 * mib, 64 * mib, 100, 375}, // goal 4 + 16·3.75 = 64 MiB
		{32 * mib, 0, 64 * mib, 100, 100},       // GOGC=100 already reaches the floor
		{40 * mib, 4 * mib, 64 * mib, 100, 100}, // never below base
		{64 * mib, 0, 64 * mib, 100, 100},       // at the floor
		{1 << 40, 0, 64 * mib, 100, 100},        // far above it
		{16 * mib, 0, 64 * mib, 400, 400},       // a larger GOGC stays
		{0, 0, 64 * mib, 100, 1600},             // the runtime's minimum goal, 4 MiB·16
		{1024, 0, 64 * mib, 100, 1600},          // the same
		{3 * mib, 1 * mib, 64 * mib, 100, 1525}, // the formula, just under the minimum's cap
		{1024, 0, 2 * mib, 100, 100},            // a floor under the runtime's minimum: base
	} {
		if got := percentFor(tc.live, tc.roots, tc.floor, tc.base); got != tc.want {
			t.Errorf("percentFor(live %d, roots %d, floor %d, base %d) = %d, want %d", tc.live, tc.roots, tc.floor, tc.base, got, tc.want)
		}
	}
}

func TestWorthSettingIgnoresSmallMoves(t *testing.T) {
	for _, tc := range []struct {
		current, want int
		set           bool
	}{
		{300, 300, false}, {300, 320, false}, {300, 290, false},
		{300, 400, true}, {300, 100, true}, {100, 300, true}, {110, 100, false},
	} {
		if got := worthSetting(tc.current, tc.want); got != tc.set {
			t.Errorf("worthSetting(%d, %d) = %v, want %v", tc.current, tc.want, got, tc.set)
		}
	}
}

// TestATunerFollowsTheLiveHeapAndStopRestoresGOGC runs a real Tuner in this process: with
// a small live heap the percentage rises so the goal reaches the floor; holding a live
// heap above the floor brings it back to the process's GOGC after the next collections;
// Stop restores GOGC.
func TestATunerFollowsTheLiveHeapAndStopRestoresGOGC(t *testing.T) {
	const floor = 256 << 20
	base := gcPercent()
	if base < 0 {
		t.Fatalf("GOGC is off in the test process (%d): the test needs the collector on", base)
	}
	tu := Start(floor)
	if tu == nil {
		t.Fatal("Start returned no Tuner with the collector on")
	}
	t.Cleanup(tu.Stop)
	runtime.GC()
	retry.Within(t, 10*time.Second, "the tuner raises GOGC", func() error {
		runtime.GC()
		if p := gcPercent(); p <= base || p != tu.Percent() {
			return fmt.Errorf("GOGC %d (tuner %d), want above %d with a small live heap under a 256 MiB floor", p, tu.Percent(), base)
		}
		// The runtime's own goal is where the formula aims it (about the floor), not a
		// multiple of it: the roots count.
		if goal := readUint64(t, "/gc/heap/goal:bytes"); goal < floor*7/8 || goal > floor*9/8 {
			return fmt.Errorf("heap goal %d MiB with GOGC %d, want about the floor, %d MiB", goal>>20, gcPercent(), floor>>20)
		}
		return nil
	})

	held := make([][]byte, 0, 40)
	for range 40 { // 320 MiB live, above the floor
		held = append(held, make([]byte, 8<<20))
	}
	retry.Within(t, 10*time.Second, "the tuner returns to GOGC", func() error {
		runtime.GC()
		if p := gcPercent(); p != base {
			return fmt.Errorf("GOGC %d with %d MiB live, want the base %d", p, len(held)*8, base)
		}
		return nil
	})
	runtime.KeepAlive(held)
	held = nil

	tu.Stop()
	runtime.GC()
	runtime.GC()
	if p := gcPercent(); p != base {
		t.Fatalf("GOGC %d after Stop, want %d", p, base)
	}
}

func readUint64(t *testing.T, name string) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("runtime/metrics has no %s", name)
	}
	return s[0].Value.Uint64()
}

func TestStartLeavesAnOffCollectorAlone(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	if p := gcPercent(); p >= 0 {
		t.Fatalf("gcPercent with GOGC off = %d, want negative", p)
	}
	if tu := Start(64 << 20); tu != nil {
		tu.Stop()
		t.Fatal("Start returned a Tuner with the collector off")
	}
	if tu := Start(0); tu != nil {
		t.Fatal("Start(0) returned a Tuner")
	}
}
