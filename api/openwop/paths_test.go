package openwop

import (
	"net/url"
	"strings"
	"testing"
)

func TestDecodePath(t *testing.T) {
	tests := []struct {
		name, escaped, want string
		ok                  bool
	}{
		{"a plain name", "CRUD.md", "CRUD.md", true},
		{"an encoded slash", "behavior%2FCRUD.md", "behavior/CRUD.md", true},
		{"a raw slash is the same file", "behavior/CRUD.md", "behavior/CRUD.md", true},
		{"decoded once only", "a%252Fb", "", false}, // "a%2Fb": % fails the pattern
		{"a dot-dot segment", "a/../b", "", false},
		{"an encoded dot-dot segment", "a%2F..%2Fb", "", false},
		{"a leading dot-dot", "..%2Fb", "", false},
		{"a dot segment", "a/./b", "", false},
		{"an empty segment", "a//b", "", false},
		{"a trailing slash", "a/", "", false},
		{"a leading slash", "%2Fa", "", false},
		{"a leading dot", ".hidden", "", false},
		{"dots inside a name are fine", "a..b/c.d", "a..b/c.d", true},
		{"a space", "a%20b", "", false},
		{"bad percent-encoding", "a%zz", "", false},
		{"256 characters", strings.Repeat("a", 256), strings.Repeat("a", 256), true},
		{"257 characters", strings.Repeat("a", 257), "", false},
		{"non-ASCII", "caf%C3%A9", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodePath(tt.escaped)
			if tt.ok != (err == nil) || got != tt.want {
				t.Fatalf("DecodePath(%q) = %q, %v; want %q, ok %v", tt.escaped, got, err, tt.want, tt.ok)
			}
			if err != nil && (err.Status != 400 || err.Code != CodeValidation) {
				t.Fatalf("error %+v, want 400 validation_error", err)
			}
		})
	}
}

// FuzzDecodePath: whatever arrives, an accepted path matches the published pattern, has
// no empty, "." or ".." segment, and is what the escaped form decodes to once; the fully
// escaped form of an accepted path (encodeURIComponent's) names the same path.
func FuzzDecodePath(f *testing.F) {
	for _, s := range []string{"a", "behavior%2FCRUD.md", "a/../b", "a%2F..%2Fb", "%", "a//b", "A.b_c-d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, escaped string) {
		p, err := DecodePath(escaped)
		if err != nil {
			return
		}
		if !pathPattern.MatchString(p) {
			t.Fatalf("%q decoded to %q, which fails the pattern", escaped, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("%q decoded to %q with segment %q", escaped, p, seg)
			}
		}
		if once, _ := url.PathUnescape(escaped); once != p {
			t.Fatalf("%q decoded to %q, not its single unescape %q", escaped, p, once)
		}
		if again, err := DecodePath(url.PathEscape(p)); err != nil || again != p {
			t.Fatalf("the escaped form of %q decodes to %q, %v", p, again, err)
		}
		if again, err := DecodePath(url.QueryEscape(p)); err != nil || again != p {
			t.Fatalf("the component-escaped form of %q decodes to %q, %v", p, again, err)
		}
	})
}
