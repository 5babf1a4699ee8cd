package s3

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// zeros is an endless body of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// writeFirst sends method target with a body of size zero bytes, signed by key with
// UNSIGNED-PAYLOAD, as a client that writes its whole request before it reads the answer
// (urllib3, under boto3 and the aws CLI, does so for a request without Expect:
// 100-continue), on a TLS connection of its own. It returns the answer, or the error
// that cut the request or the answer off.
func writeFirst(t *testing.T, srv *httptest.Server, key, method, target string, size int64) (*http.Response, string, error) {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), method, srv.URL+target, io.LimitReader(zeros{}, size))
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = size
	r.Header.Set(headerContentSHA256, UnsignedPayload)
	signRequest(t, key, r, UnsignedPayload)
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A bound on the whole exchange, so a gateway that never answers fails the test
	// rather than hanging it; no assertion depends on it.
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if err := r.Write(conn); err != nil {
		return nil, "", fmt.Errorf("writing the request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), r)
	if err != nil {
		return nil, "", fmt.Errorf("reading the answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("reading the answer's body: %w", err)
	}
	return resp, string(body), nil
}

// TestARefusedBodyStillGetsItsAnswer: a request refused for the length its body declares
// (a DeleteObjects document of 50 MiB: MaxMessageLengthExceeded) is answered before its
// body is read, and a client that writes its whole body before it reads gets that answer,
// not a connection reset: the gateway reads what is left of the body (to a bound) after
// the answer. The same holds for the other XML documents refused by their declared length,
// and a client that reads while it writes (Go's) gets the answer for a body past the
// bound too (a PUT declared past MaxPutSize: EntityTooLarge). The bucket is untouched.
func TestARefusedBodyStillGetsItsAnswer(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	makeBucket(t, c, "big")
	put(t, c, "big", "input/keep", []byte("keep"))
	id := createUpload(t, c, "big", "input/upload")

	for _, tc := range []struct {
		name, method, target string
		size                 int64
		code                 string
	}{
		{"a DeleteObjects of 50 MiB", http.MethodPost, "/big?delete", 50 << 20, "MaxMessageLengthExceeded"},
		{"a CompleteMultipartUpload past its bound", http.MethodPost, "/big/input/upload?uploadId=" + url.QueryEscape(id), 3 * maxCompleteBody, "MaxMessageLengthExceeded"},
		{"a PutBucketVersioning past its bound", http.MethodPut, "/big?versioning", 3 * maxXMLBodyBytes, "MaxMessageLengthExceeded"},
		{"a CreateBucketConfiguration past its bound", http.MethodPut, "/big2", 16 << 20, "MaxMessageLengthExceeded"},
	} {
		resp, body, err := writeFirst(t, srv, "AGENTA", tc.method, tc.target, tc.size)
		if err != nil {
			t.Errorf("%s, written whole before the answer is read: %v, want 400 %s", tc.name, err, tc.code)
			continue
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "<Code>"+tc.code+"</Code>") {
			t.Errorf("%s, written whole before the answer is read: %d %s, want 400 %s", tc.name, resp.StatusCode, body, tc.code)
		}
	}

	// Go's client reads the answer while it writes: it gets the answer and stops sending,
	// even for a body the gateway will not read to its end.
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/big/input/huge", io.LimitReader(zeros{}, MaxPutSize+1))
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = MaxPutSize + 1
	r.Header.Set(headerContentSHA256, UnsignedPayload)
	resp, body := sendSigned(t, srv, "AGENTA", r, UnsignedPayload)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>EntityTooLarge</Code>") {
		t.Errorf("a PUT declared past MaxPutSize: %d %s, want 400 EntityTooLarge", resp.StatusCode, body)
	}

	if got, _ := getAll(t, c, "big", "input/keep"); string(got) != "keep" {
		t.Fatalf("the object a refused DeleteObjects may have named: %q", got)
	}
}
