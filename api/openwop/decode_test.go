package openwop_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/openwop"
)

// goLeak matches what a refusal must never say (issue 25 finding 14): the decoder's own
// wording, Go type names, and the Go names of the request structs and their fields where
// they differ from the wire names.
var goLeak = regexp.MustCompile(`Go struct|Go value|json:|unmarshal|\b(putBody|seamRequest|runRequest|proposalInput|provenance\.|` +
	`int64|uint64|float64|\*string|RawMessage|map\[|\[\]string|` +
	`Content|ContentType|WorkflowID|Inputs|Tags|Metadata|Configurable|Tenant|Workspace|Op|Path|IfMatch|Prefix|Version|` +
	`Kind|Artifact|Title|Rationale|Provenance|Note|SourceRunIDs|SynthesizerModel)\b`)

// Every body the facade decodes, sent with each member of the wrong JSON kind (null for a
// string or an integer too, which encoding/json would take as absent), with an
// unknown member, in another letter case, and as something other than an object: each is
// 400 validation_error whose message names the wire member and rule, never a Go type or
// field.
func TestBodyErrorsNameWireMembersNeverGoTypes(t *testing.T) {
	sc := loadSchemas(t)
	base, _ := newPacksFacade(t, func(o *openwop.Options) { o.TestSeams = true })
	a := packsClient{t, base, tenantA}
	id := a.create(openwop.KindAgentPack, agentPack(packP, "1.0.0", agentP, "be helpful"))

	type member struct {
		name  string
		wrong any    // a value of another JSON kind
		rule  string // what the answer must say of it
	}
	routes := []struct {
		name, method, path string
		valid              map[string]any
		members            []member
	}{
		{"PUT a workspace file", http.MethodPut, "/v1/host/workspace/files/a.md", map[string]any{"content": "x"}, []member{
			{"content", 1, "content: must be a string"},
			{"contentType", []any{"text/plain"}, "contentType: must be a string"},
			{"contentType", nil, "contentType: must be a string, not null"},
		}},
		{"POST the seam", http.MethodPost, "/v1/host/sample/workspace/op", map[string]any{"op": "list"}, []member{
			{"tenant", 1, "tenant: must be a string"},
			{"workspace", true, "workspace: must be a string"},
			{"op", 7, "op: must be a string"},
			{"path", map[string]any{}, "path: must be a string"},
			{"content", 1.5, "content: must be a string"},
			{"contentType", false, "contentType: must be a string"},
			{"ifMatch", 3, "ifMatch: must be a string"},
			{"prefix", []any{}, "prefix: must be a string"},
			{"version", "2", "version: must be an integer"},
			{"version", 1.5, "version: must be an integer"},
			{"tenant", nil, "tenant: must be a string, not null"},
			{"version", nil, "version: must be an integer, not null"},
		}},
		{"POST a run", http.MethodPost, "/v1/runs", map[string]any{"workflowId": "conformance-noop"}, []member{
			{"workflowId", 42, "workflowId: must be a string"},
		}},
		{"POST a proposal", http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": map[string]any{}}, []member{
			{"kind", 1, "kind: must be a string"},
			{"title", []any{"t"}, "title: must be a string"},
			{"rationale", map[string]any{}, "rationale: must be a string"},
			{"note", true, "note: must be a string"},
			{"title", nil, "title: must be a string, not null"},
			{"rationale", nil, "rationale: must be a string, not null"},
		}},
		{"PATCH a proposal", http.MethodPatch, "/proposals/" + id, map[string]any{"title": "t"}, []member{
			{"title", 2, "title: must be a string"},
			{"rationale", false, "rationale: must be a string"},
			{"title", nil, "title: must be a string, not null"},
		}},
	}
	send := func(t *testing.T, method, path string, body any) answer {
		t.Helper()
		return call(t, method, base+path, body, ownerHeader, tenantA, reviewHeader, "yes")
	}
	refused := func(t *testing.T, what string, got answer, want string) {
		t.Helper()
		wantError(t, sc, what, got, http.StatusBadRequest, openwop.CodeValidation)
		msg, _ := got.json["message"].(string)
		if want != "" && !strings.Contains(msg, want) {
			t.Errorf("%s: message %q, want it to say %q", what, msg, want)
		}
		if leak := goLeak.FindString(msg); leak != "" {
			t.Errorf("%s: message %q names %q (a Go type, field or the decoder)", what, msg, leak)
		}
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			for _, m := range rt.members {
				body := map[string]any{}
				for k, v := range rt.valid {
					body[k] = v
				}
				body[m.name] = m.wrong
				wrong, _ := json.Marshal(m.wrong)
				refused(t, m.name+" = "+string(wrong), send(t, rt.method, rt.path, body), m.rule)
			}
			// Every member, every JSON kind: whatever is refused says nothing of Go.
			for _, m := range rt.members {
				for _, v := range []any{nil, 0, -1.5, "s", true, []any{1}, map[string]any{"a": 1}} {
					body := map[string]any{}
					for k, val := range rt.valid {
						body[k] = val
					}
					body[m.name] = v
					got := send(t, rt.method, rt.path, body)
					if msg, _ := got.json["message"].(string); got.status >= 400 && goLeak.MatchString(msg) {
						t.Errorf("%s %v: %d %q names Go", m.name, v, got.status, msg)
					}
				}
			}
			withUnknown := map[string]any{"surprise": 1}
			for k, v := range rt.valid {
				withUnknown[k] = v
			}
			refused(t, "an unknown member", send(t, rt.method, rt.path, withUnknown), `unknown member "surprise"`)
			for k, v := range rt.valid {
				upper := map[string]any{strings.ToUpper(k): v} // matched case-insensitively by encoding/json
				refused(t, "a member in another letter case", send(t, rt.method, rt.path, upper), "unknown member")
			}
			for _, body := range []string{`[]`, `"x"`, `12`, `null`} {
				refused(t, "the body "+body, send(t, rt.method, rt.path, body), "the body must be a JSON object")
			}
			for _, body := range []string{`{`, `{"a":1}x`, ``} {
				refused(t, "the body "+body, send(t, rt.method, rt.path, body), "not valid JSON")
			}
		})
	}
	// A proposal's provenance is a closed object of its own.
	refused(t, "provenance with a wrong kind",
		send(t, http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": map[string]any{}, "provenance": map[string]any{"sourceRunIds": "r1"}}),
		"provenance must be")
}

