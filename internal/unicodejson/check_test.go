package unicodejson

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		offset int // -1: accepted
		reason string
	}{
		{`{"path":"outputs/a"}`, -1, ""},
		{`{"path":"outputs/\ufffd"}`, -1, ""},                   // U+FFFD spelled as an escape is a character
		{"{\"path\":\"outputs/\uFFFD\"}", -1, ""},               // and as UTF-8
		{`{"e":"\ud83d\ude00"}`, -1, ""},                        // a surrogate pair
		{`{"e":"\\ud800"}`, -1, ""},                             // an escaped backslash, then text
		{`{"e":"\"\ud83d\uDE00\""}`, -1, ""},                    // upper-case hex, quotes escaped around
		{`{"\ud800":1}`, 2, `unpaired surrogate escape \ud800`}, // keys are strings too
		{"{\"path\":\"outputs/\xff\"}", 17, "invalid UTF-8"},
		{`{"path":"\ud800"}`, 9, `unpaired surrogate escape \ud800`},
		{`{"path":"\ud800x"}`, 9, `unpaired surrogate escape \ud800`},
		{`{"path":"\ud800\u0041"}`, 9, `unpaired surrogate escape \ud800`},
		{`{"path":"\udc00\ud800"}`, 9, `unpaired surrogate escape \udc00`},
		{`{"path":"a\ud83d"}`, 10, `unpaired surrogate escape \ud83d`},
		{`"\u12`, -1, ""},  // malformed: the decoder's to refuse
		{`\ud800`, -1, ""}, // outside a string: not an escape
	} {
		err := Check([]byte(tc.raw))
		switch {
		case tc.offset < 0 && err != nil:
			t.Errorf("Check(%q) = %v, want nil", tc.raw, err)
		case tc.offset >= 0 && (err == nil || err.Offset != tc.offset || err.Reason != tc.reason):
			t.Errorf("Check(%q) = %v, want %q at byte %d", tc.raw, err, tc.reason, tc.offset)
		}
	}
}

// FuzzCheck: what Check accepts, encoding/json decodes without inventing a U+FFFD.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"\ufffd"`, `["\\u", "\u0041"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if Check(raw) != nil {
			return
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		spelled := strings.Count(string(raw), "\uFFFD") + strings.Count(strings.ToLower(string(raw)), `\ufffd`)
		if got := countReplacement(v); got > spelled {
			t.Fatalf("Check accepted %q, which decodes with %d U+FFFD but spells %d", raw, got, spelled)
		}
	})
}

func countReplacement(v any) int {
	switch v := v.(type) {
	case string:
		return strings.Count(v, string(utf8.RuneError))
	case []any:
		n := 0
		for _, e := range v {
			n += countReplacement(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range v {
			n += strings.Count(k, string(utf8.RuneError)) + countReplacement(e)
		}
		return n
	}
	return 0
}
