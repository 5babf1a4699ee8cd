package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/blob/s3/s3test"
)

// proxy sits between a Store and MinIO: it records every request and answers the ones its
// fault function picks with an S3 error of its own instead of forwarding them.
type proxy struct {
	srv  *httptest.Server
	addr string // host:port

	mu        sync.Mutex
	fault     func(r *http.Request) *s3Error // nil result: forward
	seen      []string                       // "<METHOD> <path>?<query>" of every request
	stripMeta bool                           // remove user metadata from listings, as AWS S3 sends them
}

// s3Error is an error response the proxy sends: status and S3 error code.
type s3Error struct {
	status int
	code   string
}

// proxied returns a proxy in front of srv and the configuration of a store in a fresh
// bucket of srv that goes through it.
func proxied(t *testing.T, srv *s3test.Server) (*proxy, s3.Config) {
	t.Helper()
	p := newProxy(t, srv.Endpoint)
	cfg := srv.Config(s3test.Bucket())
	cfg.Endpoint = p.addr
	return p, cfg
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	tr := &http.Transport{}
	rp.Transport = tr
	rp.ModifyResponse = func(resp *http.Response) error {
		p.mu.Lock()
		strip := p.stripMeta
		p.mu.Unlock()
		if !strip || !isListing(resp.Request) {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		body = userMetadata.ReplaceAll(body, nil)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	// The client signed the request for the proxy's host: keep the Host header as is.
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		fault := p.fault
		p.mu.Unlock()
		var e *s3Error
		if fault != nil {
			e = fault(r)
		}
		if e == nil {
			rp.ServeHTTP(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		// HEAD responses have no body; MinIO sends the code in a header too.
		w.Header().Set("X-Minio-Error-Code", e.code)
		w.WriteHeader(e.status)
		// Like real servers, the body names the bucket and the object: none of it may
		// reach an error message.
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+
			`<Error><Code>%s</Code><Message>injected failure for %s</Message><Resource>%s</Resource></Error>`,
			e.code, r.URL.Path, r.URL.Path)
	}))
	p.addr = strings.TrimPrefix(p.srv.URL, "http://")
	t.Cleanup(func() {
		p.srv.Close()
		tr.CloseIdleConnections()
	})
	return p
}

var userMetadata = regexp.MustCompile(`<UserMetadata>.*?</UserMetadata>`)

// setFault sets the fault function; nil forwards everything.
func (p *proxy) setFault(f func(r *http.Request) *s3Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// count returns how many requests seen so far match.
func (p *proxy) count(match func(req string) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.seen {
		if match(r) {
			n++
		}
	}
	return n
}

// requests returns the requests seen so far.
func (p *proxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = nil
}

// faultN answers the first n requests that match with e, and forwards the rest.
func faultN(n int, e s3Error, match func(r *http.Request) bool) func(r *http.Request) *s3Error {
	var mu sync.Mutex
	return func(r *http.Request) *s3Error {
		if !match(r) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return nil
		}
		n--
		return &e
	}
}

// Requests of each Store method.
func isObjectPut(r *http.Request) bool    { return r.Method == http.MethodPut }
func isObjectGet(r *http.Request) bool    { return r.Method == http.MethodGet && !isListing(r) }
func isObjectHead(r *http.Request) bool   { return r.Method == http.MethodHead }
func isObjectDelete(r *http.Request) bool { return r.Method == http.MethodDelete }
func isListing(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Query().Has("list-type")
}

// checkUnavailable checks that err is a retryable ObjectUnavailableError whose message
// names none of secrets.
func checkUnavailable(t *testing.T, what string, err error, secrets ...string) *s3.ObjectUnavailableError {
	t.Helper()
	if !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("%s: %v, want an error wrapping blob.ErrUnavailable", what, err)
		return nil
	}
	var u *s3.ObjectUnavailableError
	if !errors.As(err, &u) {
		t.Errorf("%s: %v (%T), want an *s3.ObjectUnavailableError", what, err, err)
		return nil
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("%s: message %q names %q", what, err.Error(), s)
		}
	}
	return u
}

