package corestest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// leaderLossBound bounds how long a call meeting a lost leader may take to end: an
// election and a few rounds, far below opTimeout, so that a call that only ends at its
// caller's deadline fails.
const leaderLossBound = 10 * time.Second

// follower returns a node other than leader.
func follower(h Harness, leader int) int { return (leader + 1) % h.Nodes() }

// warm writes root through every node, so that each has met it (placed, assigned on its
// shard) before a test injects a fault: the fault then meets only the command under test.
// It returns root's leader.
func warm(t *testing.T, h Harness, root string) (leader int) {
	t.Helper()
	for i := range h.Nodes() {
		propose(t, h, i, meta.Header{}, put(root, fmt.Sprintf("warm-%d", i), "w"))
	}
	return h.(Cluster).Leader(t, root)
}

// warmFollower warms root (warm) for a fault test: it returns the harness's faults,
// root's leader and the follower the test calls through.
func warmFollower(t *testing.T, h Harness, root string) (c Faults, leader, f int) {
	t.Helper()
	leader = warm(t, h, root)
	return h.(Faults), leader, follower(h, leader)
}

// testForwarded: a write through each follower is served by the leader's peer API and
// applies there, and the follower reads it back.
func testForwarded(t *testing.T, h Harness) {
	c := h.(Cluster)
	const root = "forwarded"
	leader := warm(t, h, root)
	for f := range h.Nodes() {
		if f == leader {
			continue
		}
		before := c.Forwarded(leader)
		res := proposeOnce(t, h, f, meta.Header{}, put(root, fmt.Sprintf("via-%d", f), "x"))
		if after := c.Forwarded(leader); after <= before {
			t.Fatalf("a write through follower %d succeeded, but leader %d's peer API served no command (%d before, %d after)", f, leader, before, after)
		}
		wantFile(t, fmt.Sprintf("leader %d after a write through follower %d", leader, f), read(t, h, leader, root), root, fmt.Sprintf("via-%d", f), res.Generation)
		wantFile(t, fmt.Sprintf("follower %d after its own write", f), read(t, h, f, root), root, fmt.Sprintf("via-%d", f), res.Generation)
	}
}

// testLaggingFollower: a follower that does not receive the log still gets the leader's
// read index, so its linearizable read cannot answer before it applied every acknowledged
// write: it fails instead, and once the log flows again it answers with the write.
func testLaggingFollower(t *testing.T, h Harness) {
	const root = "lagging"
	c, leader, f := warmFollower(t, h, root)
	resume := c.Lag(t, f)
	defer resume()
	res := propose(t, h, leader, meta.Header{}, put(root, "while-lagging", "x"))
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	var applied *meta.View
	var err error
	bounded(t, "ReadViewAt(0) on the lagging follower", func() {
		var fc workbench.Core
		if fc, err = h.Cores(f).For(ctx, root); err == nil {
			applied, err = fc.ReadViewAt(ctx, 0)
		}
	})
	cancel()
	if err != nil {
		t.Fatalf("follower %d: ReadViewAt(0): %v", f, err)
	}
	if applied.Version() >= res.Version {
		t.Fatalf("follower %d applied version %d while lagging, the write is at %d: it does not lag", f, applied.Version(), res.Version)
	}
	v, err := tryRead(t, h, f, root, time.Second)
	switch {
	case err == nil:
		wantFile(t, fmt.Sprintf("lagging follower %d's linearizable view", f), v, root, "while-lagging", res.Generation)
	case !retryable(err) && !errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("follower %d: a linearizable read while lagging: %v, want a retryable error or the deadline's", f, err)
	default:
		t.Logf("a linearizable read on the lagging follower: %v", err)
	}
	resume()
	wantFile(t, fmt.Sprintf("follower %d once the log flows again", f), read(t, h, f, root), root, "while-lagging", res.Generation)
}

// testLeaderLostUnknown: the leader applies a command forwarded by a follower and freezes
// before it answers; the follower's call ends, bounded, with an unknown outcome, and the
// command did apply.
func testLeaderLostUnknown(t *testing.T, h Harness) {
	const root = "lost-unknown"
	c, _, f := warmFollower(t, h, root)
	recover := c.LoseLeaderMidCall(t, root)
	defer recover()
	proposeBounded(t, h, f, meta.Header{}, create(root, "lost", "x"), fmt.Sprintf("follower %d, whose leader froze after applying the call", f),
		"ErrOutcomeUnknown", func(err error) bool { return errors.Is(err, workbench.ErrOutcomeUnknown) })
	recover()
	if generation(read(t, h, f, root), root, "lost") == 0 {
		t.Fatal("the command whose outcome was unknown is not applied, though the leader applied it before it froze")
	}
	again, err := tryPropose(t, h, f, meta.Header{}, create(root, "lost", "x"), opTimeout)
	if err != nil || again.Err == nil || again.Err.Code != meta.CodeAlreadyExists {
		t.Fatalf("the same create without a request id answered %+v, %v; want AlreadyExists (it applied once already)", again, err)
	}
}

