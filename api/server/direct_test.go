package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/blob/s3/s3test"
)

// With --s3-direct-reads, GET ?redirect of a one-segment uncompressed file answers 307 to
// a presigned MinIO URL whose bytes are the file's (checked against Cairn-Digest); a
// compressible body (stored zstd), an inline one, or a node without the flag serve the
// bytes themselves.
func TestDirectReadsRedirectToAPresignedObjectURL(t *testing.T) {
	srv := s3test.Start(t)
	cfg := s3Config(t, srv, s3test.Bucket(), "")
	cfg.S3DirectReads = true
	n := openReady(t, cfg, testCreds)
	h := n.Handler()

	random := randomBody(1 << 20)
	putFile(t, h, "random.bin", random)
	putFile(t, h, "text.txt", bytes.Repeat([]byte("compressible line\n"), 60_000)) // stored zstd
	putFile(t, h, "tiny.txt", []byte("inline"))

	get := func(name, query string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "/v1/agents/demo/workbenches/w1/files/input/"+name+query, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	resp := get("random.bin", "?redirect")
	if resp.StatusCode != http.StatusTemporaryRedirect {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET ?redirect of a 1 MiB random file: %d %s, want 307", resp.StatusCode, b)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http://"+srv.Endpoint+"/") || !strings.Contains(loc, "X-Amz-Signature=") || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("Location %q, Cache-Control %q: want a presigned URL of the object store, not cached", loc, resp.Header.Get("Cache-Control"))
	}
	direct, err := http.Get(loc) // no credentials: the signature is in the URL
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(direct.Body)
	direct.Body.Close()
	sum := sha256.Sum256(got)
	if direct.StatusCode != http.StatusOK || !bytes.Equal(got, random) || resp.Header.Get("Cairn-Digest") != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("the presigned URL answered %d with %d bytes (equal: %v), Cairn-Digest %q", direct.StatusCode, len(got), bytes.Equal(got, random), resp.Header.Get("Cairn-Digest"))
	}
	for _, name := range []string{"text.txt", "tiny.txt"} {
		if r := get(name, "?redirect"); r.StatusCode != http.StatusOK || r.Header.Get("Location") != "" {
			t.Errorf("GET ?redirect of %s (compressed or inline): %d, Location %q; want the bytes (200)", name, r.StatusCode, r.Header.Get("Location"))
		}
	}
	if r := get("random.bin", "?redirect=false"); r.StatusCode != http.StatusOK {
		t.Errorf("?redirect=false: %d, want 200", r.StatusCode)
	}
	if r := get("random.bin", "?redirect=maybe"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("?redirect=maybe: %d, want 400", r.StatusCode)
	}

	// Off by default: the same request is served through the node.
	off := s3Config(t, srv, s3test.Bucket(), "")
	n2 := openReady(t, off, testCreds)
	putFile(t, n2.Handler(), "random.bin", random)
	code, b := do(t, n2.Handler(), http.MethodGet, "/v1/agents/demo/workbenches/w1/files/input/random.bin?redirect", nil)
	if code != http.StatusOK || !bytes.Equal(b, random) {
		t.Fatalf("a node without --s3-direct-reads: %d, %d bytes; want 200 and the body", code, len(b))
	}
}
