package workbench_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// rewind previews a rewind and applies it with the preview's token.
func rewind(t *testing.T, ctx context.Context, svc *workbench.Service, req workbench.RewindRequest) (preview, applied workbench.Result) {
	t.Helper()
	req.DryRun = true
	preview, err := svc.Attempts.Rewind(ctx, req)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	req.DryRun, req.Token = false, preview["token"].(string)
	applied, err = svc.Attempts.Rewind(ctx, req)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return preview, applied
}

func target(t *testing.T, s string) workbench.RewindTarget {
	t.Helper()
	tg, err := workbench.ParseRewindTarget("target", s)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// tree returns every file of workbench w as path → body.
func tree(t *testing.T, svc *workbench.Service) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{"input/a.txt", "input/b.txt", "outputs/r.txt", "outputs/new.txt", "outputs/late.txt", "logs/run.log"} {
		f, err := svc.Reads.Open(t.Context(), "a", "w", p)
		if err != nil {
			continue
		}
		b, err := f.ReadAll(t.Context(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
	return out
}

// nowMs returns the shard's command time, once the wall clock has passed it: every
// command proposed after nowMs returns has a later command time.
func nowMs(t *testing.T, n *workbenchtest.Node) int64 {
	t.Helper()
	v, err := n.Shard.ReadView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	at := v.NowMs()
	retry.SucceedsSoon(t, "the wall clock passes the command time", func() error {
		if time.Now().UnixMilli() <= at {
			return fmt.Errorf("still at %d", at)
		}
		return nil
	})
	return at
}

func changesOf(r workbench.Result) []string {
	var out []string
	for _, c := range r["changes"].([]map[string]any) {
		out = append(out, fmt.Sprintf("%s %s", c["change"], c["path"]))
	}
	return out
}

// A rewind returns the scope to a snapshot, a commit or a past time: its preview lists the
// added, removed and changed paths, its apply makes exactly that tree, every rewound path
// is a new version (history keeps the ones before), and paths outside the scope stay.
func TestRewindReturnsTheScopeToItsTarget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scope workbench.RewindScope
		want  []string // the preview's changes
		after map[string]string
	}{
		{"the whole workbench", workbench.RewindScope{},
			[]string{"changed input/a.txt", "added input/b.txt", "removed outputs/new.txt", "changed outputs/r.txt"},
			map[string]string{"input/a.txt": "a1\n", "input/b.txt": "b1\n", "outputs/r.txt": "r1\n"}},
		{"a prefix", workbench.RewindScope{Prefix: "outputs"},
			[]string{"removed outputs/new.txt", "changed outputs/r.txt"},
			map[string]string{"input/a.txt": "a2\n", "outputs/r.txt": "r1\n"}},
		{"a set of paths", workbench.RewindScope{Paths: []string{"input/b.txt", "outputs/r.txt"}},
			[]string{"added input/b.txt", "changed outputs/r.txt"},
			map[string]string{"input/a.txt": "a2\n", "input/b.txt": "b1\n", "outputs/r.txt": "r1\n", "outputs/new.txt": "new\n"}},
	} {
		for _, kind := range []string{"snapshot", "commit", "time"} {
			t.Run(tc.name+" to a "+kind, func(t *testing.T) {
				n := workbenchtest.New(t, workbench.Config{})
				svc, ctx := n.Service, t.Context()
				write(t, svc, "input/a.txt", "a1\n")
				write(t, svc, "input/b.txt", "b1\n")
				old := write(t, svc, "outputs/r.txt", "r1\n")
				var to string
				switch kind {
				case "snapshot":
					if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("before")}); err != nil {
						t.Fatal(err)
					}
					to = "snapshot:before"
				case "commit":
					to = "commit:" + commitNow(t, svc, 1)
				case "time":
					to = fmt.Sprintf("time:%d", nowMs(t, n))
				}
				write(t, svc, "input/a.txt", "a2\n")
				if _, err := svc.Writes.Delete(ctx, "a", "w", "input/b.txt", 0, ""); err != nil {
					t.Fatal(err)
				}
				write(t, svc, "outputs/r.txt", "r2\n")
				write(t, svc, "outputs/new.txt", "new\n")
				preview, applied := rewind(t, ctx, svc, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, to), Scope: tc.scope})
				if got := changesOf(preview); !slices.Equal(got, tc.want) {
					t.Fatalf("preview changes = %q, want %q", got, tc.want)
				}
				if got := changesOf(applied); !slices.Equal(got, tc.want) || applied["applied"] != true {
					t.Fatalf("applied changes = %q (applied %v), want %q", got, applied["applied"], tc.want)
				}
				if got := tree(t, svc); fmt.Sprint(got) != fmt.Sprint(tc.after) {
					t.Fatalf("tree after the rewind = %v, want %v", got, tc.after)
				}
				gen := applied["generation"].(uint64)
				h, err := svc.Review.History(ctx, workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt"})
				if err != nil {
					t.Fatal(err)
				}
				vs := h.Versions
				if len(vs) != 3 || vs[0].Generation != gen || vs[2].Generation != old.Generation || vs[0].Digest != vs[2].Digest {
					t.Fatalf("history of outputs/r.txt = %v, want the rewind (%d) over r2 over r1 (%d)", vs, gen, old.Generation)
				}
			})
		}
	}
}

