package workbench_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// putIn writes body at path of workbench wb ("" deletes it).
func putIn(t *testing.T, svc *workbench.Service, wb, path, body string) {
	t.Helper()
	var err error
	if body == "" {
		_, err = svc.Writes.Delete(context.Background(), "a", wb, path, 0, "")
	} else {
		_, err = svc.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: wb, Path: path,
			Body: strings.NewReader(body), CreateWorkbench: true})
	}
	if err != nil {
		t.Fatalf("put %s %s: %v", wb, path, err)
	}
}

// mergePaths are every path the merge tests write.
var mergePaths = []string{"input/a", "input/b", "input/keep", "outputs/c", "outputs/x", "outputs/y", "outputs/new",
	"input/p0", "input/p1", "outputs/p2", "outputs/p3", "outputs/d/p4", "logs/p5"}

// files returns the files of workbench wb among mergePaths and extra as path → body.
func files(t *testing.T, svc *workbench.Service, wb string, extra ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range append(slices.Clone(mergePaths), extra...) {
		f, err := svc.Reads.Open(t.Context(), "a", wb, p)
		if c := codeOf(err); c == workbench.CodeNotFound || c == workbench.CodeNotArtifact { // no file there, or a directory
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.ReadAll(t.Context(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
	return out
}

func fork(t *testing.T, svc *workbench.Service, parent, name, at string) workbench.Result {
	t.Helper()
	r, ferr := svc.Attempts.Fork(t.Context(), forkReq(t, parent, name, at, ""))
	if ferr != nil {
		t.Fatalf("fork: %v", ferr)
	}
	return r
}

// merge previews the merge of fork f and applies it with the preview's token.
func merge(t *testing.T, svc *workbench.Service, f string, propose bool) (preview, applied workbench.Result) {
	t.Helper()
	preview, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: f, DryRun: true})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	applied, err = svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: f, Token: preview["token"].(string), ProposeConflicts: propose})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return preview, applied
}

func conflictPaths(r workbench.Result) []string {
	var out []string
	for _, c := range r["conflicts"].([]map[string]any) {
		out = append(out, c["path"].(string))
	}
	return out
}

