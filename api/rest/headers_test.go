package rest_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestHeaderValuesKeysAreCanonical: a file read sets its headers by their canonical keys
// without Header.Set, so every key in the handler's header map must be what
// http.CanonicalHeaderKey makes of it (Header.Get and Del find nothing else), and each
// value a slice of one value with no room beyond it.
func TestHeaderValuesKeysAreCanonical(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{})
	for _, f := range []struct{ path, contentType string }{{"input/a.txt", "text/plain; charset=utf-8"}, {"input/p.html", "text/html"}} {
		if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: f.path,
			Body: bytes.NewReader([]byte("<p>hi</p>")), SizeHint: 9, ContentType: f.contentType, CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	h := rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready})
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		for _, p := range []string{"input/a.txt", "input/p.html"} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(method, "/v1/agents/a/workbenches/w/files/"+p, nil))
			if w.Code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", method, p, w.Code, w.Body.Bytes())
			}
			for k, v := range w.Header() { // the handler's own map
				if k != http.CanonicalHeaderKey(k) {
					t.Errorf("%s %s: header key %q is not canonical (%q)", method, p, k, http.CanonicalHeaderKey(k))
				}
				if len(v) != 1 || cap(v) != 1 {
					t.Errorf("%s %s: header %q has values %q (cap %d), want one with no room beyond it", method, p, k, v, cap(v))
				}
			}
			for _, k := range []string{"ETag", "Cairn-Generation", "Cairn-Digest", "Last-Modified", "Content-Length", "X-Content-Type-Options"} {
				if w.Header().Get(k) == "" {
					t.Errorf("%s %s: no %s", method, p, k)
				}
			}
			if p == "input/p.html" && w.Header().Get("Content-Disposition") != `attachment; filename=p.html` {
				t.Errorf("%s %s: Content-Disposition %q", method, p, w.Header().Get("Content-Disposition"))
			}
		}
	}
}
