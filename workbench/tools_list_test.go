package workbench_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestListEntriesHaveTheirFields pins workbench_list's entries, written as JSON (what
// the MCP surface sends), for a file and a directory, listed from a section and from the
// workbench top (where a section is itself an entry, its relative path empty): the
// members and values each entry had as a map.
func TestListEntriesHaveTheirFields(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	put(t, svc, "w", "outputs", "d/x.txt", "hello", false)
	gen := put(t, svc, "w", "outputs", "top.md", "hi", false)["generation"]
	encoded := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	l := must(t)(svc.Tools.List(context.Background(), "a", workbench.ListInput{ID: "w", Section: ptr("outputs")}))
	want := encoded([]map[string]any{
		{"name": "d", "kind": "directory", "size_bytes": 5, "section": "outputs", "relative_path": "d",
			"path": "/agents/a/wb/w/outputs/d", "entry_count": 1},
		{"name": "top.md", "kind": "file", "size_bytes": 2, "section": "outputs", "relative_path": "top.md",
			"path": "/agents/a/wb/w/outputs/top.md", "entry_count": nil, "generation": gen},
	})
	if got := encoded(l["entries"]); got != want {
		t.Fatalf("entries\n%s\nwant\n%s", got, want)
	}
	top := must(t)(svc.Tools.List(context.Background(), "a", workbench.ListInput{ID: "w"}))
	want = encoded(map[string]any{"name": "outputs", "kind": "directory", "size_bytes": 7, "section": "outputs",
		"relative_path": "", "path": "/agents/a/wb/w/outputs", "entry_count": 2})
	for _, e := range top["entries"].([]workbench.ListedEntry) {
		if e.Name == "outputs" {
			if got := encoded(e); got != want {
				t.Fatalf("the section's entry\n%s\nwant\n%s", got, want)
			}
			return
		}
	}
	t.Fatalf("no entry for the section outputs: %v", top["entries"])
}
