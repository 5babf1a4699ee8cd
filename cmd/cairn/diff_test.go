package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

func TestDiffCommand(t *testing.T) {
	n, srv := testNode(t)
	write := func(path, body string) {
		t.Helper()
		if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: strings.NewReader(body), CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	snapName := "s1"
	write("outputs/r.txt", "a\nb\nc")
	write("outputs/blob.bin", "\x00\x01")
	write("input/gone", "x")
	if _, err := n.Service.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: &snapName}); err != nil {
		t.Fatal(err)
	}
	write("outputs/r.txt", "a\nB\nc")
	write("outputs/blob.bin", "\x00\x02")
	write("input/new", "y")
	if _, err := n.Service.Writes.Delete(t.Context(), "a", "w", "input/gone", 0, ""); err != nil {
		t.Fatal(err)
	}
	runCases(t, srv.URL, []cliCase{
		{"a file diff prints the unified text", []string{"diff", "w", "outputs/r.txt", "--from", "snapshot:s1", "--context", "0", "--agent", "a"}, "",
			`^--- outputs/r.txt@snapshot:s1\n\+\+\+ outputs/r.txt@live\n@@ -2 \+2 @@\n-b\n\+B\n$`, ""},
		{"a missing final newline is marked", []string{"diff", "w", "outputs/r.txt", "--from", "snapshot:s1", "--agent", "a"}, "",
			`(?s) c\n\\ No newline at end of file\n$`, ""},
		{"binary bodies print sizes and digests", []string{"diff", "w", "outputs/blob.bin", "--from", "snapshot:s1", "--agent", "a"}, "",
			`^no text diff \(binary\): bodies differ: 2 bytes sha256:[0-9a-f]{64} -> 2 bytes sha256:[0-9a-f]{64}\n$`, ""},
		{"a state diff lists every change", []string{"diff", "w", "--from", "snapshot:s1", "--agent", "a"}, "",
			`^D input/gone\nA input/new\nM outputs/blob.bin\nM outputs/r.txt\n$`, ""},
		{"--json prints the result object", []string{"diff", "w", "--from", "snapshot:s1", "--agent", "a", "--json"}, "",
			`^\{"status":"success".*"kind":"tree"`, ""},
		{"--from is required", []string{"diff", "w", "--agent", "a"}, "", "", "InvalidArguments"},
		{"a bad side is the server's InvalidArguments", []string{"diff", "w", "outputs/r.txt", "--from", "yesterday", "--agent", "a"}, "", "", "InvalidArguments"},
	})
}
