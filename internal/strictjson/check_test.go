package strictjson

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
		case tc.offset >= 0 && (err == nil || err.Offset != tc.offset || err.Reason != tc.reason || err.Duplicate):
			t.Errorf("Check(%q) = %v, want %q at byte %d", tc.raw, err, tc.reason, tc.offset)
		}
	}
}

// An object naming a member twice is refused with the member's path, names compared as
// they decode; the same name in other objects, or as a value, is no duplicate.
func TestCheckRefusesADuplicateMemberName(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		offset int // -1: accepted
		field  string
	}{
		{`{"fork":"a","fork":"b"}`, 12, "fork"},
		{`{"a":1,"\u0061":2}`, 7, "a"}, // the same name once decoded
		{`{"at":{"x":1,"y":{"z":[1,{"k":1,"k":2}]}}}`, 32, "at.y.z.k"},
		{`[{"a":1},{"b":[{"c":1,"c":2}]}]`, 22, "b.c"},
		{`{"a":{"b":1},"c":2,"a":3}`, 19, "a"},
		{`{"a":{"a":{"a":1}},"b":"a","c":["a","a"],"d":{"b":1,"c":1}}`, -1, ""},
		{`[{"a":1},{"a":1},{"a":{"a":1}}]`, -1, ""},
		{`{"a\"b":1,"a\\b":2,"ab":3}`, -1, ""}, // escapes that decode to other names
		{`{"":1,"":2}`, 6, ""},
		{`{"a":1}{"a":2}`, -1, ""}, // two texts: the decoder's to refuse
	} {
		err := Check([]byte(tc.raw))
		switch {
		case tc.offset < 0 && err != nil:
			t.Errorf("Check(%s) = %v, want nil", tc.raw, err)
		case tc.offset >= 0 && (err == nil || err.Offset != tc.offset || err.Field != tc.field || !err.Duplicate || !strings.HasSuffix(tc.field, err.Name) || !strings.HasPrefix(err.Reason, "duplicate member name ")):
			t.Errorf("Check(%s) = %+v, want a duplicate at byte %d, field %q", tc.raw, err, tc.offset, tc.field)
		}
	}
}

// Nesting past maxTrackedDepth is not tracked (the decoder refuses it), so Check's memory
// stays bounded; a duplicate above it is still found.
func TestCheckBoundsItsTracking(t *testing.T) {
	deep := strings.Repeat("[", maxTrackedDepth+5) + `{"a":1,"a":2}` + strings.Repeat("]", maxTrackedDepth+5)
	if err := Check([]byte(deep)); err != nil {
		t.Fatalf("Check(nested %d deep) = %v, want it left to the decoder", maxTrackedDepth+5, err)
	}
	if err := Check([]byte(`{"a":` + deep + `,"a":1}`)); err == nil || !err.Duplicate || err.Field != "a" {
		t.Fatalf("a duplicate beside a deep value = %v, want field a", err)
	}
}

// FuzzCheck: what Check accepts, encoding/json decodes without inventing a U+FFFD and
// without losing a member to a duplicate name; what it refuses for a duplicate does hold
// one.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"\ufffd"`, `["\\u", "\u0041"]`,
		`{"a":1,"a":2}`, `{"a":{"b":1},"\u0061":[{"b":2,"b":3}]}`, `[{"a":1},{"a":1}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := Check(raw)
		valid := json.Valid(raw)
		if err != nil {
			if err.Duplicate {
				if valid && !hasDuplicate(raw) {
					t.Fatalf("Check refused %q for a duplicate (%v) it does not hold", raw, err)
				}
			}
			return
		}
		var v any
		if !valid || json.Unmarshal(raw, &v) != nil {
			return
		}
		spelled := strings.Count(string(raw), "\uFFFD") + strings.Count(strings.ToLower(string(raw)), `\ufffd`)
		if got := countReplacement(v); got > spelled {
			t.Fatalf("Check accepted %q, which decodes with %d U+FFFD but spells %d", raw, got, spelled)
		}
		if hasDuplicate(raw) {
			t.Fatalf("Check accepted %q, whose objects name a member twice", raw)
		}
	})
}

// hasDuplicate reports whether a valid JSON text has an object naming a member twice,
// read with encoding/json's tokenizer: the model Check's scanner is held to.
func hasDuplicate(raw []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	type level struct {
		object, wantKey bool
		names           map[string]bool
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				if top != nil && top.object {
					top.wantKey = true
				}
				stack = append(stack, &level{object: tok == '{', wantKey: true, names: map[string]bool{}})
			} else {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					stack[len(stack)-1].wantKey = true
				}
			}
		case string:
			if top != nil && top.object && top.wantKey {
				if top.names[tok] {
					return true
				}
				top.names[tok] = true
				top.wantKey = false
				continue
			}
			if top != nil && top.object {
				top.wantKey = true
			}
		default:
			if top != nil && top.object {
				top.wantKey = true
			}
		}
	}
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

func TestSkipSpaceSkipsOnlyJSONWhiteSpace(t *testing.T) {
	for _, tc := range []struct {
		in       string
		from, at int
	}{
		{"", 0, 0}, {"x", 0, 0}, {" \t\n\rx", 0, 4}, {"  ", 0, 2}, {"a  b", 1, 3},
		{"\v x", 0, 0}, {"\f", 0, 0}, {"\u00a0x", 0, 0}, {" ", 1, 1},
	} {
		if got := SkipSpace([]byte(tc.in), tc.from); got != tc.at {
			t.Errorf("SkipSpace(%q, %d) = %d, want %d", tc.in, tc.from, got, tc.at)
		}
	}
}
