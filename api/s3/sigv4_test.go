package s3

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The test key; testdata/botocore_sign.py signs with the same one.
const (
	testKeyID  = "CAIRNTESTKEY0001"
	testSecret = "test-secret-0123456789abcdefghijklmnopqrstu"
)

type secrets map[string]string

func (s secrets) S3Secret(_ context.Context, id string) (string, bool, error) {
	v, ok := s[id]
	return v, ok, nil
}

var testSecrets = secrets{testKeyID: testSecret}

// at is a Verifier whose clock reads t.
func at(t time.Time) *Verifier {
	return &Verifier{Secrets: testSecrets, Now: func() time.Time { return t }}
}

// incoming turns a client request into what a server's handler sees: the request line's
// URI, Host promoted out of the header, the body unread.
func incoming(t *testing.T, r *http.Request) *http.Request {
	t.Helper()
	in := httptest.NewRequest(r.Method, r.URL.RequestURI(), r.Body)
	in.Host = r.URL.Host
	if r.Host != "" {
		in.Host = r.Host
	}
	in.Header = r.Header.Clone()
	in.ContentLength = r.ContentLength
	return in
}

// sdkSigned signs a request with the AWS SDK for Go v2's signer, as its S3 client does
// (no second escaping of the path), at when.
func sdkSigned(t *testing.T, method, target string, body []byte, header http.Header, when time.Time) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		r.Header[k] = v
	}
	hash := sha256Hex(body)
	if h := header.Get(headerContentSHA256); h != "" {
		hash = h
	}
	r.Header.Set(headerContentSHA256, hash)
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hash, "s3", "us-east-1", when,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
	return incoming(t, r)
}

var when = time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)

func TestRequestsTheSDKSignsVerify(t *testing.T) {
	for _, tc := range []struct {
		name, method, target string
		body                 []byte
		header               http.Header
	}{
		{"a put with a body", "PUT", "http://127.0.0.1:9000/bkt/dir/file.txt", []byte("hello"), http.Header{"Content-Type": {"text/plain"}}},
		{"a key with escaped bytes", "PUT", "http://127.0.0.1:9000/bkt/a%20b/%C3%BC%2B~%21%2A%27%28%29.txt", []byte("x"), nil},
		{"a list with an escaped query", "GET", "http://127.0.0.1:9000/bkt?list-type=2&prefix=a%2Fb&delimiter=%2F&start-after=%C3%BC%20x", nil, nil},
		{"a query parameter without a value", "GET", "http://127.0.0.1:9000/bkt?versioning", nil, nil},
		{"header values with runs of spaces", "PUT", "http://127.0.0.1:9000/bkt/k", []byte("b"), http.Header{"X-Amz-Meta-Note": {"  two   spaces  "}}},
		{"a header value with a tab", "PUT", "http://127.0.0.1:9000/bkt/k", []byte("b"), http.Header{"X-Amz-Meta-Cols": {"a\tb  c"}}},
		{"a range read", "GET", "http://127.0.0.1:9000/bkt/k", nil, http.Header{"Range": {"bytes=0-9"}}},
		{"an unsigned payload", "PUT", "http://127.0.0.1:9000/bkt/k", []byte("b"), http.Header{headerContentSHA256: {UnsignedPayload}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sdkSigned(t, tc.method, tc.target, tc.body, tc.header, when)
			s, err := at(when.Add(time.Minute)).Verify(r)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if s.AccessKeyID != testKeyID {
				t.Fatalf("access key %q, want %q", s.AccessKeyID, testKeyID)
			}
			b, _, err := s.Body(r)
			if err != nil {
				t.Fatalf("Body: %v", err)
			}
			got, err := io.ReadAll(b)
			if err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("body %q, %v; want %q", got, err, tc.body)
			}
		})
	}
}