// A fork's own changes reach the parent in one merge; a path both changed differently is
// a conflict the parent keeps its body for, and becomes a proposal with both sides'
// evidence; a path both changed the same way is no change.
func TestMergeAppliesTheForksChangesAndKeepsConflicts(t *testing.T) {
	for _, at := range []string{"live", "snapshot", "commit"} {
		t.Run("a fork at "+at, func(t *testing.T) {
			svc := workbenchtest.New(t, workbench.Config{}).Service
			for _, p := range []string{"input/a", "input/b", "outputs/c", "outputs/x", "outputs/y"} {
				putIn(t, svc, "w", p, p+"0")
			}
			switch at {
			case "snapshot":
				if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: ptr("base")}); err != nil {
					t.Fatal(err)
				}
				at = "snapshot:base"
			case "commit":
				at = "commit:" + commitNow(t, svc, 1)
			}
			f := fork(t, svc, "w", "f", at)
			if f["parent_id"] != "w" || (at == "live") != (f["pinned_snapshot_id"] != nil) {
				t.Fatalf("fork answer = %v", f)
			}
			if got := files(t, svc, "f"); !maps.Equal(got, files(t, svc, "w")) {
				t.Fatalf("the fork holds %v, not its parent's files", got)
			}
			putIn(t, svc, "f", "input/a", "a-fork")
			putIn(t, svc, "f", "input/b", "")
			putIn(t, svc, "f", "outputs/new", "new-fork")
			putIn(t, svc, "f", "outputs/x", "x-fork")
			putIn(t, svc, "f", "outputs/y", "y-both")
			putIn(t, svc, "w", "outputs/c", "c-parent")
			putIn(t, svc, "w", "outputs/x", "x-parent")
			putIn(t, svc, "w", "outputs/y", "y-both")
			preview, applied := merge(t, svc, "f", true)
			want := []string{"changed input/a", "removed input/b", "added outputs/new"}
			if got := changesOf(preview); !slices.Equal(got, want) {
				t.Fatalf("preview changes = %q, want %q", got, want)
			}
			if got := conflictPaths(applied); !slices.Equal(got, []string{"outputs/x"}) {
				t.Fatalf("conflicts = %q, want outputs/x", got)
			}
			wantTree := map[string]string{"input/a": "a-fork", "outputs/c": "c-parent", "outputs/new": "new-fork",
				"outputs/x": "x-parent", "outputs/y": "y-both"}
			if got := files(t, svc, "w"); !maps.Equal(got, wantTree) {
				t.Fatalf("parent after the merge = %v, want %v", got, wantTree)
			}
			id, _ := applied["conflicts"].([]map[string]any)[0]["proposal_id"].(string)
			if id == "" {
				t.Fatalf("the conflict made no proposal: %v", applied["conflicts"])
			}
			p, err := svc.Tools.Proposals(t.Context(), "a", workbench.ProposalsInput{ID: "w", ProposalID: &id, IncludeBody: ptr(true)})
			if err != nil {
				t.Fatal(err)
			}
			var sides []string
			for _, e := range p["evidence"].([]map[string]any) {
				sides = append(sides, fmt.Sprint(e["kind"], " ", e["workbench"], " ", e["path"]))
			}
			if !slices.Contains(sides, "file f outputs/x") || !slices.Contains(sides, "file w outputs/x") || p["path"] != "outputs/x" {
				t.Fatalf("the proposal %v does not carry both sides' evidence", p)
			}
		})
	}
}

// An apply after the parent changed is refused whole, naming what changed.
func TestMergeRefusesAParentChangedSinceThePreview(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	fork(t, svc, "w", "f", "")
	putIn(t, svc, "f", "input/a", "a1")
	preview, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "f", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	putIn(t, svc, "w", "outputs/late", "late")
	_, err = svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "f", Token: preview["token"].(string)})
	if codeOf(err) != workbench.CodeConflict || !strings.Contains(fmt.Sprint(detailsOf(err)["paths"]), "outputs/late") {
		t.Fatalf("apply after a parent write = %v (%v), want Conflict naming outputs/late", err, detailsOf(err))
	}
	if got := files(t, svc, "w")["input/a"]; got != "a0" {
		t.Fatalf("a refused merge changed input/a to %q", got)
	}
	// A rewind's token never applies a merge.
	if _, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "f", Token: "x.y"}); detailsOf(err)["field"] != "token" {
		t.Fatalf("a foreign token = %v, want InvalidArguments naming token", err)
	}
}

