package mcp

import (
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
)

// servePrincipals serves svc over streamable HTTP with both profiles (…/mcp: workbench,
// …/mcp/cairn: cairn), each request acting for the principal its client names
// (authtest.TrustHeader). connect(principal, profile) opens a session of agent root "a1"
// (principal "": none; profile "": the workbench profile).
func servePrincipals(t *testing.T, svc *workbench.Service) (connect func(principal, profile string) *sdk.ClientSession) {
	t.Helper()
	h := Handler(svc, Options{})
	mux := http.NewServeMux()
	mux.Handle("/v1/agents/{agent}/mcp", h)
	mux.Handle("/v1/agents/{agent}/mcp/{profile}", h)
	ts := httptest.NewServer(authtest.TrustHeader(mux))
	t.Cleanup(ts.Close)
	return func(principal, profile string) *sdk.ClientSession {
		t.Helper()
		endpoint := ts.URL + "/v1/agents/a1/mcp"
		if profile != "" {
			endpoint += "/" + profile
		}
		tr := &sdk.StreamableClientTransport{Endpoint: endpoint}
		if principal != "" {
			tr.HTTPClient = &http.Client{Transport: authtest.As(principal)}
		}
		cs, err := sdk.NewClient(testClient, nil).Connect(t.Context(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
}

// TestWriteToolsRefuseNamesThatBreakTheRulesOfNames: over MCP, put_file, append, edit,
// cairn_propose and workbench_snapshot refuse a path or snapshot name holding a control
// character, a bidi override or isolate, a zero-width character, or not in NFC, with
// InvalidArguments naming the field and details.rule; "café" in NFC is written once and
// its NFD twin never becomes a second, identical-looking file.
func TestWriteToolsRefuseNamesThatBreakTheRulesOfNames(t *testing.T) {
	connect := servePrincipals(t, newService(t, 0))
	cs, review := connect("", ""), connect("", "cairn")
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "caf\u00e9.txt", "text": "nfc"})
	for _, tc := range []struct{ name, rule string }{
		{"cafe\u0301.txt", meta.RuleNotNFC},
		{"a\x1bb", meta.RuleControlCharacter},
		{"a\x7fb", meta.RuleControlCharacter},
		{"txt.\u202eexe", meta.RuleBidiControl},
		{"a\u2067b", meta.RuleBidiControl},
		{"a\u200cb", meta.RuleZeroWidth},
		{"a\u206ab", meta.RuleZeroWidth},
		{"a\ufffeb", meta.RuleNoncharacter},
	} {
		rule := func(r obj) {
			t.Helper()
			if r.details()["rule"] != tc.rule {
				t.Errorf("%+q: details %v, want rule %s", tc.name, r.details(), tc.rule)
			}
		}
		rule(invalid(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": tc.name, "text": "x"}, "path"))
		rule(invalid(t, cs, "workbench_append", args{"id": "w", "section": "logs", "path": tc.name, "text": "x"}, "path"))
		rule(invalid(t, cs, "workbench_edit", args{"id": "w", "section": "outputs", "path": tc.name, "old_string": "a", "new_string": "b"}, "path"))
		rule(invalid(t, review, "cairn_propose", args{"id": "w", "path": "outputs/" + tc.name, "text": "x", "request_id": "r1"}, "path"))
		rule(invalid(t, cs, "workbench_snapshot", args{"id": "w", "name": "s-" + tc.name}, "name"))
	}
	l := ok(t, cs, "workbench_list", args{"id": "w", "section": "outputs"})
	if es := l.list(t, "entries"); len(es) != 1 || es[0].str("name") != "caf\u00e9.txt" {
		t.Fatalf("outputs: %v, want only the NFC café", es)
	}
	if l := ok(t, cs, "workbench_list", args{"id": "w", "section": "logs"}); len(l.list(t, "entries")) != 0 {
		t.Fatalf("logs: %v, want nothing", l["entries"])
	}
}
