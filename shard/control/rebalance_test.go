package control

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// drawLoads draws a cluster of shards whose candidates are every root of the shard, and
// the totals their sums.
func drawLoads(t *rapid.T) []ShardLoad {
	n := rapid.IntRange(2, 8).Draw(t, "shards")
	loads := make([]ShardLoad, n)
	id := 0
	for s := range loads {
		loads[s].Shard = s * 3 // ids need not be dense
		for range rapid.IntRange(0, 12).Draw(t, fmt.Sprintf("roots of %d", s)) {
			r := RootLoad{Root: fmt.Sprintf("r%03d", id), Bytes: rapid.Int64Range(0, 1<<30).Draw(t, "bytes"),
				WriteRate: float64(rapid.IntRange(0, 500).Draw(t, "rate"))}
			id++
			loads[s].Candidates = append(loads[s].Candidates, r)
		}
		loads[s] = withTotals(loads[s])
	}
	return loads
}

// withTotals sets a shard's totals to the sums of its candidates.
func withTotals(s ShardLoad) ShardLoad {
	s.Roots, s.Bytes, s.WriteRate = int64(len(s.Candidates)), 0, 0
	for _, r := range s.Candidates {
		s.Bytes += r.Bytes
		s.WriteRate += r.WriteRate
	}
	return s
}

// applyMoves moves the roots as moves say and returns the new loads (totals recomputed).
func applyMoves(t interface{ Fatalf(string, ...any) }, loads []ShardLoad, moves []Move) []ShardLoad {
	out := make([]ShardLoad, len(loads))
	at := map[int]int{}
	for i, s := range loads {
		out[i] = ShardLoad{Shard: s.Shard, Candidates: slices.Clone(s.Candidates)}
		at[s.Shard] = i
	}
	for _, mv := range moves {
		from, to := &out[at[mv.From]], &out[at[mv.To]]
		j := slices.IndexFunc(from.Candidates, func(r RootLoad) bool { return r.Root == mv.Root })
		if j < 0 {
			t.Fatalf("move %+v: the root is not on shard %d", mv, mv.From)
		}
		to.Candidates = append(to.Candidates, from.Candidates[j])
		from.Candidates = slices.Delete(from.Candidates, j, j+1)
	}
	for i := range out {
		out[i] = withTotals(out[i])
	}
	return out
}

func shardLoads(m LoadModel, loads []ShardLoad) map[int]float64 {
	out := map[int]float64{}
	for _, s := range loads {
		out[s.Shard] = m.Shard(s)
	}
	return out
}

func drawConfig(t *rapid.T) RebalanceConfig {
	return RebalanceConfig{Threshold: float64(rapid.IntRange(0, 100).Draw(t, "threshold %")) / 100,
		MaxMoves: rapid.IntRange(1, 5).Draw(t, "max moves"), RootsWeight: float64(rapid.IntRange(0, 3).Draw(t, "roots weight")),
		BytesWeight: float64(rapid.IntRange(0, 3).Draw(t, "bytes weight")), RateWeight: float64(rapid.IntRange(0, 3).Draw(t, "rate weight"))}
}

