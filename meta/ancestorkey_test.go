package meta

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The key of every ancestor directory of a path, taken as a prefix of the path's key, is
// the key pathKey makes for that directory.
func TestAncestorKeyIsTheDirectorysKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.StringMatching(`[a-z0-9.\-]{1,4}`), 1, 6).Draw(t, "parts")
		path := strings.Join(parts, "/")
		inc := rapid.Uint64().Draw(t, "inc")
		key := pathKey(inc, path)
		for d := parentDir(path); ; d = parentDir(d) {
			if got, want := ancestorKey(key, d), pathKey(inc, d); got != want {
				t.Fatalf("ancestorKey(pathKey(%d, %q), %q) = %q, want %q", inc, path, d, got, want)
			}
			if d == "" {
				return
			}
		}
	})
}
