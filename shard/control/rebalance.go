package control

import (
	"cmp"
	"fmt"
	"slices"
)

// The rebalance decision (docs/architecture.md#replication-and-placement): which roots to
// move from shards above a load threshold to the least loaded, a few per round. It is a
// pure function, like Plan: the loads come in, the moves go out. Nothing calls it yet —
// the root move it would drive is a later piece — but its rules are fixed and tested, and
// the simulation (rebalance_sim_test.go) measures it at a million roots.

// RootLoad is one root's measured load on its shard.
type RootLoad struct {
	Root string
	// Bytes is the root's stored bytes.
	Bytes int64
	// WriteRate is the root's writes per second (commands applied), over the measuring
	// window.
	WriteRate float64
}

// ShardLoad is one shard's measured load.
type ShardLoad struct {
	Shard int
	// Roots, Bytes and WriteRate are the shard's totals: roots placed on it, stored bytes,
	// writes per second.
	Roots     int64
	Bytes     int64
	WriteRate float64
	// Candidates are roots of the shard that may move, with their own loads (every root, or
	// the heaviest few the shard reports). A root listed twice, or on two shards, counts
	// once, where it is first listed in shard order.
	Candidates []RootLoad
}

// RebalanceConfig are the knobs of the decision.
type RebalanceConfig struct {
	// Threshold: a shard is hot when its load is above (1 + Threshold) × the mean shard
	// load. Default 0.2.
	Threshold float64
	// MaxMoves bounds the moves of one round. Default 4.
	MaxMoves int
	// RootsWeight, BytesWeight and RateWeight weigh the three measures in a shard's load;
	// each measure counts as its share of the cluster's total, so the mean shard load is 1.
	// All zero: 1, 1, 1.
	RootsWeight, BytesWeight, RateWeight float64
}

// DefaultRebalanceConfig returns the defaults documented on RebalanceConfig.
func DefaultRebalanceConfig() RebalanceConfig {
	return RebalanceConfig{Threshold: 0.2, MaxMoves: 4, RootsWeight: 1, BytesWeight: 1, RateWeight: 1}
}

// Validate reports the first field that cannot work.
func (c RebalanceConfig) Validate() error {
	switch {
	case c.Threshold < 0:
		return fmt.Errorf("%w: rebalance threshold must not be negative, got %v", ErrInvalidArgument, c.Threshold)
	case c.MaxMoves < 0:
		return fmt.Errorf("%w: rebalance moves per round must not be negative, got %d", ErrInvalidArgument, c.MaxMoves)
	case c.RootsWeight < 0 || c.BytesWeight < 0 || c.RateWeight < 0:
		return fmt.Errorf("%w: rebalance weights must not be negative", ErrInvalidArgument)
	}
	return nil
}

// gapMargin is the relative margin by which a moved root's load is under half the gap
// between its source and target shards.
const gapMargin = 1e-9

// Move is one root to move.
type Move struct {
	Root     string
	From, To int
}

// LoadModel turns measures into loads: a shard's (or a root's) load is the weighted sum of
// its measures, each as a share of the cluster's total times the number of shards, over
// the weights' sum, so the mean shard load is 1. A measure whose total is 0 weighs
// nothing.
type LoadModel struct {
	perRoot, perByte, perRate float64
}

// NewLoadModel returns the model of loads for cfg's weights and these shards' totals.
func NewLoadModel(loads []ShardLoad, cfg RebalanceConfig) LoadModel {
	wr, wb, ww := cfg.RootsWeight, cfg.BytesWeight, cfg.RateWeight
	if wr == 0 && wb == 0 && ww == 0 {
		wr, wb, ww = 1, 1, 1
	}
	var roots, bytes, rate float64
	for _, s := range loads {
		roots += float64(s.Roots)
		bytes += float64(s.Bytes)
		rate += s.WriteRate
	}
	n := float64(len(loads))
	var m LoadModel
	var sum float64
	if roots > 0 {
		m.perRoot, sum = wr*n/roots, sum+wr
	}
	if bytes > 0 {
		m.perByte, sum = wb*n/bytes, sum+wb
	}
	if rate > 0 {
		m.perRate, sum = ww*n/rate, sum+ww
	}
	if sum > 0 {
		m.perRoot, m.perByte, m.perRate = m.perRoot/sum, m.perByte/sum, m.perRate/sum
	}
	return m
}

