package rest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// asHeader names the test-only request header whose value becomes the request's
// principal (authtest.TrustHeader).
const asHeader = authtest.Header

type attribServer struct {
	*httptest.Server
	node *workbenchtest.Node
	logs *workbenchtest.LogBuffer
	reg  *prometheus.Registry
}

func newAttribServer(t *testing.T, cfg workbench.Config, opts rest.Options) attribServer {
	t.Helper()
	return newAttribServerWith(t, cfg, opts, func(h http.Handler) http.Handler { return h })
}

// newAttribServerWith is newAttribServer with wrap around the REST handler (inside the
// principal middleware), for a test that watches requests on the server's side.
func newAttribServerWith(t *testing.T, cfg workbench.Config, opts rest.Options, wrap func(http.Handler) http.Handler) attribServer {
	t.Helper()
	cfg.InlineMaxBytes = 4096
	n := workbenchtest.New(t, cfg)
	logs := &workbenchtest.LogBuffer{}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	opts.Registry = prometheus.NewRegistry()
	opts.Ready = n.Shard.Ready
	srv := httptest.NewServer(authtest.TrustHeader(wrap(rest.NewHandler(n.Service, opts))))
	t.Cleanup(srv.Close)
	return attribServer{Server: srv, node: n, logs: logs, reg: opts.Registry}
}

const wb = "/v1/agents/a/workbenches/w"

// TestProducerIsRecordedPerPrincipalAndShownOnReads: each revision names the principal
// and surface that wrote it; data written without one (as before producers existed) shows
// an empty producer.
func TestProducerIsRecordedPerPrincipalAndShownOnReads(t *testing.T) {
	s := newAttribServer(t, workbench.Config{}, rest.Options{})
	expect(t, do(t, "PUT", s.URL+wb+"/files/input/f", strings.NewReader("one"), asHeader, "alice"), 201, "")
	r := do(t, "GET", s.URL+wb+"/files/input/f", nil)
	if got := r.header.Values(rest.ProducerHeader); len(got) != 1 || got[0] != "alice via rest/put" {
		t.Fatalf("after alice's put: %q", got)
	}
	expect(t, do(t, "POST", s.URL+wb+"/files/input/f?append", strings.NewReader("+two"), asHeader, "bob"), 200, "")
	for _, m := range []string{"GET", "HEAD"} {
		r := do(t, m, s.URL+wb+"/files/input/f", nil, asHeader, "alice")
		if got := r.header.Get(rest.ProducerHeader); got != "bob via rest/append" {
			t.Fatalf("%s after bob's append: %q", m, got)
		}
	}
	if got := do(t, "GET", s.URL+wb, nil).header.Get(rest.ProducerHeader); got != "bob via rest/append" {
		t.Fatalf("the workbench's last change: %q", got)
	}
	// A write without a principal or surface is what every write was before producers.
	if _, err := s.node.Service.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/old",
		Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	r = do(t, "GET", s.URL+wb+"/files/input/old", nil)
	if got := r.header.Values(rest.ProducerHeader); r.status != 200 || len(got) != 1 || got[0] != "" {
		t.Fatalf("old data: status %d, producer %q", r.status, got)
	}
	// Snapshot, commit and restore records name their producers.
	snap := do(t, "POST", s.URL+wb+"/snapshots", strings.NewReader(`{"name":"s"}`), asHeader, "carol")
	expect(t, snap, 201, "")
	if snap.json["producer"] != "carol via rest/snapshot" {
		t.Fatalf("snapshot: %s", snap.body)
	}
	cm := do(t, "POST", s.URL+wb+"/commit", strings.NewReader(`{"manifest":{"run":1},"content_digest_uri":"sha256:`+strings.Repeat("a", 64)+`"}`), asHeader, "alice")
	expect(t, cm, 200, "")
	if cm.json["producer"] != "alice via rest/commit" {
		t.Fatalf("commit: %s", cm.body)
	}
	rs := do(t, "POST", s.URL+wb+"/restore", strings.NewReader(`{"destination_id":"w2","at_snapshot":"s"}`), asHeader, "bob")
	expect(t, rs, 200, "")
	if rs.json["producer"] != "bob via rest/restore" {
		t.Fatalf("restore: %s", rs.body)
	}
	if got := do(t, "GET", s.URL+"/v1/agents/a/workbenches/w2/files/input/f", nil).header.Get(rest.ProducerHeader); got != "bob via rest/restore" {
		t.Fatalf("a restored file: %q", got)
	}
	retired := do(t, "POST", s.URL+wb+"/snapshots/retire", strings.NewReader(`{"name":"s"}`), asHeader, "alice")
	if retired.json["producer"] != "carol via rest/snapshot" || retired.json["retired_by"] != "alice via rest/snapshot-retire" {
		t.Fatalf("retire: %s", retired.body)
	}
}

