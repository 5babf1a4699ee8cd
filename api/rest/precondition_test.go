package rest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestEveryFailedPreconditionIsNotRetryable: a 412 answers a condition the client set; the
// same request fails the same way until the client re-reads, so retryable is false on
// every form of it (a client that honours retryable would otherwise retry for ever).
func TestEveryFailedPreconditionIsNotRetryable(t *testing.T) {
	srv := newServer(t)
	wbURL := srv.URL + "/v1/agents/a/workbenches/w"
	f := wbURL + "/files/input/f.txt"
	expect(t, do(t, "PUT", f, strings.NewReader("one")), 201, "")
	expect(t, do(t, "PUT", f, strings.NewReader("two")), 200, "") // generation moves past the first
	stale := `"1"`
	for _, tc := range []struct {
		name, method, url, header, value, code string
	}{
		{"a PUT with a stale If-Match", "PUT", f, "If-Match", stale, "Conflict"},
		{"an append with a stale If-Match", "POST", f + "?append", "If-Match", stale, "Conflict"},
		{"a DELETE with a stale If-Match", "DELETE", f, "If-Match", stale, "Conflict"},
		{"a GET with a stale If-Match", "GET", f, "If-Match", stale, "Conflict"},
		{"a PUT with If-Match on a missing file", "PUT", wbURL + "/files/input/none", "If-Match", stale, "NotFound"},
		{"a PUT with If-None-Match: * on an existing file", "PUT", f, "If-None-Match", "*", "AlreadyExists"},
		{"a workbench DELETE with a stale revision", "DELETE", wbURL, "If-Match", stale, "Conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == "PUT" || tc.method == "POST" {
				body = strings.NewReader("x")
			}
			r := do(t, tc.method, tc.url, body, tc.header, tc.value)
			expect(t, r, http.StatusPreconditionFailed, tc.code)
			if r.json["retryable"] != false {
				t.Fatalf("412 %s with retryable %v: %s", tc.code, r.json["retryable"], r.body)
			}
		})
	}
	if got := do(t, "GET", f, nil); string(got.body) != "two" {
		t.Fatalf("failed preconditions changed the file: %q", got.body)
	}
}
