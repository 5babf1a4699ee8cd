package s3

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestResponseOverridesAreCheckedHeaderValues: a read's response-* parameters set its
// answer's headers only as header values: response-expires must be an HTTP date
// (answered in IMF-fixdate), and a value holding CR or LF, which would start a header of
// its own, or any other control character (C1's NEL too), a Unicode line or paragraph
// separator, or bytes past ASCII that are no UTF-8, is InvalidArgument naming the
// parameter, and no header of it is answered. Other UTF-8 text is answered as sent.
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
		"response-content-language":    {"response-content-language": {"en\x00X-Injected: 1"}},
		// Past ASCII: httpguts.ValidHeaderFieldValue takes each of these as obs-text.
		"response-content-type (NEL)":                  {"response-content-type": {"text/plain\u0085X-Injected: 1"}},
		"response-content-disposition (U+2028)":        {"response-content-disposition": {"attachment\u2028X-Injected: 1"}},
		"response-content-encoding (U+2029)":           {"response-content-encoding": {"identity\u2029X-Injected: 1"}},
		"response-cache-control (C1 U+009B)":           {"response-cache-control": {"no-cache\u009b"}},
		"response-content-language (no UTF-8)":         {"response-content-language": {"en\x85X-Injected: 1"}},
		"response-content-disposition (Latin-1 bytes)": {"response-content-disposition": {"attachment; filename=\"r\xe9sum\xe9.pdf\""}},
	} {
		param, _, _ := strings.Cut(name, " ")
		resp, body := get(q)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "<Code>InvalidArgument</Code>") || !strings.Contains(body, param) {
			t.Errorf("%s=%q: %d %s, want 400 InvalidArgument naming %s", name, q.Get(param), resp.StatusCode, body, param)
		}
		if resp.Header.Get("X-Injected") != "" || resp.Header.Get("Expires") != "" || resp.Header.Get("Content-Disposition") != "" {
			t.Errorf("%s=%q answered headers %v", name, q.Get(param), resp.Header)
		}
	}
	disposition := "attachment; filename=\"résumé\u00a0✓.pdf\""
	resp, body = get(url.Values{"response-content-disposition": {disposition}})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Disposition") != disposition {
		t.Errorf("response-content-disposition in UTF-8: %d, Content-Disposition %q: %s", resp.StatusCode, resp.Header.Get("Content-Disposition"), body)
	}
	resp, _ = signedDo(t, srv, "AGENTA", http.MethodHead, "/ovr/input/page.html?response-expires=never", nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HEAD with response-expires=never: %d, want 400", resp.StatusCode)
	}
}

// TestAnEmptyResponseOverrideSetsNothing: an empty response-* parameter is ignored, the
// same for all six (response-expires, whose value is parsed, as the others): the read
// answers 200 with the object's own Content-Type and no header the empty parameter names,
// not even an empty one; a HEAD too.
func TestAnEmptyResponseOverrideSetsNothing(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	makeBucket(t, c, "ovr")
	if _, err := c.PutObject(t.Context(), &awss3.PutObjectInput{Bucket: aws.String("ovr"), Key: aws.String("input/page.html"),
		Body: strings.NewReader("<p>hi</p>"), ContentType: aws.String("text/html")}); err != nil {
		t.Fatal(err)
	}
	for _, o := range overrideHeaders {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			resp, body := signedDo(t, srv, "AGENTA", method, "/ovr/input/page.html?"+o.param+"=", nil)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s with %s=: %d %s, want 200", method, o.param, resp.StatusCode, body)
				continue
			}
			if got := resp.Header.Get("Content-Type"); got != "text/html" {
				t.Errorf("%s with %s=: Content-Type %q, want the object's text/html", method, o.param, got)
			}
			if o.header != "Content-Type" {
				if v, ok := resp.Header[o.header]; ok {
					t.Errorf("%s with %s=: answered %s %q, want none", method, o.param, o.header, v)
				}
			}
		}
	}
}
