package rest

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RequestIDHeader carries a request's id in the access log: the client's, when it sent a
// valid one, or one the node made; the response echoes it while the access log is on.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDBytes bounds a client's request id; a longer one is replaced.
const maxRequestIDBytes = 128

// begin starts serving r on either listener: it wraps w to record the status and the
// bytes written, bounds the body's rate, and, with an access log, settles the request id.
// The recorder's done counts the request under route (a route name, never the raw path)
// in cairn_http_requests_total and _request_duration_seconds and writes the access line.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request) *statusRecorder {
	rec := &statusRecorder{ResponseWriter: w, writeTimeout: h.opts.WriteTimeout, h: h, r: r, start: time.Now()}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = newRateBody(r.Body, w, h.opts.BodyMinBytesPerSecond, h.opts.BodyRateWindow)
	}
	if h.opts.AccessLog != nil {
		rec.id = requestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, rec.id)
	}
	return rec
}

// done ends the request begin started: see begin.
func (rec *statusRecorder) done(route string) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	h, r := rec.h, rec.r
	took := time.Since(rec.start)
	m := h.observers.of(h, route, r.Method, rec.status)
	m.requests.Inc()
	m.latency.Observe(took.Seconds())
	if h.opts.AccessLog != nil {
		// Only what cannot carry a secret: no path (agent and file names), no query,
		// no header but the request id.
		h.opts.AccessLog.LogAttrs(r.Context(), slog.LevelInfo, "http request",
			slog.String("method", r.Method), slog.String("route", route), slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes), slog.Duration("duration", took), slog.String("remote", r.RemoteAddr),
			slog.String("request_id", rec.id))
	}
}

// routeObservers caches the children of cairn_http_requests_total and
// _request_duration_seconds by route, method and status, so that a request finds its
// two series in one map read rather than by hashing its label values into each vector.
// Only the standard methods are cached (a route's names and statuses are few); a request
// with another method asks the vectors, as every request did before.
type routeObservers struct{ m sync.Map } // routeLabels → *routeSeries

type routeLabels struct {
	route, method string
	status        int
}

type routeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func (o *routeObservers) of(h *Handler, route, method string, status int) *routeSeries {
	k := routeLabels{route, method, status}
	if s, ok := o.m.Load(k); ok {
		return s.(*routeSeries)
	}
	code := strconv.Itoa(status)
	s := &routeSeries{requests: h.requests.WithLabelValues(route, method, code), latency: h.latency.WithLabelValues(route, method, code)}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		o.m.Store(k, s)
	}
	return s
}

// requestID returns the client's request id when it is 1..maxRequestIDBytes of
// [A-Za-z0-9._:-] (safe in a log line), or a new random one (32 hex digits).
func requestID(client string) string {
	if len(client) > 0 && len(client) <= maxRequestIDBytes && validRequestID(client) {
		return client
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

// Observe serves next's requests that route names (ok true) as this handler's own are
// observed: the body's rate bound, the request id, cairn_http_requests_total and
// _request_duration_seconds under the route name, and the access line; every other
// request goes to next untouched (REST observes its own). The node puts it in front of the
// OpenWOP facade, whose routes REST never sees.
func (h *Handler) Observe(route func(*http.Request) (string, bool), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := route(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		ctx, releaseMemory := h.svc.HoldAdmissions(r.Context()) // as ServeHTTP
		defer releaseMemory()
		r = r.WithContext(ctx)
		rec := h.begin(w, r)
		defer rec.done(name)
		next.ServeHTTP(rec, r)
	})
}