// TestProducersSurviveARestart: the producers recorded before a Raft snapshot (restored
// from it) and after it (replayed from the log) are shown after the node restarts.
func TestProducersSurviveARestart(t *testing.T) {
	shardDir, blobDir := t.TempDir(), t.TempDir()
	start := func() (*httptest.Server, *shard.Shard, func()) {
		sh, err := shard.Open(shard.Config{Dir: shardDir})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := sh.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		bs, err := dir.Open(blobDir)
		if err != nil {
			t.Fatal(err)
		}
		svc, err := workbench.New(sh, bs, workbench.Config{InlineMaxBytes: 4096, CursorKey: workbenchtest.CursorKey})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(authtest.TrustHeader(rest.NewHandler(svc, rest.Options{})))
		return srv, sh, func() { srv.Close(); sh.Close(); bs.Close() }
	}
	srv, sh, stop := start()
	expect(t, do(t, "PUT", srv.URL+wb+"/files/input/before", strings.NewReader("1"), asHeader, "alice"), 201, "")
	if err := sh.Snapshot(); err != nil {
		t.Fatal(err)
	}
	expect(t, do(t, "PUT", srv.URL+wb+"/files/input/after", strings.NewReader("2"), asHeader, "bob"), 201, "")
	stop()
	srv, _, stop = start()
	defer stop()
	for path, want := range map[string]string{"input/before": "alice via rest/put", "input/after": "bob via rest/put"} {
		if got := do(t, "GET", srv.URL+wb+"/files/"+path, nil).header.Get(rest.ProducerHeader); got != want {
			t.Errorf("%s after the restart: %q, want %q", path, got, want)
		}
	}
}

// TestEveryMutatingRequestWritesOneAuditLine: principal, target, generation, idempotency
// key, surface and outcome; reads write none; no body appears in the log.
func TestEveryMutatingRequestWritesOneAuditLine(t *testing.T) {
	s := newAttribServer(t, workbench.Config{}, rest.Options{})
	put := do(t, "PUT", s.URL+wb+"/files/input/f", strings.NewReader("secret body"), asHeader, "alice", "Idempotency-Key", "k-1")
	expect(t, put, 201, "")
	expect(t, do(t, "GET", s.URL+wb+"/files/input/f", nil, asHeader, "alice"), 200, "")
	expect(t, do(t, "DELETE", s.URL+wb+"/files/input/missing", nil, asHeader, "bob"), 404, "NotFound")
	expect(t, do(t, "PUT", s.URL+wb+"/files/input/f", strings.NewReader("x"), asHeader, "bob", "If-Match", "bogus", "Idempotency-Key", "k-2"), 400, "InvalidArguments")
	expect(t, do(t, "POST", s.URL+wb+"/snapshots", strings.NewReader(`{}`), asHeader, "bob"), 201, "")
	lines := s.logs.Audits(t)
	want := []map[string]any{
		{"principal": "alice", "agent": "a", "workbench": "w", "path": "input/f", "generation": put.json["generation"],
			"idempotency_key": "k-1", "surface": "rest/put", "outcome": "ok", "method": "PUT", "status": float64(201)},
		{"principal": "bob", "agent": "a", "workbench": "w", "path": "input/missing", "generation": float64(0),
			"idempotency_key": "", "surface": "rest/delete", "outcome": "NotFound", "method": "DELETE", "status": float64(404)},
		{"principal": "bob", "agent": "a", "workbench": "w", "path": "input/f", "generation": float64(0),
			"surface": "rest/put", "outcome": "InvalidArguments", "method": "PUT", "status": float64(400)},
		{"principal": "bob", "agent": "a", "workbench": "w", "path": "", "generation": float64(0),
			"idempotency_key": "", "surface": "rest/snapshot", "outcome": "ok", "method": "POST", "status": float64(201)},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d: %v", len(lines), len(want), lines)
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, lines[i][k], v, lines[i])
			}
		}
	}
	if strings.Contains(s.logs.String(), "secret body") {
		t.Fatal("a request body reached the log")
	}
}