// rewoundNode is a node whose workbench w held outputs/r.txt "r1" at snapshot s and
// holds "r2" now, and the apply request of a preview back to s (its token set).
func rewoundNode(t *testing.T) (*workbench.Service, workbench.RewindRequest) {
	t.Helper()
	svc, ctx := workbenchtest.New(t, workbench.Config{}).Service, t.Context()
	write(t, svc, "input/a.txt", "a\n")
	write(t, svc, "outputs/r.txt", "r1\n")
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("s")}); err != nil {
		t.Fatal(err)
	}
	write(t, svc, "outputs/r.txt", "r2\n")
	req := workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, "snapshot:s"), DryRun: true}
	preview, err := svc.Attempts.Rewind(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.DryRun, req.Token = false, preview["token"].(string)
	return svc, req
}

// A writer that lands between the preview and the apply makes the apply refuse with 409
// Conflict naming the path, and change nothing; a new preview applies.
func TestRewindRefusesWhatChangedSinceThePreview(t *testing.T) {
	for _, tc := range []struct {
		name, path string
	}{
		{"a path the rewind changes", "outputs/r.txt"},
		{"a path the rewind leaves", "input/a.txt"},
		{"a path created in the scope", "outputs/late.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, req := rewoundNode(t)
			ctx := t.Context()
			write(t, svc, tc.path, "a concurrent writer\n")
			_, err := svc.Attempts.Rewind(ctx, req)
			var e *workbench.Error
			if !asError(err, &e) || e.Code != workbench.CodeConflict || e.Retryable || fmt.Sprint(e.Details["paths"]) != fmt.Sprint([]string{tc.path}) {
				t.Fatalf("apply after a concurrent write = %v (details %v), want a Conflict naming %s", err, detailsOf(err), tc.path)
			}
			if got := tree(t, svc)["outputs/r.txt"]; tc.path != "outputs/r.txt" && got != "r2\n" {
				t.Fatalf("a refused rewind changed outputs/r.txt to %q", got)
			}
			rewind(t, ctx, svc, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, "snapshot:s")})
			if got := tree(t, svc)["outputs/r.txt"]; got != "r1\n" {
				t.Fatalf("after a new preview and apply, outputs/r.txt = %q", got)
			}
		})
	}
}

