package s3

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestResponseOverridesAreCheckedHeaderValues: a read's response-* parameters set its
// answer's headers only as header values: response-expires must be an HTTP date
// (answered in IMF-fixdate), and a value holding CR or LF, which would start a header of
// its own, is InvalidArgument naming the parameter, and no header of it is answered.
func TestResponseOverridesAreCheckedHeaderValues(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	makeBucket(t, c, "ovr")
	put(t, c, "ovr", "input/page.html", []byte("<p>hi</p>"))
	get := func(q url.Values) (*http.Response, string) {
		resp, body := signedDo(t, srv, "AGENTA", http.MethodGet, "/ovr/input/page.html?"+q.Encode(), nil)
		return resp, string(body)
	}

	resp, body := get(url.Values{"response-expires": {"Wednesday, 21-Oct-15 07:28:00 GMT"}, "response-cache-control": {"no-cache"}})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Expires") != "Wed, 21 Oct 2015 07:28:00 GMT" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("a valid response-expires: %d, Expires %q, Cache-Control %q: %s", resp.StatusCode, resp.Header.Get("Expires"), resp.Header.Get("Cache-Control"), body)
	}

	for name, q := range map[string]url.Values{
		"response-expires":             {"response-expires": {"tomorrow"}},
		"response-content-type":        {"response-content-type": {"text/plain\r\nX-Injected: 1"}},
		"response-content-disposition": {"response-content-disposition": {"attachment\nX-Injected: 1"}},
		"response-cache-control":       {"response-cache-control": {"no-cache\rX-Injected: 1"}},
	} {
		resp, body := get(q)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "<Code>InvalidArgument</Code>") || !strings.Contains(body, name) {
			t.Errorf("%s=%q: %d %s, want 400 InvalidArgument naming %s", name, q.Get(name), resp.StatusCode, body, name)
		}
		if resp.Header.Get("X-Injected") != "" || resp.Header.Get("Expires") != "" {
			t.Errorf("%s=%q answered headers %v", name, q.Get(name), resp.Header)
		}
	}
	resp, _ = signedDo(t, srv, "AGENTA", http.MethodHead, "/ovr/input/page.html?response-expires=never", nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HEAD with response-expires=never: %d, want 400", resp.StatusCode)
	}
}