// Discarding a live fork deletes it and retires the snapshot it pinned; a snapshot the
// caller named stays.
func TestDiscardReleasesTheFork(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: ptr("mine")}); err != nil {
		t.Fatal(err)
	}
	live := fork(t, svc, "w", "f1", "")
	fork(t, svc, "w", "f2", "snapshot:mine")
	// The restore manifest makes a fork one: it cannot be deleted out from under it.
	if _, err := svc.Writes.Delete(t.Context(), "a", "f1", "metadata/restore_manifest.json", 0, ""); codeOf(err) != workbench.CodeInvalidArguments {
		t.Fatalf("deleting a fork's restore manifest = %v, want InvalidArguments", err)
	}
	for _, tc := range []struct {
		fork    string
		retired any
	}{{"f1", live["pinned_snapshot_id"]}, {"f2", nil}} {
		r, err := svc.Attempts.Discard(t.Context(), "a", tc.fork, "")
		if err != nil {
			t.Fatal(err)
		}
		if r["retired_snapshot_id"] != tc.retired {
			t.Fatalf("discard %s retired %v, want %v", tc.fork, r["retired_snapshot_id"], tc.retired)
		}
		if _, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: tc.fork, DryRun: true}); codeOf(err) != workbench.CodeNotFound {
			t.Fatalf("merge of a discarded fork = %v, want NotFound", err)
		}
	}
	list, err := svc.Tools.SnapshotList(t.Context(), "a", workbench.SnapshotListInput{ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	states := map[any]any{}
	for _, s := range list["snapshots"].([]workbench.Result) {
		states[s["snapshot_id"]] = s["state"]
	}
	if states[live["pinned_snapshot_id"]] != "retired" || len(states) != 2 {
		t.Fatalf("snapshot states after the discards = %v, want the pin retired and mine kept", states)
	}
}

// Bad input names its field; a workbench that is no fork is refused; another tenant's
// fork answers like a missing one.
func TestForkAndMergeRefuseBadInput(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	fork(t, svc, "w", "f", "")
	for _, tc := range []struct {
		name  string
		in    workbench.ForkInput
		field string
	}{
		{"no fork name", workbench.ForkInput{ID: "w"}, "fork"},
		{"a bad fork name", workbench.ForkInput{ID: "w", Fork: "a/b"}, "fork"},
		{"the parent's own name", workbench.ForkInput{ID: "w", Fork: "w"}, "fork"},
		{"a generation base", workbench.ForkInput{ID: "w", Fork: "g", At: ptr("generation:3")}, "at"},
		{"a base of no kind", workbench.ForkInput{ID: "w", Fork: "g", At: ptr("yesterday")}, "at"},
		{"a key expiry that is no time", workbench.ForkInput{ID: "w", Fork: "g", MintKey: true, KeyExpiresAt: ptr("in an hour")}, "key_expires_at"},
		{"a key expiry without mint_key", workbench.ForkInput{ID: "w", Fork: "g", KeyExpiresAt: ptr("2030-01-01T00:00:00Z")}, "key_expires_at"},
		{"a key on a service that keeps none", workbench.ForkInput{ID: "w", Fork: "g", MintKey: true}, "mint_key"},
	} {
		req, rerr := tc.in.Request("a", "")
		var err error = rerr
		if rerr == nil {
			_, err = svc.Attempts.Fork(t.Context(), req)
		}
		if detailsOf(err)["field"] != tc.field {
			t.Errorf("%s: %v, want InvalidArguments naming %s", tc.name, err, tc.field)
		}
	}
	if _, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "w", DryRun: true}); detailsOf(err)["rule"] != "not_a_fork" {
		t.Fatalf("merge of a workbench that is no fork = %v, want rule not_a_fork", err)
	}
	if _, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "f"}); detailsOf(err)["field"] != "token" {
		t.Fatalf("apply without a token = %v, want InvalidArguments naming token", err)
	}
	other := auth.WithPrincipal(t.Context(), auth.Principal{ID: "k", Agents: []string{"b"}, Scopes: auth.Scopes})
	_, hidden := svc.Attempts.Merge(other, workbench.MergeRequest{Agent: "a", Fork: "f", DryRun: true})
	_, missing := svc.Attempts.Merge(other, workbench.MergeRequest{Agent: "nobody", Fork: "f", DryRun: true})
	if codeOf(hidden) != workbench.CodeNotFound || strings.ReplaceAll(hidden.Error(), `"a"`, `"nobody"`) != missing.Error() {
		t.Fatalf("another tenant's fork = %v, a missing one = %v: want the same NotFound", hidden, missing)
	}
	_, hidden = svc.Attempts.Discard(other, "a", "f", "")
	_, missing = svc.Attempts.Discard(other, "nobody", "f", "")
	if codeOf(hidden) != workbench.CodeNotFound || strings.ReplaceAll(hidden.Error(), `"a"`, `"nobody"`) != missing.Error() {
		t.Fatalf("discard of another tenant's fork = %v, a missing one = %v: want the same NotFound", hidden, missing)
	}
	freq, _ := workbench.ForkInput{ID: "w", Fork: "g"}.Request("a", "")
	if _, err := svc.Attempts.Fork(other, freq); codeOf(err) != workbench.CodeNotFound {
		t.Fatalf("a fork of another tenant's workbench = %v, want NotFound", err)
	}
}

