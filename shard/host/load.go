package host

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// A shard's measured load, as its leader reports it with its status (control.ShardStatus
// Load) and as metrics (cairn_shard_roots, cairn_shard_stored_bytes,
// cairn_shard_commands_total): the rebalance decision's inputs (control.Rebalance).

// LoadCandidates bounds the roots a leader names as candidates to move: the heaviest by
// stored bytes and the busiest by write rate, this many of each.
const LoadCandidates = 16

// storedLoadTTL is how long a leader reuses its count of the roots and bytes it stores:
// counting walks every root of the shard, and the controller asks every round.
const storedLoadTTL = 10 * time.Second

// storedLoad is a replica's roots and stored bytes, counted at a time.
type storedLoad struct {
	at    time.Time
	roots int64
	bytes int64
	top   []control.RootLoad // the heaviest roots by bytes, heaviest first
}

// storedLoads caches each replica's storedLoad.
type storedLoads struct {
	mu sync.Mutex
	by map[*shard.Shard]storedLoad
}

// get returns r's stored load, counted anew when the cached one is older than
// storedLoadTTL.
func (c *storedLoads) get(r *shard.Shard, now time.Time) storedLoad {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.by[r]; ok && now.Sub(l.at) < storedLoadTTL {
		return l
	}
	l := countStored(r.AppliedView(), LoadCandidates)
	l.at = now
	if c.by == nil {
		c.by = map[*shard.Shard]storedLoad{}
	}
	c.by[r] = l
	return l
}

// forget drops r's cached load (its replica closed).
func (c *storedLoads) forget(r *shard.Shard) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.by, r)
}

// countStored counts the roots of v and the bytes they store, with the top heaviest.
func countStored(v *meta.View, top int) storedLoad {
	var l storedLoad
	byBytes := func(a, b control.RootLoad) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Root, b.Root))
	}
	v.Shard().Roots(func(r *meta.Root) bool {
		b := v.Usage(r.Agent).Bytes
		l.roots++
		l.bytes += b
		if top > 0 && (len(l.top) < top || byBytes(control.RootLoad{Root: r.Agent, Bytes: b}, l.top[len(l.top)-1]) < 0) {
			rl := control.RootLoad{Root: r.Agent, Bytes: b}
			at, _ := slices.BinarySearchFunc(l.top, rl, byBytes)
			l.top = slices.Insert(l.top, at, rl)
			if len(l.top) > top {
				l.top = l.top[:top]
			}
		}
		return true
	})
	return l
}

// shardLoad is shard id's load as r, its leader on this node, measures it: the roots it
// holds, their stored bytes, its write rate, and its candidates (the heaviest and the
// busiest roots, each with both measures).
func (h *Host) shardLoad(id int, r *shard.Shard) control.ShardLoad {
	stored := h.stored.get(r, time.Now())
	writes := r.WriteLoad(LoadCandidates)
	l := control.ShardLoad{Shard: id, Roots: stored.roots, Bytes: stored.bytes, WriteRate: writes.Rate}
	rates := map[string]float64{}
	for _, rr := range writes.Top {
		rates[rr.Root] = rr.Rate
	}
	seen := map[string]bool{}
	for _, c := range stored.top {
		c.WriteRate = rates[c.Root]
		l.Candidates = append(l.Candidates, c)
		seen[c.Root] = true
	}
	view := r.AppliedView()
	for _, rr := range writes.Top {
		if _, held := view.Root(rr.Root); held && !seen[rr.Root] {
			l.Candidates = append(l.Candidates, control.RootLoad{Root: rr.Root, Bytes: view.Usage(rr.Root).Bytes, WriteRate: rr.Rate})
		}
	}
	return l
}
