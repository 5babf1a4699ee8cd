package diff

import (
	"bytes"
	"fmt"
	"testing"
)

// tenMiB returns a text body of about 10 MiB (numbered lines) and a copy with every
// 1000th line changed.
func tenMiB() (old, new []byte) {
	var a, b bytes.Buffer
	for i := 0; a.Len() < 10<<20; i++ {
		line := fmt.Sprintf("line %07d of a ten-mebibyte text body, padded to look like code;\n", i)
		a.WriteString(line)
		if i%1000 == 500 {
			b.WriteString("CHANGED " + line)
		} else {
			b.WriteString(line)
		}
	}
	return a.Bytes(), b.Bytes()
}

// BenchmarkText10MiB diffs two 10 MiB bodies with scattered edits (go test -bench Text10MiB
// -benchmem ./workbench/diff).
func BenchmarkText10MiB(b *testing.B) {
	old, new := tenMiB()
	b.SetBytes(int64(len(old) + len(new)))
	b.ResetTimer()
	for b.Loop() {
		r, err := Text(old, new, DefaultOptions())
		if err != nil || !r.Text || r.HunkCount == 0 {
			b.Fatalf("r=%+v err=%v", r, err)
		}
	}
}

// BenchmarkText10MiBRewritten diffs a 10 MiB body against an unrelated one of the same
// size: the worst case, where the line search runs to its deadline.
func BenchmarkText10MiBRewritten(b *testing.B) {
	old, _ := tenMiB()
	new := bytes.ReplaceAll(old, []byte("line"), []byte("LINE"))
	b.SetBytes(int64(len(old) + len(new)))
	b.ResetTimer()
	for b.Loop() {
		r, err := Text(old, new, DefaultOptions())
		if err != nil || !r.Text {
			b.Fatalf("r=%+v err=%v", r, err)
		}
	}
}
