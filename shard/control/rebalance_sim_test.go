package control

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The simulation at scale (issue 30, BENCHMARKS.md "Placement and rebalance at scale"):
// the control plane's pure functions — replica placement (Plan), root placement
// (leastLoaded, the rule of Placement.Place) and the rebalance decision (Rebalance) — on a
// simulated cluster of a million roots, a thousand shards and a hundred nodes whose roots'
// write rates and stored bytes follow Zipf laws. No etcd, no Raft: the functions' own
// decisions, applied to an in-memory model.
//
//	go test -run XXX -bench ClusterAtScale -benchtime 1x ./shard/control/

// simParams shape the simulated cluster.
type simParams struct {
	roots, shards, nodes, replication int
	rateZipf, bytesZipf               float64 // exponents of the roots' write-rate and stored-bytes laws
	totalRate                         float64 // writes per second over the cluster
	totalBytes                        float64 // stored bytes over the cluster
	round                             time.Duration
	cfg                               RebalanceConfig
}

var atScale = simParams{roots: 1_000_000, shards: 1000, nodes: 100, replication: 3,
	rateZipf: 1.1, bytesZipf: 0.8, totalRate: 100_000, totalBytes: 1e15,
	round: 30 * time.Second, cfg: DefaultRebalanceConfig()}

// zipfShares returns n values following rank^-s, their ranks a random permutation drawn
// from rng, scaled to sum to total.
func zipfShares(rng *rand.Rand, n int, s, total float64) []float64 {
	h := 0.0
	for k := 1; k <= n; k++ {
		h += math.Pow(float64(k), -s)
	}
	out := make([]float64, n)
	for i, rank := range rng.Perm(n) {
		out[i] = total * math.Pow(float64(rank+1), -s) / h
	}
	return out
}

// simCluster is the model the functions' decisions are applied to.
type simCluster struct {
	p       simParams
	names   []string
	rate    []float64
	bytes   []int64
	shardOf []int32
	members [][]int32 // each shard's roots, heaviest first once sorted (sortMembers)
	load    []float64 // each root's load (LoadModel.Root), once sorted
	totals  []ShardLoad
}

// simCandidates is how many roots a hot shard reports as candidates: its heaviest.
const simCandidates = 64

// sortMembers orders each shard's roots heaviest first by m's loads.
func (c *simCluster) sortMembers(m LoadModel) {
	c.load = make([]float64, len(c.names))
	for i := range c.load {
		c.load[i] = m.Root(RootLoad{Bytes: c.bytes[i], WriteRate: c.rate[i]})
	}
	for s := range c.members {
		slices.SortFunc(c.members[s], c.heavierFirst)
	}
}

func (c *simCluster) heavierFirst(a, b int32) int {
	if c.load[a] != c.load[b] {
		if c.load[a] > c.load[b] {
			return -1
		}
		return 1
	}
	return int(a - b)
}

func newSimCluster(p simParams) *simCluster {
	rng := rand.New(rand.NewPCG(30, 1))
	c := &simCluster{p: p, names: make([]string, p.roots), bytes: make([]int64, p.roots), shardOf: make([]int32, p.roots),
		members: make([][]int32, p.shards), totals: make([]ShardLoad, p.shards)}
	c.rate = zipfShares(rng, p.roots, p.rateZipf, p.totalRate)
	for i, b := range zipfShares(rng, p.roots, p.bytesZipf, p.totalBytes) {
		c.bytes[i] = int64(b)
	}
	for i := range c.names {
		c.names[i] = "root-" + strconv.Itoa(i)
	}
	for s := range c.totals {
		c.totals[s].Shard = s
	}
	return c
}

// place places every root, one after the other, as Placement.Place does: on a
// least-loaded open shard by count of roots.
func (c *simCluster) place() {
	counts := make([]int64, c.p.shards)
	open := make([]bool, c.p.shards)
	for s := range open {
		open[s] = true
	}
	for i, name := range c.names {
		s := leastLoaded(counts, open, name)
		counts[s]++
		c.shardOf[i] = int32(s)
		c.members[s] = append(c.members[s], int32(i))
		c.totals[s].Roots++
		c.totals[s].Bytes += c.bytes[i]
		c.totals[s].WriteRate += c.rate[i]
	}
}

