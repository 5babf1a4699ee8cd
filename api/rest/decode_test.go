package rest_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestJSONBodyErrorsNameWireFieldsNeverGoTypes(t *testing.T) {
	srv := newServer(t)
	search := srv.URL + "/v1/agents/a/search"
	for _, tc := range []struct {
		name, body, field, says string
	}{
		{"an array instead of the request object", `[]`, "body", "must be a JSON object (got an array)"},
		{"a string instead of the request object", `"x"`, "body", "must be a JSON object (got a string)"},
		// encoding/json leaves the request as it is for null: it would read as {}.
		{"null instead of the request object", ` null `, "body", "must be a JSON object, not null"},
		{"a string where an integer goes", `{"limit":"x"}`, "limit", "must be an integer (got a string)"},
		{"a fraction where an integer goes", `{"limit":1.5}`, "limit", "must be an integer in range"},
		{"a number where a string goes", `{"cursor":5}`, "cursor", "must be a string (got a number)"},
		{"a body cut off inside a value", `{"limit":`, "body", "ends inside a value"},
		{"a syntax error", `{"limit" 5}`, "body", "is not valid JSON at byte 10"},
		// encoding/json would read both as U+FFFD and act on another name.
		{"a byte that is not UTF-8", "{\"cursor\":\"a\xffb\"}", "body", "must be Unicode text"},
		{"an unpaired surrogate escape", `{"cursor":"a\ud800b"}`, "body", `unpaired surrogate escape \ud800 at byte 12`},
		// encoding/json would keep the last; a proxy or log reading the first sees another.
		{"a member named twice", `{"limit":1,"limit":2}`, "limit", "appears twice in one object"},
		{"a member named twice, once escaped", `{"limit":1,"\u006cimit":2}`, "limit", "appears twice in one object"},
		{"a member named twice in a nested object", `{"where":{"path":{"eq":"a","eq":"b"}}}`, "where.path.eq", "appears twice in one object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, search, strings.NewReader(tc.body), "Content-Type", "application/json")
			expect(t, r, http.StatusBadRequest, "InvalidArguments")
			msg, _ := r.json["message"].(string)
			details, _ := r.json["details"].(map[string]any)
			if details["field"] != tc.field || !strings.Contains(msg, tc.says) || strings.Contains(tc.says, "twice") && details["rule"] != "duplicate_member" {
				t.Fatalf("got field %v, message %q; want field %q and a message saying %q", details["field"], msg, tc.field, tc.says)
			}
			for _, goName := range []string{"workbench.", "rest.", "Go ", "struct", "int64"} {
				if strings.Contains(msg, goName) {
					t.Fatalf("the message names a Go type (%q): %q", goName, msg)
				}
			}
		})
	}
}

// A body whose objects name different members, or the same name in different objects or
// as a value, is no duplicate: it decodes as before.
func TestJSONBodiesWithoutADuplicateAreTakenAsBefore(t *testing.T) {
	srv := newServer(t)
	expect(t, do(t, http.MethodPut, srv.URL+"/v1/agents/a/workbenches/w/files/outputs/a.txt", strings.NewReader("a")), http.StatusCreated, "")
	body := `{"fork":"fork","at":"live"}` // a member's name as a value
	expect(t, do(t, http.MethodPost, srv.URL+"/v1/agents/a/workbenches/w/fork", strings.NewReader(body), "Content-Type", "application/json"), http.StatusOK, "")
}
