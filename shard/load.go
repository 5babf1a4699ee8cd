package shard

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// The write load a leader measures (docs/architecture.md, "Rebalance decision"): the
// commands this replica proposed that applied, in all and by agent root, over fixed
// windows of LoadWindow. A rate is the count of the last complete window over its length,
// so it lags by at most one window and never depends on how often it is read. Memory is
// bounded: at most MaxMeteredRoots roots are counted per window, the others count in the
// shard's total only.

// LoadWindow is the length of one measuring window.
const LoadWindow = time.Minute

// MaxMeteredRoots bounds the roots counted one by one in a window.
const MaxMeteredRoots = 4096

// RootRate is one root's measured write rate.
type RootRate struct {
	Root string
	// Rate is the root's applied commands per second over the last complete window.
	Rate float64
}

// WriteLoad is a replica's measured write load (Shard.WriteLoad).
type WriteLoad struct {
	// Commands counts the commands this replica proposed that applied, since it opened.
	Commands uint64
	// Rate is the shard's applied commands per second over the last complete window; zero
	// before one window ended, and once two went by without a command.
	Rate float64
	// Top are the roots with the highest rates in that window, highest first (ties: the
	// root's name), at most the number asked for.
	Top []RootRate
}

// loadMeter counts applied commands by root over windows of LoadWindow.
type loadMeter struct {
	mu       sync.Mutex
	commands uint64
	start    time.Time        // the current window's start; zero before the first count
	cur      map[string]int64 // the current window's counts by root
	curAll   int64            // the current window's count, every root
	prev     map[string]int64 // the last complete window's, when it ended at start
	prevAll  int64
}

// roll ends the windows that ended by now.
func (m *loadMeter) roll(now time.Time) {
	if m.start.IsZero() {
		m.start = now
		return
	}
	elapsed := now.Sub(m.start)
	if elapsed < LoadWindow {
		return
	}
	if elapsed < 2*LoadWindow {
		m.prev, m.prevAll = m.cur, m.curAll
	} else { // a whole window went by without a count
		m.prev, m.prevAll = nil, 0
	}
	m.cur, m.curAll = nil, 0
	m.start = m.start.Add(elapsed.Truncate(LoadWindow))
}

// record counts one applied command of root ("" for none) at now.
func (m *loadMeter) record(root string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(now)
	m.commands++
	m.curAll++
	if root == "" {
		return
	}
	if _, ok := m.cur[root]; !ok && len(m.cur) >= MaxMeteredRoots {
		return
	}
	if m.cur == nil {
		m.cur = map[string]int64{}
	}
	m.cur[root]++
}

// load is the meter's WriteLoad at now with at most top roots.
func (m *loadMeter) load(now time.Time, top int) WriteLoad {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(now)
	perSecond := func(n int64) float64 { return float64(n) / LoadWindow.Seconds() }
	l := WriteLoad{Commands: m.commands, Rate: perSecond(m.prevAll)}
	for root, n := range m.prev {
		l.Top = append(l.Top, RootRate{Root: root, Rate: perSecond(n)})
	}
	slices.SortFunc(l.Top, func(a, b RootRate) int {
		return cmp.Or(cmp.Compare(b.Rate, a.Rate), cmp.Compare(a.Root, b.Root))
	})
	if len(l.Top) > top {
		l.Top = l.Top[:max(top, 0)]
	}
	return l
}

// WriteLoad returns the write load this replica measured as a leader (every command it
// proposed that applied), with at most top roots.
func (s *Shard) WriteLoad(top int) WriteLoad { return s.load.load(s.cfg.Clock(), top) }

// countApplied records an applied command of body b in the write load.
func (s *Shard) countApplied(b meta.Body) { s.load.record(meta.AgentOf(b), s.cfg.Clock()) }
