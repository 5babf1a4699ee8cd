package rest

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// RequestIDHeader carries a request's id in the access log: the client's, when it sent a
// valid one, or one the node made; the response echoes it while the access log is on.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDBytes bounds a client's request id; a longer one is replaced.
const maxRequestIDBytes = 128

// begin starts serving r on either listener: it wraps w to record the status and the
// bytes written, bounds the body's rate, and, with an access log, settles the request id.
// The returned func counts the request under route (a route name, never the raw path) in
// cairn_http_requests_total and _request_duration_seconds and writes the access line.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request) (*statusRecorder, func(route string)) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, ctl: http.NewResponseController(w), writeTimeout: h.opts.WriteTimeout}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = newRateBody(r.Body, w, h.opts.BodyMinBytesPerSecond, h.opts.BodyRateWindow)
	}
	var id string
	if h.opts.AccessLog != nil {
		id = requestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, id)
	}
	return rec, func(route string) {
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		took := time.Since(start)
		code := strconv.Itoa(rec.status)
		h.requests.WithLabelValues(route, r.Method, code).Inc()
		h.latency.WithLabelValues(route, r.Method, code).Observe(took.Seconds())
		if h.opts.AccessLog != nil {
			// Only what cannot carry a secret: no path (agent and file names), no query,
			// no header but the request id.
			h.opts.AccessLog.LogAttrs(r.Context(), slog.LevelInfo, "http request",
				slog.String("method", r.Method), slog.String("route", route), slog.Int("status", rec.status),
				slog.Int64("bytes", rec.bytes), slog.Duration("duration", took), slog.String("remote", r.RemoteAddr),
				slog.String("request_id", id))
		}
	}
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
		rec, done := h.begin(w, r)
		defer done(name)
		next.ServeHTTP(rec, r)
	})
}
