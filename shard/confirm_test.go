package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
)

// heldTransport is an in-memory transport whose AppendEntries answers can be held back:
// while held, a call reaches the peer (which answers at once, in its term of that moment)
// and then waits for release before its caller sees the answer — what a leader paused by
// SIGSTOP, a GC pause or a VM steal sees of the heartbeats it sent just before. Pipelined
// replication is refused, so every append goes through AppendEntries.
type heldTransport struct {
	*raft.InmemTransport
	mu   sync.Mutex
	gate chan struct{} // nil: not held
}

func (t *heldTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.mu.Lock()
	gate := t.gate
	t.mu.Unlock()
	err := t.InmemTransport.AppendEntries(id, target, args, resp)
	if gate != nil {
		<-gate
	}
	return err
}

func (t *heldTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (t *heldTransport) hold() {
	t.mu.Lock()
	t.gate = make(chan struct{})
	t.mu.Unlock()
}

func (t *heldTransport) release() {
	t.mu.Lock()
	if t.gate != nil {
		close(t.gate)
		t.gate = nil
	}
	t.mu.Unlock()
}

// inmemGroup opens n replicas in one in-memory Raft group; tweak adjusts replica i's
// Config.
func inmemGroup(t *testing.T, n int, tweak func(i int, c *Config)) ([]*Shard, []*heldTransport) {
	t.Helper()
	trans := make([]*heldTransport, n)
	var voters []raft.Server
	for i := range trans {
		id := fmt.Sprintf("r%d", i)
		addr, inmem := raft.NewInmemTransport(raft.ServerAddress(id))
		trans[i] = &heldTransport{InmemTransport: inmem}
		voters = append(voters, raft.Server{ID: raft.ServerID(id), Address: addr, Suffrage: raft.Voter})
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(voters[j].Address, trans[j].InmemTransport)
			}
		}
	}
	shards := make([]*Shard, n)
	for i := range shards {
		cfg := Config{Dir: t.TempDir(), NodeID: string(voters[i].ID), inmem: &inmemMember{transport: trans[i], voters: voters}}
		if tweak != nil {
			tweak(i, &cfg)
		}
		s, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		shards[i] = s
	}
	t.Cleanup(func() {
		for _, tr := range trans {
			tr.release()
		}
		for _, s := range shards {
			s.Close()
		}
	})
	return shards, trans
}

// readyLeader waits until one of shards is the ready leader and returns its index.
func readyLeader(t *testing.T, shards []*Shard) int {
	t.Helper()
	leader := -1
	retry.SucceedsSoon(t, "readiness", func() error {
		for i, s := range shards {
			if s.Ready() {
				leader = i
				return nil
			}
		}
		return errors.New("no ready leader")
	})
	return leader
}

// makeR0Leader waits for a ready leader among shards, hands the leadership to r0
// (shards[0]) unless it has it, and waits until r0 is the ready leader.
func makeR0Leader(t *testing.T, shards []*Shard) {
	t.Helper()
	if l := readyLeader(t, shards); l != 0 {
		if err := shards[l].raft.LeadershipTransferToServer("r0", "r0").Error(); err != nil {
			t.Fatalf("transfer leadership to r0: %v", err)
		}
	}
	retry.SucceedsSoon(t, "readiness", func() error {
		if !shards[0].Ready() {
			return errors.New("r0 not the ready leader yet")
		}
		return nil
	})
}

// readFile reads path's content through a linearizable view of s.
func readFile(ctx context.Context, s *Shard, path string) (string, error) {
	v, err := s.ReadView(ctx)
	if err != nil {
		return "", err
	}
	ws, err := v.Workspace("a", "w")
	if err != nil {
		return "", err
	}
	e, err := v.File(ws, path)
	if err != nil {
		return "", err
	}
	return string(e.Segments[0].Inline), nil
}