// secretsOf lists what an error message must never contain for key in cfg's store.
func secretsOf(s *s3.Store, cfg s3.Config, keys ...blob.Key) []string {
	out := []string{cfg.Bucket}
	for _, ep := range []string{cfg.Endpoint} {
		host, port, _ := net.SplitHostPort(ep)
		out = append(out, ep, host, ":"+port)
	}
	for _, k := range keys {
		out = append(out, k.Root, k.Digest.String(), k.Digest.String()[:12], s.ObjectName(k))
	}
	return out
}

func TestTransientFailuresAreRetried(t *testing.T) {
	srv := s3test.Start(t)
	p, cfg := proxied(t, srv)
	s := s3test.Open(t, cfg)

	stored := []byte("a blob that is there")
	storedKey := blobtest.KeyOf("tenantq7", stored)
	blobtest.Put(t, s, storedKey, stored)

	ops := []struct {
		name  string
		match func(r *http.Request) bool
		call  func(ctx context.Context, i int) error
	}{
		{"put", isObjectPut, func(ctx context.Context, i int) error {
			data := []byte(fmt.Sprintf("new blob %d", i))
			_, err := s.Put(ctx, blobtest.KeyOf("tenantq7", data), blob.Hash(data))
			return err
		}},
		{"get", isObjectGet, func(ctx context.Context, _ int) error {
			_, err := blobtest.Read(ctx, s, storedKey, 0, -1)
			return err
		}},
		{"stat", isObjectHead, func(ctx context.Context, _ int) error {
			_, err := s.Stat(ctx, storedKey)
			return err
		}},
		{"delete", isObjectDelete, func(ctx context.Context, _ int) error {
			return s.Delete(ctx, blobtest.KeyOf("tenantq7", []byte("never stored")))
		}},
		{"list", isListing, func(ctx context.Context, _ int) error {
			return s.List(ctx, "tenantq7", func(blob.Key, blob.Info) error { return nil })
		}},
	}
	failures := []struct {
		name      string
		err       s3Error
		transient bool
	}{
		{"503 SlowDown", s3Error{http.StatusServiceUnavailable, "SlowDown"}, true},
		{"500 InternalError", s3Error{http.StatusInternalServerError, "InternalError"}, true},
		{"429 without an S3 code", s3Error{http.StatusTooManyRequests, "TooManyRequests"}, true},
		{"403 AccessDenied", s3Error{http.StatusForbidden, "AccessDenied"}, false},
	}
	call := 0
	for _, op := range ops {
		for _, f := range failures {
			if f.transient {
				t.Run(op.name+" succeeds after two of "+f.name, func(t *testing.T) {
					p.setFault(faultN(2, f.err, op.match))
					defer p.setFault(nil)
					call++
					if err := op.call(t.Context(), call); err != nil {
						t.Fatalf("%s with two injected failures and 3 attempts: %v", op.name, err)
					}
				})
			}
			t.Run(op.name+" gives up on persistent "+f.name, func(t *testing.T) {
				p.setFault(faultN(1000, f.err, op.match))
				defer p.setFault(nil)
				p.reset()
				call++
				err := op.call(t.Context(), call)
				u := checkUnavailable(t, op.name, err, append(secretsOf(s, cfg, storedKey), srv.Endpoint, "injected")...)
				if u == nil {
					return
				}
				wantAttempts := 1
				if f.transient {
					wantAttempts = cfg.Retry.MaxAttempts
				}
				if u.Op != op.name || u.Transient != f.transient || u.StatusCode != f.err.status || u.Code != f.err.code || u.Attempts != wantAttempts {
					t.Errorf("%s: %+v, want Op %s, Transient %v, StatusCode %d, Code %s, Attempts %d",
						op.name, *u, op.name, f.transient, f.err.status, f.err.code, wantAttempts)
				}
				if n := p.count(func(string) bool { return true }); op.name != "put" && n != wantAttempts {
					t.Errorf("%s: the store sent %d requests, want %d", op.name, n, wantAttempts)
				}
			})
		}
	}
}