// TestRebalanceProperties: on any cluster, each round moves at most MaxMoves roots, each
// once and from the shard that holds it, only from a hot shard and never to a hotter one
// (the target is cooler than the source before the move, and stays cooler after it); the answer does not depend on the order
// of the input; and rounds applied one after the other end within a bound, with every
// remaining hot shard holding no root it could shed.
func TestRebalanceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		loads := drawLoads(t)
		cfg := drawConfig(t)
		m := NewLoadModel(loads, cfg)
		roots := 0
		for _, s := range loads {
			roots += len(s.Candidates)
		}
		for round := 0; ; round++ {
			moves := Rebalance(loads, cfg)
			shuffled := slices.Clone(loads)
			rand.New(rand.NewPCG(uint64(round), 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if again := Rebalance(shuffled, cfg); !reflect.DeepEqual(moves, again) {
				t.Fatalf("round %d: the order of the shards changed the moves:\n%v\n%v", round, moves, again)
			}
			if len(moves) > cfg.MaxMoves {
				t.Fatalf("round %d: %d moves, limit %d", round, len(moves), cfg.MaxMoves)
			}
			before := shardLoads(m, loads)
			hot := false
			for _, l := range before {
				hot = hot || l > 1+cfg.Threshold
			}
			if !hot && len(moves) > 0 {
				t.Fatalf("round %d: no shard is hot (%v), yet moves %v", round, before, moves)
			}
			moved := map[string]bool{}
			cur := loads
			for _, mv := range moves {
				if moved[mv.Root] {
					t.Fatalf("round %d: %s moved twice", round, mv.Root)
				}
				moved[mv.Root] = true
				pre := shardLoads(m, cur)
				cur = applyMoves(t, cur, []Move{mv})
				post := shardLoads(m, cur)
				if pre[mv.To] >= pre[mv.From] || post[mv.To] >= post[mv.From] || pre[mv.From] <= 1+cfg.Threshold {
					t.Fatalf("round %d: move %+v from load %.3f to %.3f (after: %.3f to %.3f); threshold %.2f",
						round, mv, pre[mv.From], pre[mv.To], post[mv.From], post[mv.To], 1+cfg.Threshold)
				}
			}
			loads = cur
			if len(moves) == 0 {
				break
			}
			if round > roots*roots+1 {
				t.Fatalf("no convergence after %d rounds of %d roots", round, roots)
			}
		}
		// Converged: every hot shard's every root is at least half the gap to the coolest.
		after := shardLoads(m, loads)
		coolest := math.Inf(1)
		for _, l := range after {
			coolest = min(coolest, l)
		}
		for _, s := range loads {
			if after[s.Shard] <= 1+cfg.Threshold {
				continue
			}
			for _, r := range s.Candidates {
				if l := m.Root(r); l > 0 && 2*l < (after[s.Shard]-coolest)*(1-gapMargin) {
					t.Fatalf("converged, yet hot shard %d (%.3f) could shed %s (%.3f) to the coolest (%.3f)",
						s.Shard, after[s.Shard], r.Root, l, coolest)
				}
			}
		}
	})
}

func TestRebalanceTable(t *testing.T) {
	root := func(name string, rate float64) RootLoad { return RootLoad{Root: name, WriteRate: rate} }
	shard := func(id int, roots ...RootLoad) ShardLoad {
		return withTotals(ShardLoad{Shard: id, Candidates: roots})
	}
	rateOnly := RebalanceConfig{Threshold: 0.2, MaxMoves: 4, RateWeight: 1}
	tests := []struct {
		name  string
		loads []ShardLoad
		cfg   RebalanceConfig
		want  []Move
	}{
		{
			name:  "a balanced cluster moves nothing",
			loads: []ShardLoad{shard(0, root("a", 10), root("b", 10)), shard(1, root("c", 11), root("d", 9))},
			cfg:   rateOnly,
		},
		{
			name:  "the hottest shard sheds its largest root that fits to the coolest",
			loads: []ShardLoad{shard(0, root("a", 40), root("b", 20), root("c", 10)), shard(1, root("d", 5)), shard(2, root("e", 15))},
			cfg:   rateOnly,
			// loads (mean 1, total 90 over 3): 0 = 2.33, 1 = 0.17, 2 = 0.5. a (1.33) is
			// not under half the gap (1.08): b (0.67) moves to 1; then 0 = 1.67, 1 = 0.83,
			// 2 = 0.5: c (0.33) moves to 2: 0 = 1.33, 1 = 0.83, 2 = 0.83; c gone, a too big.
			want: []Move{{Root: "b", From: 0, To: 1}, {Root: "c", From: 0, To: 2}},
		},
		{
			name:  "one root heavier than the rest of the cluster stays: moving it would only move the heat",
			loads: []ShardLoad{shard(0, root("hot", 100)), shard(1, root("x", 1)), shard(2, root("y", 1))},
			cfg:   rateOnly,
		},
		{
			name: "at most MaxMoves per round",
			loads: []ShardLoad{shard(0, root("a", 10), root("b", 10), root("c", 10), root("d", 10), root("e", 10), root("f", 10)),
				shard(1), shard(2)},
			cfg:  RebalanceConfig{Threshold: 0.2, MaxMoves: 2, RateWeight: 1},
			want: []Move{{Root: "a", From: 0, To: 1}, {Root: "b", From: 0, To: 2}},
		},
		{
			name:  "no moves allowed",
			loads: []ShardLoad{shard(0, root("a", 10), root("b", 10)), shard(1)},
			cfg:   RebalanceConfig{Threshold: 0.2, RateWeight: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rebalance(tt.loads, tt.cfg); !slices.Equal(got, tt.want) {
				t.Fatalf("Rebalance = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRebalanceConfigValidate(t *testing.T) {
	if err := DefaultRebalanceConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []RebalanceConfig{{Threshold: -1}, {MaxMoves: -1}, {RateWeight: -1}} {
		if c.Validate() == nil {
			t.Fatalf("%+v validated", c)
		}
	}
}
