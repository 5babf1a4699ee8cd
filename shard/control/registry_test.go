package control

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

func TestRegistry(t *testing.T) {
	etcd := startEtcd(t, 1)
	cli := etcd.client()
	p := newPlane(t, cli, testConfig(t)) // node TTL 1s
	ctx := ctxTimeout(t, 30*time.Second)

	watch := p.WatchNodes(ctx)
	waitNodes := func(want ...string) {
		t.Helper()
		retry.Within(t, 10*time.Second, "the node watch delivers the wanted set", func() error {
			var got NodeSet
			select {
			case got = <-watch:
			case <-time.After(100 * time.Millisecond):
				return fmt.Errorf("no registry change delivered")
			}
			if len(got) != len(want) {
				return fmt.Errorf("watch delivered %v, want %v", keysOf(got), want)
			}
			for _, id := range want {
				if _, ok := got[id]; !ok {
					return fmt.Errorf("watch delivered %v, want %v", keysOf(got), want)
				}
			}
			return nil
		})
	}

	started := time.Now().UTC().Truncate(time.Second)
	reg := map[string]*Registration{}
	for _, id := range []string{"n1", "n2", "n3"} {
		r, err := p.Register(ctx, id, NodeInfo{ClientURL: "http://" + id, PeerAddr: id + ":7000", StartedAt: started})
		if err != nil {
			t.Fatal(err)
		}
		reg[id] = r
	}
	t.Cleanup(func() {
		for _, r := range reg {
			r.Close()
		}
	})
	nodes, _, err := p.Nodes(ctx)
	if err != nil || len(nodes) != 3 || nodes["n2"].PeerAddr != "n2:7000" || !nodes["n2"].StartedAt.Equal(started) {
		t.Fatalf("Nodes() = %v, %v; want n1..n3 with their info", nodes, err)
	}
	waitNodes("n1", "n2", "n3")

	t.Run("a node that stops renewing disappears after its TTL while the others stay", func(t *testing.T) {
		crash(reg["n1"])
		waitNodes("n2", "n3")
		// Renewals keep n2 and n3 well past their TTL (a wait for leases to lapse, not a
		// timing assertion).
		time.Sleep(2500 * time.Millisecond)
		nodes, _, err := p.Nodes(ctx)
		if err != nil || len(nodes) != 2 {
			t.Fatalf("renewed nodes: %v, %v; want n2, n3", keysOf(nodes), err)
		}
	})

	t.Run("Close removes the node at once", func(t *testing.T) {
		if err := reg["n3"].Close(); err != nil {
			t.Fatal(err)
		}
		delete(reg, "n3")
		nodes, _, err := p.Nodes(ctx)
		if err != nil || len(nodes) != 1 {
			t.Fatalf("after Close: %v, %v; want only n2", keysOf(nodes), err)
		}
		waitNodes("n2")
	})

	t.Run("a lost lease is re-granted and the node and its leader hints come back", func(t *testing.T) {
		r := reg["n2"]
		if err := r.SetLeaderHint(ctx, 4, 7); err != nil {
			t.Fatal(err)
		}
		old := r.Lease()
		if _, err := cli.Revoke(ctx, old); err != nil { // what etcd does after an outage
			t.Fatal(err)
		}
		retry.Within(t, 10*time.Second, "the node registers again under a new lease", func() error {
			nodes, _, err := p.Nodes(ctx)
			if err != nil {
				return err
			}
			if _, ok := nodes["n2"]; !ok {
				return fmt.Errorf("n2 not registered again")
			}
			if l := r.Lease(); l == old || l == 0 {
				return fmt.Errorf("lease %x not replaced", l)
			}
			hints, err := p.LeaderHints(ctx)
			if err != nil {
				return err
			}
			if h := hints[4]; h.Node != "n2" || h.Term != 7 {
				return fmt.Errorf("hint for shard 4 = %+v, want n2 term 7", h)
			}
			return nil
		})
	})

	t.Run("a node whose lease lapsed does not write back a hint a newer leader replaced", func(t *testing.T) {
		stale, err := p.Register(ctx, "n5", NodeInfo{ClientURL: "http://n5", PeerAddr: "n5:7000", StartedAt: started})
		if err != nil {
			t.Fatal(err)
		}
		reg["n5"] = stale
		if err := stale.SetLeaderHint(ctx, 6, 3); err != nil {
			t.Fatal(err)
		}
		// n5 stalls: its lease is revoked (its hint goes with it) and n2 leads shard 6
		// in a later term before n5 registers again.
		old := stale.Lease()
		if _, err := cli.Revoke(ctx, old); err != nil {
			t.Fatal(err)
		}
		if err := reg["n2"].SetLeaderHint(ctx, 6, 4); err != nil {
			t.Fatal(err)
		}
		retry.Within(t, 10*time.Second, "the stale registration gets a new lease", func() error {
			if l := stale.Lease(); l == old || l == 0 {
				return fmt.Errorf("n5's lease %x not replaced", l)
			}
			return nil
		})
		// The new lease is published only after the re-registration's hint writes.
		hints, err := p.LeaderHints(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h := hints[6]; h.Node != "n2" || h.Term != 4 {
			t.Fatalf("hint for shard 6 after n5 registered again = %+v, want n2 term 4", h)
		}
	})

	t.Run("a node id with a slash is refused", func(t *testing.T) {
		if _, err := p.Register(ctx, "a/b", NodeInfo{}); err == nil {
			t.Fatal("Register(a/b) succeeded")
		}
	})
}

func TestLeaderHints(t *testing.T) {
	etcd := startEtcd(t, 1)
	p := newPlane(t, etcd.client(), testConfig(t))
	ctx := ctxTimeout(t, 20*time.Second)
	a, err := p.Register(ctx, "a", NodeInfo{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := p.Register(ctx, "b", NodeInfo{})
	if err != nil {
		t.Fatal(err)
	}
	watch := p.WatchLeaderHints(ctx)

	hint := func(s int) LeaderHint {
		t.Helper()
		h, err := p.LeaderHints(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h[s]
	}
	if err := a.SetLeaderHint(ctx, 0, 3); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLeaderHint(ctx, 0, 4); err != nil {
		t.Fatal(err)
	}
	if err := a.SetLeaderHint(ctx, 0, 3); err != nil { // a slow, deposed leader
		t.Fatal(err)
	}
	if h := hint(0); h.Node != "b" || h.Term != 4 {
		t.Fatalf("hint = %+v; a lower term must not replace b's term 4", h)
	}
	if err := a.ClearLeaderHint(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if h := hint(0); h.Node != "b" {
		t.Fatalf("a cleared b's hint: %+v", h)
	}
	retry.Within(t, 5*time.Second, "the hint watch delivers b's hint", func() error {
		if h := <-watch; h[0].Node != "b" {
			return fmt.Errorf("watch delivered %+v", h)
		}
		return nil
	})
	// The hint is bound to b's lease: it goes with b.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if h := hint(0); h.Node != "" {
		t.Fatalf("hint of a closed node survived: %+v", h)
	}
}

// crash stops a registration's renewals without revoking its lease, as a killed process
// would.
func crash(r *Registration) {
	r.cancel()
	<-r.done
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
