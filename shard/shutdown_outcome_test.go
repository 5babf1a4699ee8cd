package shard

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/outcome"
)

// hashicorp/raft v1.8.0 answers a committed entry with ErrRaftShutdown when the leader
// shuts down while it hands the entry's batch to the FSM goroutine (raft.go, processLogs:
// applyBatch's select on fsmMutateCh and shutdownCh). The entry is in a majority's log, so
// it applies, on this replica when it reopens or on the next leader: the proposal's
// outcome is unknown, not "nothing applied". The FSM is held on one entry so that raft's
// queue of batches for it (fsmMutateCh, 128) fills and the leader waits in applyBatch with
// the next committed entry; then the replica closes.
func TestAProposalCommittedAsTheReplicaClosesIsNotReportedUnapplied(t *testing.T) {
	const queued = 128 // raft's fsmMutateCh (api.go, NewRaft)
	dir := t.TempDir()
	hold := make(chan struct{})
	s := openReady(t, dir, Config{beforeApply: func(l *raft.Log) {
		if l.Type != raft.LogCommand {
			return
		}
		if _, b, err := meta.DecodeCommand(l.Data); err == nil {
			if p, ok := b.(meta.Put); ok && p.Path == "f000" {
				<-hold
			}
		}
	}})

	// One proposal per commit: the first is held in the FSM, the next queued fill raft's
	// queue, the last waits in applyBatch.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make([]chan error, queued+2)
	for i := range results {
		results[i] = make(chan error, 1)
		before := s.raft.CommitIndex()
		go func() {
			_, err := s.Propose(ctx, meta.Header{}, put(fmt.Sprintf("f%03d", i), "x"))
			results[i] <- err
		}()
		retry.SucceedsSoon(t, fmt.Sprintf("proposal %d commits", i), func() error {
			if s.raft.CommitIndex() <= before {
				return errors.New("not committed yet")
			}
			return nil
		})
	}

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	last := len(results) - 1
	perr := <-results[last]
	close(hold)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	cancel()
	for i := range last {
		<-results[i]
	}
	if errors.Is(perr, outcome.ErrUnavailable) || !errors.Is(perr, outcome.ErrUnknown) {
		t.Errorf("a proposal committed as the replica closed: %v; want an unknown outcome (ErrTimeout), never unavailable", perr)
	}

	s2 := openReady(t, dir, Config{})
	defer s2.Close()
	v, err := s2.ReadView(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.File(ws, fmt.Sprintf("f%03d", last)); err != nil {
		t.Fatalf("the proposal answered %v did not apply after the restart: %v", perr, err)
	}
}
