package workbench_test

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/cairnstore/cairn/workbench"
)

// jcsVectors runs the RFC 8785 vectors of testdata/jcs (README.md there says where they
// come from): every input canonicalizes to exactly its output, is JCS-equal to it, and
// every Appendix B number serializes as the RFC says.
func jcsVectors(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "jcs", "input", "*.json"))
	if err != nil || len(inputs) < 10 {
		t.Fatalf("vectors: %v (%d files)", err, len(inputs))
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "jcs", "output", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := workbench.CanonicalJSON(src)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("canonical form %q (%v), want %q", got, err, want)
			}
			if eq, isJSON := workbench.JCSEqual(src, want); !eq || !isJSON {
				t.Fatalf("input and its canonical form are not JCS-equal (json %v)", isJSON)
			}
		})
	}
	f, err := os.Open(filepath.Join("testdata", "jcs", "numbers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		hexBits, want, _ := strings.Cut(line, ",")
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got, err := jcs.NumberToJSON(math.Float64frombits(bits))
		if want == "error" {
			if err == nil {
				t.Errorf("%s: serialized as %q, want an error", hexBits, got)
			}
		} else if err != nil || got != want {
			t.Errorf("%s: got %q (%v), want %q", hexBits, got, err, want)
		}
		n++
	}
	if n != 26 {
		t.Fatalf("%d number vectors, want the 26 of Appendix B", n)
	}
}

func TestJCSEqualityIsAboutValuesNotBytes(t *testing.T) {
	for _, tc := range []struct {
		a, b          string
		equal, isJSON bool
	}{
		{`{"b":1,"a":[1,2]}`, `{"a":[1,2],"b":1}`, true, true},
		{`{"a":1.0}`, `{"a":1}`, true, true},
		{`{"a":"\u00e9"}`, `{"a":"é"}`, true, true},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false, true},
		{`{"a":1}`, `{"a":2}`, false, true},
		{`{"a":1,"a":2}`, `{"a":2}`, false, false},
		{`not json`, `{}`, false, false},
	} {
		if eq, isJSON := workbench.JCSEqual([]byte(tc.a), []byte(tc.b)); eq != tc.equal || isJSON != tc.isJSON {
			t.Errorf("JCSEqual(%s, %s) = %v, %v; want %v, %v", tc.a, tc.b, eq, isJSON, tc.equal, tc.isJSON)
		}
	}
}
