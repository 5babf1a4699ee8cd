package meta

import (
	"fmt"
	"testing"
)

func BenchmarkApplyPutInline(b *testing.B) {
	f := New(Options{})
	data, _ := EncodeCommand(Header{TimeMs: 1}, Put{Agent: "a", Workspace: "w", Path: "input/f", CreateWorkspace: true,
		Size: 1024, Segments: []Segment{{Size: 1024, Inline: make([]byte, 1024)}}})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if r := f.Apply(uint64(i+1), data); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkViewFileLookup(b *testing.B) {
	f := New(Options{})
	const n = 100_000
	for i := 0; i < n; i++ {
		f.ApplyBody(uint64(i+1), Header{TimeMs: 1}, Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("input/d%d/f%d", i%100, i), CreateWorkspace: true})
	}
	v := f.View()
	ws, _ := v.Workspace("a", "w")
	paths := make([]string, 1024)
	for i := range paths {
		paths[i] = fmt.Sprintf("input/d%d/f%d", (i*7919)%n%100, (i*7919)%n)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := v.File(ws, paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPathKey(b *testing.B) {
	for b.Loop() {
		_ = pathKey(42, "input/some/deeper/path/file.txt")
	}
}

func BenchmarkValidatePath(b *testing.B) {
	for b.Loop() {
		_ = ValidatePath("path", "input/some/deeper/path/file.txt")
	}
}