// Shard returns a shard's load.
func (m LoadModel) Shard(s ShardLoad) float64 {
	return float64(s.Roots)*m.perRoot + float64(s.Bytes)*m.perByte + s.WriteRate*m.perRate
}

// Root returns a root's load: what its shard sheds by moving it.
func (m LoadModel) Root(r RootLoad) float64 {
	return m.perRoot + float64(r.Bytes)*m.perByte + r.WriteRate*m.perRate
}

// Rebalance decides the moves of one round. It is pure and deterministic: the same loads,
// in any order, give the same moves.
//
// Rules:
//   - Loads are LoadModel's (the mean shard is 1). A shard is hot above 1 + Threshold.
//     Nothing moves when no shard is hot, and at most MaxMoves roots move per round, each
//     at most once.
//   - The hottest shard (ties: lowest id) sheds first, to the coolest (ties: lowest id):
//     the candidate root of largest load that is less than half their difference (ties:
//     the root's name), so the target ends cooler than the source did before the move,
//     and the larger of the two loads strictly drops. A hot shard with no such root (its
//     load is one root too heavy to move without making another shard as hot) is left;
//     the next hottest sheds.
//   - Loads are updated after each move, so the round's moves add up.
//
// Each move lowers the sum of the squared shard loads, so repeated rounds (with the moves
// applied) end: at the latest when no hot shard has a root it can shed.
func Rebalance(loads []ShardLoad, cfg RebalanceConfig) []Move {
	if len(loads) < 2 || cfg.MaxMoves == 0 {
		return nil
	}
	m := NewLoadModel(loads, cfg)
	shards := slices.Clone(loads)
	slices.SortFunc(shards, func(a, b ShardLoad) int { return cmp.Compare(a.Shard, b.Shard) })
	load := make([]float64, len(shards))
	for i, s := range shards {
		load[i] = m.Shard(s)
	}
	// The candidates of each shard, heaviest first (ties: the root's name); a root
	// listed again later is dropped.
	seen := map[string]bool{}
	cands := make([][]RootLoad, len(shards))
	for i, s := range shards {
		for _, r := range s.Candidates {
			if !seen[r.Root] {
				seen[r.Root] = true
				cands[i] = append(cands[i], r)
			}
		}
		slices.SortFunc(cands[i], func(a, b RootLoad) int {
			if c := cmp.Compare(m.Root(b), m.Root(a)); c != 0 {
				return c
			}
			return cmp.Compare(a.Root, b.Root)
		})
	}
	hot := 1 + cfg.Threshold
	stuck := make([]bool, len(shards))
	var moves []Move
	for len(moves) < cfg.MaxMoves {
		src := -1
		for i := range shards {
			if !stuck[i] && load[i] > hot && (src < 0 || load[i] > load[src]) {
				src = i
			}
		}
		if src < 0 {
			break
		}
		dst := 0
		for i := range shards {
			if load[i] < load[dst] {
				dst = i
			}
		}
		// Less than half the gap by a margin, so that rounding in the running loads never
		// passes a root of exactly half: the target would end as hot as the source.
		gap := (load[src] - load[dst]) * (1 - gapMargin)
		pick := -1
		for j, r := range cands[src] {
			if l := m.Root(r); 2*l < gap && l > 0 {
				pick = j
				break
			}
		}
		if pick < 0 {
			stuck[src] = true
			continue
		}
		r := cands[src][pick]
		cands[src] = slices.Delete(cands[src], pick, pick+1)
		l := m.Root(r)
		load[src] -= l
		load[dst] += l
		moves = append(moves, Move{Root: r.Root, From: shards[src].Shard, To: shards[dst].Shard})
		// A shard that gained load may now shed again; one that lost some may not be
		// stuck any more for a cooler target: look again.
		clear(stuck)
	}
	return moves
}
