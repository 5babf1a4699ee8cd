package httpcall

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDoSetsHeadersInOrderAndReadsTheWholeAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Got", r.Header.Get("X-A"))
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("body"))
	}))
	defer srv.Close()
	a := Do(t, New(t, http.MethodGet, srv.URL, nil), "X-A", "first", "X-A", "second")
	if a.Status != http.StatusTeapot || a.Header.Get("X-Got") != "second" || string(a.Body) != "body" {
		t.Fatalf("answer %d %q %q", a.Status, a.Header.Get("X-Got"), a.Body)
	}
}
