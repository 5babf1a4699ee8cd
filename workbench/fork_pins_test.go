package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// boundTo is a context acting for a key of root "a" bound to workbench wb (a fork's key)
// and, when given, to path prefixes.
func boundTo(t *testing.T, id, wb string, prefixes ...string) context.Context {
	return auth.WithPrincipal(t.Context(), auth.Principal{ID: id, Agents: []string{"a"}, Workbench: wb, Prefixes: prefixes, Scopes: auth.Scopes})
}

// snapshotOf returns snapshot id of workbench wb as snapshot_list shows it to the node.
func snapshotOf(t *testing.T, svc *workbench.Service, wb string, id any) workbench.Result {
	t.Helper()
	list, err := svc.Tools.SnapshotList(t.Context(), "a", workbench.SnapshotListInput{ID: wb})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list["snapshots"].([]workbench.Result) {
		if s["snapshot_id"] == id {
			return s
		}
	}
	t.Fatalf("workbench %s has no snapshot %v", wb, id)
	return nil
}

// A fork discarded with a key bound to the fork alone (the key a fork with mint_key
// answers) releases the fork's pin on its parent, which that key cannot see: the pin is
// retired, recorded as retired by that key through the discard. The answer tells that key
// nothing of the parent's snapshots: retired_snapshot_id is null whether the pin was
// retired or another fork (which the key cannot see either) keeps it. A key bound to
// prefixes of the fork is refused before anything is retired.
func TestDiscardWithTheForksOwnKeyReleasesItsPin(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	pin := fork(t, svc, "w", "f1", "")["pinned_snapshot_id"]
	fk := boundTo(t, "fk1", "f1")

	// The key reaches nothing of the parent: not its snapshots, not to retire them.
	if _, err := svc.Tools.SnapshotList(fk, "a", workbench.SnapshotListInput{ID: "w"}); codeOf(err) != workbench.CodeNotFound {
		t.Fatalf("the fork's key lists the parent's snapshots: %v", err)
	}
	id := pin.(uint64)
	_, hidden := svc.Tools.SnapshotRetire(fk, "a", workbench.SnapshotRetireInput{ID: "w", SnapshotID: &id})
	_, missing := svc.Tools.SnapshotRetire(fk, "a", workbench.SnapshotRetireInput{ID: "nope", SnapshotID: &id})
	if hidden == nil || strings.ReplaceAll(hidden.Error(), `"w"`, `"nope"`) != missing.Error() {
		t.Fatalf("the fork's key retires the parent's snapshot: %v, a missing workbench's: %v", hidden, missing)
	}
	// A key bound to prefixes of the fork may not end the whole workbench: refused before
	// the pin is touched.
	if _, err := svc.Attempts.Discard(boundTo(t, "fkp", "f1", "outputs"), "a", "f1", ""); codeOf(err) != workbench.CodePermissionDenied {
		t.Fatalf("a discard by a prefix-bound key = %v, want PermissionDenied", err)
	}
	if st := snapshotOf(t, svc, "w", pin)["state"]; st != "alive" {
		t.Fatalf("the pin after a refused discard is %v", st)
	}

	// It reads the fork's restore manifest, which names the parent (so parent_id below
	// tells it nothing new).
	if f, err := svc.Reads.Open(fk, "a", "f1", "metadata/restore_manifest.json"); err != nil {
		t.Fatalf("the fork's key reads the fork's restore manifest: %v", err)
	} else if b, err := f.ReadAll(t.Context(), 1<<20); err != nil || !strings.Contains(string(b), `"workbench_id":"w"`) {
		t.Fatalf("the fork's restore manifest = %s, %v", b, err)
	}
	r, err := svc.Attempts.Discard(workbench.WithSurface(fk, "rest/discard"), "a", "f1", "")
	if err != nil {
		t.Fatal(err)
	}
	if r["deleted"] != true || r["retired_snapshot_id"] != nil || r["parent_id"] != "w" {
		t.Fatalf("the discard by the fork's key = %v", r)
	}
	s := snapshotOf(t, svc, "w", pin)
	if s["state"] != "retired" || s["retired_by"] != "fk1 via rest/discard" {
		t.Fatalf("the pin after the fork's key discarded the fork: %v", s)
	}

	// A pin another fork has as its base stays, and the answer is the same.
	pin2 := fork(t, svc, "w", "f2", "")["pinned_snapshot_id"]
	fork(t, svc, "w", "f3", fmt.Sprint("snapshot:", pin2))
	r2, err := svc.Attempts.Discard(boundTo(t, "fk2", "f2"), "a", "f2", "")
	if err != nil {
		t.Fatal(err)
	}
	delete(r, "fork_id")
	delete(r2, "fork_id")
	if fmt.Sprint(r2) != fmt.Sprint(r) {
		t.Fatalf("a discard whose pin another fork keeps answers %v, one that retired it %v", r2, r)
	}
	if st := snapshotOf(t, svc, "w", pin2)["state"]; st != "alive" {
		t.Fatalf("the pin f3 has as its base is %v after f2's discard", st)
	}
}

