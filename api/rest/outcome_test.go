package rest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestAWriteWhoseCommitIsUnconfirmedAnswersOutcomeUnknownAndItsRetryAppliesOnce: a write
// the replica committed but could not confirm (shard.ErrTimeout) answers 503
// OutcomeUnknown, retryable, with Retry-After and details.outcome "unknown", never 500
// Internal; its retry under the same Idempotency-Key returns the first answer and does not
// apply the write a second time.
func TestAWriteWhoseCommitIsUnconfirmedAnswersOutcomeUnknownAndItsRetryAppliesOnce(t *testing.T) {
	n, fc := workbenchtest.NewFaulty(t, workbench.Config{InlineMaxBytes: 4096})
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Registry: prometheus.NewRegistry()}))
	t.Cleanup(srv.Close)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/logs/run.log"
	expect(t, do(t, "PUT", u, strings.NewReader("one\n")), 201, "")

	for _, tc := range []struct {
		name, method, url, key string
		want                   int
	}{
		{"an append", "POST", u + "?append", "append-1", http.StatusOK},
		{"a put", "PUT", srv.URL + "/v1/agents/a/workbenches/w/files/input/f", "put-1", http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc.Once(workbenchtest.AppliedButUnconfirmed)
			r := do(t, tc.method, tc.url, strings.NewReader("two\n"), "Idempotency-Key", tc.key)
			expect(t, r, http.StatusServiceUnavailable, workbench.CodeOutcomeUnknown)
			d, _ := r.json["details"].(map[string]any)
			if r.json["retryable"] != true || d["outcome"] != "unknown" || r.header.Get("Retry-After") != "1" {
				t.Fatalf("an unconfirmed %s: %s %v", tc.name, r.body, r.header)
			}
			again := do(t, tc.method, tc.url, strings.NewReader("two\n"), "Idempotency-Key", tc.key)
			if again.status != tc.want || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("the retry with the same key: %d %s %v", again.status, again.body, again.header)
			}
		})
	}
	if got := do(t, "GET", u, nil); string(got.body) != "one\ntwo\n" {
		t.Fatalf("after an unconfirmed append and its retry the file holds %q, want it appended once", got.body)
	}
}