// The merge agrees with a naive three-way merge over random edit sequences: for every
// path, the parent ends with the fork's body when only the fork changed it, keeps its own
// otherwise, and the paths both changed differently are exactly the reported conflicts.
func TestMergeAgreesWithANaiveThreeWayMerge(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	paths := mergePaths[7:]
	bodies := []string{"", "one", "two", "three"} // "": no file
	for round := range 12 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			svc := workbenchtest.New(t, workbench.Config{}).Service
			base := map[string]string{}
			putIn(t, svc, "w", "input/keep", "k") // the workbench exists whatever the draw
			for _, p := range paths {
				if b := bodies[rng.Intn(len(bodies))]; b != "" {
					putIn(t, svc, "w", p, b)
					base[p] = b
				}
			}
			fork(t, svc, "w", "f", "")
			sides := map[string]map[string]string{"w": maps.Clone(base), "f": maps.Clone(base)}
			for range 10 {
				wb := []string{"w", "f"}[rng.Intn(2)]
				p, b := paths[rng.Intn(len(paths))], bodies[rng.Intn(len(bodies))]
				if b == "" && sides[wb][p] == "" {
					continue // deleting a missing file is not an edit
				}
				putIn(t, svc, wb, p, b)
				if b == "" {
					delete(sides[wb], p)
				} else {
					sides[wb][p] = b
				}
			}
			want, wantConflicts := maps.Clone(sides["w"]), []string(nil)
			for _, p := range paths {
				b, f, w := base[p], sides["f"][p], sides["w"][p]
				switch {
				case f == b || f == w:
				case w == b && f == "":
					delete(want, p)
				case w == b:
					want[p] = f
				default:
					wantConflicts = append(wantConflicts, p)
				}
			}
			want["input/keep"] = "k"
			_, applied := merge(t, svc, "f", false)
			got := files(t, svc, "w")
			if !maps.Equal(got, want) {
				t.Fatalf("base %v, fork %v, parent %v: merged %v, want %v", base, sides["f"], sides["w"], got, want)
			}
			gotConflicts := conflictPaths(applied)
			slices.Sort(gotConflicts)
			slices.Sort(wantConflicts)
			if !slices.Equal(gotConflicts, wantConflicts) {
				t.Fatalf("base %v, fork %v, parent %v: conflicts %q, want %q", base, sides["f"], sides["w"], gotConflicts, wantConflicts)
			}
		})
	}
}

// A merge apply retried under the same idempotency key — with the first preview's token or
// a new preview's, as `cairn merge --yes` sends — answers the first apply: its generation,
// its changes and counts, replayed; the key with another fork is refused.
func TestMergeApplyReplaysByIdempotencyKey(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	for _, w := range [][3]string{{"w", "input/a", "a0"}, {"w", "input/b", "b0"}} {
		putIn(t, svc, w[0], w[1], w[2])
	}
	fork(t, svc, "w", "f", "")
	fork(t, svc, "w", "g", "")
	for _, w := range [][3]string{{"f", "input/a", "a-fork"}, {"f", "input/b", ""}, {"f", "outputs/new", "new"}} {
		putIn(t, svc, w[0], w[1], w[2])
	}
	preview, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "f", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	req := workbench.MergeRequest{Agent: "a", Fork: "f", Token: preview["token"].(string), RequestID: "merge-1"}
	first, err := svc.Attempts.Merge(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"changed input/a", "removed input/b", "added outputs/new"}
	if got := changesOf(first); !slices.Equal(got, want) {
		t.Fatalf("first apply's changes = %q, want %q", got, want)
	}
	again, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "f", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{req.Token, again["token"].(string)} {
		req.Token = tok
		retry, err := svc.Attempts.Merge(t.Context(), req)
		if err != nil || retry["replayed"] != true || retry["generation"] != first["generation"] {
			t.Fatalf("retry = %v, %v; want the first apply (generation %v) replayed", retry, err, first["generation"])
		}
		for _, k := range []string{"fork_id", "parent_id", "base", "changes", "counts", "applied"} {
			if fmt.Sprint(retry[k]) != fmt.Sprint(first[k]) {
				t.Errorf("the retry's %s = %v, the first apply's %v", k, retry[k], first[k])
			}
		}
	}
	pg, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "g", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "g", Token: pg["token"].(string), RequestID: "merge-1"})
	if codeOf(err) != workbench.CodeInvalidArguments {
		t.Fatalf("the key with another fork = %v, want InvalidArguments", err)
	}
}