// TestPrincipalRequestCounterHasBoundedLabels: the first MaxPrincipalLabels principals
// are counted by id, the rest as "other", requests without one as "none"; node-level
// routes are not counted.
func TestPrincipalRequestCounterHasBoundedLabels(t *testing.T) {
	s := newAttribServer(t, workbench.Config{}, rest.Options{MaxPrincipalLabels: 2})
	for _, p := range []string{"p1", "p2", "p1", "p3", "p4", ""} {
		do(t, "GET", s.URL+wb, nil, asHeader, p)
	}
	do(t, "GET", s.URL+"/healthz", nil, asHeader, "p1")
	do(t, "POST", s.URL+"/mcp", strings.NewReader(`{}`), asHeader, "p2")
	got := map[string]float64{}
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "cairn_principal_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			got[l["principal"]+"/"+l["surface"]] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"p1/rest": 2, "p2/rest": 1, "other/rest": 2, "none/rest": 1, "p2/mcp": 1}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// TestPrincipalRequestRateIsLimited: past its burst a principal is answered 429
// ResourceExhausted naming the limit, with Retry-After; other principals and requests
// without one are not affected.
func TestPrincipalRequestRateIsLimited(t *testing.T) {
	// One token per 1000 s: nothing refills while the test runs.
	s := newAttribServer(t, workbench.Config{Limits: workbench.PrincipalLimits{RequestsPerSecond: 0.001, RequestBurst: 2}}, rest.Options{})
	expect(t, do(t, "PUT", s.URL+wb, nil, asHeader, "alice"), 201, "")
	expect(t, do(t, "GET", s.URL+wb, nil, asHeader, "alice"), 200, "")
	r := do(t, "GET", s.URL+wb, nil, asHeader, "alice")
	expect(t, r, 429, workbench.CodeResourceExhausted)
	d := r.json["details"].(map[string]any)
	if d["limit"] != workbench.LimitRequestRate || r.json["retryable"] != true || !strings.Contains(r.json["message"].(string), "request rate") {
		t.Fatalf("answer: %s", r.body)
	}
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" || ra == "1" {
		t.Fatalf("Retry-After %q, want the wait for the next token (about 1000 s)", ra)
	}
	expect(t, do(t, "GET", s.URL+wb, nil, asHeader, "bob"), 200, "")
	expect(t, do(t, "GET", s.URL+wb, nil), 200, "")
	expect(t, do(t, "GET", s.URL+"/healthz", nil, asHeader, "alice"), 200, "")
	// MCP over HTTP goes through the same limit.
	expect(t, do(t, "POST", s.URL+"/mcp", strings.NewReader(`{}`), asHeader, "alice"), 429, workbench.CodeResourceExhausted)
}

// TestPrincipalConcurrentUploadsAreLimited: while a principal's upload is in flight, its
// next one is answered 429 at once; another principal's is not; once the first ends the
// next one goes through.
func TestPrincipalConcurrentUploadsAreLimited(t *testing.T) {
	// reading is closed when the server first reads the slow upload's body: the service
	// takes the upload slot before it reads a byte (Writes.Write), so from then on alice's
	// only slot is held and the probes below are refused, whatever the scheduling.
	reading := make(chan struct{})
	var once sync.Once
	watch := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/files/input/slow") {
				r.Body = readSignal{ReadCloser: r.Body, first: func() { once.Do(func() { close(reading) }) }}
			}
			h.ServeHTTP(w, r)
		})
	}
	s := newAttribServerWith(t, workbench.Config{Limits: workbench.PrincipalLimits{MaxConcurrentUploads: 1}}, rest.Options{}, watch)
	pr, pw := io.Pipe()
	// Registered after the server's cleanup, so it runs first: whatever fails below, the
	// stalled upload ends and the server's Close does not wait for its body for ever.
	t.Cleanup(func() { pw.CloseWithError(errors.New("the test ended")) })
	first := make(chan response, 1)
	putInBackground(s.URL+wb+"/files/input/slow", pr, "alice", first)
	go func() { _, _ = pw.Write([]byte("started")) }() // unblocks once the transport sends it
	select {
	case <-reading:
	case r := <-first:
		t.Fatalf("the first upload ended before its body was read: %d %s", r.status, r.body)
	}
	refused := do(t, "PUT", s.URL+wb+"/files/input/try", strings.NewReader("x"), asHeader, "alice")
	if refused.status != 429 {
		t.Fatalf("alice's second upload while her first holds the slot: %d %s", refused.status, refused.body)
	}
	if d := refused.json["details"].(map[string]any); d["limit"] != workbench.LimitConcurrentUploads || d["max_concurrent_uploads"] != float64(1) ||
		refused.json["message"] != `principal "alice" has 1 uploads in flight, the per-principal limit of concurrent uploads; retry once one has finished` ||
		refused.header.Get("Retry-After") != "1" {
		t.Fatalf("refusal: %s %v", refused.body, refused.header)
	}
	expect(t, do(t, "PUT", s.URL+wb+"/files/input/bobs", strings.NewReader("x"), asHeader, "bob"), 201, "")
	pw.Close()
	if r := <-first; r.status != 201 {
		t.Fatalf("the first upload: %d %s", r.status, r.body)
	}
	expect(t, do(t, "PUT", s.URL+wb+"/files/input/after", strings.NewReader("x"), asHeader, "alice"), 201, "")
}

// putInBackground sends a PUT of body to url as principal from a goroutine of its own (the
// body may stall while the test goes on) and sends its answer to answers; a request that
// could not be sent answers status -1 with the error as its body.
func putInBackground(url string, body io.Reader, principal string, answers chan<- response) {
	go func() {
		req, _ := http.NewRequest("PUT", url, body)
		req.Header.Set(asHeader, principal)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answers <- response{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answers <- response{status: resp.StatusCode, body: b}
	}()
}

// readSignal calls first before the first Read of its body.
type readSignal struct {
	io.ReadCloser
	first func()
}

func (r readSignal) Read(p []byte) (int, error) {
	r.first()
	return r.ReadCloser.Read(p)
}
