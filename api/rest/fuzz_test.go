package rest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// FuzzRequest drives arbitrary methods, escaped paths, query strings, conditional and
// range headers and bodies through the real handler: it never panics, never answers 500,
// and every error carries the contract's envelope.
func FuzzRequest(f *testing.F) {
	seeds := []struct{ method, path, query, ifMatch, rng, body string }{
		{"PUT", "/v1/agents/a/workbenches/w/files/input/x", "", "", "", "hello"},
		{"GET", "/v1/agents/a/workbenches/w/files/input/x", "", "", "bytes=1-2", ""},
		{"POST", "/v1/agents/a/workbenches/w/files/logs/l", "append", `"3"`, "", "line\n"},
		{"DELETE", "/v1/agents/a/workbenches/w/files/input/x", "", `"2"`, "", ""},
		{"GET", "/v1/agents/a/workbenches/w/list", "path=input&limit=2", "", "", ""},
		{"PUT", "/v1/agents/a/workbenches/w/files/input/%2e%2e/x", "", "", "", "x"},
		{"PUT", "/v1/agents/a/workbenches/w/files/a%2Fb", "", "*", "", "x"},
		{"GET", "/v1/agents/a/workbenches/w/files/input/x", "", "", "bytes=-0", ""},
		{"PUT", "/v1/agents/a/workbenches/w", "", "", "", ""},
		{"GET", "/v1/agents/%ff/workbenches/w/list", "cursor=abc.def", "", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.ifMatch, s.rng, s.body)
	}
	n := workbenchtest.New(f, workbench.Config{InlineMaxBytes: 4096})
	h := rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready})
	f.Fuzz(func(t *testing.T, method, path, query, ifMatch, rng, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path+query, " #?\r\n\x00") || strings.ContainsAny(method, " \r\n\x00/") || method == "" {
			return // not an HTTP request line a server can receive
		}
		req, err := http.NewRequest(method, "http://cairn"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.URL.RawQuery = query
		if ifMatch != "" && !strings.ContainsAny(ifMatch, "\r\n\x00") {
			req.Header.Set("If-Match", ifMatch)
		}
		if rng != "" && !strings.ContainsAny(rng, "\r\n\x00") {
			req.Header.Set("Range", rng)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s: %d %s", method, path, query, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			var env map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env["status"] != "error" || env["code"] == nil {
				t.Fatalf("%s %s: %d without envelope: %q", method, path, rec.Code, rec.Body.Bytes())
			}
		}
	})
}