// A file/directory clash between the sides — the fork adds a file where the parent adds a
// file below it, or the reverse — is a conflict the preview reports with both paths, never
// a change: the clean changes still merge and the parent keeps its side.
func TestMergeReportsAFileDirectoryClashAsAConflict(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	fork(t, svc, "w", "f", "")
	for _, w := range [][3]string{{"f", "input/a", "a-fork"}, {"f", "outputs/new", "file"}, {"f", "outputs/d/p4", "inner"},
		{"w", "outputs/new/inner", "parent-inner"}, {"w", "outputs/d", "parent-file"}} {
		putIn(t, svc, w[0], w[1], w[2])
	}
	preview, applied := merge(t, svc, "f", true)
	if got := changesOf(preview); !slices.Equal(got, []string{"changed input/a"}) {
		t.Fatalf("preview changes = %q, want only input/a", got)
	}
	var clashes []string
	for _, c := range applied["conflicts"].([]map[string]any) {
		clashes = append(clashes, fmt.Sprint(c["path"], "~", c["clash_with"]))
	}
	if want := []string{"outputs/d/p4~outputs/d", "outputs/new~outputs/new/inner"}; !slices.Equal(clashes, want) {
		t.Fatalf("conflicts = %q, want %q", clashes, want)
	}
	want := map[string]string{"input/a": "a-fork", "outputs/new/inner": "parent-inner", "outputs/d": "parent-file"}
	if got := files(t, svc, "w", "outputs/d", "outputs/new/inner"); !maps.Equal(got, want) {
		t.Fatalf("parent after the merge = %v, want %v", got, want)
	}
}

// Merging the same fork state again with propose_conflicts (a new preview, a new token)
// finds the proposal the first merge made for a conflict instead of adding another; a
// new fork side is a new proposal.
func TestMergeProposesAConflictOnce(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "outputs/x", "x0")
	fork(t, svc, "w", "f", "")
	putIn(t, svc, "f", "outputs/x", "x-fork")
	putIn(t, svc, "w", "outputs/x", "x-parent")
	proposalOf := func() any {
		_, applied := merge(t, svc, "f", true)
		return applied["conflicts"].([]map[string]any)[0]["proposal_id"]
	}
	pending := func() int {
		page, err := svc.Tools.Proposals(t.Context(), "a", workbench.ProposalsInput{ID: "w", Path: ptr("outputs/x"), State: ptr("pending")})
		if err != nil {
			t.Fatal(err)
		}
		return len(page["proposals"].([]workbench.Result))
	}
	first := proposalOf()
	if again := proposalOf(); first == nil || again != first || pending() != 1 {
		t.Fatalf("a second merge proposed %v after %v, %d pending; want the first proposal found", again, first, pending())
	}
	putIn(t, svc, "f", "outputs/x", "x-fork-2")
	if third := proposalOf(); third == first || pending() != 2 {
		t.Fatalf("a new fork side proposed %v (the first %v), %d pending; want a new proposal", third, first, pending())
	}
}

