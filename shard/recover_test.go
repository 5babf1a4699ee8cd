package shard

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
)

func TestRecoverRefusesADirectoryWithoutRaftState(t *testing.T) {
	c := newCluster(t, 1, nil, nil)
	cfg := c.config(c.nodes[0], "0", nil)
	cfg.Dir = filepath.Join(t.TempDir(), "empty")
	if _, err := Recover(cfg); !errors.Is(err, ErrNoState) {
		t.Fatalf("Recover of a missing directory: %v, want ErrNoState", err)
	}
	cfg.Dir = t.TempDir()
	if _, err := Recover(cfg); !errors.Is(err, ErrNoState) {
		t.Fatalf("Recover of an empty directory: %v, want ErrNoState", err)
	}
}

// A group of three loses two voters for good; the third, recovered, is the only voter,
// holds everything it had applied, takes writes again, and a new replica added to it
// catches up from its snapshot.
func TestRecoverMakesTheSurvivorTheOnlyVoterWithEverythingItApplied(t *testing.T) {
	c := newCluster(t, 3, []string{"0"}, nil)
	for i := range 20 {
		c.mustPropose("0", put(fmt.Sprintf("f%02d", i), "before"))
		if i == 9 { // half of it in a snapshot, half replayed from the log
			c.onLeader("0", func(_ *testNode, s *Shard) error { return s.Snapshot() })
		}
	}
	c.converged("0")
	survivor, lost := c.nodes[0], c.nodes[1:]
	s := survivor.shards["0"]
	if err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.mustPropose("0", put("f-after-snapshot", "in the log only"))
	c.converged("0")
	version, digest := s.FSM().AppliedVersion(), s.FSM().StateDigest()
	for _, n := range lost {
		c.stop(n)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := s.Propose(ctx, meta.Header{}, put("g", "x")); !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrTimeout) {
		t.Fatalf("a write without a majority: %v, want ErrNotLeader or ErrTimeout", err)
	}
	cfg := c.config(survivor, "0", nil)
	if _, err := Recover(cfg); !errors.Is(err, ErrLocked) {
		t.Fatalf("Recover of an open replica: %v, want ErrLocked", err)
	}
	// What the survivor holds: its log may end past what it applied, with the write just
	// refused (appended by a leader that lost its majority), which recovery keeps.
	last := s.Stats().LastIndex
	c.mu.Lock()
	delete(survivor.shards, "0")
	c.mu.Unlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := Recover(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version < version || rec.LastIndex != last {
		t.Fatalf("recovered %+v, want at least version %d and the log's last index %d", rec, version, last)
	}

	s = c.openShard(survivor, "0", nil)
	_, leader := c.leader("0")
	if leader != s {
		t.Fatal("the leader is not the recovered replica")
	}
	members, err := s.Configuration()
	if err != nil || len(members) != 1 || members[0].ID != survivor.id || !members[0].Voter {
		t.Fatalf("configuration after recovery: %+v %v, want %s alone as a voter", members, err, survivor.id)
	}
	if got := s.FSM().AppliedVersion(); got < version {
		t.Fatalf("applied version %d after recovery, want at least %d", got, version)
	}
	if s.FSM().AppliedVersion() == version && s.FSM().StateDigest() != digest {
		t.Fatal("the recovered state differs from what the survivor had applied")
	}
	c.mustPropose("0", put("g", "after recovery"))

	// A new replica joins the recovered group and converges on its state.
	n := c.addNode()
	c.openShard(n, "0", nil)
	c.onLeader("0", func(*testNode, *Shard) error { return s.AddNonvoter(t.Context(), n.id, n.addr) })
	c.converged("0")
}