// loads returns the rebalance input: every shard's totals, and for the hot shards their
// simCandidates heaviest roots as candidates (a cool shard sheds nothing, so it need not
// report its roots).
func (c *simCluster) loads(m LoadModel) []ShardLoad {
	out := slices.Clone(c.totals)
	for s := range out {
		if m.Shard(out[s]) <= 1+c.p.cfg.Threshold {
			continue
		}
		top := c.members[s][:min(simCandidates, len(c.members[s]))]
		cands := make([]RootLoad, len(top))
		for j, i := range top {
			cands[j] = RootLoad{Root: c.names[i], Bytes: c.bytes[i], WriteRate: c.rate[i]}
		}
		out[s].Candidates = cands
	}
	return out
}

func (c *simCluster) apply(tb testing.TB, moves []Move) {
	for _, mv := range moves {
		n, err := strconv.Atoi(strings.TrimPrefix(mv.Root, "root-"))
		if err != nil {
			tb.Fatalf("move of an unknown root %q", mv.Root)
		}
		i := int32(n)
		from, to := &c.totals[mv.From], &c.totals[mv.To]
		from.Roots, from.Bytes, from.WriteRate = from.Roots-1, from.Bytes-c.bytes[i], from.WriteRate-c.rate[i]
		to.Roots, to.Bytes, to.WriteRate = to.Roots+1, to.Bytes+c.bytes[i], to.WriteRate+c.rate[i]
		if j, ok := slices.BinarySearchFunc(c.members[mv.From], i, c.heavierFirst); ok {
			c.members[mv.From] = slices.Delete(c.members[mv.From], j, j+1)
		} else {
			tb.Fatalf("move of %s from shard %d, which does not hold it", mv.Root, mv.From)
		}
		j, _ := slices.BinarySearchFunc(c.members[mv.To], i, c.heavierFirst)
		c.members[mv.To] = slices.Insert(c.members[mv.To], j, i)
		c.shardOf[i] = int32(mv.To)
	}
}

// hottest returns the largest shard load (the mean is 1).
func (c *simCluster) hottest(m LoadModel) float64 {
	h := 0.0
	for _, s := range c.totals {
		h = max(h, m.Shard(s))
	}
	return h
}

// spread returns how many shards are hot (above 1 + Threshold) and the 99th percentile
// shard load.
func (c *simCluster) spread(m LoadModel) (hot int, p99 float64) {
	loads := make([]float64, len(c.totals))
	for s, t := range c.totals {
		loads[s] = m.Shard(t)
		if loads[s] > 1+c.p.cfg.Threshold {
			hot++
		}
	}
	slices.Sort(loads)
	return hot, loads[len(loads)*99/100]
}

// simReport is what one simulation measured.
type simReport struct {
	planRounds, replicasMin, replicasMax int
	placeTime                            time.Duration
	rounds, moves                        int
	before, after, floor                 float64 // hottest shard's load over the mean; the heaviest root's
	heavy                                int     // roots whose own load is above the threshold: each keeps its shard hot
	hotBefore, hotAfter                  int     // shards above the threshold
	p99Before, p99After                  float64 // 99th percentile shard load over the mean
}

func (r simReport) String() string {
	return fmt.Sprintf("plan: %d rounds, %d..%d replicas per node; place: %v; rebalance: %d rounds, %d moves; "+
		"hottest/mean %.2f → %.2f (floor %.2f); p99/mean %.2f → %.2f; hot shards %d → %d (%d roots alone above the threshold)",
		r.planRounds, r.replicasMin, r.replicasMax, r.placeTime, r.rounds, r.moves, r.before, r.after, r.floor,
		r.p99Before, r.p99After, r.hotBefore, r.hotAfter, r.heavy)
}