// A fork made at another fork's pin keeps it: discarding the fork that pinned it retires
// nothing while the other lives (it still merges), and discarding the last fork that
// names it as its base retires it.
func TestDiscardKeepsAPinAnotherForkNamesAsItsBase(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	pin := fork(t, svc, "w", "f1", "")["pinned_snapshot_id"]
	fork(t, svc, "w", "f5", fmt.Sprint("snapshot:", pin))
	discard := func(f string, retired any) {
		t.Helper()
		r, err := svc.Attempts.Discard(t.Context(), "a", f, "")
		if err != nil || r["retired_snapshot_id"] != retired {
			t.Fatalf("discard %s = %v, %v; want retired_snapshot_id %v", f, r, err, retired)
		}
	}
	discard("f1", nil)
	putIn(t, svc, "f5", "input/a", "a-f5")
	merge(t, svc, "f5", false)
	if got := files(t, svc, "w")["input/a"]; got != "a-f5" {
		t.Fatalf("the parent after f5's merge holds %q", got)
	}
	discard("f5", pin)
}

// forkReq is the ForkRequest of fork name of parent at at ("" live) under request id key.
func forkReq(t *testing.T, parent, name, at, key string) workbench.ForkRequest {
	t.Helper()
	in := workbench.ForkInput{ID: parent, Fork: name}
	if at != "" {
		in.At = &at
	}
	req, err := in.Request("a", key)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// snapshotStates lists workbench wb's snapshots as id → state.
func snapshotStates(t *testing.T, svc *workbench.Service, wb string) map[any]any {
	t.Helper()
	list, err := svc.Tools.SnapshotList(t.Context(), "a", workbench.SnapshotListInput{ID: wb})
	if err != nil {
		t.Fatal(err)
	}
	states := map[any]any{}
	for _, s := range list["snapshots"].([]workbench.Result) {
		states[s["snapshot_id"]] = s["state"]
	}
	return states
}

// A fork retried under its request id answers the first fork (replayed, the same pin and
// operation), pins nothing more; the id with another fork is refused, pinning nothing.
func TestForkReplaysByIdempotencyKey(t *testing.T) {
	for _, at := range []string{"", "snapshot:mine"} {
		t.Run("at "+at, func(t *testing.T) {
			svc := workbenchtest.New(t, workbench.Config{}).Service
			putIn(t, svc, "w", "input/a", "a0")
			if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: ptr("mine")}); err != nil {
				t.Fatal(err)
			}
			first, err := svc.Attempts.Fork(t.Context(), forkReq(t, "w", "f", at, "fork-1"))
			if err != nil || first["replayed"] != false {
				t.Fatalf("first fork = %v, %v", first, err)
			}
			putIn(t, svc, "w", "input/a", "a1") // a retry's live base would be another
			again, err := svc.Attempts.Fork(t.Context(), forkReq(t, "w", "f", at, "fork-1"))
			if err != nil || again["replayed"] != true {
				t.Fatalf("retry = %v, %v; want the first fork replayed", again, err)
			}
			for _, k := range []string{"fork_id", "parent_id", "base", "pinned_snapshot_id", "operation_id", "read_version"} {
				if fmt.Sprint(again[k]) != fmt.Sprint(first[k]) {
					t.Errorf("the retry's %s = %v, the first fork's %v", k, again[k], first[k])
				}
			}
			before := snapshotStates(t, svc, "w")
			for _, other := range []workbench.ForkRequest{forkReq(t, "w", "g", at, "fork-1"), forkReq(t, "w", "f", "snapshot:1", "fork-1")} {
				if _, err := svc.Attempts.Fork(t.Context(), other); codeOf(err) != workbench.CodeInvalidArguments {
					t.Fatalf("the key with another fork (%s at %s) = %v, want InvalidArguments", other.Fork, other.At, err)
				}
			}
			if _, err := svc.Attempts.Fork(t.Context(), forkReq(t, "w", "f", at, "fork-2")); codeOf(err) != workbench.CodeAlreadyExists {
				t.Fatalf("the name under another key = %v, want AlreadyExists", err)
			}
			if after := snapshotStates(t, svc, "w"); !maps.Equal(after, before) {
				t.Fatalf("the parent's snapshots after refused forks = %v, before %v", after, before)
			}
		})
	}
}

