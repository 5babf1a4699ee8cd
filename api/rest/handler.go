package rest

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// OpenAPI is the OpenAPI 3.1 document of this API, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// Options wire the handler to the rest of the node.
type Options struct {
	// MCP serves /v1/agents/{agent}/mcp and /mcp; the agent is passed as path value
	// "agent" ("" for /mcp). Nil disables MCP.
	MCP http.Handler
	// Ready reports whether the node serves writes and linearizable reads (/readyz).
	Ready func() bool
	// Failing lists what else makes the node not ready (a stalled object store, a full
	// disk); /readyz answers 503 with the list while it is not empty. Nil: nothing.
	Failing func() []string
	// Registry collects the metrics served at /metrics; it also registers the handler's
	// own request metrics. Nil disables /metrics.
	Registry *prometheus.Registry
	Logger   *slog.Logger
	// AccessLog, when set, receives one info line per request of both listeners (access.go).
	// Nil: no access log.
	AccessLog *slog.Logger
	// AdminRoutes are further routes of the admin listener (Admin), by escaped path.
	AdminRoutes map[string]http.Handler
	// GC runs the sweeps of POST /v1/admin/gc (the node's leader workers, *worker.Set).
	// Nil: the route answers 404 NotFound.
	GC Collector
	// Scrub runs POST /v1/admin/scrub and Backups POST /v1/admin/backup and
	// /v1/admin/backup/release (admin_backup.go). Nil: the routes answer 404 NotFound.
	Scrub   Scrubber
	Backups Backups
	// Shards adds shards to the node's cluster (POST /v1/admin/cluster/shards,
	// admin_shards.go). Nil: the embedded node; the route answers 409 InvalidState.
	Shards ShardGrower
	// Moves moves agent roots between the cluster's shards (/v1/admin/cluster/root-moves,
	// admin_moves.go). Nil: the embedded node; the route answers 409 InvalidState.
	Moves RootMover
	// BodyMinBytesPerSecond and BodyRateWindow bound every request body (REST and MCP):
	// it must average at least BodyMinBytesPerSecond over waiting time, and never stall a
	// whole BodyRateWindow (api/deadline.Body). Defaults 64 KiB/s and 30s.
	BodyMinBytesPerSecond int64
	BodyRateWindow        time.Duration
	// WriteTimeout bounds each write of a response: a client that stops reading for this
	// long is cut off. Default 1m.
	WriteTimeout time.Duration
	// MaxPrincipalLabels bounds the distinct principal ids cairn_principal_requests_total
	// labels; later principals count as "other". Default DefaultMaxPrincipalLabels.
	MaxPrincipalLabels int
	// FeedHeartbeat is how long a change-feed stream stays silent before it sends a
	// comment (events.go); at most half of WriteTimeout. Default DefaultFeedHeartbeat.
	FeedHeartbeat time.Duration
}

// Handler is the HTTP entry point of a node.
type Handler struct {
	svc      *workbench.Service
	opts     Options
	log      *slog.Logger
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// observers caches the two vectors' children by route, method and status (access.go).
	observers *routeObservers
	inflight  prometheus.Gauge
	bytesIn   prometheus.Counter
	bytesOut  prometheus.Counter
	// principals counts tenant requests per principal (attribution.go).
	principals *principalCounter
	metrics    http.Handler
	// closing ends the change-feed streams (EndStreams).
	closing    chan struct{}
	endStreams sync.Once
	// admin serves the admin listener (Admin, admin.go).
	admin *adminHandler
}

// NewHandler returns the node's HTTP handler.
func NewHandler(svc *workbench.Service, opts Options) *Handler {
	if opts.BodyMinBytesPerSecond <= 0 {
		opts.BodyMinBytesPerSecond = DefaultBodyMinBytesPerSecond
	}
	if opts.BodyRateWindow <= 0 {
		opts.BodyRateWindow = DefaultBodyRateWindow
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxPrincipalLabels <= 0 {
		opts.MaxPrincipalLabels = DefaultMaxPrincipalLabels
	}
	if opts.FeedHeartbeat <= 0 {
		opts.FeedHeartbeat = DefaultFeedHeartbeat
	}
	h := &Handler{svc: svc, opts: opts, log: opts.Logger, principals: newPrincipalCounter(opts.MaxPrincipalLabels), closing: make(chan struct{}),
		observers: &routeObservers{}}
	h.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests by route (the route's name, never the raw path), method and status code."}, []string{"route", "method", "code"})
	h.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cairn", Subsystem: "http", Name: "request_duration_seconds",
		Help: "HTTP request latency by route, method and status code, until the response is written.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)},
		[]string{"route", "method", "code"})
	h.inflight = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "http", Name: "requests_in_flight", Help: "HTTP requests being served."})
	h.bytesIn = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "http", Name: "file_bytes_received_total", Help: "File body bytes received by writes."})
	h.bytesOut = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "http", Name: "file_bytes_sent_total", Help: "File body bytes sent by reads."})
	if opts.Registry != nil {
		opts.Registry.MustRegister(h.requests, h.latency, h.inflight, h.bytesIn, h.bytesOut, h.principals.vec)
		h.metrics = promhttpHandler(opts.Registry)
	}
	h.admin = &adminHandler{svc: svc, opts: opts, log: opts.Logger, tenant: h}
	return h
}

