package documents_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A title is one line of visible text: a control character (NUL, a line break, a C1
// control), a bidirectional embedding, override or isolate, or a title of only
// whitespace and invisible characters is a 400 ValidationError naming title and the rule,
// on a create and on an edit alike, and the message names the character by code point.
// Right-to-left marks, zero-width joiners in an emoji and variation selectors are text.
func TestTitleCharactersAreChecked(t *testing.T) {
	e := newEnv(t, nil)
	d, _ := aDocument(t, e)
	docs := "/api/workbench/documents"
	for _, tc := range []struct {
		title, rule, says string
	}{
		{"a\x00b", "control-character", "(U+0000, code point 2 of the title)"},
		{"line\nbreak", "control-character", "U+000A"},
		{"tab\there", "control-character", "U+0009"},
		{"c1\u0085", "control-character", "U+0085"},
		{"para\u2029graph", "control-character", "U+2029"},
		{"abc\u202egnp.exe", "bidi-control", "(U+202E, code point 4 of the title)"},
		{"\u2066isolated\u2069", "bidi-control", "U+2066"},
		{"   ", "required", "must hold a visible character"},
		{"\u200b\u200d\ufeff\u00ad\u3164", "required", "must hold a visible character"},
		{"\u3000\u00a0", "required", "must hold a visible character"},
		{"\u200f", "required", "must hold a visible character"},
	} {
		for _, req := range []struct{ path, base string }{
			{docs, `"originEventId":` + quote(d.origin)},
			{docs + "/" + d.docID + "/versions", `"baseVersionId":` + quote(d.versionID)},
		} {
			a := e.do("local", "POST", req.path, []byte(`{`+req.base+`,"title":`+quote(tc.title)+`,"body":"b","requestId":"r-title"}`))
			if a.status != http.StatusBadRequest || a.str("error") != "ValidationError" || a.str("field") != "title" ||
				a.str("rule") != tc.rule || !strings.Contains(a.str("message"), tc.says) {
				t.Fatalf("%s with title %q: %d %s, want 400 on title (%s) saying %q", req.path, tc.title, a.status, a.body, tc.rule, tc.says)
			}
		}
	}
	for i, title := range []string{"\u05e9\u05dc\u05d5\u05dd \u200fv2\u200f", "team \U0001f469\u200d\U0001f4bb notes", "\u2764\ufe0f", "caf\u00e9"} {
		a := e.do("local", "POST", docs, map[string]any{"originEventId": d.origin, "title": title, "body": "b", "requestId": "r-ok-" + string(rune('a'+i))})
		if a.status != http.StatusCreated {
			t.Fatalf("title %q: %d %s, want it taken", title, a.status, a.body)
		}
	}
}

// quote is s as a JSON string (encoding/json escapes every control character).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
