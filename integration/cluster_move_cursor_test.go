package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/integration/framework"
)

// TestCursorsAndForksFromBeforeARootMoveGoOn: three nodes, two shards. A root's workbench
// answers the first page of a live listing, of a listing at a snapshot and of a file's
// history, and is forked twice (live, and at a commit), each fork writing a file;
// `cairn admin root move` then moves the root to the other shard (which renumbers its
// workbench incarnations, and changes nothing else of it); each cursor, followed through
// another node, answers the next page, and each fork merges back into its parent, as they
// would have without the move. A merge preview's token from before the move is refused
// with the reason (the root moved), and a preview again applies.
func TestCursorsAndForksFromBeforeARootMoveGoOn(t *testing.T) {
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 2})
	const root = "curmove"
	wb := func(node int) string { return pc.Nodes[node].URL + "/v1/agents/" + root + "/workbenches/w" }
	put := func(path, body string) {
		t.Helper()
		if code, b := clusterDo(http.MethodPut, wb(0)+"/files/"+path, []byte(body), time.Minute); code/100 != 2 {
			t.Fatalf("put %s: %d %s", path, code, b)
		}
	}
	// Two other roots with one and three workbenches, made first: whichever shards they
	// land on, the two shards then hold different numbers of workbenches, so the move
	// gives the root's workbench another incarnation number than it had.
	for i, n := range []int{1, 3} {
		for w := range n {
			u := fmt.Sprintf("%s/v1/agents/pad%d/workbenches/w%d", pc.Nodes[0].URL, i, w)
			if code, b := clusterDo(http.MethodPut, u, nil, time.Minute); code/100 != 2 {
				t.Fatalf("create %s: %d %s", u, code, b)
			}
		}
	}
	for v := 1; v <= 3; v++ {
		put("input/a.txt", fmt.Sprintf("a version %d", v))
	}
	put("input/b.txt", "b")
	put("input/c.txt", "c")
	if code, b := postJSON(t, wb(0)+"/snapshots", `{"name":"s"}`, time.Minute); code != http.StatusCreated {
		t.Fatalf("snapshot: %d %v", code, b)
	}
	ctx := t.Context()
	cli := client.New(pc.Nodes[0].URL, nil)
	commit, err := cli.Commit(ctx, root, "w", client.CommitRequest{Manifest: []byte(`{"run":"r1"}`),
		ContentDigestURI: "sha256:" + strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	forks := map[string]string{"live": "live", "at-commit": "commit:" + commit.CommitIdentity}
	for fork, at := range forks {
		if _, err := cli.Fork(ctx, root, "w", client.ForkRequest{Fork: fork, At: at, IdempotencyKey: "fork-" + fork}); err != nil {
			t.Fatalf("fork %s at %s: %v", fork, at, err)
		}
		if code, b := clusterDo(http.MethodPut, pc.Nodes[0].URL+"/v1/agents/"+root+"/workbenches/"+fork+"/files/output/"+fork+".txt",
			[]byte("from "+fork), time.Minute); code/100 != 2 {
			t.Fatalf("put in fork %s: %d %s", fork, code, b)
		}
	}
	early, err := cli.Merge(ctx, root, "live", client.MergeRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	first := func(what, u string) string {
		t.Helper()
		code, m := getJSON(t, u)
		c, _ := m["next_cursor"].(string)
		if code != http.StatusOK || c == "" {
			t.Fatalf("%s, first page: %d %v", what, code, m)
		}
		return c
	}
	pages := []struct{ what, u, key, want string }{
		{"live listing", wb(0) + "/list?path=input&limit=1", "entries", `"name":"b.txt"`},
		{"listing at the snapshot", wb(1) + "/list?path=input&limit=1&at_snapshot=s", "entries", `"name":"b.txt"`},
		{"history", wb(2) + "/history?path=input/a.txt&limit=1", "versions", `"ordinal":2`},
	}
	cursors := make([]string, len(pages))
	for i, p := range pages {
		cursors[i] = first(p.what, p.u)
	}
	r := runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", root, "--to", "1", "--admin-server", pc.Nodes[1].AdminURL)
	if r.code != 0 && strings.Contains(r.stderr, "on shard 1 already") {
		r = runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", root, "--to", "0", "--admin-server", pc.Nodes[1].AdminURL)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "step 8 of 8: done") {
		t.Fatalf("admin root move:\n%s", r)
	}

	for i, p := range pages {
		u := strings.Replace(p.u, pc.Nodes[i].URL, pc.Nodes[(i+1)%3].URL, 1) + "&cursor=" + url.QueryEscape(cursors[i])
		code, b := clusterDo(http.MethodGet, u, nil, 30*time.Second)
		if code != http.StatusOK || !strings.Contains(string(b), p.want) {
			t.Fatalf("%s, the page after the move: %d %s, want %s in %s", p.what, code, b, p.want, p.key)
		}
	}
	after := client.New(pc.Nodes[2].URL, nil)
	// A preview's token from before the move asks for a preview again, saying why.
	if _, err := after.Merge(ctx, root, "live", client.MergeRequest{Token: early.Token}); err == nil ||
		!strings.Contains(err.Error(), "moved with its root to another shard since the preview; preview again") {
		t.Fatalf("a merge with a token from before the move: %v, want a refusal saying the root moved", err)
	}
	for fork := range forks {
		preview, err := after.Merge(ctx, root, fork, client.MergeRequest{DryRun: true})
		if err != nil || len(preview.Changes) != 1 || len(preview.Conflicts) != 0 {
			t.Fatalf("merge preview of fork %s after the move: %+v %v, want its one change", fork, preview, err)
		}
		if _, err := after.Merge(ctx, root, fork, client.MergeRequest{Token: preview.Token, IdempotencyKey: "merge-" + fork}); err != nil {
			t.Fatalf("merge of fork %s after the move: %v", fork, err)
		}
		if code, b := clusterDo(http.MethodGet, wb(2)+"/files/output/"+fork+".txt", nil, 30*time.Second); code != http.StatusOK || string(b) != "from "+fork {
			t.Fatalf("the parent's output/%s.txt after the merge: %d %s", fork, code, b)
		}
	}
}
