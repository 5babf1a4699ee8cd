package rest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/mem"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// faultMode says how faultyBlobs answers Get.
type faultMode int

const (
	faultNone       faultMode = iota
	faultGet                  // Get fails: the object store is unreachable
	faultFirstRead            // Get succeeds, the first Read fails (the connection drops)
	faultAfterBytes           // the reader yields a few bytes, then fails
	faultLaterGets            // the first Get since set works, later ones fail after a few bytes
)

// faultyBlobs is a real in-memory blob store whose Get a test can make fail, and which
// remembers the keys it stored so that a test can delete an object behind Cairn's back.
type faultyBlobs struct {
	blob.Store
	mu   sync.Mutex
	mode faultMode
	gets int // Gets since set
	keys []blob.Key
}

func (f *faultyBlobs) set(m faultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = m
	f.gets = 0
}

func (f *faultyBlobs) stored() []blob.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]blob.Key(nil), f.keys...)
}

func (f *faultyBlobs) Put(ctx context.Context, key blob.Key, data blob.Hashed) (blob.PutResult, error) {
	res, err := f.Store.Put(ctx, key, data)
	if err == nil {
		f.mu.Lock()
		f.keys = append(f.keys, key)
		f.mu.Unlock()
	}
	return res, err
}

func (f *faultyBlobs) Get(ctx context.Context, key blob.Key, offset, length int64) (io.ReadCloser, error) {
	f.mu.Lock()
	mode := f.mode
	f.gets++
	if mode == faultLaterGets {
		mode = faultNone
		if f.gets > 1 {
			mode = faultAfterBytes
		}
	}
	f.mu.Unlock()
	down := fmt.Errorf("blob/test: get %s: connection refused: %w", key, blob.ErrUnavailable)
	switch mode {
	case faultGet:
		return nil, down
	case faultFirstRead:
		return io.NopCloser(&failingReader{err: down}), nil
	case faultAfterBytes:
		rc, err := f.Store.Get(ctx, key, offset, length)
		if err != nil {
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{io.MultiReader(io.LimitReader(rc, 100), &failingReader{err: down}), rc}, nil
	}
	return f.Store.Get(ctx, key, offset, length)
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

// newFaultyServer is newServer over a blob store the test controls. Bodies above 16 bytes
// live in the blob store.
func newFaultyServer(t *testing.T) (*httptest.Server, *faultyBlobs) {
	t.Helper()
	sh := workbenchtest.Replica(t, shard.Config{})
	bs := &faultyBlobs{Store: mem.New()}
	t.Cleanup(func() { bs.Close() })
	svc, err := workbench.New(sh, bs, workbench.Config{InlineMaxBytes: 16, CursorKey: workbenchtest.CursorKey})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.NewHandler(svc, rest.Options{Ready: sh.Ready, Registry: prometheus.NewRegistry()}))
	t.Cleanup(srv.Close)
	return srv, bs
}

func TestReadsAnswerBlobStoreFailuresWithTheErrorEnvelope(t *testing.T) {
	srv, bs := newFaultyServer(t)
	data := make([]byte, 64<<10)
	rand.Read(data)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/outputs/data.bin"
	expect(t, do(t, "PUT", u, bytes.NewReader(data)), 201, "")

	for _, tc := range []struct {
		name   string
		mode   faultMode
		header []string
	}{
		{"a Get that fails is 503 ObjectUnavailable, not 200", faultGet, nil},
		{"a first Read that fails is 503 ObjectUnavailable, not 200", faultFirstRead, nil},
		{"a ranged read whose Get fails is 503, not 206", faultGet, []string{"Range", "bytes=1000-1999"}},
		{"a ranged read whose first Read fails is 503, not 206", faultFirstRead, []string{"Range", "bytes=-10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs.set(tc.mode)
			defer bs.set(faultNone)
			r := do(t, "GET", u, nil, tc.header...)
			expect(t, r, http.StatusServiceUnavailable, workbench.CodeObjectUnavailable)
			if r.json["retryable"] != true {
				t.Errorf("retryable = %v, want true: %s", r.json["retryable"], r.body)
			}
			if r.header.Get("Retry-After") == "" {
				t.Error("no Retry-After header")
			}
			for _, h := range []string{"ETag", "Content-Range", "Cairn-Digest"} {
				if v := r.header.Get(h); v != "" {
					t.Errorf("the error answer carries the body's %s: %q", h, v)
				}
			}
		})
	}

	t.Run("HEAD does not touch the object store", func(t *testing.T) {
		bs.set(faultGet)
		defer bs.set(faultNone)
		r := do(t, "HEAD", u, nil)
		if r.status != http.StatusOK || r.header.Get("Content-Length") != strconv.Itoa(len(data)) {
			t.Fatalf("HEAD: %d, Content-Length %q", r.status, r.header.Get("Content-Length"))
		}
	})

	t.Run("a segment whose reader fails after a few bytes is 503 before any byte is sent", func(t *testing.T) {
		bs.set(faultAfterBytes)
		defer bs.set(faultNone)
		expect(t, do(t, "GET", u, nil), http.StatusServiceUnavailable, workbench.CodeObjectUnavailable)
	})

	t.Run("a failure after the body started cuts the stream short of Content-Length", func(t *testing.T) {
		// Several segments: the first is verified and sent, the next one fails. Longer than
		// the longest chunk, so that it is never one segment (a 12 MiB body of random bytes
		// sometimes was: content-defined chunking found no cut point, and the read passed).
		data := make([]byte, blob.ChunkMaxBytes+blob.SingleSegmentMaxBytes/2)
		rand.Read(data)
		u := srv.URL + "/v1/agents/a/workbenches/w/files/outputs/big.bin"
		expect(t, do(t, "PUT", u, bytes.NewReader(data)), 201, "")
		bs.set(faultLaterGets)
		defer bs.set(faultNone)
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200 (the failure comes after the first bytes)", resp.StatusCode)
		}
		b, err := io.ReadAll(resp.Body)
		if err == nil || len(b) >= len(data) {
			t.Fatalf("read %d of %d bytes with err %v, want a short body and an error", len(b), len(data), err)
		}
		if !bytes.Equal(b, data[:len(b)]) {
			t.Fatal("the bytes sent before the failure differ from the file's")
		}
		// The aborted handler was counted out: only the /metrics request is in flight.
		m := do(t, "GET", srv.URL+"/metrics", nil)
		if !strings.Contains(string(m.body), "\ncairn_http_requests_in_flight 1\n") {
			t.Errorf("after the cut stream, /metrics does not say one request is in flight:\n%s", m.body)
		}
	})

	t.Run("the file reads whole once the store is back", func(t *testing.T) {
		if r := do(t, "GET", u, nil); r.status != 200 || !bytes.Equal(r.body, data) {
			t.Fatalf("GET: %d, %d bytes", r.status, len(r.body))
		}
	})

	t.Run("a missing object is 500 Internal saying it is missing, not a verification failure", func(t *testing.T) {
		for _, k := range bs.stored() {
			if err := bs.Store.Delete(t.Context(), k); err != nil {
				t.Fatal(err)
			}
		}
		r := do(t, "GET", u, nil)
		expect(t, r, http.StatusInternalServerError, workbench.CodeInternal)
		msg, _ := r.json["message"].(string)
		if !strings.Contains(msg, "missing") || strings.Contains(msg, "verification") {
			t.Fatalf("message %q, want one saying the object is missing", msg)
		}
		if r.json["retryable"] != false {
			t.Errorf("retryable = %v, want false", r.json["retryable"])
		}
	})
}