func TestRetriesEndWithTheContext(t *testing.T) {
	srv := s3test.Start(t)
	p, cfg := proxied(t, srv)
	cfg.Retry = s3.RetryConfig{MaxAttempts: 1000, BaseDelay: time.Hour, MaxDelay: time.Hour}
	// With these retries an Open that meets a transient failure would wait for hours.
	openCtx, cancelOpen := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelOpen()
	s, err := s3.Open(openCtx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	p.setFault(faultN(1000, s3Error{http.StatusServiceUnavailable, "SlowDown"}, func(*http.Request) bool { return true }))

	// Long enough for a first attempt to come back, whatever the machine's load: a ctx that
	// ends during the first attempt yields a plain ctx error (nothing was retried).
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	data := []byte("never stored")
	_, err = s.Put(ctx, blobtest.KeyOf("r1", data), blob.Hash(data))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Put while the store throttles past the deadline: %v, want an error wrapping DeadlineExceeded", err)
	}
	checkUnavailable(t, "Put past the deadline", err, secretsOf(s, cfg, blobtest.KeyOf("r1", data))...)
}

// The store going down: every call fails with a generic ObjectUnavailableError, and works
// again once the store is back.
func TestAStoreThatIsDownIsUnavailable(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config(s3test.Bucket())
	s := s3test.Open(t, cfg)

	const root = "tenantq7"
	stored := blobtest.TextBytes(1, 64<<10)
	storedKey := blobtest.KeyOf(root, stored)
	blobtest.Put(t, s, storedKey, stored)
	big := blobtest.RandomBytes(7, 24<<20) // more than the socket buffers of a connection hold
	bigKey := blobtest.KeyOf(root, big)
	blobtest.Put(t, s, bigKey, big)
	fresh := []byte("put while the store is down")
	freshKey := blobtest.KeyOf(root, fresh)
	secrets := secretsOf(s, cfg, storedKey, bigKey, freshKey)

	reader, err := s.Get(t.Context(), bigKey, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := io.ReadFull(reader, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}

	srv.Stop()

	calls := []struct {
		name string
		call func() error
	}{
		{"Put of a new blob", func() error { _, err := s.Put(t.Context(), freshKey, blob.Hash(fresh)); return err }},
		{"Put of a stored blob", func() error { _, err := s.Put(t.Context(), storedKey, blob.Hash(stored)); return err }},
		{"Get", func() error { _, err := blobtest.Read(t.Context(), s, storedKey, 0, -1); return err }},
		{"ranged Get", func() error { _, err := blobtest.Read(t.Context(), s, storedKey, 10, 10); return err }},
		{"Stat", func() error { _, err := s.Stat(t.Context(), storedKey); return err }},
		{"Delete", func() error { return s.Delete(t.Context(), storedKey) }},
		{"List", func() error { return s.List(t.Context(), root, func(blob.Key, blob.Info) error { return nil }) }},
		{"Read of a reader opened before", func() error { _, err := io.ReadAll(reader); return err }},
		{"Open", func() error {
			st, err := s3.Open(t.Context(), cfg)
			if err == nil {
				st.Close()
			}
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name+" fails while the store is down", func(t *testing.T) {
			if u := checkUnavailable(t, c.name, c.call(), secrets...); u != nil && !u.Transient {
				t.Errorf("%s: %+v, want Transient", c.name, *u)
			}
		})
	}

	srv.Restart()

	t.Run("every call works once the store is back", func(t *testing.T) {
		if res := blobtest.Put(t, s, freshKey, fresh); !res.Created {
			t.Errorf("Put of a new blob after the restart: Created = false")
		}
		if got, err := blobtest.Read(t.Context(), s, storedKey, 0, -1); err != nil || string(got) != string(stored) {
			t.Errorf("Get after the restart: %d bytes, %v", len(got), err)
		}
		if _, err := s.Stat(t.Context(), bigKey); err != nil {
			t.Errorf("Stat after the restart: %v", err)
		}
		n := 0
		if err := s.List(t.Context(), root, func(blob.Key, blob.Info) error { n++; return nil }); err != nil || n != 3 {
			t.Errorf("List after the restart: %d blobs, %v; want 3", n, err)
		}
		if err := s.Delete(t.Context(), storedKey); err != nil {
			t.Errorf("Delete after the restart: %v", err)
		}
	})
}

// incompleteUploads lists the multipart uploads in progress in bucket.
func incompleteUploads(t *testing.T, c *minio.Client, bucket string) []string {
	t.Helper()
	var ids []string
	for u := range c.ListIncompleteUploads(t.Context(), bucket, "", true) {
		if u.Err != nil {
			t.Fatalf("list incomplete uploads: %v", u.Err)
		}
		ids = append(ids, u.Key+" "+u.UploadID)
	}
	return ids
}

func isPart(req string) bool {
	return strings.HasPrefix(req, "PUT ") && strings.Contains(req, "partNumber=")
}
func isInitiate(req string) bool {
	return strings.HasPrefix(req, "POST ") && strings.Contains(req, "uploads")
}
func isAbort(req string) bool {
	return strings.HasPrefix(req, "DELETE ") && strings.Contains(req, "uploadId=")
}
func isComplete(req string) bool {
	return strings.HasPrefix(req, "POST ") && strings.Contains(req, "uploadId=")
}

func TestLargeBlobsGoUpInParts(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	p, cfg := proxied(t, srv)
	cfg.PartSizeBytes = s3.MinPartSizeBytes
	s := s3test.Open(t, cfg)

	data := blobtest.RandomBytes(3, 12<<20+5)
	key := blobtest.KeyOf("r1", data)
	res := blobtest.Put(t, s, key, data)
	if !res.Created || res.Encoding != blob.EncodingIdentity || res.StoredBytes != int64(len(data)) {
		t.Errorf("Put = %+v, want a created identity blob of %d bytes", res, len(data))
	}
	if n := p.count(isPart); n != 3 {
		t.Errorf("a %d-byte blob went up in %d parts of %d bytes, want 3", len(data), n, cfg.PartSizeBytes)
	}
	if p.count(isInitiate) != 1 || p.count(isComplete) != 1 {
		t.Errorf("requests %v: want one multipart upload, completed", p.requests())
	}
	if ids := incompleteUploads(t, raw, cfg.Bucket); len(ids) != 0 {
		t.Errorf("incomplete uploads after a successful Put: %v", ids)
	}
	got, err := blobtest.Read(t.Context(), s, key, 5<<20, 10)
	if err != nil || string(got) != string(data[5<<20:5<<20+10]) {
		t.Errorf("ranged Get across a part boundary: %v", err)
	}
	info, err := s.Stat(t.Context(), key)
	if err != nil || info.Size != int64(len(data)) || info.Encoding != blob.EncodingIdentity {
		t.Errorf("Stat = %+v, %v", info, err)
	}

	p.reset()
	if res := blobtest.Put(t, s, key, data); res.Created {
		t.Errorf("second Put of a large blob: Created = true")
	}
	// Put-if-absent reads the blob back to verify it before it trusts it; it uploads nothing.
	if n := p.count(func(req string) bool { return !strings.HasPrefix(req, "HEAD ") && !strings.HasPrefix(req, "GET ") }); n != 0 {
		t.Errorf("second Put of a stored blob sent %d requests besides HEAD and GET: %v", n, p.requests())
	}
}

func TestAFailedMultipartUploadIsAborted(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	data := blobtest.RandomBytes(4, 64<<20)
	key := blobtest.KeyOf("r1", data)

	t.Run("when the caller cancels mid-upload", func(t *testing.T) {
		p, cfg := proxied(t, srv)
		s := s3test.Open(t, cfg)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		p.setFault(func(r *http.Request) *s3Error {
			if r.URL.Query().Get("partNumber") == "2" {
				cancel()
			}
			return nil
		})
		_, err := s.Put(ctx, key, blob.Hash(data))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Put cancelled mid-upload: %v, want an error wrapping context.Canceled", err)
		}
		if p.count(isInitiate) != 1 || p.count(isAbort) == 0 {
			t.Errorf("requests %v: want one multipart upload, aborted", p.requests())
		}
		if ids := incompleteUploads(t, raw, cfg.Bucket); len(ids) != 0 {
			t.Errorf("incomplete uploads after a cancelled Put: %v", ids)
		}
		if _, err := s.Stat(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat after a cancelled Put: %v, want ErrNotFound", err)
		}
	})

	t.Run("when a part keeps failing", func(t *testing.T) {
		p, cfg := proxied(t, srv)
		s := s3test.Open(t, cfg)
		p.setFault(faultN(1000, s3Error{http.StatusInternalServerError, "InternalError"}, func(r *http.Request) bool {
			return r.URL.Query().Get("partNumber") == "3"
		}))
		_, err := s.Put(t.Context(), key, blob.Hash(data))
		checkUnavailable(t, "Put with a failing part", err, secretsOf(s, cfg, key)...)
		if p.count(isInitiate) != 1 || p.count(isAbort) == 0 {
			t.Errorf("requests %v: want one multipart upload, aborted", p.requests())
		}
		if ids := incompleteUploads(t, raw, cfg.Bucket); len(ids) != 0 {
			t.Errorf("incomplete uploads after a failed Put: %v", ids)
		}
		p.setFault(nil)
		if res := blobtest.Put(t, s, key, data); !res.Created {
			t.Errorf("Put after the failure cleared: Created = false")
		}
	})
}

func TestListTakesMetadataFromTheListingOrFromHEAD(t *testing.T) {
	srv := s3test.Start(t)
	p, cfg := proxied(t, srv)
	s := s3test.Open(t, cfg)
	want := map[blob.Key]blob.Info{}
	for i := range 5 {
		data := blobtest.TextBytes(uint64(i), 1000*(i+1))
		if i%2 == 1 {
			data = blobtest.RandomBytes(uint64(i), 1000*(i+1))
		}
		key := blobtest.KeyOf("r1", data)
		blobtest.Put(t, s, key, data)
		info, err := s.Stat(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		want[key] = info
	}
	for _, strip := range []bool{false, true} {
		p.mu.Lock()
		p.stripMeta = strip
		p.mu.Unlock()
		p.reset()
		got := map[blob.Key]blob.Info{}
		err := s.List(t.Context(), "r1", func(k blob.Key, info blob.Info) error { got[k] = info; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("List (listing metadata stripped: %v) returned %d blobs, want %d", strip, len(got), len(want))
		}
		for k, w := range want {
			g := got[k]
			if g.Size != w.Size || g.StoredBytes != w.StoredBytes || g.Encoding != w.Encoding || g.ModTime.Unix() != w.ModTime.Unix() {
				t.Errorf("List info of %s = %+v, Stat = %+v (listing metadata stripped: %v)", k, g, w, strip)
			}
		}
		heads := p.count(func(req string) bool { return strings.HasPrefix(req, "HEAD ") })
		wantHeads := 0
		if strip {
			wantHeads = len(want)
		}
		if heads != wantHeads {
			t.Errorf("List (listing metadata stripped: %v) sent %d HEADs, want %d", strip, heads, wantHeads)
		}
	}
}

// An object store whose disks are full (MinIO: 507 XMinioStorageFull) is ErrStorageFull
// as well as unavailable, so the surfaces say "disk full" and name the blob store.
func TestAFullObjectStoreIsStorageFull(t *testing.T) {
	srv := s3test.Start(t)
	p, cfg := proxied(t, srv)
	s := s3test.Open(t, cfg)
	p.setFault(faultN(1000, s3Error{http.StatusInsufficientStorage, "XMinioStorageFull"}, isObjectPut))
	defer p.setFault(nil)
	data := []byte("no room for this")
	_, err := s.Put(t.Context(), blobtest.KeyOf("r1", data), blob.Hash(data))
	checkUnavailable(t, "Put on a full store", err, secretsOf(s, cfg, blobtest.KeyOf("r1", data))...)
	if !errors.Is(err, blob.ErrStorageFull) {
		t.Fatalf("Put on a full store: %v, want an error wrapping blob.ErrStorageFull", err)
	}
	p.setFault(faultN(1000, s3Error{http.StatusServiceUnavailable, "SlowDown"}, isObjectPut))
	if _, err := s.Put(t.Context(), blobtest.KeyOf("r1", data), blob.Hash(data)); errors.Is(err, blob.ErrStorageFull) {
		t.Fatalf("a throttled Put: %v, must not be ErrStorageFull", err)
	}
}