// A leader that was paused while the others elected a new leader and acknowledged a
// write must not serve its old state when it resumes, even though the heartbeat answers
// it collected just before the pause arrive only after the resume (and would confirm a
// leadership check that hashicorp/raft's VerifyLeader began after it).
func TestDeposedLeaderWithHeldHeartbeatAnswersDoesNotServeOldState(t *testing.T) {
	// r0, the replica that will be paused, keeps a long lease so that it still believes it
	// leads when it resumes (as a paused process does: its lease check was paused too);
	// the others elect a new leader within about a second of silence.
	shards, trans := inmemGroup(t, 3, func(i int, c *Config) {
		if i == 0 {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 5*time.Second, 5*time.Second, 5*time.Second
		} else {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		}
	})
	ctx := t.Context()
	makeR0Leader(t, shards)
	old := shards[0]
	if res, err := old.Propose(ctx, meta.Header{}, put("f", "old")); err != nil || res.Err != nil {
		t.Fatalf("write old: %v %v", err, res.Err)
	}
	if got, err := readFile(ctx, old, "f"); err != nil || got != "old" {
		t.Fatalf("read on the leader before the pause: %q %v", got, err)
	}

	// The pause: r0's answers are held; r1 and r2 stop hearing from it and cannot reach it.
	trans[0].hold()
	trans[1].Disconnect("r0")
	trans[2].Disconnect("r0")

	var next int
	retry.SucceedsSoon(t, "readiness", func() error {
		for i := 1; i < 3; i++ {
			if shards[i].Ready() {
				next = i
				return nil
			}
		}
		return errors.New("r1 and r2 have not elected a leader yet")
	})
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if res, err := shards[next].Propose(wctx, meta.Header{}, put("f", "new")); err != nil || res.Err != nil {
		t.Fatalf("write new on r%d: %v %v", next, err, res.Err)
	}
	if old.raft.State() != raft.Leader {
		t.Fatalf("r0 stepped down during the pause (%v): the test no longer models a paused leader", old.raft.State())
	}

	// The resume: a read sent to r0, then r0's held answers arrive.
	type result struct {
		got string
		err error
	}
	done := make(chan result, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		got, err := readFile(rctx, old, "f")
		done <- result{got, err}
	}()
	// The read must have begun its leadership check before the old answers are released
	// (the order that fooled VerifyLeader): while the answers are held, the round in flight
	// cannot end, so the read waits queued for the next one.
	retry.SucceedsSoon(t, "the read waits for a leadership round", func() error {
		old.confirm.mu.Lock()
		defer old.confirm.mu.Unlock()
		if len(old.confirm.waiting) == 0 {
			return errors.New("no read queued for a round yet")
		}
		return nil
	})
	trans[0].release()
	r := <-done
	switch {
	case r.err == nil && r.got == "old":
		t.Fatal("the deposed leader served its old state after an acknowledged write of the new leader")
	case r.err == nil && r.got != "new":
		t.Fatalf("read %q, want %q or ErrNotLeader", r.got, "new")
	case r.err != nil && !errors.Is(r.err, ErrNotLeader):
		t.Fatalf("read failed with %v, want ErrNotLeader", r.err)
	}
	if old.Ready() {
		t.Fatal("the deposed leader still reports itself ready after a voter answered in a newer term")
	}
}

// Readiness follows the leadership a replica can confirm: after a pause of the process
// (its monotonic clock moved on while nothing ran) a leader is not Ready until a round
// passes again, although raft still calls it the leader; the single voter of a group is
// ready without any round trip.
func TestReadyEndsWhenLeadershipCannotBeConfirmed(t *testing.T) {
	var pause atomic.Int64
	start := time.Now()
	shards, trans := inmemGroup(t, 3, func(i int, c *Config) {
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
		if i == 0 {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 5*time.Second, 5*time.Second, 5*time.Second
			c.sinceOpen = func() time.Duration { return time.Since(start) + time.Duration(pause.Load()) }
		}
	})
	makeR0Leader(t, shards)
	trans[0].hold() // no round can pass while the answers are held
	pause.Store(int64(time.Hour))
	if shards[0].Ready() {
		t.Fatal("r0 reports itself ready right after a pause, before any round confirmed it")
	}
	if shards[0].raft.State() != raft.Leader {
		t.Fatalf("raft already stepped r0 down (%v): readiness was not what noticed", shards[0].raft.State())
	}
	rctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := shards[0].ReadView(rctx); err == nil {
		t.Fatal("a read passed a leadership round while no voter answered")
	}
	trans[0].release()
	retry.SucceedsSoon(t, "readiness", func() error {
		for _, s := range shards {
			if s.Ready() {
				return nil
			}
		}
		return errors.New("no replica is ready again after the resume")
	})

	solo := openReady(t, t.TempDir(), Config{})
	defer solo.Close()
	if !solo.Ready() || !solo.soloVoter.Load() {
		t.Fatal("the embedded single voter is not ready without a round trip")
	}
}

// A single voter runs its round in the reading goroutine (confirm's solo path); once a
// second voter joins the latest configuration, a read still needs that voter's answer,
// although the replica may learn it is no longer alone only from the read's own round.
func TestASingleVoterThatGainsAVoterConfirmsWithIt(t *testing.T) {
	shards, _ := inmemGroup(t, 1, nil)
	s := shards[0]
	makeR0Leader(t, shards)
	if !s.soloVoter.Load() {
		t.Fatal("r0 alone is not the single voter")
	}
	for range 100 {
		if _, err := s.ReadView(t.Context()); err != nil {
			t.Fatalf("the single voter's read: %v", err)
		}
	}
	// r9 never answers (no transport connects to it): the change never commits, but it is
	// the latest configuration at once.
	_ = s.raft.AddVoter("r9", "r9", 0, 0)
	retry.SucceedsSoon(t, "the configuration with r9", func() error {
		f := s.raft.GetConfiguration()
		if err := f.Error(); err != nil {
			return err
		}
		if len(f.Configuration().Servers) != 2 {
			return errors.New("r9 is not in the latest configuration yet")
		}
		return nil
	})
	// What the replica believes until a round reads the new configuration (a round of
	// keepLeadership may have run since).
	s.soloVoter.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.ReadView(ctx); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a read with a second voter that never answers: %v, want ErrNotLeader", err)
	}
	if s.soloVoter.Load() {
		t.Fatal("the read's round did not record that r0 is no longer the only voter")
	}
}