// simulate runs Plan to convergence on the shards and nodes, places every root, then runs
// rebalance rounds until one moves nothing (at most maxRounds).
func simulate(tb testing.TB, p simParams, maxRounds int) simReport {
	var rep simReport
	nodes := NodeSet{}
	for i := range p.nodes {
		id := fmt.Sprintf("node-%03d", i)
		nodes[id] = NodeInfo{PeerAddr: id + ":7000"}
	}
	model := &raftModel{groups: map[int][]Server{}, records: map[int]ReplicaSet{}, open: map[int]bool{}}
	for s := range p.shards {
		model.open[s] = true
	}
	for rep.planRounds = 1; ; rep.planRounds++ {
		acts := Plan(model.state(p.shards, p.replication, nodes))
		if len(acts) == 0 {
			break
		}
		for _, a := range acts {
			model.apply(a)
		}
		if rep.planRounds > 20 {
			tb.Fatalf("Plan did not converge in 20 rounds")
		}
	}
	perNode := map[string]int{}
	for _, g := range model.groups {
		for _, sv := range g {
			perNode[sv.ID]++
		}
	}
	rep.replicasMin = math.MaxInt
	for id := range nodes {
		rep.replicasMin, rep.replicasMax = min(rep.replicasMin, perNode[id]), max(rep.replicasMax, perNode[id])
	}

	c := newSimCluster(p)
	start := time.Now()
	c.place()
	rep.placeTime = time.Since(start)

	m := NewLoadModel(c.totals, p.cfg)
	rep.before = c.hottest(m)
	for i := range c.names {
		l := m.Root(RootLoad{Bytes: c.bytes[i], WriteRate: c.rate[i]})
		rep.floor = max(rep.floor, l)
		if l > 1+p.cfg.Threshold {
			rep.heavy++
		}
	}
	c.sortMembers(m)
	rep.hotBefore, rep.p99Before = c.spread(m)
	for rep.rounds = 0; rep.rounds < maxRounds; rep.rounds++ {
		moves := Rebalance(c.loads(m), p.cfg)
		if len(moves) == 0 {
			break
		}
		rep.moves += len(moves)
		c.apply(tb, moves)
	}
	rep.after = c.hottest(m)
	rep.hotAfter, rep.p99After = c.spread(m)
	return rep
}

// BenchmarkClusterAtScale reports, for a million roots on a thousand shards and a hundred
// nodes (replication 3; write rates Zipf 1.1, stored bytes Zipf 0.8; threshold 0.2, at
// most 4 moves a round): Plan's rounds and replicas per node, the placement's time per
// root, and the rebalance's rounds to converge, moves, moves per hour at one round every
// 30 s, and the hottest shard's load over the mean before and after, with the floor no
// placement can beat (the heaviest single root's load).
func BenchmarkClusterAtScale(b *testing.B) {
	var rep simReport
	for b.Loop() {
		rep = simulate(b, atScale, 100_000)
	}
	hours := float64(rep.rounds) * atScale.round.Hours()
	b.ReportMetric(float64(rep.planRounds), "plan-rounds")
	b.ReportMetric(float64(rep.replicasMax), "replicas/node-max")
	b.ReportMetric(float64(rep.placeTime.Nanoseconds())/float64(atScale.roots), "place-ns/root")
	b.ReportMetric(float64(rep.rounds), "rounds")
	b.ReportMetric(float64(rep.moves), "moves")
	if hours > 0 {
		b.ReportMetric(float64(rep.moves)/hours, "moves/hour")
	}
	b.ReportMetric(hours, "hours-to-converge")
	b.ReportMetric(rep.before, "hottest/mean-before")
	b.ReportMetric(rep.after, "hottest/mean-after")
	b.ReportMetric(rep.floor, "floor/mean")
	b.ReportMetric(rep.p99Before, "p99/mean-before")
	b.ReportMetric(rep.p99After, "p99/mean-after")
	b.ReportMetric(float64(rep.hotBefore), "hot-shards-before")
	b.ReportMetric(float64(rep.hotAfter), "hot-shards-after")
	b.ReportMetric(float64(rep.heavy), "roots-alone-hot")
	b.Logf("%v", rep)
}

// TestSimulationConvergesOnASmallCluster runs the simulation at a thousandth of the scale:
// the rebalance converges, never makes the hottest shard hotter, and Plan spreads replicas
// within two of each other per node.
func TestSimulationConvergesOnASmallCluster(t *testing.T) {
	p := atScale
	p.roots, p.shards, p.nodes = 10_000, 50, 10
	rep := simulate(t, p, 10_000)
	t.Logf("%v", rep)
	if rep.rounds >= 10_000 || rep.moves == 0 {
		t.Fatalf("rebalance: %d rounds, %d moves; want convergence with some moves", rep.rounds, rep.moves)
	}
	if rep.after > rep.before || rep.after < rep.floor {
		t.Fatalf("hottest/mean %.2f → %.2f with floor %.2f", rep.before, rep.after, rep.floor)
	}
	if rep.replicasMax-rep.replicasMin > 2 || rep.replicasMax*p.nodes < p.shards*p.replication {
		t.Fatalf("replicas per node %d..%d for %d shards × %d on %d nodes", rep.replicasMin, rep.replicasMax, p.shards, p.replication, p.nodes)
	}
}
