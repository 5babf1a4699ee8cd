package rest_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// escapePath percent-escapes every component of a path for a file route.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = url.PathEscape(c)
	}
	return strings.Join(parts, "/")
}

// TestWritesRefuseNamesThatBreakTheRulesOfNames: a PUT, an append, a proposal and a
// snapshot whose name holds a control character, DEL, a bidi override or isolate, a
// zero-width character, or is not in NFC are InvalidArguments naming the field and the
// rule, and store nothing: "café" written as NFC and then as NFD lists one file, not two
// that look alike.
func TestWritesRefuseNamesThatBreakTheRulesOfNames(t *testing.T) {
	srv := newServer(t)
	wb := srv.URL + "/v1/agents/a1/workbenches/w1"
	expect(t, do(t, "PUT", wb+"/files/"+escapePath("outputs/caf\u00e9.txt"), strings.NewReader("nfc")), 201, "")

	refused := func(r response, field, rule string) {
		t.Helper()
		expect(t, r, 400, "InvalidArguments")
		d := r.json["details"].(map[string]any)
		if d["field"] != field || d["rule"] != rule {
			t.Fatalf("details %v, want field %s rule %s: %s", d, field, rule, r.body)
		}
	}
	for _, tc := range []struct{ name, rule string }{
		{"cafe\u0301.txt", meta.RuleNotNFC},
		{"a\x01b", meta.RuleControlCharacter},
		{"a\tb", meta.RuleControlCharacter},
		{"a\x7fb", meta.RuleControlCharacter},
		{"a\u0085b", meta.RuleControlCharacter},
		{"report\u202etxt.exe", meta.RuleBidiControl},
		{"a\u2066b\u2069", meta.RuleBidiControl},
		{"a\u200fb", meta.RuleBidiControl},
		{"a\u061cb", meta.RuleBidiControl},
		{"a\u200bb", meta.RuleZeroWidth},
		{"a\u2060b", meta.RuleZeroWidth},
		{"\ufeffa", meta.RuleZeroWidth},
		{"report\u2062.csv", meta.RuleZeroWidth},
		{"a\u00adb", meta.RuleZeroWidth},
		{"note\U000E0041\U000E0042.txt", meta.RuleZeroWidth},
		{"a\uffffb", meta.RuleNoncharacter},
		{"a\ufdd0b", meta.RuleNoncharacter},
	} {
		target := wb + "/files/" + escapePath("outputs/"+tc.name)
		refused(do(t, "PUT", target, strings.NewReader("x")), "path", tc.rule)
		refused(do(t, "POST", target+"?append", strings.NewReader("x")), "path", tc.rule)
		body := `{"path":` + jsonString("outputs/"+tc.name) + `,"text":"x","request_id":"p1"}`
		refused(do(t, "POST", wb+"/proposals", strings.NewReader(body), "Content-Type", "application/json"), "path", tc.rule)
		snap := `{"name":` + jsonString("s-"+tc.name) + `}`
		refused(do(t, "POST", wb+"/snapshots", strings.NewReader(snap), "Content-Type", "application/json"), "name", tc.rule)
	}
	l := do(t, "GET", wb+"/list?path=outputs", nil)
	expect(t, l, 200, "")
	if n := len(l.json["entries"].([]any)); n != 1 {
		t.Fatalf("outputs holds %d entries, want only the NFC café: %s", n, l.body)
	}
}

// TestNamesStoredBeforeTheRulesStayReadable: a file an earlier release stored under a name
// the rules now refuse (written here below the surfaces, as the log of that release holds
// it) is still read, stated, listed and deleted over REST; only new writes are refused.
func TestNamesStoredBeforeTheRulesStayReadable(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	srv := serveNode(t, n)
	legacy := "outputs/cafe\u0301\u202e.txt"
	if _, err := n.Shard.Propose(t.Context(), meta.Header{}, meta.Put{Agent: "a1", Workspace: "w1", Path: legacy, CreateWorkspace: true,
		Size: 3, Digest: sha256Digest("old"), ContentType: "text/plain", Segments: []meta.Segment{{Size: 3, Digest: sha256Digest("old"), Inline: []byte("old")}}}); err != nil {
		t.Fatal(err)
	}
	target := srv.URL + "/v1/agents/a1/workbenches/w1/files/" + escapePath(legacy)
	r := do(t, "GET", target, nil)
	expect(t, r, 200, "")
	if string(r.body) != "old" {
		t.Fatalf("legacy file reads %q", r.body)
	}
	expect(t, do(t, "HEAD", target, nil), 200, "")
	expect(t, do(t, "PUT", target, strings.NewReader("new")), 400, "InvalidArguments")
	expect(t, do(t, "DELETE", target, nil), 200, "")
	expect(t, do(t, "GET", target, nil), 404, "NotFound")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sha256Digest(s string) meta.Digest { return sha256.Sum256([]byte(s)) }