// An apply retried under the same idempotency key answers the first apply — its
// generation, its changes (added, removed, changed, each path's sides) and counts —,
// replayed, and adds no version.
func TestRewindApplyReplaysByIdempotencyKey(t *testing.T) {
	svc, ctx := workbenchtest.New(t, workbench.Config{}).Service, t.Context()
	write(t, svc, "input/a.txt", "a\n")
	write(t, svc, "outputs/r.txt", "r1\n")
	write(t, svc, "outputs/late.txt", "late\n")
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("s")}); err != nil {
		t.Fatal(err)
	}
	write(t, svc, "outputs/r.txt", "r2\n")
	write(t, svc, "outputs/new.txt", "new\n")
	if _, err := svc.Writes.Delete(ctx, "a", "w", "outputs/late.txt", 0, ""); err != nil {
		t.Fatal(err)
	}
	req := workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, "snapshot:s"), Scope: workbench.RewindScope{Prefix: "outputs"}, DryRun: true}
	preview, err := svc.Attempts.Rewind(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.DryRun, req.Token, req.RequestID = false, preview["token"].(string), "rewind-1"
	first, err := svc.Attempts.Rewind(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := changesOf(first); fmt.Sprint(got) != "[added outputs/late.txt removed outputs/new.txt changed outputs/r.txt]" {
		t.Fatalf("first apply's changes = %q", got)
	}
	write(t, svc, "input/a.txt", "outside the scope\n")
	again, err := svc.Attempts.Rewind(ctx, req)
	replays(t, again, err, first)
	h, err := svc.Review.History(ctx, workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt"})
	if err != nil || len(h.Versions) != 3 {
		t.Fatalf("history after a replay = %v, %v; want 3 versions", h.Versions, err)
	}
}

// replays checks that a retried apply (again, err) answered the first apply, replayed.
func replays(t *testing.T, again workbench.Result, err error, first workbench.Result) {
	t.Helper()
	if err != nil || again["replayed"] != true || again["generation"] != first["generation"] {
		t.Fatalf("retry = %v, %v; want the first apply (generation %v) replayed", again, err, first["generation"])
	}
	for _, k := range []string{"workbench_id", "target", "scope", "changes", "counts", "applied"} {
		if fmt.Sprint(again[k]) != fmt.Sprint(first[k]) {
			t.Errorf("the retry's %s = %v, the first apply's %v", k, again[k], first[k])
		}
	}
}

// A replay needs no target: after the first apply's snapshot is retired, a retry under
// its key still answers the first apply (read back from history); the key with another
// scope is still refused, and an apply without it gets the snapshot's own error.
func TestRewindReplaysAfterItsTargetIsRetired(t *testing.T) {
	svc, req := rewoundNode(t)
	ctx := t.Context()
	req.RequestID = "rewind-1"
	first, err := svc.Attempts.Rewind(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Tools.SnapshotRetire(ctx, "a", workbench.SnapshotRetireInput{ID: "w", Name: ptr("s")}); err != nil {
		t.Fatal(err)
	}
	again, err := svc.Attempts.Rewind(ctx, req)
	replays(t, again, err, first)
	other := req
	other.Scope = workbench.RewindScope{Prefix: "input"}
	if _, err := svc.Attempts.Rewind(ctx, other); codeOf(err) != workbench.CodeInvalidArguments || detailsOf(err)["field"] != "idempotency_key" {
		t.Fatalf("the key with another scope = %v (%v), want InvalidArguments naming idempotency_key", err, detailsOf(err))
	}
	fresh := req
	fresh.RequestID = "rewind-2"
	if _, err := svc.Attempts.Rewind(ctx, fresh); codeOf(err) != workbench.CodeSnapshotExpired {
		t.Fatalf("another key after the target was retired = %v, want SnapshotExpired", err)
	}
}

// Bad requests are InvalidArguments naming the field; a token of another workbench, an
// edited token, a time before the history window are refused; a preview changes nothing.
func TestRewindRefusesBadRequests(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{})
	svc, ctx := n.Service, t.Context()
	write(t, svc, "outputs/r.txt", "r1\n")
	write(t, svc, "outputs/r.txt", "r2\n")
	if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w2", Path: "x", Body: strings.NewReader("x"), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	now := fmt.Sprintf("time:%d", nowMs(t, n))
	p, err := svc.Attempts.Rewind(ctx, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, now), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	tok := p["token"].(string)
	for _, tc := range []struct {
		name  string
		req   workbench.RewindRequest
		field string
	}{
		{"no target", workbench.RewindRequest{Agent: "a", Workbench: "w", DryRun: true}, "target"},
		{"paths and prefix", workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, now), DryRun: true,
			Scope: workbench.RewindScope{Prefix: "outputs", Paths: []string{"outputs/r.txt"}}}, "paths"},
		{"a manifest", workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, now), DryRun: true,
			Scope: workbench.RewindScope{Paths: []string{"metadata/run_manifest.json"}}}, "paths"},
		{"an apply without a token", workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, now)}, "token"},
		{"a token of another workbench", workbench.RewindRequest{Agent: "a", Workbench: "w2", Target: target(t, now), Token: tok}, "token"},
		{"an edited token", workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, now), Token: "x" + tok}, "token"},
		{"a time before the window", workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, "time:1"), DryRun: true}, "target"},
	} {
		_, err := svc.Attempts.Rewind(ctx, tc.req)
		if codeOf(err) != workbench.CodeInvalidArguments || detailsOf(err)["field"] != tc.field {
			t.Errorf("%s: %v, want InvalidArguments naming %s", tc.name, err, tc.field)
		}
	}
	for _, bad := range []string{"yesterday", "snapshot:", "commit:", "live", "generation:3"} {
		_, err := workbench.ParseRewindTarget("target", bad)
		if err == nil || err.Details["field"] != "target" || !strings.Contains(err.Message, "snapshot:<id or name>, commit:<commit_identity> or time:") ||
			strings.Contains(err.Message, "generation:<N>") {
			t.Errorf("target %q: %v, want rewind's own syntax named", bad, err)
		}
	}
}