// A live fork refused for its name, with or without a request id, leaves nothing on its
// parent: no snapshot pinned, not even a retired one.
func TestARefusedForkLeavesNoSnapshotOnItsParent(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	putIn(t, svc, "taken", "input/a", "t0")
	for _, key := range []string{"", "fork-k"} {
		if _, err := svc.Attempts.Fork(t.Context(), forkReq(t, "w", "taken", "", key)); codeOf(err) != workbench.CodeAlreadyExists {
			t.Fatalf("a fork named like a workbench that exists (key %q) = %v, want AlreadyExists", key, err)
		}
	}
	if states := snapshotStates(t, svc, "w"); len(states) != 0 {
		t.Fatalf("the parent's snapshots after refused forks = %v, want none", states)
	}
}

// A conflict says how its sides differ. A delete on one side against an edit on the other
// is a conflict too: the fork's edit of a file the parent deleted is proposed (to create
// it again); the fork's delete of a file the parent edited cannot be (a proposal carries a
// body), and its row says why instead of staying silent.
func TestMergeGivesADeleteEditConflictAReason(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	for _, p := range []string{"outputs/x", "outputs/y", "outputs/z"} {
		putIn(t, svc, "w", p, p+"0")
	}
	fork(t, svc, "w", "f", "")
	putIn(t, svc, "f", "outputs/x", "")       // the fork deletes x ...
	putIn(t, svc, "w", "outputs/x", "x-edit") // ... the parent edits it
	putIn(t, svc, "f", "outputs/y", "y-edit") // the fork edits y ...
	putIn(t, svc, "w", "outputs/y", "")       // ... the parent deletes it
	putIn(t, svc, "f", "outputs/z", "z-fork")
	putIn(t, svc, "w", "outputs/z", "z-parent")
	putIn(t, svc, "f", "outputs/new", "n-fork")
	putIn(t, svc, "w", "outputs/new", "n-parent")
	_, applied := merge(t, svc, "f", true)
	got := map[string]map[string]any{}
	for _, c := range applied["conflicts"].([]map[string]any) {
		got[c["path"].(string)] = c
	}
	for path, reason := range map[string]string{"outputs/x": workbench.ConflictDeletedOnFork, "outputs/y": workbench.ConflictDeletedOnParent,
		"outputs/z": workbench.ConflictBothChanged, "outputs/new": workbench.ConflictBothAdded} {
		c := got[path]
		if c == nil || c["reason"] != reason {
			t.Fatalf("conflict %s = %v, want reason %s", path, c, reason)
		}
		proposed, _ := c["proposal_id"].(string)
		why, _ := c["not_proposed"].(string)
		if wantProposal := path != "outputs/x"; (proposed != "") != wantProposal || (why != "") == wantProposal || c["proposal_error"] != nil {
			t.Fatalf("conflict %s = %v: want a proposal %v, else a reason none was made", path, c, wantProposal)
		}
	}
	if why := got["outputs/x"]["not_proposed"].(string); !strings.Contains(why, "deleted") {
		t.Fatalf("the fork's delete was not proposed because %q", why)
	}
	if files := files(t, svc, "w", "outputs/new"); files["outputs/x"] != "x-edit" || files["outputs/y"] != "" {
		t.Fatalf("the parent after the merge = %v, want its sides of the conflicts kept", files)
	}
}