type statusRecorder struct {
	http.ResponseWriter
	status       int
	bytes        int64                    // response body bytes written
	ctl          *http.ResponseController // made by the first write (controller)
	writeTimeout time.Duration
	// What done reports (access.go).
	h     *Handler
	r     *http.Request
	start time.Time
	id    string // the request id, with an access log
}

// controller returns the response's controller, which extends the write deadline before
// each write; an answer without a body (a HEAD, a 304) never needs one.
func (s *statusRecorder) controller() *http.ResponseController {
	if s.ctl == nil {
		s.ctl = http.NewResponseController(s.ResponseWriter)
	}
	return s.ctl
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	writeDeadline(s.controller(), s.writeTimeout)
	n, err := s.ResponseWriter.Write(p)
	s.bytes += int64(n)
	return n, err
}

// ReadFrom extends the write deadline, as Write does, and hands src to the response's own
// ReadFrom: from an *os.File (the segment cache's, in ranges of 1 MiB) net/http sends by
// sendfile when the connection is a TCP one. io.Copy to the recorder takes this path.
func (s *statusRecorder) ReadFrom(src io.Reader) (int64, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	writeDeadline(s.controller(), s.writeTimeout)
	if rf, ok := s.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{s.ResponseWriter}, src)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ServeHTTP routes on the escaped path (no cleaning, no redirects). A request to a tenant
// route is counted for its principal and checked against the principal's request rate
// first (workbench.Service.AllowRequest); a mutating one gets its audit line once it is
// answered (attribution.go).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	act := &activity{}
	// The memory shares the Service takes for this request (listings, diffs, queries,
	// large MCP messages: workbench admission.go) are kept until the answer is written.
	ctx, releaseMemory := h.svc.HoldAdmissions(r.Context())
	defer releaseMemory()
	r = r.WithContext(context.WithValue(ctx, activityKey{}, act))
	rec := h.begin(w, r)
	h.inflight.Inc()
	// Counted in a defer: a read whose body fails after its headers aborts the handler
	// (http.ErrAbortHandler, file.go), which passes through here.
	route := "file" // the only route that aborts
	defer func() {
		h.inflight.Dec()
		rec.done(route)
		if act.op != "" {
			h.audit(r, act, rec.status)
		}
	}()
	if surface := tenantSurface(r); surface != "" {
		h.principals.inc(workbench.PrincipalID(r.Context()), surface)
		if err := h.allowRequest(r); err != nil {
			route = "limited"
			h.writeError(rec, r, err, noPrecondition)
			return
		}
	}
	route = h.route(rec, r)
}