// Another tenant's workbench answers a rewind exactly like a missing one.
func TestRewindOfAnotherTenantIsNotFound(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{})
	svc := n.Service
	write(t, svc, "outputs/r.txt", "r1\n")
	if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: ptr("s")}); err != nil {
		t.Fatal(err)
	}
	other := auth.WithPrincipal(t.Context(), auth.Principal{ID: "k", Agents: []string{"b"}, Scopes: auth.Scopes})
	for _, agent := range []string{"a", "nobody"} {
		_, err := svc.Attempts.Rewind(other, workbench.RewindRequest{Agent: agent, Workbench: "w", Target: target(t, "snapshot:s"), DryRun: true})
		if codeOf(err) != workbench.CodeNotFound {
			t.Fatalf("rewind in root %s by another tenant = %v, want NotFound", agent, err)
		}
	}
	_, hidden := svc.Attempts.Rewind(other, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, "snapshot:s"), DryRun: true})
	_, missing := svc.Attempts.Rewind(other, workbench.RewindRequest{Agent: "nobody", Workbench: "w", Target: target(t, "snapshot:s"), DryRun: true})
	if strings.ReplaceAll(hidden.Error(), `"a"`, `"nobody"`) != missing.Error() {
		t.Fatalf("hidden %q and missing %q answer differently", hidden, missing)
	}
}

func detailsOf(err error) map[string]any {
	var e *workbench.Error
	if asError(err, &e) {
		return e.Details
	}
	return nil
}

func asError(err error, e **workbench.Error) bool {
	we, ok := err.(*workbench.Error)
	*e = we
	return ok
}

