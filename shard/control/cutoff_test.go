package control

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// probedAdmin is fakeAdmin whose node reaches its peers while reach says so, counting the
// probes.
type probedAdmin struct {
	*fakeAdmin
	reach  atomic.Bool
	probes atomic.Int64
}

func (a *probedAdmin) ReachesAny(context.Context, map[string]NodeInfo) bool {
	a.probes.Add(1)
	return a.reach.Load()
}

// TestACutOffControllerStepsDownAndSitsOut: a leading controller whose node reaches none of
// the other registered nodes steps down after cutOffRounds intervals and does not campaign
// while it stays cut off, even with no other candidate; once it reaches a peer it
// campaigns again and leads.
func TestACutOffControllerStepsDownAndSitsOut(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 1, Replication: 1}, 60*time.Second)
	registerNodes(t, ctx, p, "n1", "n2")
	cut := &probedAdmin{fakeAdmin: newFakeAdmin(10)}
	cut.reach.Store(true)
	c1, err := p.NewController(cut, controllerConfig("n1"))
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c1)
	leads := func(c *Controller, want bool) func() error {
		return func() error {
			if c.Leading() != want {
				return errors.New("not yet")
			}
			return nil
		}
	}
	retry.Within(t, 20*time.Second, "n1 leads", leads(c1, true))
	other := &probedAdmin{fakeAdmin: cut.fakeAdmin}
	other.reach.Store(true)
	c2, err := p.NewController(other, controllerConfig("n2"))
	if err != nil {
		t.Fatal(err)
	}
	stop2 := runController(t, c2)

	cut.reach.Store(false)
	retry.Within(t, 20*time.Second, "n1 steps down and n2 leads", func() error {
		if c1.Leading() || !c2.Leading() {
			return errors.New("not yet")
		}
		return nil
	})
	stop2() // no other candidate: n1 still sits out while it reaches no peer
	probes := cut.probes.Load()
	retry.Within(t, 20*time.Second, "n1 probes again", func() error {
		if c1.Leading() {
			return fmt.Errorf("%w: n1 leads while cut off", retry.ErrStop)
		}
		if cut.probes.Load() < probes+2*cutOffRounds {
			return errors.New("not yet")
		}
		return nil
	})
	cut.reach.Store(true)
	retry.Within(t, 20*time.Second, "n1 leads again once it reaches a peer", leads(c1, true))
}
