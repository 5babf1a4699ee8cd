package host

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
)

// A shard's own records read through Shards.ReadView are linearizable on every node: a
// follower cut off from its leader still shows, in its applied view, a backup hold that
// an acknowledged call released, while ReadView on it either answers without the hold or
// fails; once the follower hears from the leader again, ReadView answers without it.
func TestShardsReadViewShowsEveryAcknowledgedCommandOnAFollower(t *testing.T) {
	c := newTestCluster(t, 1, true)
	leader, err := c.readyLeader(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % len(c.hosts)
	propose := func(b meta.Body) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := c.hosts[leader].Shards().Propose(ctx, 0, meta.Header{}, b)
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if err != nil {
			t.Fatalf("propose %T: %v", b, err)
		}
	}
	held := func(v *meta.View) bool { return len(v.Shard().BackupHolds()) != 0 }
	propose(meta.BackupHold{ID: "b1"})
	retry.SucceedsSoon(t, "the follower applies the hold", func() error {
		if !held(c.hosts[follower].Replica(0).AppliedView()) {
			return fmt.Errorf("not yet")
		}
		return nil
	})

	resume := c.Lag(t, follower)
	propose(meta.BackupRelease{ID: "b1"})
	if !held(c.hosts[follower].Replica(0).AppliedView()) {
		t.Fatal("the cut-off follower applied the release: the test shows nothing")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	v, err := c.hosts[follower].Shards().ReadView(ctx, 0)
	cancel()
	if err == nil && held(v) {
		t.Fatal("ReadView on a follower behind its leader listed a hold an acknowledged call released")
	}

	resume()
	retry.SucceedsSoon(t, "ReadView on the follower answers without the hold", func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		v, err := c.hosts[follower].Shards().ReadView(ctx, 0)
		switch {
		case err != nil:
			return err
		case held(v):
			return fmt.Errorf("ReadView lists the released hold")
		}
		return nil
	})
}
