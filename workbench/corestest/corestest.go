package corestest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Harness is one implementation of workbench.Cores under test: one node, or several nodes
// each with its own Cores over the same roots. Its roots are all unwritten when it is
// returned, and it releases what it holds with t.Cleanup.
type Harness interface {
	// Nodes returns the number of nodes (1 for a single node).
	Nodes() int
	// Cores returns node i's Cores, 0 ≤ i < Nodes().
	Cores(i int) workbench.Cores
}

// Placer is a Harness whose roots get a shard at their first write (a cluster's control
// plane), not before.
type Placer interface {
	Harness
	// Placed reports whether root has a shard.
	Placed(root string) bool
}

// Cluster is a Harness whose nodes each hold a replica of every root's shard. Each method
// waits (bounded) for what it promises and fails t when it cannot deliver it.
type Cluster interface {
	Harness
	// Leader returns the node whose replica is the ready leader of root's shard (root
	// written).
	Leader(t *testing.T, root string) int
	// Forwarded returns how many commands node i's peer API has received from other nodes
	// to propose since the harness started.
	Forwarded(i int) int
}

// Faults is a Cluster with the faults the suite injects. Each subtest that uses them gets a
// harness of its own.
type Faults interface {
	Cluster
	// MoveLeader hands the leadership of root's shard to another node and returns that
	// node once it is the ready leader.
	MoveLeader(t *testing.T, root string) int
	// Lag holds the Raft traffic of node i's replicas — it neither receives nor answers the
	// log — until resume is called; its calls to other nodes (forwarded commands, read
	// indexes) still go through.
	Lag(t *testing.T, i int) (resume func())
	// LoseLeaderMidCall arranges that the next command forwarded to the leader of root's
	// shard applies there and that the leader then freezes before it answers: none of its
	// traffic, Raft or forwarded, moves until recover is called (a process stopped by
	// SIGSTOP), and the other nodes elect a new leader meanwhile.
	LoseLeaderMidCall(t *testing.T, root string) (recover func())
}

// Bounds of the suite's waits. A call the suite expects to succeed gets opTimeout; a core
// that does not answer within watchdog fails the test instead of stalling it.
const (
	opTimeout = 20 * time.Second
	watchdog  = 40 * time.Second
)

// subtest is one case of the suite.
type subtest struct {
	name string
	run  func(t *testing.T, h Harness)
}

// Run runs the suite. newHarness returns a new harness. Run calls it first for the subtests
// that only read and write, which share it (each uses roots of its own; a Cluster's
// forwarding check among them), then once more for each subtest that injects a fault or
// moves a leader (Faults harnesses only), which serves that subtest's one root.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	shared := []subtest{
		{"a write is read back through every node, on its own root only", testRightRoot},
		{"a linearizable read through any node sees every acknowledged write", testReadAfterWrite},
		{"a read at an applied version waits for it and ends with ctx", testReadAtVersion},
		{"a root never written reads as empty and reads do not place it", testUnknownRoot},
		{"a request id repeated through any node returns the first result", testRequestID},
		{"concurrent writes and reads through every node each apply once", testConcurrent},
	}
	clustered := []subtest{
		{"a command through a follower is forwarded to the leader", testForwarded},
	}
	faults := []subtest{
		{"a linearizable read on a lagging follower waits for the read index", testLaggingFollower},
		{"a leader lost mid-call answers outcome unknown and the command applied", testLeaderLostUnknown},
		{"a leader lost mid-call is retried under its request id and answered once", testLeaderLostRetried},
		{"after a leader change every node routes to the new leader", testLeaderChange},
		{"a node cut off from its shard's log answers a retryable error in bounded time", testCutOff},
	}
	h := newHarness(t)
	for _, tc := range shared {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
	if _, ok := h.(Cluster); !ok {
		return
	}
	for _, tc := range clustered {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
	if _, ok := h.(Faults); !ok {
		return
	}
	for _, tc := range faults {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newHarness(t)) })
	}
}

// put is an upsert of path in root's workbench "w" (created if missing) with an inline
// body.
func put(root, path, data string) meta.Put {
	return meta.Put{Agent: root, Workspace: "w", Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Segments: []meta.Segment{{Size: int64(len(data)), Inline: []byte(data)}}}
}

// create is put that fails with AlreadyExists when path exists.
func create(root, path, data string) meta.Put {
	p := put(root, path, data)
	p.Cond = meta.CondCreateOnly
	return p
}

