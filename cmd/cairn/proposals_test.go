package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProposeListAndDecideThroughTheCLI(t *testing.T) {
	_, srv := testNode(t)
	run := func(args ...string) string {
		t.Helper()
		return cli(t, append(args, "--agent", "a", "--server", srv.URL)...)
	}
	body := filepath.Join(t.TempDir(), "plan.md")
	if err := os.WriteFile(body, []byte("plan v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("put", "--workbench", "w", "outputs/plan.md", body)
	var p struct {
		ID   string `json:"proposal_id"`
		Base uint64 `json:"base_generation"`
	}
	out := run("propose", "w", "outputs/plan.md", "--old", "v1", "--new", "v2", "--reason", "bump", "--request-id", "r1", "--json")
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.ID == "" || p.Base == 0 {
		t.Fatalf("propose --json: %q (%v)", out, err)
	}
	if again := run("propose", "w", "outputs/plan.md", "--old", "v1", "--new", "v2", "--reason", "bump", "--request-id", "r1"); !strings.HasPrefix(again, "already proposed "+p.ID) {
		t.Fatalf("retry: %q", again)
	}
	if list := run("proposals", "w", "--state", "pending"); !strings.Contains(list, p.ID+"  pending  outputs/plan.md") {
		t.Fatalf("proposals:\n%s", list)
	}
	if got := run("proposals", "w", "--id", p.ID, "--body"); !strings.Contains(got, `"text":"plan v2\n"`) {
		t.Fatalf("proposal body: %s", got)
	}
	if out := run("decide", "w", p.ID, "accept", "--submission-id", "s1"); !strings.HasPrefix(out, "accepted "+p.ID+": outputs/plan.md at generation ") {
		t.Fatalf("decide: %q", out)
	}
	if got := run("cat", "--workbench", "w", "outputs/plan.md"); got != "plan v2\n" {
		t.Fatalf("after accept: %q", got)
	}
	// A proposal at the old base is stale: accept is refused with the head, reject works.
	out = run("propose", "w", "outputs/plan.md", "--text", "other\n", "--base", "1", "--request-id", "r2", "--evidence", "file:outputs/plan.md@"+jsonNumber(t, run("stat", "--workbench", "w", "outputs/plan.md", "--json"), "generation"))
	id2 := strings.TrimSuffix(strings.Fields(out)[1], ":") // "proposed ID: ..."
	_, _, err := execCairn(t, "decide", "w", id2, "accept", "--agent", "a", "--server", srv.URL)
	if code, _ := describeError(err); code != "Conflict" {
		t.Fatalf("stale accept: %v", err)
	}
	if out := run("decide", "w", id2, "reject", "--reason", "stale"); !strings.HasPrefix(out, "rejected "+id2) {
		t.Fatalf("reject: %q", out)
	}
	if js := run("proposals", "w", "--judgments"); strings.Count(js, `"disposition"`) != 2 {
		t.Fatalf("judgments:\n%s", js)
	}
	// --json prints each page's result object: the proposals (or the judgments) it holds,
	// not a line per item (which printed blank lines: each item's Raw is empty).
	for _, c := range []struct {
		flags       []string
		key, marker string
	}{{nil, "proposals", `"request_id"`}, {[]string{"--judgments"}, "judgments", `"disposition"`}} {
		var page map[string]json.RawMessage
		out := run(append([]string{"proposals", "w", "--json"}, c.flags...)...)
		if err := json.Unmarshal([]byte(out), &page); err != nil || strings.Count(string(page[c.key]), c.marker) != 2 {
			t.Fatalf("proposals %v --json: %q (%v), want one page holding both %s", c.flags, out, err, c.key)
		}
	}
	if _, _, err := execCairn(t, "propose", "w", "outputs/plan.md", "--agent", "a", "--server", srv.URL); err == nil {
		t.Fatal("propose without a body ran")
	}
}

func jsonNumber(t *testing.T, out, key string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	for _, v := range []any{raw[key], raw["card"]} {
		if n, ok := v.(json.Number); ok {
			return n.String()
		}
		if c, ok := v.(map[string]any); ok {
			if n, ok := c[key].(json.Number); ok {
				return n.String()
			}
		}
	}
	t.Fatalf("no %s in %s", key, out)
	return ""
}
