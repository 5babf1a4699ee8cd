package diff

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func mustText(t testing.TB, old, new string, o Options) *Result {
	t.Helper()
	r, err := Text([]byte(old), []byte(new), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTextGolden pins the unified output of the edits the issue names.
func TestTextGolden(t *testing.T) {
	ctx1 := DefaultOptions()
	ctx1.Context = 1
	tests := []struct {
		name     string
		old, new string
		opts     Options
		want     string
	}{
		{"a one-line edit shows three lines of context each side", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"an insertion at the top starts at line 1", "b\nc\n", "a\nb\nc\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,3 @@\n+a\n b\n c\n"},
		{"an insertion at the end", "a\nb\n", "a\nb\nc\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"},
		{"a file from nothing counts its old side from 0", "", "a\nb\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"a file to nothing", "a\n", "", DefaultOptions(),
			"--- a\n+++ b\n@@ -1 +0,0 @@\n-a\n"},
		{"two far edits are two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "x\n2\n3\n4\n5\n6\n7\n8\ny\n", ctx1,
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-1\n+x\n 2\n@@ -8,2 +8,2 @@\n 8\n-9\n+y\n"},
		{"two near edits share a hunk", "1\n2\n3\n4\n", "x\n2\n3\ny\n", ctx1,
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n-4\n+y\n"},
		{"CRLF line ends show as \\r", "a\r\nb\r\n", "a\r\nB\r\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\\r\n-b\\r\n+B\\r\n"},
		{"a change of line ends only is visible", "a\r\nb\n", "a\nb\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-a\\r\n+a\n b\n"},
		{"a missing trailing newline is marked", "a\nb", "a\nc", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"adding the trailing newline", "a\nb", "a\nb\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"unchanged last line without newline as context", "a\nb", "A\nb", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n"},
		{"invalid UTF-8 bytes are escaped and backslashes doubled", "caf\xe9 \\o/\nok\n", "caf\xc3\xa9 \\o/\nok\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-caf\\xe9 \\\\o/\n+café \\o/\n ok\n"},
		{"control and bidi characters are escaped", "x\n", "x\x1b[31m\n\u202eevil\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1 +1,2 @@\n-x\n+x\\x1b[31m\n+\\u{202e}evil\n"},
		{"tabs stay literal", "\ta\n", "\tb\n", DefaultOptions(),
			"--- a\n+++ b\n@@ -1 +1 @@\n-\ta\n+\tb\n"},
		{"labels name the sides", "a\n", "b\n", Options{Context: 3, MaxBytes: DefaultMaxBytes, MaxHunks: 10, MaxInputBytes: 1 << 20,
			MaxLines: 100, Timeout: DefaultTimeout, OldLabel: "x.txt@generation:4", NewLabel: "x.txt@live"},
			"--- x.txt@generation:4\n+++ x.txt@live\n@@ -1 +1 @@\n-a\n+b\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustText(t, tc.old, tc.new, tc.opts)
			if !r.Text || r.Truncated || r.Identical {
				t.Fatalf("text=%v truncated=%v identical=%v, want a whole text diff", r.Text, r.Truncated, r.Identical)
			}
			if r.Unified != tc.want {
				t.Fatalf("unified diff:\n%s\nwant:\n%s", r.Unified, tc.want)
			}
			if got := apply(t, tc.old, r); got != tc.new {
				t.Fatalf("applying the hunks gives %q, want %q", got, tc.new)
			}
		})
	}
}

func TestTextSummaries(t *testing.T) {
	small := DefaultOptions()
	small.MaxInputBytes = 8
	few := DefaultOptions()
	few.MaxLines = 3
	tests := []struct {
		name       string
		old, new   string
		opts       Options
		reason     string
		identical  bool
		wantTextOK bool
	}{
		{"a NUL byte makes a body binary", "a\n", "a\x00b\n", DefaultOptions(), ReasonBinary, false, false},
		{"mostly invalid UTF-8 is binary", "a\n", "\xff\xfe\xfd\xfc\n", DefaultOptions(), ReasonBinary, false, false},
		{"identical binaries are identical", "\x00\x01", "\x00\x01", DefaultOptions(), ReasonBinary, true, false},
		{"a side over the input bound", "a\n", "0123456789\n", small, ReasonTooLarge, false, false},
		{"a changed region over the line bound", "a\nb\n", "c\nd\n", few, ReasonTooManyLines, false, false},
		{"identical text has no hunks", "a\n", "a\n", DefaultOptions(), "", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustText(t, tc.old, tc.new, tc.opts)
			if r.Reason != tc.reason || r.Identical != tc.identical || r.Text != tc.wantTextOK {
				t.Fatalf("reason=%q identical=%v text=%v, want %q %v %v", r.Reason, r.Identical, r.Text, tc.reason, tc.identical, tc.wantTextOK)
			}
			if len(r.Hunks) != 0 || r.Unified != "" {
				t.Fatalf("hunks %v, unified %q: want none", r.Hunks, r.Unified)
			}
			if want := SideOf([]byte(tc.new)); r.New != want {
				t.Fatalf("new side %+v, want %+v", r.New, want)
			}
		})
	}
}

func TestTextTruncation(t *testing.T) {
	var old, new strings.Builder
	for i := range 200 {
		old.WriteString(strings.Repeat("x", 40) + "\n")
		if i%10 == 0 {
			new.WriteString(strings.Repeat("y", 40) + "\n")
		} else {
			new.WriteString(strings.Repeat("x", 40) + "\n")
		}
	}
	t.Run("by bytes", func(t *testing.T) {
		o := DefaultOptions()
		o.MaxBytes = 1024
		r := mustText(t, old.String(), new.String(), o)
		if !r.Truncated || len(r.Unified) > o.MaxBytes {
			t.Fatalf("truncated=%v, %d bytes; want truncated within %d", r.Truncated, len(r.Unified), o.MaxBytes)
		}
		if r.HunkCount != 20 || len(r.Hunks) >= 20 || len(r.Hunks) == 0 {
			t.Fatalf("%d of %d hunks shown, want some of 20", len(r.Hunks), r.HunkCount)
		}
		last := strings.Split(strings.TrimSuffix(r.Unified, "\n"), "\n")
		if !strings.HasPrefix(last[len(last)-1], TruncationMarker) {
			t.Fatalf("last line %q, want the truncation marker", last[len(last)-1])
		}
		if r.LinesDeleted != 20 || r.LinesInserted != 20 {
			t.Fatalf("-%d +%d lines, want the whole diff's -20 +20", r.LinesDeleted, r.LinesInserted)
		}
	})
	t.Run("by hunks", func(t *testing.T) {
		o := DefaultOptions()
		o.MaxHunks = 2
		r := mustText(t, old.String(), new.String(), o)
		if !r.Truncated || len(r.Hunks) != 2 || !strings.Contains(r.Unified, TruncationMarker+": 2 of 20 hunks shown") {
			t.Fatalf("truncated=%v hunks=%d unified:\n%s", r.Truncated, len(r.Hunks), r.Unified)
		}
	})
	t.Run("a long line is cut to the budget", func(t *testing.T) {
		o := DefaultOptions()
		o.MaxBytes = 2048
		r := mustText(t, "short\n", strings.Repeat("é", 5000)+"\n", o)
		if !r.Truncated || len(r.Unified) > o.MaxBytes {
			t.Fatalf("truncated=%v, %d bytes", r.Truncated, len(r.Unified))
		}
		h := r.Hunks[len(r.Hunks)-1]
		l := h.Lines[len(h.Lines)-1]
		if !l.Cut || !strings.HasPrefix(strings.Repeat("é", 5000), l.Text) || len(l.Text) < 1000 {
			t.Fatalf("last line cut=%v, %d bytes: want a cut prefix on a rune boundary", l.Cut, len(l.Text))
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	o.Context = -1
	_, err := Text(nil, nil, o)
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Field != "context" {
		t.Fatalf("err = %v, want an OptionError naming context", err)
	}
}

// TestTextAppliesBack: for random line edits, the hunks applied to the old side give the
// new side (the diff is correct whatever the search found).
func TestTextAppliesBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := []string{"a\n", "b\n", "c\r\n", "\xff\n", "", "d"}
		gen := func(label string) string {
			parts := rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 30).Draw(t, label)
			s := strings.Join(parts, "")
			return s
		}
		old, new := gen("old"), gen("new")
		o := DefaultOptions()
		o.Context = rapid.IntRange(0, 4).Draw(t, "context")
		r, err := Text([]byte(old), []byte(new), o)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Text {
			return // binary by the invalid-UTF-8 share
		}
		if got := apply(t, old, r); got != new {
			t.Fatalf("applying %s to %q gives %q, want %q", r.Unified, old, got, new)
		}
	})
}

// apply rebuilds the new side from the old one and a Result's hunks, reading the escaped
// texts back.
func apply(t interface{ Fatalf(string, ...any) }, old string, r *Result) string {
	a := splitLines(old)
	var out bytes.Buffer
	next := 0 // old line index
	for _, h := range r.Hunks {
		start := h.OldStart - 1
		if h.OldLines == 0 {
			start = h.OldStart
		}
		for ; next < start; next++ {
			out.WriteString(a[next])
		}
		for _, l := range h.Lines {
			raw := unescape(t, l)
			if !l.NoNewline {
				raw += "\n"
			}
			switch l.Op {
			case OpContext:
				if a[next] != raw {
					t.Fatalf("context %q does not match old line %d %q", raw, next+1, a[next])
				}
				out.WriteString(raw)
				next++
			case OpDelete:
				if a[next] != raw {
					t.Fatalf("deleted %q does not match old line %d %q", raw, next+1, a[next])
				}
				next++
			case OpInsert:
				out.WriteString(raw)
			}
		}
	}
	for ; next < len(a); next++ {
		out.WriteString(a[next])
	}
	return out.String()
}

// unescape reads a line's text back to its bytes (escape.go's rules).
func unescape(t interface{ Fatalf(string, ...any) }, l Line) string {
	if !l.Escaped {
		return l.Text
	}
	var b strings.Builder
	s := l.Text
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
			i++
		case 'r':
			b.WriteByte('\r')
			i++
		case 'x':
			var v byte
			for _, c := range []byte(s[i+2 : i+4]) {
				v = v<<4 | hexVal(c)
			}
			b.WriteByte(v)
			i += 3
		case 'u':
			end := strings.IndexByte(s[i:], '}')
			var v rune
			for _, c := range []byte(s[i+3 : i+end]) {
				v = v<<4 | rune(hexVal(c))
			}
			b.WriteRune(v)
			i += end
		default:
			t.Fatalf("bad escape in %q", s)
		}
	}
	return b.String()
}

func hexVal(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}