func TestRequestsBotocoreSignsVerify(t *testing.T) {
	raw, err := os.ReadFile("testdata/botocore_signed.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Cases []struct {
			Method, URL, Body string
			Headers           map[string]string
		}
	}
	if err := json.Unmarshal(raw, &fixture); err != nil {
		t.Fatal(err)
	}
	if len(fixture.Cases) != 4 {
		t.Fatalf("%d cases in the fixture, want 4", len(fixture.Cases))
	}
	for _, c := range fixture.Cases {
		r, err := http.NewRequest(c.Method, c.URL, strings.NewReader(c.Body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c.Headers {
			r.Header.Set(k, v)
		}
		r.ContentLength = int64(len(c.Body))
		in := incoming(t, r)
		signedAt, err := time.Parse(amzDateLayout, c.Headers["X-Amz-Date"])
		if err != nil {
			t.Fatal(err)
		}
		// The empty PUT signs content-length:0, which the AWS SDK for Go v2's signer leaves
		// out of what it signs: the reason the gateway builds its canonical request itself.
		s, err := at(signedAt).Verify(in)
		if err != nil {
			t.Fatalf("%s %s: %v", c.Method, c.URL, err)
		}
		b, _, err := s.Body(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(b); err != nil || string(got) != c.Body {
			t.Fatalf("%s %s: body %q, %v", c.Method, c.URL, got, err)
		}
	}
}

func TestTamperedOrMisaddressedRequestsAreRefused(t *testing.T) {
	sign := func() *http.Request {
		return sdkSigned(t, "PUT", "http://127.0.0.1:9000/bkt/k?tagging", []byte("body"),
			http.Header{"Content-Type": {"text/plain"}, "X-Amz-Meta-A": {"1"}}, when)
	}
	for _, tc := range []struct {
		name   string
		change func(r *http.Request) *Verifier
		want   Code
	}{
		{"another path", func(r *http.Request) *Verifier { r.RequestURI = "/bkt/other?tagging"; return at(when) }, CodeSignatureDoesNotMatch},
		{"another query", func(r *http.Request) *Verifier {
			r.RequestURI, r.URL.RawQuery = "/bkt/k?tagging&x=1", "tagging&x=1"
			return at(when)
		}, CodeSignatureDoesNotMatch},
		{"a signed header changed", func(r *http.Request) *Verifier { r.Header.Set("Content-Type", "text/html"); return at(when) }, CodeSignatureDoesNotMatch},
		{"another method", func(r *http.Request) *Verifier { r.Method = "DELETE"; return at(when) }, CodeSignatureDoesNotMatch},
		{"another host", func(r *http.Request) *Verifier { r.Host = "evil.example"; return at(when) }, CodeSignatureDoesNotMatch},
		{"the wrong secret", func(r *http.Request) *Verifier {
			v := at(when)
			v.Secrets = secrets{testKeyID: "another-secret"}
			return v
		}, CodeSignatureDoesNotMatch},
		{"an unknown key", func(r *http.Request) *Verifier { v := at(when); v.Secrets = secrets{}; return v }, CodeInvalidAccessKeyID},
		{"an unsigned x-amz header added", func(r *http.Request) *Verifier {
			r.Header.Set("X-Amz-Copy-Source", "/bkt/secret")
			return at(when)
		}, CodeAccessDenied},
		{"a clock 16 minutes ahead", func(r *http.Request) *Verifier { return at(when.Add(16 * time.Minute)) }, CodeRequestTimeTooSkewed},
		{"a clock 16 minutes behind", func(r *http.Request) *Verifier { return at(when.Add(-16 * time.Minute)) }, CodeRequestTimeTooSkewed},
		{"another region", func(r *http.Request) *Verifier { v := at(when); v.Region = "eu-west-1"; return v }, CodeAuthorizationHeaderMalformed},
		{"no x-amz-date", func(r *http.Request) *Verifier { r.Header.Del(headerDate); return at(when) }, CodeAccessDenied},
		{"no x-amz-content-sha256", func(r *http.Request) *Verifier { r.Header.Del(headerContentSHA256); return at(when) }, CodeInvalidRequest},
		{"another algorithm", func(r *http.Request) *Verifier {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), algorithm, "AWS4-HMAC-SHA512", 1))
			return at(when)
		}, CodeAuthorizationHeaderMalformed},
		{"no signature", func(r *http.Request) *Verifier {
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:strings.Index(a, ", Signature=")])
			return at(when)
		}, CodeAuthorizationHeaderMalformed},
		{"anonymous", func(r *http.Request) *Verifier { r.Header.Del("Authorization"); return at(when) }, CodeAccessDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sign()
			if _, err := at(when).Verify(r); err != nil {
				t.Fatalf("the untouched request does not verify: %v", err)
			}
			r = sign()
			v := tc.change(r)
			_, err := v.Verify(r)
			if got := codeOf(err); got != tc.want {
				t.Fatalf("Verify: %v (code %q), want %s", err, got, tc.want)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Fatalf("the error names the secret: %v", err)
			}
		})
	}
}