// propose proposes b through node i and fails t unless it applied. Without a request id
// in hd it gets one of its own; a retryable error is retried under it, for at most
// opTimeout, as a client does (a leader may change at any time on a loaded machine; the
// subtests that check what happens then call proposeOnce).
func propose(t *testing.T, h Harness, i int, hd meta.Header, b meta.Body) meta.Result {
	t.Helper()
	if hd.RequestID == "" {
		hd.RequestID = fmt.Sprintf("corestest-%d", requestIDs.Add(1))
	}
	var res meta.Result
	eventually(t, fmt.Sprintf("node %d: propose %T", i, b), func() (err error) {
		res, err = tryPropose(t, h, i, hd, b, opTimeout)
		return err
	})
	if res.Err != nil {
		t.Fatalf("node %d: propose %T: refused: %v", i, b, res.Err)
	}
	return res
}

// requestIDs numbers the request ids propose gives commands.
var requestIDs atomic.Uint64

// proposeOnce proposes b through node i once and fails t unless it applied.
func proposeOnce(t *testing.T, h Harness, i int, hd meta.Header, b meta.Body) meta.Result {
	t.Helper()
	res, err := tryPropose(t, h, i, hd, b, opTimeout)
	if err != nil {
		t.Fatalf("node %d: propose %T: %v", i, b, err)
	}
	if res.Err != nil {
		t.Fatalf("node %d: propose %T: refused: %v", i, b, res.Err)
	}
	return res
}

// tryPropose proposes b through node i within timeout and returns what the core answered.
func tryPropose(t *testing.T, h Harness, i int, hd meta.Header, b meta.Body, timeout time.Duration) (res meta.Result, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	bounded(t, fmt.Sprintf("node %d: propose %T", i, b), func() { res, err = proposeOn(ctx, h, i, hd, b) })
	return res, err
}

// proposeOn proposes b through node i's core of its root.
func proposeOn(ctx context.Context, h Harness, i int, hd meta.Header, b meta.Body) (meta.Result, error) {
	c, err := h.Cores(i).For(ctx, agentOf(b))
	if err != nil {
		return meta.Result{}, fmt.Errorf("Cores.For: %w", err)
	}
	return c.Propose(ctx, hd, b)
}

// agentOf returns the root the suite's commands act on.
func agentOf(b meta.Body) string {
	if p, ok := b.(meta.Put); ok {
		return p.Agent
	}
	panic(fmt.Sprintf("corestest: no root for %T", b))
}

// tryRead returns what node i's ReadView of root answers within timeout.
func tryRead(t *testing.T, h Harness, i int, root string, timeout time.Duration) (v *meta.View, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	bounded(t, fmt.Sprintf("node %d: ReadView of %q", i, root), func() { v, err = readOn(ctx, h, i, root) })
	return v, err
}

// readOn returns a linearizable view through node i's core of root.
func readOn(ctx context.Context, h Harness, i int, root string) (*meta.View, error) {
	c, err := h.Cores(i).For(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("Cores.For: %w", err)
	}
	return c.ReadView(ctx)
}

// generation returns the generation of path in root's workbench "w" as v shows it, 0 if
// it shows none.
func generation(v *meta.View, root, path string) uint64 {
	ws, err := v.Workspace(root, "w")
	if err != nil {
		return 0
	}
	e, err := v.File(ws, path)
	if err != nil {
		return 0
	}
	return e.Generation
}

// wantFile fails t unless v shows path in root at generation gen.
func wantFile(t *testing.T, what string, v *meta.View, root, path string, gen uint64) {
	t.Helper()
	if got := generation(v, root, path); got != gen {
		t.Fatalf("%s: %s/%s at generation %d in a view at version %d, want %d", what, root, path, got, v.Version(), gen)
	}
}

// bounded runs f and fails t if it has not returned within watchdog: a core that hangs
// fails the suite. (f keeps running; the test ends.)
func bounded(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(watchdog)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s: no answer within %v", what, watchdog)
	}
}

// read returns a linearizable view of root through node i, retrying retryable errors for
// at most opTimeout (a cluster healing from a fault answers them a while), and fails t if
// there is none.
func read(t *testing.T, h Harness, i int, root string) *meta.View {
	t.Helper()
	var v *meta.View
	eventually(t, fmt.Sprintf("node %d: ReadView of %q", i, root), func() (err error) {
		v, err = tryRead(t, h, i, root, opTimeout)
		return err
	})
	return v
}

// eventually calls f until it returns nil, for at most opTimeout, and fails t unless it
// did; an error that is not retryable fails t at once.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	retry.Within(t, opTimeout, what, func() error { return stopUnlessRetryable(f()) })
}

// stopUnlessRetryable returns err, marked to end the retries (retry.ErrStop) unless it is
// retryable.
func stopUnlessRetryable(err error) error {
	if err != nil && !retryable(err) {
		return fmt.Errorf("%w: not retryable: %w", retry.ErrStop, err)
	}
	return err
}

// retryable reports whether err is one of the core errors a caller may retry the same
// call on (nothing applied, or applied at most once under a request id).
func retryable(err error) bool {
	return errors.Is(err, workbench.ErrCoreUnavailable) || errors.Is(err, workbench.ErrOutcomeUnknown)
}
