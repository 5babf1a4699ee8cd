package rest_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// An Idempotency-Key that is present but empty, or sent twice, is refused (400 naming the
// header) and writes nothing: a retry under it could not be told from a new write, and two
// keys do not say which one a retry would carry. The refused write leaves the file as it was.
func TestAnEmptyOrRepeatedIdempotencyKeyIsRefusedAndWritesNothing(t *testing.T) {
	srv := newServer(t)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/input/x"
	expectOK(t, do(t, "PUT", u, strings.NewReader("first")))
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"empty", []string{""}},
		{"sent twice", []string{"k1", "k2"}},
		{"sent twice, the same", []string{"k1", "k1"}},
	} {
		for _, method := range []string{"PUT", "POST"} {
			target := u
			if method == "POST" {
				target += "?append"
			}
			req, err := http.NewRequest(method, target, strings.NewReader("second"))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.keys {
				req.Header.Add("Idempotency-Key", k)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(res.Body); err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 400 || !strings.Contains(buf.String(), `"code":"`+workbench.CodeInvalidArguments+`"`) ||
				!strings.Contains(buf.String(), `"field":"Idempotency-Key"`) {
				t.Fatalf("%s %s: %d %s, want 400 InvalidArguments naming Idempotency-Key", tc.name, method, res.StatusCode, buf.String())
			}
		}
	}
	if r := do(t, "GET", u, nil); string(r.body) != "first" {
		t.Fatalf("the file after the refused writes: %q, want %q", r.body, "first")
	}
	expectOK(t, do(t, "PUT", u, strings.NewReader("third"), "Idempotency-Key", "k1"))
}

// The query routes (grep, search, aggregate, catalog, find) change nothing, so they take
// no Idempotency-Key: one is refused (400 naming it) rather than taken and kept for
// nothing. The tool routes that change state keep it (idempotency_tools_test.go).
func TestAnIdempotencyKeyOnAQueryIsRefused(t *testing.T) {
	srv := newServer(t)
	root := srv.URL + "/v1/agents/a"
	expectOK(t, do(t, "PUT", root+"/workbenches/w/files/input/x", strings.NewReader("x")))
	for _, tc := range []struct{ route, body string }{
		{"/workbenches/w/grep", `{"pattern":"x","recursive":true}`},
		{"/search", `{}`},
		{"/aggregate", `{"measures":[{"name":"n","op":"count"}]}`},
		{"/catalog", `{}`},
		{"/find", `{}`},
	} {
		expectOK(t, do(t, "POST", root+tc.route, strings.NewReader(tc.body)))
		r := do(t, "POST", root+tc.route, strings.NewReader(tc.body), "Idempotency-Key", "k")
		expect(t, r, 400, workbench.CodeInvalidArguments)
		if d, _ := r.json["details"].(map[string]any); d["field"] != "Idempotency-Key" {
			t.Fatalf("POST %s under a key: %s, want the field Idempotency-Key", tc.route, r.body)
		}
	}
}