// testLeaderLostRetried: the same loss under a request id: the cores retry the command at
// the next leader themselves, which answers the first result from the FSM's dedupe
// record, so the caller gets a success and the command applied once.
func testLeaderLostRetried(t *testing.T, h Harness) {
	const root = "lost-retried"
	c, leader, f := warmFollower(t, h, root)
	recover := c.LoseLeaderMidCall(t, root)
	defer recover()
	res, err := tryPropose(t, h, f, meta.Header{RequestID: "corestest-lost"}, create(root, "lost", "x"), opTimeout)
	if err != nil || res.Err != nil {
		t.Fatalf("follower %d: a call under a request id whose leader froze after applying it: %v %v; want the cores to retry it at the next leader", f, err, res.Err)
	}
	if !res.Replayed {
		t.Fatalf("follower %d: %+v; want the first result replayed by the next leader", f, res)
	}
	if now := c.Leader(t, root); now == leader {
		t.Fatalf("node %d still leads after it froze", leader)
	}
	recover()
	wantFile(t, "after the retried call", read(t, h, f, root), root, "lost", res.Generation)
}

// testLeaderChange: writes through every node while the leadership moves never answer
// "unavailable" (the cores wait for the election themselves); once it moved, a write
// through every node, the former leader included, succeeds at once; every node reads them
// all.
func testLeaderChange(t *testing.T, h Harness) {
	c := h.(Faults)
	const root = "leader-change"
	old := warm(t, h, root)
	during := writeDuring(t, h, root, func() {
		if moved := c.MoveLeader(t, root); moved == old {
			t.Fatalf("MoveLeader left the leadership on node %d", old)
		}
	})
	gens := map[string]uint64{}
	for _, w := range during {
		gens[w.path] = w.gen
	}
	for i := range h.Nodes() {
		path := fmt.Sprintf("after-move-%d", i)
		gens[path] = proposeOnce(t, h, i, meta.Header{}, put(root, path, "x")).Generation
	}
	for j := range h.Nodes() {
		v := read(t, h, j, root)
		for path, gen := range gens {
			wantFile(t, fmt.Sprintf("node %d after the leader moved from %d", j, old), v, root, path, gen)
		}
	}
}

// write is one write of writeDuring.
type write struct {
	node int
	path string
	hd   meta.Header
	gen  uint64
	err  error
}

// writeDuring writes root through every node, one write after another on each, while
// change runs (and at least once per node after it began), and returns the writes once
// each applied. None may answer an error matching ErrCoreUnavailable; one whose outcome
// is unknown is retried under its request id (as a client does) until it applied.
func writeDuring(t *testing.T, h Harness, root string, change func()) []write {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	defer cancel()
	changed := make(chan struct{})
	out := make([][]write, h.Nodes())
	var wg sync.WaitGroup
	for i := range h.Nodes() {
		wg.Go(func() {
			for k := 0; ; k++ {
				w := write{node: i, path: fmt.Sprintf("during-%d-%d", i, k)}
				w.hd = meta.Header{RequestID: "corestest-" + w.path}
				var res meta.Result
				res, w.err = proposeOn(ctx, h, i, w.hd, put(root, w.path, "x"))
				if w.err == nil && res.Err != nil {
					w.err = res.Err
				}
				w.gen = res.Generation
				out[i] = append(out[i], w)
				select {
				case <-changed:
					if k > 0 {
						return
					}
				default:
				}
			}
		})
	}
	func() {
		defer close(changed)
		change()
	}()
	bounded(t, "writes while the leadership moves", wg.Wait)
	var all []write
	unknown := 0
	for _, ws := range out {
		for _, w := range ws {
			switch {
			case errors.Is(w.err, workbench.ErrOutcomeUnknown):
				unknown++
				w.gen = propose(t, h, w.node, w.hd, put(root, w.path, "x")).Generation
			case w.err != nil:
				t.Fatalf("node %d: write %s while the leadership moved: %v; want the cores to wait for the new leader", w.node, w.path, w.err)
			}
			all = append(all, w)
		}
	}
	t.Logf("%d writes while the leadership moved, %d of unknown outcome", len(all), unknown)
	return all
}

// proposeBounded proposes b through node i (who, in the messages), which lost its leader or
// its log: the call must fail with an error accepted by ok (one matching want) and end
// within leaderLossBound, since a caller must learn of a lost leader then, not at its own
// deadline.
func proposeBounded(t *testing.T, h Harness, i int, hd meta.Header, b meta.Body, who, want string, ok func(error) bool) {
	t.Helper()
	start := time.Now()
	res, err := tryPropose(t, h, i, hd, b, opTimeout)
	if !ok(err) {
		t.Fatalf("%s: the call answered %+v, %v; want an error matching %s", who, res, err, want)
	}
	elapsed := time.Since(start)
	t.Logf("%s: the call failed after %v: %v", who, elapsed.Round(time.Millisecond), err)
	if elapsed > leaderLossBound {
		t.Fatalf("%s: the call ended %v after it started, later than %v", who, elapsed, leaderLossBound)
	}
}

// testCutOff: the leader stops receiving its shard's log: a write through it can neither
// commit nor find another leader, and ends, bounded, in a retryable error; once the log
// flows again the shard serves through every node.
func testCutOff(t *testing.T, h Harness) {
	c := h.(Faults)
	const root = "cut-off"
	leader := warm(t, h, root)
	resume := c.Lag(t, leader)
	defer resume()
	proposeBounded(t, h, leader, meta.Header{RequestID: "corestest-cut-off"}, put(root, "cut", "x"), fmt.Sprintf("node %d, cut off from the log", leader),
		"ErrCoreUnavailable or ErrOutcomeUnknown", retryable)
	resume()
	for i := range h.Nodes() {
		path := fmt.Sprintf("after-%d", i)
		gen := propose(t, h, i, meta.Header{}, put(root, path, "x")).Generation
		wantFile(t, fmt.Sprintf("node %d once the log flows again", i), read(t, h, i, root), root, path, gen)
	}
}
