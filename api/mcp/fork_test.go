package mcp

import (
	"strings"
	"testing"
)

// TestCairnForkMergeRewind: an agent session over MCP forks a workbench, writes on the
// fork, previews and applies the merge (a retry under the same request_id answers the
// first), reads the merged file back byte for byte, rewinds the parent to before the
// merge, and discards the fork; bad input names the field.
func TestCairnForkMergeRewind(t *testing.T) {
	svc := newService(t, 0)
	ts := newHTTPServer(t, svc)
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp/cairn")

	ok(t, cs, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "r.txt", "text": "one\n"})
	ok(t, cs, "workbench_snapshot", map[string]any{"id": "w", "name": "before"})
	f := ok(t, cs, "cairn_fork", map[string]any{"id": "w", "fork": "try1"})
	if f.str("parent_id") != "w" || f["pinned_snapshot_id"] == nil {
		t.Fatalf("fork: %v", f)
	}
	keyed := map[string]any{"id": "w", "fork": "try2", "request_id": "f-1"}
	k1, k2 := ok(t, cs, "cairn_fork", keyed), ok(t, cs, "cairn_fork", keyed)
	if k1["replayed"] != false || k2["replayed"] != true || k2["pinned_snapshot_id"] != k1["pinned_snapshot_id"] {
		t.Fatalf("fork %v, retried under its request_id %v", k1, k2)
	}
	invalid(t, cs, "cairn_fork", map[string]any{"id": "w", "fork": "try3", "request_id": "f-1"}, "request_id")
	ok(t, cs, "cairn_discard", map[string]any{"id": "try2"})
	ok(t, cs, "workbench_put_file", map[string]any{"id": "try1", "section": "outputs", "path": "r.txt", "text": "two\n", "replace": true})
	p := ok(t, cs, "cairn_merge", map[string]any{"id": "try1", "dry_run": true})
	if ch := p.list(t, "changes"); len(ch) != 1 || ch[0].str("path") != "outputs/r.txt" || p.str("token") == "" {
		t.Fatalf("merge preview: %v", p)
	}
	apply := map[string]any{"id": "try1", "token": p.str("token"), "request_id": "m-1"}
	first := ok(t, cs, "cairn_merge", apply)
	again := ok(t, cs, "cairn_merge", apply)
	if first["applied"] != true || again["replayed"] != true || again["generation"] != first["generation"] {
		t.Fatalf("apply %v, retry %v", first, again)
	}
	read := func(want string) {
		t.Helper()
		r := ok(t, cs, "workbench_read", map[string]any{"id": "w", "section": "outputs", "path": "r.txt"})
		if items := r.list(t, "items"); len(items) != 1 || items[0].str("value") != want {
			t.Fatalf("outputs/r.txt = %v, want %q", r, want)
		}
	}
	read("two")
	rw := ok(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:before", "dry_run": true})
	ok(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:before", "token": rw.str("token")})
	read("one")
	d := ok(t, cs, "cairn_discard", map[string]any{"id": "try1", "request_id": "d-1"})
	if d["deleted"] != true || d["retired_snapshot_id"] == nil || d["replayed"] != false {
		t.Fatalf("discard: %v", d)
	}
	if again := ok(t, cs, "cairn_discard", map[string]any{"id": "try1", "request_id": "d-1"}); again["replayed"] != true || again["deleted"] != true {
		t.Fatalf("discard retried under its request_id: %v", again)
	}
	invalid(t, cs, "cairn_fork", map[string]any{"id": "w", "fork": "w"}, "fork")
	// A point a fork does not take is refused naming the points it does take, not a
	// generation (which a diff takes).
	for _, at := range []string{"generation:2", "time:0", "yesterday"} {
		r := invalid(t, cs, "cairn_fork", map[string]any{"id": "w", "fork": "g", "at": at}, "at")
		if msg, _ := r["message"].(string); strings.Contains(msg, "generation:<N>") || !strings.Contains(msg, "snapshot:<id or name>") {
			t.Errorf("fork at %q: message %q", at, msg)
		}
	}
	invalid(t, cs, "cairn_merge", map[string]any{"id": "w", "dry_run": true}, "fork")
}

// TestAReusedRequestIDNamesTheArgument (found by a black-box test): a request_id used
// before for another request is refused with InvalidArguments naming request_id, the
// argument of every MCP tool that takes one (cairn_fork, cairn_merge, cairn_rewind,
// cairn_discard), not the idempotency_key REST's Idempotency-Key is named by.
func TestAReusedRequestIDNamesTheArgument(t *testing.T) {
	svc := newService(t, 0)
	ts := newHTTPServer(t, svc)
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp/cairn")
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "r.txt", "text": "one\n"})
	ok(t, cs, "workbench_snapshot", args{"id": "w", "name": "before"})
	ok(t, cs, "cairn_fork", args{"id": "w", "fork": "f1", "request_id": "used"})
	ok(t, cs, "cairn_fork", args{"id": "w", "fork": "f2"})
	ok(t, cs, "workbench_put_file", args{"id": "f1", "section": "outputs", "path": "r.txt", "text": "two\n", "replace": true})
	merge := ok(t, cs, "cairn_merge", args{"id": "f1", "dry_run": true})
	rewind := ok(t, cs, "cairn_rewind", args{"id": "w", "target": "snapshot:before", "dry_run": true})
	for _, c := range []struct {
		tool string
		args args
	}{
		{"cairn_fork", args{"id": "w", "fork": "f3", "request_id": "used"}},
		{"cairn_merge", args{"id": "f1", "token": merge.str("token"), "request_id": "used"}},
		{"cairn_rewind", args{"id": "w", "target": "snapshot:before", "token": rewind.str("token"), "request_id": "used"}},
		{"cairn_discard", args{"id": "f2", "request_id": "used"}},
	} {
		e := invalid(t, cs, c.tool, c.args, "request_id")
		if msg := e.str("message"); msg != "request_id: was already used for a different request" {
			t.Errorf("%s: message %q", c.tool, msg)
		}
	}
	// Nothing was done under the reused id: the fork f2 and the merge are still to do.
	ok(t, cs, "cairn_merge", args{"id": "f1", "token": merge.str("token"), "request_id": "merge-1"})
	ok(t, cs, "cairn_discard", args{"id": "f2", "request_id": "discard-1"})
}