// A merge reads the whole fork (its restore manifest, under metadata/, is its record) and
// writes the parent wherever the fork changed it: for a key bound to path prefixes it is
// an operation on a whole workbench, refused as a discard or a fork is (PermissionDenied
// naming the prefixes), never answered as if the fork were no fork because the key
// cannot see its manifest. The parent keeps its files.
func TestMergeByAPrefixBoundKeyIsPermissionDenied(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "outputs/c", "c0")
	putIn(t, svc, "w", "input/a", "a0")
	fork(t, svc, "w", "f", "")
	putIn(t, svc, "f", "outputs/c", "c1")
	putIn(t, svc, "f", "input/a", "a1")
	preview, _ := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: "f", DryRun: true})
	bound := auth.WithPrincipal(t.Context(), auth.Principal{ID: "kp", Agents: []string{"a"}, Prefixes: []string{"outputs"}, Scopes: auth.Scopes})
	for _, req := range []workbench.MergeRequest{
		{Agent: "a", Fork: "f", DryRun: true},
		{Agent: "a", Fork: "f", Token: preview["token"].(string)},
	} {
		_, err := svc.Attempts.Merge(bound, req)
		if codeOf(err) != workbench.CodePermissionDenied || fmt.Sprint(detailsOf(err)["prefixes"]) != "[outputs]" {
			t.Fatalf("a merge (dry run %v) by a key bound to outputs = %v, want PermissionDenied naming its prefixes", req.DryRun, err)
		}
	}
	if got := files(t, svc, "w"); got["outputs/c"] != "c0" || got["input/a"] != "a0" {
		t.Fatalf("the parent after refused merges: %v", got)
	}
}

// A fork whose parent was deleted and made again under its name merges into neither: the
// parent now is another workbench than the one the fork's base was taken of (Conflict,
// details.reason parent_replaced), whether the base is a snapshot or a commit; the new
// parent is unchanged.
func TestAForkOfAParentMadeAgainDoesNotMerge(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	putIn(t, svc, "w", "input/a", "a0")
	if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: ptr("mine")}); err != nil {
		t.Fatal(err)
	}
	c, err := svc.Tools.Commit(t.Context(), "a", workbench.CommitInput{ID: "w", Manifest: []byte(`{"run":"r1"}`),
		ContentDigestURI: "sha256:" + strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	fork(t, svc, "w", "at-snapshot", "snapshot:mine")
	fork(t, svc, "w", "at-commit", "commit:"+c["commit_identity"].(string))
	putIn(t, svc, "at-snapshot", "outputs/s", "s")
	putIn(t, svc, "at-commit", "outputs/c", "c")
	if err := svc.Lifecycle.DeleteWorkbench(t.Context(), "a", "w", 0, ""); err != nil {
		t.Fatal(err)
	}
	putIn(t, svc, "w", "input/a", "again")
	// The new parent seals a commit of the same identity (same manifest and claimed
	// digest): it was sealed after the fork was made, so it is not the fork's base.
	if _, err := svc.Tools.Commit(t.Context(), "a", workbench.CommitInput{ID: "w", Manifest: []byte(`{"run":"r1"}`),
		ContentDigestURI: "sha256:" + strings.Repeat("ab", 32)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"at-snapshot", "at-commit"} {
		_, err := svc.Attempts.Merge(t.Context(), workbench.MergeRequest{Agent: "a", Fork: f, DryRun: true})
		if codeOf(err) != workbench.CodeConflict || detailsOf(err)["reason"] != "parent_replaced" {
			t.Fatalf("merge of fork %s into a parent made again = %v (%v), want Conflict parent_replaced", f, err, detailsOf(err))
		}
	}
	if got := files(t, svc, "w"); got["input/a"] != "again" || got["outputs/s"] != "" || got["outputs/c"] != "" {
		t.Fatalf("the parent made again holds %v", got)
	}
}
