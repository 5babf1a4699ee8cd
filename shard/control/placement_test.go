package control

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/retry"
)

// newPlacement creates (or joins) a cluster of shards and opens a placement map on it,
// closed when the test ends.
func newPlacement(t *testing.T, cli *clientv3.Client, cfg Config, shards int) *Placement {
	t.Helper()
	p := newPlane(t, cli, cfg)
	c, err := p.CreateCluster(ctxTimeout(t, 10*time.Second), ClusterSpec{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	pl := p.NewPlacement(c)
	t.Cleanup(pl.Close)
	return pl
}

func TestPlaceOneRootConcurrentlyYieldsOneShard(t *testing.T) {
	etcd := startEtcd(t, 1)
	cfg := testConfig(t)
	cfg.RequestTimeout = 5 * time.Second // the race detector on a shared machine
	// Four nodes, each with its own client and cache, eight callers each.
	var nodes []*Placement
	for range 4 {
		nodes = append(nodes, newPlacement(t, etcd.client(), cfg, 8))
	}
	ctx := ctxTimeout(t, 30*time.Second)
	for round := range 5 {
		root := fmt.Sprintf("agent-%d", round)
		type answer struct {
			shard   int
			created bool
			err     error
		}
		var mu sync.Mutex
		var answers []answer
		var wg sync.WaitGroup
		for _, pl := range nodes {
			for range 8 {
				wg.Go(func() {
					s, c, err := pl.Place(ctx, root)
					mu.Lock()
					answers = append(answers, answer{s, c, err})
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		created := 0
		for _, a := range answers {
			if a.err != nil {
				t.Fatalf("Place(%s): %v", root, a.err)
			}
			if a.shard != answers[0].shard {
				t.Fatalf("Place(%s) answered shards %d and %d", root, answers[0].shard, a.shard)
			}
			if a.created {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("Place(%s): %d callers report creating it, want exactly 1", root, created)
		}
		for i, pl := range nodes {
			if s, err := pl.Resolve(ctx, root); err != nil || s != answers[0].shard {
				t.Fatalf("node %d Resolve(%s) = %d, %v; want %d", i, root, s, err, answers[0].shard)
			}
		}
	}
	loads := mustLoads(t, ctx, nodes[0])
	var total int64
	for _, n := range loads {
		total += n
	}
	if total != 5 {
		t.Fatalf("load counters sum to %d after placing 5 roots: %v", total, loads)
	}
}

func TestPlaceChoosesTheLeastLoadedShard(t *testing.T) {
	etcd := startEtcd(t, 1)
	cfg := testConfig(t)
	cfg.RequestTimeout = 5 * time.Second
	const shards = 6
	var nodes []*Placement
	for range 3 {
		nodes = append(nodes, newPlacement(t, etcd.client(), cfg, shards))
	}
	ctx := ctxTimeout(t, 30*time.Second)

	t.Run("sequential placements fill every shard before any gets a second root", func(t *testing.T) {
		seen := map[int]bool{}
		for i := range shards {
			s, created, err := nodes[i%3].Place(ctx, fmt.Sprintf("seq-%d", i))
			if err != nil || !created {
				t.Fatalf("Place: %d, %v, %v", s, created, err)
			}
			if seen[s] {
				t.Fatalf("root %d went to shard %d, which already has a root, while another is empty", i, s)
			}
			seen[s] = true
		}
	})

	t.Run("concurrent placements from several nodes stay balanced", func(t *testing.T) {
		const roots = 4 * shards // each shard ends with 1 + 4
		var wg sync.WaitGroup
		errs := make(chan error, roots)
		for i := range roots {
			wg.Go(func() {
				if _, _, err := nodes[i%3].Place(ctx, fmt.Sprintf("conc-%d", i)); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		loads := mustLoads(t, ctx, nodes[0])
		for s, n := range loads {
			if n != 5 {
				t.Fatalf("shard %d holds %d roots, want 5 each: %v", s, n, loads)
			}
		}
		// The counters agree with the placements themselves.
		count := make([]int64, shards)
		for i := range roots {
			s, err := nodes[1].Resolve(ctx, fmt.Sprintf("conc-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			count[s]++
		}
		for i := range shards {
			s, _ := nodes[2].Resolve(ctx, fmt.Sprintf("seq-%d", i))
			count[s]++
		}
		for s := range shards {
			if count[s] != loads[s] {
				t.Fatalf("shard %d: counter %d, placed roots %d", s, loads[s], count[s])
			}
		}
	})

	t.Run("an invalid root is refused before etcd is asked", func(t *testing.T) {
		for _, root := range []string{"", "-x", "a/b", string(make([]byte, 129))} {
			if _, _, err := nodes[0].Place(ctx, root); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Place(%q): %v, want ErrInvalidArgument", root, err)
			}
		}
		if _, err := nodes[0].Resolve(ctx, "never-placed"); !errors.Is(err, ErrRootNotPlaced) {
			t.Fatalf("Resolve of an unplaced root: %v, want ErrRootNotPlaced", err)
		}
	})
}

func TestPlacementWhileEtcdIsDown(t *testing.T) {
	etcd := startEtcd(t, 1)
	cfg := testConfig(t)
	cfg.RequestTimeout = 300 * time.Millisecond
	here := newPlacement(t, etcd.client(), cfg, 4)
	there := newPlacement(t, etcd.client(), cfg, 4) // another node
	ctx := ctxTimeout(t, 60*time.Second)

	var placed []string
	for i := range 8 {
		root := fmt.Sprintf("old-%d", i)
		if _, _, err := here.Place(ctx, root); err != nil {
			t.Fatal(err)
		}
		placed = append(placed, root)
	}
	want := map[string]int{}
	for _, r := range placed {
		want[r], _ = here.Resolve(ctx, r)
	}
	// The other node learns every placement from its watch, without asking for it.
	retry.Within(t, 10*time.Second, "the other node caches every placement", func() error {
		for _, r := range placed {
			if s, ok := there.Cached(r); !ok || s != want[r] {
				return fmt.Errorf("%s not cached on the other node", r)
			}
		}
		return nil
	})

	etcd.Stop(0)

	for name, pl := range map[string]*Placement{"placing node": here, "other node": there} {
		for _, r := range placed {
			if s, err := pl.Resolve(ctx, r); err != nil || s != want[r] {
				t.Fatalf("%s: Resolve(%s) with etcd down = %d, %v; want %d", name, r, s, err, want[r])
			}
			if s, created, err := pl.Place(ctx, r); err != nil || created || s != want[r] {
				t.Fatalf("%s: Place(%s) of a placed root with etcd down = %d, %v, %v", name, r, s, created, err)
			}
		}
	}
	_, _, err := here.Place(ctx, "new-root")
	if !errors.Is(err, ErrControlPlaneUnavailable) || !IsRetryable(err) {
		t.Fatalf("Place of a new root with etcd down: %v; want ErrControlPlaneUnavailable", err)
	}
	if _, err := there.Resolve(ctx, "new-root"); !errors.Is(err, ErrControlPlaneUnavailable) {
		t.Fatalf("Resolve of an unknown root with etcd down: %v; want ErrControlPlaneUnavailable", err)
	}

	etcd.Restart(0)

	var shard int
	retry.Within(t, 30*time.Second, "a new root is placed after the etcd restart", func() error {
		s, created, err := here.Place(ctx, "new-root")
		if err == nil && !created {
			return errors.New("placed by nobody else, yet not created here")
		}
		shard = s
		return err
	})
	retry.Within(t, 10*time.Second, "the other node caches the new root", func() error {
		if s, ok := there.Cached("new-root"); !ok || s != shard {
			return errors.New("the other node's cache did not catch up after the restart")
		}
		return nil
	})
}

func TestPlacementOnThreeMemberEtcd(t *testing.T) {
	etcd := startEtcd(t, 3)
	cfg := testConfig(t)
	cfg.RequestTimeout = 5 * time.Second
	// Each node talks to a different member.
	var nodes []*Placement
	for i := range 3 {
		nodes = append(nodes, newPlacement(t, etcd.client(i), cfg, 4))
	}
	ctx := ctxTimeout(t, 60*time.Second)
	place := func(root string) int {
		t.Helper()
		answers := make([]int, len(nodes))
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, pl := range nodes {
			wg.Go(func() { answers[i], _, errs[i] = pl.Place(ctx, root) })
		}
		wg.Wait()
		for i := range nodes {
			if errs[i] != nil {
				t.Fatalf("node %d Place(%s): %v", i, root, errs[i])
			}
			if answers[i] != answers[0] {
				t.Fatalf("Place(%s): member-%d client says shard %d, member-0 client says %d", root, i, answers[i], answers[0])
			}
		}
		return answers[0]
	}
	for i := range 4 {
		place(fmt.Sprintf("before-%d", i))
	}

	// One member down: the other two keep quorum; nodes talking to them keep placing. The
	// node on member 0 goes first (an open watch would hold the member's graceful stop).
	nodes[0].Close()
	etcd.Stop(0)
	nodes = nodes[1:]
	for i := range 4 {
		place(fmt.Sprintf("after-%d", i))
	}
	loads := mustLoads(t, ctx, nodes[0])
	for s, n := range loads {
		if n != 2 {
			t.Fatalf("shard %d holds %d of 8 roots on 4 shards: %v", s, n, loads)
		}
	}
}