func (h *Handler) route(w http.ResponseWriter, r *http.Request) string {
	raw := r.URL.EscapedPath()
	switch raw {
	case "/healthz":
		WriteJSON(w, http.StatusOK, map[string]any{"status": "ok"})
		return "healthz"
	case "/readyz":
		var failing []string
		if h.opts.Failing != nil {
			failing = h.opts.Failing()
		}
		if h.opts.Ready != nil && !h.opts.Ready() {
			failing = append([]string{"node: not serving (no ready leader yet, or shutting down)"}, failing...)
		}
		if len(failing) > 0 {
			w.Header().Set("Retry-After", "1")
			WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "failing": failing})
		} else {
			WriteJSON(w, http.StatusOK, map[string]any{"status": "ready"})
		}
		return "readyz"
	case "/metrics":
		if h.metrics == nil {
			h.notFound(w, r)
		} else {
			h.metrics.ServeHTTP(w, r)
		}
		return "metrics"
	case "/v1/openapi.json":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return "openapi"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(OpenAPI)
		return "openapi"
	case "/mcp":
		if h.opts.MCP == nil {
			h.notFound(w, r)
			return "mcp"
		}
		r.SetPathValue("agent", "")
		h.opts.MCP.ServeHTTP(w, r)
		return "mcp"
	}
	if strings.HasPrefix(raw, "/v1/admin/") {
		// Admin routes are the admin listener's (Admin), never the tenant listener's.
		h.notFound(w, r)
		return "unknown"
	}
	rest, ok := strings.CutPrefix(raw, "/v1/agents/")
	if !ok {
		h.notFound(w, r)
		return "unknown"
	}
	segs := strings.Split(rest, "/")
	agent, err := nameComponent("agent", segs[0])
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return "invalid"
	}
	if len(segs) == 2 && segs[1] == "mcp" && h.opts.MCP != nil {
		r.SetPathValue("agent", agent)
		h.opts.MCP.ServeHTTP(w, r)
		return "mcp"
	}
	if len(segs) == 3 && segs[1] == "mcp" && segs[2] == "cairn" && h.opts.MCP != nil {
		// The MCP profile "cairn" (api/mcp cairn.go).
		r.SetPathValue("agent", agent)
		r.SetPathValue("profile", "cairn")
		h.opts.MCP.ServeHTTP(w, r)
		return "mcp"
	}
	if len(segs) == 2 && segs[1] == "events" {
		h.events(w, r, agent) // events.go
		return "events"
	}
	if route, ok := h.rootTool(w, r, agent, segs[1:]); ok {
		return route
	}
	if route, ok := h.lifecycle(w, r, agent, segs[1:]); ok {
		return route
	}
	if len(segs) < 3 || segs[1] != "workbenches" {
		h.notFound(w, r)
		return "unknown"
	}
	id, err := nameComponent("id", segs[2])
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return "invalid"
	}
	switch {
	case len(segs) == 3:
		h.workbench(w, r, agent, id)
		return "workbench"
	case len(segs) == 4 && segs[3] == "list":
		h.list(w, r, agent, id)
		return "list"
	case len(segs) == 4 && segs[3] == "history":
		h.history(w, r, agent, id) // history.go
		return "history"
	case len(segs) == 4 && segs[3] == "diff":
		h.diff(w, r, agent, id)
		return "diff"
	case len(segs) == 4 && segs[3] == "rewind":
		h.rewind(w, r, agent, id) // rewind.go
		return "rewind"
	case len(segs) == 4 && segs[3] == "fork":
		h.fork(w, r, agent, id) // fork.go
		return "fork"
	case len(segs) == 4 && segs[3] == "merge":
		h.merge(w, r, agent, id) // fork.go
		return "merge"
	case len(segs) == 4 && segs[3] == "discard":
		h.discard(w, r, agent, id) // fork.go
		return "discard"
	case len(segs) >= 4 && segs[3] != "files":
		if route, ok := h.proposals(w, r, agent, id, segs[3:]); ok { // proposals.go
			return route
		}
		if route, ok := h.workbenchTool(w, r, agent, id, segs[3:]); ok {
			return route
		}
	case len(segs) >= 5 && segs[3] == "files":
		path, err := filePath(segs[4:])
		if err != nil {
			h.writeError(w, r, err, noPrecondition)
			return "invalid"
		}
		h.file(w, r, agent, id, path)
		return "file"
	}
	h.notFound(w, r)
	return "unknown"
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.writeError(w, r, &workbench.Error{Code: workbench.CodeNotFound, Message: "no such route: " + r.URL.EscapedPath(), Details: map[string]any{}}, noPrecondition)
}

// allow answers 405 unless the method is one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	e := &workbench.Error{Code: workbench.CodeInvalidArguments, Message: fmt.Sprintf("method %s is not allowed here (allowed: %s)", r.Method, strings.Join(methods, ", ")),
		Details: map[string]any{"field": "method"}}
	WriteJSON(w, http.StatusMethodNotAllowed, e.Envelope())
	return false
}

// component decodes one escaped path segment; a segment that decodes to something with a
// '/' in it (%2F) is rejected, as is an empty one.
func component(field, seg string) (string, error) {
	s, err := url.PathUnescape(seg)
	if err != nil {
		return "", invalidArg(field, "is not a valid escaped path segment")
	}
	if s == "" {
		return "", invalidArg(field, "must not be empty (no '//' and no trailing '/')")
	}
	if strings.Contains(s, "/") {
		return "", invalidArg(field, "must not contain an escaped '/' (%%2F)")
	}
	return s, nil
}

// nameComponent decodes one escaped path segment that names an agent root or a workbench
// (component) and checks the name (validName).
func nameComponent(field, seg string) (string, error) {
	s, err := component(field, seg)
	if err == nil {
		err = validName(field, s)
	}
	return s, err
}

// filePath decodes and validates the {path...} part of a file route.
func filePath(segs []string) (string, error) {
	parts := make([]string, len(segs))
	for i, seg := range segs {
		c, err := component("path", seg)
		if err != nil {
			return "", err
		}
		parts[i] = c
	}
	p := strings.Join(parts, "/")
	if err := workbench.ValidatePath("path", p); err != nil {
		return "", err
	}
	return p, nil
}

func invalidArg(field, format string, args ...any) error {
	return &workbench.Error{Code: workbench.CodeInvalidArguments, Message: field + ": " + fmt.Sprintf(format, args...),
		Details: map[string]any{"field": field}}
}