// A body that is not Unicode JSON (invalid UTF-8, an unpaired surrogate escape) or that
// names a member twice is refused, never stored with U+FFFD or with the last of the two
// members taken.
func TestABodyIsTakenAsSentOrRefused(t *testing.T) {
	sc := loadSchemas(t)
	file := newFacade(t, testOptions()) + "/v1/host/workspace/files/u.md"
	for _, body := range []string{
		`{"content":"a\ud800b"}`,
		"{\"content\":\"a\xffb\"}",
		`{"content":"one","content":"two"}`,
	} {
		got := call(t, http.MethodPut, file, body)
		wantError(t, sc, body, got, http.StatusBadRequest, openwop.CodeValidation)
		if msg, _ := got.json["message"].(string); goLeak.MatchString(msg) {
			t.Errorf("%s: %q names Go", body, msg)
		}
	}
	if got := call(t, http.MethodGet, file, nil); got.status != http.StatusNotFound {
		t.Fatalf("after the refusals the file is %d %s", got.status, got.body)
	}
	if got := call(t, http.MethodPut, file, `{"content":"a\ud83d\ude00b"}`); got.status != http.StatusOK || got.json["content"] != "a\U0001F600b" {
		t.Fatalf("a surrogate pair: %d %s", got.status, got.body)
	}
}
