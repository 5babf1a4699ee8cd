package shard

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
)

// shows reports whether view v holds the file at path in put's workbench.
func shows(v *meta.View, path string) bool {
	ws, err := v.Workspace("a", "w")
	if err != nil {
		return false
	}
	_, err = v.File(ws, path)
	return err == nil
}

// A follower applies an entry as soon as it learns the entry is committed, which may be
// before the leader's FSM, busy with what came before, has. A read through the follower
// (the leader's read index, then the follower's view, as shard/host serves it) that shows
// such a write must not be followed by a read through the leader that does not: once a
// read has shown a write, every read that begins after it must show it too. Here the
// leader's FSM is held on the write "late" while the followers have applied it; each read
// has a short deadline, and may fail, but no read may answer from before "late" once one
// answered with it. Released, both reads show it.
func TestNoReadThroughTheLeaderMissesAWriteAFollowerReadShowed(t *testing.T) {
	var holdOn atomic.Pointer[string]
	release := make(chan struct{})
	var once sync.Once
	unhold := func() { once.Do(func() { close(release) }) }
	c := newCluster(t, 3, []string{"0"}, func(cfg *Config) {
		loopbackTimeouts(cfg)
		node := cfg.NodeID
		cfg.beforeApply = func(l *raft.Log) {
			if h := holdOn.Load(); h == nil || *h != node || l.Type != raft.LogCommand {
				return
			}
			if _, b, err := meta.DecodeCommand(l.Data); err == nil {
				if p, ok := b.(meta.Put); ok && p.Path == "late" {
					<-release
				}
			}
		}
	})
	t.Cleanup(unhold) // before the cluster closes: raft's shutdown waits for the FSM
	c.mustPropose("0", put("early", "1"))
	c.converged("0")
	ln, leader := c.leader("0")
	var follower *Shard
	for n, s := range c.replicas("0") {
		if n != ln {
			follower = s
			break
		}
	}
	holdOn.Store(&ln.id)

	proposed := make(chan error, 1)
	go func() {
		_, err := leader.Propose(context.Background(), meta.Header{}, put("late", "2"))
		proposed <- err
	}()
	retry.SucceedsSoon(t, "a follower applies late", func() error {
		if !shows(follower.AppliedView(), "late") {
			return fmt.Errorf("not applied yet")
		}
		return nil
	})
	if shows(leader.AppliedView(), "late") {
		t.Fatal("the leader's FSM applied late although it is held")
	}

	// The read through the follower, then the read through the leader, one after the other.
	followerRead := func() (shown bool, err error) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		index, err := leader.ReadIndex(ctx)
		if err != nil {
			return false, err
		}
		v, err := follower.ReadViewAt(ctx, index)
		if err != nil {
			return false, err
		}
		return shows(v, "late"), nil
	}
	leaderRead := func() (shown bool, err error) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		v, err := leader.ReadView(ctx)
		if err != nil {
			return false, err
		}
		return shows(v, "late"), nil
	}
	first, ferr := followerRead()
	second, lerr := leaderRead()
	if ferr == nil && first && lerr == nil && !second {
		t.Fatal("a read through the follower showed late, and a read through the leader that began after it answered without it")
	}
	t.Logf("while held: follower read shows late %v (%v); leader read shows late %v (%v)", first, ferr, second, lerr)

	unhold()
	if err := <-proposed; err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() (bool, error){"follower": followerRead, "leader": leaderRead} {
		if shown, err := read(); err != nil || !shown {
			t.Errorf("released, a read through the %s: shows late %v, %v", name, shown, err)
		}
	}
}
