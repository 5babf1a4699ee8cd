package client

import (
	"strings"
	"testing"
)

// Every attempt the client sends under an idempotency key and sends again reads back
// Replayed, and the retry answers what the first did: fork, rewind and merge applies,
// and discard.
func TestAttemptsRetriedUnderAKeyReadBackReplayed(t *testing.T) {
	c := newRealServer(t)
	ctx := t.Context()
	put := func(wb, p, body string) {
		t.Helper()
		if _, err := c.PutFile(ctx, "a", wb, p, strings.NewReader(body), PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("w", "outputs/r.txt", "one")
	if _, err := c.Snapshot(ctx, "a", "w", SnapshotRequest{Name: "before"}); err != nil {
		t.Fatal(err)
	}
	fork := ForkRequest{Fork: "f", IdempotencyKey: "fork-1"}
	f1, err := c.Fork(ctx, "a", "w", fork)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := c.Fork(ctx, "a", "w", fork)
	if err != nil || f1.Replayed || !f2.Replayed || *f2.PinnedSnapshotID != *f1.PinnedSnapshotID {
		t.Fatalf("fork %+v, retried %+v, %v", f1, f2, err)
	}
	put("f", "outputs/r.txt", "two")
	p, err := c.Merge(ctx, "a", "f", MergeRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	m1, m2 := twice(t, func() (*MergeResult, error) {
		return c.Merge(ctx, "a", "f", MergeRequest{Token: p.Token, IdempotencyKey: "merge-1"})
	})
	if m1.Replayed || !m2.Replayed || m2.Generation != m1.Generation || len(m2.Changes) != 1 {
		t.Fatalf("merge %+v, retried %+v", m1, m2)
	}
	rp, err := c.Rewind(ctx, "a", "w", RewindRequest{Target: "snapshot:before", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := twice(t, func() (*RewindResult, error) {
		return c.Rewind(ctx, "a", "w", RewindRequest{Target: "snapshot:before", Token: rp.Token, IdempotencyKey: "rewind-1"})
	})
	if r1.Replayed || !r2.Replayed || r2.Generation != r1.Generation || len(r2.Changes) != 1 {
		t.Fatalf("rewind %+v, retried %+v", r1, r2)
	}
	d1, err := c.Discard(ctx, "a", "f", "discard-1")
	if err != nil {
		t.Fatal(err)
	}
	d2, err := c.Discard(ctx, "a", "f", "discard-1")
	if err != nil || d1.Replayed || !d2.Replayed || !d2.Deleted {
		t.Fatalf("discard %+v, retried %+v, %v", d1, d2, err)
	}
}

// twice sends a request two times and returns both answers.
func twice[R any](t *testing.T, send func() (*R, error)) (first, again *R) {
	t.Helper()
	first, err := send()
	if err != nil {
		t.Fatal(err)
	}
	if again, err = send(); err != nil {
		t.Fatal(err)
	}
	return first, again
}