// A live fork's pin is not retired: ForkRetentionActive, not retryable, naming the fork
// to a caller that sees it, and the fork still merges. Discard still retires the pin, and
// a pin another fork has as its base goes with the last of them. A snapshot the caller
// made and named as a fork's base stays the caller's to retire (the contract's retire of
// a restore's source).
func TestRetireRefusesALiveForksBase(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "par", "input/a", "a0")
	if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "par", Name: ptr("mine")}); err != nil {
		t.Fatal(err)
	}
	pin := fork(t, svc, "par", "kid", "")["pinned_snapshot_id"].(uint64)
	fork(t, svc, "par", "named", "snapshot:mine")
	retire := func(ctx context.Context, in workbench.SnapshotRetireInput) error {
		_, err := svc.Tools.SnapshotRetire(ctx, "a", in)
		return err
	}
	refused := func(what string, err error, fork string) {
		t.Helper()
		e, ok := err.(*workbench.Error)
		if !ok || e.Code != workbench.CodeForkRetentionActive || e.Retryable || e.Details["reason"] != "fork_base" {
			t.Fatalf("%s = %#v, want ForkRetentionActive (fork_base, not retryable)", what, err)
		}
		if got, _ := e.Details["fork"].(string); got != fork || fork == "" && strings.Contains(e.Message, "kid") {
			t.Fatalf("%s names fork %q (%s), want %q", what, got, e.Message, fork)
		}
	}
	refused("retiring a live fork's pin", retire(t.Context(), workbench.SnapshotRetireInput{ID: "par", SnapshotID: &pin}), "kid")
	// A key bound to the parent alone cannot see the fork: refused, the fork unnamed.
	refused("retiring the pin with a key bound to the parent", retire(boundTo(t, "pk", "par"), workbench.SnapshotRetireInput{ID: "par", SnapshotID: &pin}), "")
	if st := snapshotOf(t, svc, "par", pin)["state"]; st != "alive" {
		t.Fatalf("the pin after refused retires is %v", st)
	}
	if _, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "kid", DryRun: true}); err != nil {
		t.Fatalf("the fork's merge after a refused retire of its base: %v", err)
	}

	// A fork at kid's pin keeps it past kid's discard; the pin goes with the last fork.
	fork(t, svc, "par", "grandkid", fmt.Sprint("snapshot:", pin))
	if r, err := svc.Attempts.Discard(t.Context(), "a", "kid", ""); err != nil || r["retired_snapshot_id"] != nil {
		t.Fatalf("discard of kid while grandkid has its pin = %v, %v", r, err)
	}
	refused("retiring the pin grandkid has as its base", retire(t.Context(), workbench.SnapshotRetireInput{ID: "par", SnapshotID: &pin}), "grandkid")
	if r, err := svc.Attempts.Discard(t.Context(), "a", "grandkid", ""); err != nil || r["retired_snapshot_id"] != pin {
		t.Fatalf("discard of grandkid = %v, %v; want the pin %d retired", r, err, pin)
	}
	if err := retire(t.Context(), workbench.SnapshotRetireInput{ID: "par", Name: ptr("mine")}); err != nil {
		t.Fatalf("retiring a snapshot the caller named as a fork's base: %v", err)
	}
}