func TestABodyThatDoesNotMatchItsHashIsRefusedAtItsEnd(t *testing.T) {
	r := sdkSigned(t, "PUT", "http://127.0.0.1:9000/bkt/k", []byte("the signed body"), nil, when)
	r.Body = io.NopCloser(strings.NewReader("a forged body!!"))
	s, err := at(when).Verify(r)
	if err != nil {
		t.Fatalf("Verify (headers only): %v", err)
	}
	b, _, err := s.Body(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(b); codeOf(err) != CodeXAmzContentSHA256Mismatch {
		t.Fatalf("reading a forged body: %v, want %s", err, CodeXAmzContentSHA256Mismatch)
	}
}

func TestPresignedURLsVerifyUntilTheyExpire(t *testing.T) {
	r, err := http.NewRequest("GET", "http://127.0.0.1:9000/bkt/a%20b.txt?X-Amz-Expires=60&response-content-type=text%2Fplain", nil)
	if err != nil {
		t.Fatal(err)
	}
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	signedURL, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, r, UnsignedPayload, "s3", "us-east-1", when,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err != nil {
		t.Fatal(err)
	}
	get := func() *http.Request {
		req, err := http.NewRequest("GET", signedURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		return incoming(t, req)
	}
	if _, err := at(when.Add(59 * time.Second)).Verify(get()); err != nil {
		t.Fatalf("a presigned URL within its expiry: %v", err)
	}
	if _, err := at(when.Add(61 * time.Second)).Verify(get()); codeOf(err) != CodeAccessDenied || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a presigned URL past its expiry: %v, want AccessDenied (expired)", err)
	}
	tampered := get()
	tampered.RequestURI = strings.Replace(tampered.RequestURI, "text%2Fplain", "text%2Fhtml", 1)
	tampered.URL.RawQuery = strings.Replace(tampered.URL.RawQuery, "text%2Fplain", "text%2Fhtml", 1)
	if _, err := at(when).Verify(tampered); codeOf(err) != CodeSignatureDoesNotMatch {
		t.Fatalf("a presigned URL with a changed parameter: %v, want SignatureDoesNotMatch", err)
	}
	long := get()
	long.URL.RawQuery = strings.Replace(long.URL.RawQuery, "X-Amz-Expires=60", "X-Amz-Expires=604801", 1)
	if _, err := at(when).Verify(long); codeOf(err) != CodeAuthorizationQueryParametersError {
		t.Fatalf("X-Amz-Expires past 7 days: %v, want AuthorizationQueryParametersError", err)
	}
}

func TestASignatureVersion2URLIsToldWhatToUse(t *testing.T) {
	r := httptest.NewRequest("GET", "http://127.0.0.1:9000/bkt/k?AWSAccessKeyId="+testKeyID+"&Expires=1893456000&Signature=abc%3D", nil)
	if _, err := at(when).Verify(r); codeOf(err) != CodeAccessDenied || !strings.Contains(err.Error(), "Signature Version 2") {
		t.Fatalf("a SigV2 presigned URL: %v, want AccessDenied naming Signature Version 2", err)
	}
}
