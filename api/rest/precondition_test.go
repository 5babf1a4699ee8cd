package rest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/internal/httpcall"
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

// TestEveryStaleDecisionIsNotRetryable: a proposal names the generation it was made on
// (its base, the proposal's precondition). Its accept after the head moved fails the same
// way however often it is sent, so every form of it is 409 Conflict, details.reason
// "stale" with the head's generation, retryable false: the head moved after the proposal
// was made, a file appeared where the proposal expected none, the base was deleted.
func TestEveryStaleDecisionIsNotRetryable(t *testing.T) {
	srv := newServer(t)
	wb := srv.URL + "/v1/agents/a/workbenches/w"
	put := func(path, body string) float64 {
		t.Helper()
		r := do(t, "PUT", wb+"/files/"+path, strings.NewReader(body))
		if r.status/100 != 2 {
			t.Fatalf("PUT %s: %d %s", path, r.status, r.body)
		}
		return r.json["generation"].(float64)
	}
	propose := func(path string, base float64, req string) string {
		t.Helper()
		r := do(t, "POST", wb+"/proposals", strings.NewReader(fmt.Sprintf(`{"path":%q,"base_generation":%d,"text":"proposed","request_id":%q}`, path, int64(base), req)),
			"Content-Type", "application/json")
		expect(t, r, 201, "")
		return r.json["proposal_id"].(string)
	}
	moved := put("outputs/moved.md", "one")
	movedID := propose("outputs/moved.md", moved, "p-moved")
	movedHead := put("outputs/moved.md", "two")
	appearedID := propose("outputs/appeared.md", 0, "p-appeared")
	appearedHead := put("outputs/appeared.md", "here now")
	deleted := put("outputs/deleted.md", "soon gone")
	deletedID := propose("outputs/deleted.md", deleted, "p-deleted")
	expect(t, do(t, "DELETE", wb+"/files/outputs/deleted.md", nil), 200, "")

	for i, tc := range []struct {
		name, id string
		head     float64
	}{
		{"the head moved after the proposal", movedID, movedHead},
		{"a file appeared where the proposal expected none", appearedID, appearedHead},
		{"the base was deleted", deletedID, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for attempt := range 2 { // the same answer on a second send
				r := do(t, "POST", wb+"/proposals/"+tc.id+"/decision", strings.NewReader(fmt.Sprintf(`{"disposition":"accept","submission_id":"d-%d"}`, i)),
					"Content-Type", "application/json")
				expect(t, r, 409, "Conflict")
				det, _ := r.json["details"].(map[string]any)
				if det["reason"] != "stale" || det["head_generation"] != tc.head || r.json["retryable"] != false {
					t.Fatalf("attempt %d: %s", attempt, r.body)
				}
			}
		})
	}
}

// TestAnEmptyOrRepeatedConditionIsRefused: an If-Match or If-None-Match sent empty, or
// twice, is 400 InvalidArguments naming the header, on every write that takes one, and
// nothing is written: read as absent, an empty If-Match would make a conditional write
// unconditional, and of two lines only the first would count.
func TestAnEmptyOrRepeatedConditionIsRefused(t *testing.T) {
	srv := newServer(t)
	wbURL := srv.URL + "/v1/agents/a/workbenches/w"
	f := wbURL + "/files/input/f.txt"
	expect(t, do(t, "PUT", f, strings.NewReader("one")), 201, "")
	for _, tc := range []struct {
		name, method, url, header string
		values                    []string
	}{
		{"a PUT with an empty If-Match", "PUT", f, "If-Match", []string{""}},
		{"a PUT with an empty If-None-Match", "PUT", f, "If-None-Match", []string{" "}},
		{"a PUT with two If-Match lines", "PUT", f, "If-Match", []string{`"999"`, `"1"`}},
		{"an append with an empty If-Match", "POST", f + "?append", "If-Match", []string{""}},
		{"a DELETE with an empty If-Match", "DELETE", f, "If-Match", []string{""}},
		{"a workbench DELETE with an empty If-Match", "DELETE", wbURL, "If-Match", []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method != "DELETE" {
				body = strings.NewReader("two")
			}
			req := httpcall.New(t, tc.method, tc.url, body)
			req.Header[tc.header] = tc.values
			a := httpcall.Do(t, req)
			var env map[string]any
			if err := json.Unmarshal(a.Body, &env); err != nil || a.Status != http.StatusBadRequest || env["code"] != "InvalidArguments" {
				t.Fatalf("%d %s, want 400 InvalidArguments", a.Status, a.Body)
			}
			if d, _ := env["details"].(map[string]any); d["field"] != tc.header {
				t.Errorf("details.field %v, want %s: %s", d["field"], tc.header, a.Body)
			}
		})
	}
	if got := do(t, "GET", f, nil); got.status != 200 || string(got.body) != "one" {
		t.Fatalf("refused conditions changed the file: %d %q", got.status, got.body)
	}
}