// workbench serves PUT (create, idempotent) and GET/HEAD (stat) of a workbench.
func (h *Handler) workbench(w http.ResponseWriter, r *http.Request, agent, id string) {
	if !allow(w, r, http.MethodPut, http.MethodGet, http.MethodHead, http.MethodDelete) { // DELETE: lifecycle.go
		return
	}
	if r.Method == http.MethodPut {
		r = mutation(r, "create", agent, id, "")
	}
	q, err := parseQuery(r)
	if err == nil && r.Method == http.MethodPut && len(q) > 0 {
		err = invalidArg("query", "creating a workbench takes no query parameters")
	}
	if err == nil {
		err = onlyParams(q, "at_snapshot")
	}
	var at workbench.At
	if err == nil {
		at, err = atSnapshotQuery(q)
	}
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	if r.Method == http.MethodPut {
		key, err := idempotencyKeyOf(r)
		if err != nil {
			h.writeError(w, r, err, noPrecondition)
			return
		}
		res, err := h.svc.Lifecycle.CreateWorkbench(r.Context(), agent, id, key)
		if err != nil {
			h.writeError(w, r, err, noPrecondition)
			return
		}
		status := http.StatusOK
		if res.Created {
			status = http.StatusCreated
		}
		WriteJSON(w, status, map[string]any{"status": "success", "workbench_id": id, "path": res.Path,
			"sections": workbench.Sections, "created": res.Created})
		return
	}
	st, err := h.svc.Reads.StatAt(r.Context(), agent, id, "", at)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	w.Header().Set(ProducerHeader, st.Producer.String())
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "workbench_id": id, "path": h.svc.Tools.WorkbenchPath(agent, id),
		"kind": "workbench", "sections": workbench.Sections, "size_bytes": st.Dir.Bytes, "file_count": st.Dir.Files, "entry_count": st.Dir.Children})
}

// list serves GET .../list?path=DIR&cursor=C&limit=N.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, agent, id string) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	q, err := parseQuery(r)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	for k := range q {
		if k != "path" && k != "cursor" && k != "limit" && k != "at_snapshot" {
			h.writeError(w, r, invalidArg(k, "is not a parameter of list (path, cursor, limit, at_snapshot)"), noPrecondition)
			return
		}
	}
	at, err := atSnapshotQuery(q)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	dir := q.Get("path")
	if dir != "" {
		if err := workbench.ValidatePath("path", dir); err != nil {
			h.writeError(w, r, err, noPrecondition)
			return
		}
	}
	limit, err := limitParam(q, workbench.MaxListLimit)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	res, err := h.svc.Reads.List(r.Context(), workbench.ListRequest{Agent: agent, Workbench: id, Path: dir, Cursor: q.Get("cursor"), Limit: limit, At: at})
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	l := listing{entries: res.Entries, entryCount: res.EntryCount, next: res.NextCursor, path: dir,
		truncated: res.Truncated, workbenchID: id, workbenchPath: h.svc.Tools.WorkbenchPath(agent, id)}
	if !at.Live() {
		l.at = &at
	}
	writeListing(w, &l)
}

// splitSection mirrors the contract's presentation: section null (nil) outside the five.
func splitSection(full string) (any, string) {
	if sec, rel, ok := cutSection(full); ok {
		return sec, rel
	}
	return nil, full
}

// cutSection splits full into its section and the path relative to it; false outside
// the five sections.
func cutSection(full string) (sec, rel string, ok bool) {
	first, rest, _ := strings.Cut(full, "/")
	for _, s := range workbench.Sections {
		if s == first {
			return s, rest, true
		}
	}
	return "", full, false
}

// idempotencyKey reads Idempotency-Key: absent, or sent once as 1..255 printable ASCII
// characters (an empty or repeated one would leave a retry unable to name its first send).
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values("Idempotency-Key")
	if len(vs) > 1 {
		return "", invalidArg("Idempotency-Key", "must be sent once")
	}
	k := r.Header.Get("Idempotency-Key")
	if len(vs) == 1 && k == "" {
		return "", invalidArg("Idempotency-Key", "must not be empty (1..255 printable ASCII characters; leave the header out for no key)")
	}
	if len(k) > 255 {
		return "", invalidArg("Idempotency-Key", "must be at most 255 characters")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", invalidArg("Idempotency-Key", "must be printable ASCII")
		}
	}
	return k, nil
}

// countingReader counts body bytes as they stream. The count is atomic: the ingest reads
// the body on a goroutine of its own (workbench, the ingest gate), which may still be
// in a Read when the write has answered.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// validName checks an agent or workbench id, returning a nil error (not a nil *meta.Error).
func validName(field, s string) error {
	if err := meta.ValidateName(field, s); err != nil {
		return err
	}
	return nil
}
