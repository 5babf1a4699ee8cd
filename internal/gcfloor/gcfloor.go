package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// DefaultFloorBytes is the floor `cairn serve` keeps unless configured otherwise
// (ops.Config.HeapFloorBytes): 64 MiB, a few times a node's live heap when it serves
// small calls, well under what a node's memory budget already allows.
const DefaultFloorBytes = 64 << 20

// runtimeHeapMinimum is the Go runtime's least heap goal at GOGC=100 (defaultHeapMinimum
// in runtime/mgcpacer.go), which it scales with the percentage: at percentage p no goal is
// below runtimeHeapMinimum·p/100. So a percentage above floor·100/runtimeHeapMinimum would
// set the goal above the floor whatever the live heap: a Tuner never sets one.
const runtimeHeapMinimum = 4 << 20

// The runtime's measures: the heap the last collection kept, and the GC percentage
// (GOGC; negative when off).
const (
	liveHeapMetric  = "/gc/heap/live:bytes"
	stackScanMetric = "/gc/scan/stack:bytes"
	globalsMetric   = "/gc/scan/globals:bytes"
	gcPercentMetric = "/gc/gogc:percent"
)

// gcPercent returns the process's GC percentage, without changing it.
func gcPercent() int {
	s := []metrics.Sample{{Name: gcPercentMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return -1 // a runtime without the metric: leave the collector alone
	}
	return int(int64(s[0].Value.Uint64()))
}

// Tuner raises the GC percentage while the live heap is small; see the package doc.
type Tuner struct {
	floor   uint64
	base    int // the process's GC percentage when the Tuner started
	stopped atomic.Bool
	mu      sync.Mutex // orders adjust against Stop
	percent int        // what the Tuner last set
	sample  []metrics.Sample
}

// sentinel is the object whose cleanup runs after the collection that finds it
// unreachable; it holds a pointer, so it is never batched with other tiny objects.
type sentinel struct{ _ *Tuner }

// Start starts a Tuner keeping the heap goal at or above floor bytes. It returns nil,
// and changes nothing, when floor is 0 or the collector is off (GOGC=off).
func Start(floor uint64) *Tuner {
	if floor == 0 {
		return nil
	}
	base := gcPercent()
	if base < 0 {
		return nil
	}
	t := &Tuner{floor: floor, base: base, percent: base, sample: []metrics.Sample{{Name: liveHeapMetric}, {Name: stackScanMetric}, {Name: globalsMetric}}}
	t.adjust()
	t.arm()
	return t
}

// Percent returns the GC percentage the Tuner last set.
func (t *Tuner) Percent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// Stop stops t and restores the process's GC percentage. Stopping a nil Tuner does
// nothing; Stop is idempotent.
func (t *Tuner) Stop() {
	if t == nil || t.stopped.Swap(true) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	debug.SetGCPercent(t.base)
	t.percent = t.base
}

// arm allocates a sentinel whose cleanup adjusts the percentage and arms the next one.
func (t *Tuner) arm() {
	s := &sentinel{}
	runtime.AddCleanup(s, func(t *Tuner) {
		if !t.stopped.Load() {
			t.adjust()
			t.arm()
		}
	}, t)
}

// adjust sets the percentage for the live heap the last collection kept.
func (t *Tuner) adjust() {
	metrics.Read(t.sample)
	for _, s := range t.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return // a runtime without the metric: leave GOGC alone
		}
	}
	live, roots := t.sample[0].Value.Uint64(), t.sample[1].Value.Uint64()+t.sample[2].Value.Uint64()
	want := percentFor(live, roots, t.floor, t.base)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() || !worthSetting(t.percent, want) {
		return
	}
	debug.SetGCPercent(want)
	t.percent = want
}

// percentFor returns the GC percentage whose goal is about floor, never below base, for
// a live heap of live bytes and roots bytes of stacks and globals. The runtime's goal is
// the larger of live + (live + roots)·percent/100 and runtimeHeapMinimum·percent/100, so
// the percentage is the smaller of (floor − live)·100 / (live + roots) and
// floor·100 / runtimeHeapMinimum.
func percentFor(live, roots, floor uint64, base int) int {
	if live >= floor {
		return base
	}
	scanned := max(live+roots, 1)
	p := (floor-live)/scanned*100 + (floor-live)%scanned*100/scanned
	p = min(p, floor/runtimeHeapMinimum*100+floor%runtimeHeapMinimum*100/runtimeHeapMinimum)
	return int(max(uint64(base), p))
}

// worthSetting reports whether want differs from the current percentage by more than
// an eighth of the larger: a live heap that moves a little between collections does not
// reset the goal each time.
func worthSetting(current, want int) bool {
	d := current - want
	if d < 0 {
		d = -d
	}
	return d*8 > max(current, want)
}
