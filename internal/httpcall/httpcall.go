package httpcall

import (
	"io"
	"net/http"
	"testing"
)

// Answer is an answer as it came.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req with headers (name, value pairs) on http.DefaultClient and reads the
// whole answer.
func Do(t testing.TB, req *http.Request, headers ...string) Answer {
	t.Helper()
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// New builds a request with body (nil: none), failing the test when it cannot.
func New(t testing.TB, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