// A preview whose scope takes a path to the target but leaves its clashing neighbour — a
// file where the target needs a directory, or the reverse — is refused naming both paths,
// with no token: the apply could never pass the change set's shape rule.
func TestRewindPreviewRefusesATreeShapeClash(t *testing.T) {
	for _, tc := range []struct {
		name         string
		then, now    string // the file at the snapshot, the file live
		scope        workbench.RewindScope
		code         string
		wantPaths    []string
		wantConflict string
	}{
		{"a file where the target needs a directory", "outputs/x/y", "outputs/x",
			workbench.RewindScope{Paths: []string{"outputs/x/y"}}, workbench.CodeNotDirectory, []string{"outputs/x", "outputs/x/y"}, "outputs/x"},
		// A prefix naming the file would take it too (RewindScope): one below it does not.
		{"the same below a prefix", "outputs/x/y/z", "outputs/x",
			workbench.RewindScope{Prefix: "outputs/x/y"}, workbench.CodeNotDirectory, []string{"outputs/x", "outputs/x/y/z"}, "outputs/x"},
		{"a directory where the target needs a file", "outputs/x", "outputs/x/y",
			workbench.RewindScope{Paths: []string{"outputs/x"}}, workbench.CodeAlreadyExists, []string{"outputs/x", "outputs/x/y"}, "outputs/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, ctx := workbenchtest.New(t, workbench.Config{}).Service, t.Context()
			write(t, svc, tc.then, "then\n")
			if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("s")}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Writes.Delete(ctx, "a", "w", tc.then, 0, ""); err != nil {
				t.Fatal(err)
			}
			write(t, svc, tc.now, "now\n")
			res, err := svc.Attempts.Rewind(ctx, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, "snapshot:s"), Scope: tc.scope, DryRun: true})
			d := detailsOf(err)
			if codeOf(err) != tc.code || fmt.Sprint(d["paths"]) != fmt.Sprint(tc.wantPaths) || d["conflicting_path"] != tc.wantConflict || res != nil {
				t.Fatalf("preview = %v, %v (details %v); want %s naming %v and no token", res, err, d, tc.code, tc.wantPaths)
			}
			// The whole workbench takes both paths: it previews and applies.
			rewind(t, ctx, svc, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, "snapshot:s")})
		})
	}
}

// A time target is a past instant: Unix milliseconds are digits only (0 is 1970, then
// beyond retention), a time after the node's now is refused naming target (rule
// in_future), and either form reads back in one form, RFC 3339 in UTC with milliseconds.
func TestRewindTimeTargets(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{})
	svc, ctx := n.Service, t.Context()
	write(t, svc, "outputs/r.txt", "r1\n")
	at := nowMs(t, n)
	for _, bad := range []string{"time:+123", "time:-5", "time: 5", "time:", "time:99999999999999999999", "time:12ab"} {
		if _, err := workbench.ParseRewindTarget("target", bad); err == nil || err.Details["field"] != "target" {
			t.Errorf("%s parsed: %v", bad, err)
		}
	}
	for _, tc := range []struct{ target, rule string }{
		{"time:0", "beyond_retention"},
		{"time:9999-12-31T23:59:59Z", "in_future"},
		{"time:9223372036854775807", "in_future"},
		{fmt.Sprintf("time:%d", time.Now().Add(time.Hour).UnixMilli()), "in_future"},
	} {
		_, err := svc.Attempts.Rewind(ctx, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, tc.target), DryRun: true})
		if d := detailsOf(err); codeOf(err) != workbench.CodeInvalidArguments || d["field"] != "target" || d["rule"] != tc.rule {
			t.Errorf("%s: %v (details %v), want InvalidArguments naming target, rule %s", tc.target, err, d, tc.rule)
		}
	}
	want := "time:" + time.UnixMilli(at).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	for _, given := range []string{fmt.Sprintf("time:%d", at), "time:" + time.UnixMilli(at).In(time.FixedZone("x", 5*3600)).Format(time.RFC3339Nano)} {
		p, err := svc.Attempts.Rewind(ctx, workbench.RewindRequest{Agent: "a", Workbench: "w", Target: target(t, given), DryRun: true})
		if err != nil || p["target"] != want {
			t.Errorf("%s reads back as %v (%v), want %s", given, p["target"], err, want)
		}
	}
}
