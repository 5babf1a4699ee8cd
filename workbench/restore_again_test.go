package workbench_test

import (
	"encoding/json"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// A restore identical to one whose destination is gone since restores again: a fork
// discarded and made again at the same snapshot, a restore whose destination was deleted,
// a fork under a key after one without. While the workbench an operation made lives, an
// exact retry replays it (same operation id, generation; nothing created twice); a name
// another workbench took since is AlreadyExists.
func TestARestoreWhoseDestinationIsGoneRestoresAgain(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	ctx := t.Context()
	putIn(t, svc, "w", "outputs/a.txt", "a")
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("b")}); err != nil {
		t.Fatal(err)
	}
	holds := func(t *testing.T, wb string) {
		t.Helper()
		if got := files(t, svc, wb, "outputs/a.txt")["outputs/a.txt"]; got != "a" {
			t.Fatalf("%s holds outputs/a.txt = %q, want the snapshot's", wb, got)
		}
	}
	replays := func(t *testing.T, first, again workbench.Result, err error) {
		t.Helper()
		if err != nil || again["idempotent_replay"] != true || again["operation_id"] != first["operation_id"] ||
			again["destination_generation"] != first["destination_generation"] {
			t.Fatalf("exact retry = %v, %v; want the replay of %v", again, err, first)
		}
	}
	restoresAgain := func(t *testing.T, first, again workbench.Result, err error) {
		t.Helper()
		if err != nil || again["idempotent_replay"] != false || again["operation_id"] != first["operation_id"] ||
			again["destination_generation"] == first["destination_generation"] {
			t.Fatalf("the request after its destination went = %v, %v; want a new restore under operation %v", again, err, first["operation_id"])
		}
	}

	t.Run("fork at a snapshot, discarded", func(t *testing.T) {
		first := fork(t, svc, "w", "m6f", "snapshot:b")
		replays(t, first, fork(t, svc, "w", "m6f", "snapshot:b"), nil)
		if _, err := svc.Attempts.Discard(ctx, "a", "m6f", ""); err != nil {
			t.Fatal(err)
		}
		again, err := svc.Attempts.Fork(ctx, forkReq(t, "w", "m6f", "snapshot:b", ""))
		restoresAgain(t, first, again, err)
		holds(t, "m6f")
		replays(t, again, fork(t, svc, "w", "m6f", "snapshot:b"), nil)
		// The fork made again is a fork of w: it merges and discards.
		putIn(t, svc, "m6f", "outputs/new", "n")
		merge(t, svc, "m6f", false)
		if files(t, svc, "w")["outputs/new"] != "n" {
			t.Fatal("the fork made again did not merge into its parent")
		}
		if _, err := svc.Attempts.Discard(ctx, "a", "m6f", ""); err != nil {
			t.Fatal(err)
		}
		// Made again under an idempotency key: the key's retry answers that fork.
		keyed, err := svc.Attempts.Fork(ctx, forkReq(t, "w", "m6f", "snapshot:b", "k1"))
		if err != nil || keyed["replayed"] != false || keyed["destination_generation"] == again["destination_generation"] {
			t.Fatalf("fork under a key after a discard = %v, %v; want a new fork", keyed, err)
		}
		holds(t, "m6f")
		retry, err := svc.Attempts.Fork(ctx, forkReq(t, "w", "m6f", "snapshot:b", "k1"))
		if err != nil || retry["replayed"] != true || retry["destination_generation"] != keyed["destination_generation"] {
			t.Fatalf("the key's retry = %v, %v; want the keyed fork replayed", retry, err)
		}
	})

	t.Run("restore, destination deleted", func(t *testing.T) {
		in := workbench.RestoreInput{ID: "w", DestinationID: "r1", AtSnapshot: json.RawMessage(`"b"`)}
		first := must(t)(svc.Tools.Restore(ctx, "a", in))
		again, err := svc.Tools.Restore(ctx, "a", in)
		replays(t, first, again, err)
		if err := svc.Lifecycle.DeleteWorkbench(ctx, "a", "r1", 0, ""); err != nil {
			t.Fatal(err)
		}
		again, err = svc.Tools.Restore(ctx, "a", in)
		restoresAgain(t, first, again, err)
		holds(t, "r1")
		retry, err := svc.Tools.Restore(ctx, "a", in)
		replays(t, again, retry, err)
		// Replaced by another workbench of the name: the destination is not absent.
		if err := svc.Lifecycle.DeleteWorkbench(ctx, "a", "r1", 0, ""); err != nil {
			t.Fatal(err)
		}
		putIn(t, svc, "r1", "outputs/other", "o")
		if _, err := svc.Tools.Restore(ctx, "a", in); codeOf(err) != workbench.CodeAlreadyExists {
			t.Fatalf("restore onto a workbench that replaced its destination = %v, want AlreadyExists", err)
		}
	})
}
