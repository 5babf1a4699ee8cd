package workbench_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestListEntriesHaveTheirFields pins workbench_list's entries, member by member, for a
// file and a directory, listed from a section and from the workbench top (where a
// section is itself an entry): List builds them directly, with the presentation prefix
// made once per page.
func TestListEntriesHaveTheirFields(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	put(t, svc, "w", "outputs", "d/x.txt", "hello", false)
	put(t, svc, "w", "outputs", "top.md", "hi", false)
	l := must(t)(svc.Tools.List(context.Background(), "a", workbench.ListInput{ID: "w", Section: ptr("outputs")}))
	entries := l["entries"].([]map[string]any)
	if len(entries) != 2 {
		t.Fatalf("entries: %v", entries)
	}
	gen := entries[1]["generation"]
	want := []map[string]any{
		{"name": "d", "kind": "directory", "size_bytes": int64(5), "section": "outputs", "relative_path": "d",
			"path": "/agents/a/wb/w/outputs/d", "entry_count": int64(1)},
		{"name": "top.md", "kind": "file", "size_bytes": int64(2), "section": "outputs", "relative_path": "top.md",
			"path": "/agents/a/wb/w/outputs/top.md", "entry_count": nil, "generation": gen},
	}
	if _, ok := gen.(uint64); !ok || !reflect.DeepEqual(entries, want) {
		t.Fatalf("entries\n%#v\nwant\n%#v", entries, want)
	}
	top := must(t)(svc.Tools.List(context.Background(), "a", workbench.ListInput{ID: "w"}))
	for _, e := range top["entries"].([]map[string]any) {
		if e["name"] != "outputs" {
			continue
		}
		want := map[string]any{"name": "outputs", "kind": "directory", "size_bytes": int64(7), "section": "outputs",
			"relative_path": "", "path": "/agents/a/wb/w/outputs", "entry_count": int64(2)}
		if !reflect.DeepEqual(e, want) {
			t.Fatalf("the section's entry\n%#v\nwant\n%#v", e, want)
		}
		return
	}
	t.Fatalf("no entry for the section outputs: %v", top["entries"])
}
