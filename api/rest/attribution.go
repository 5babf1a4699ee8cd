package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/workbench"
)

// ProducerHeader names the response header of file and workbench reads that says who
// wrote the revision served (meta.Producer.String: "alice via rest/put"; empty when
// unknown).
const ProducerHeader = "Cairn-Producer"

// DefaultMaxPrincipalLabels is Options.MaxPrincipalLabels's default.
const DefaultMaxPrincipalLabels = 100

// Principal label values of cairn_principal_requests_total besides principal ids.
const (
	// PrincipalOther counts the principals beyond Options.MaxPrincipalLabels.
	PrincipalOther = "other"
	// PrincipalNone counts requests that carry no principal (a handler not behind the
	// authentication middleware).
	PrincipalNone = "none"
)

// activity is what a request's handler tells ServeHTTP about a mutating request, for its
// audit line: the one place REST writes them.
type activity struct {
	// op is the operation ("put", "append", "delete", "create", "commit", "restore",
	// "snapshot", "snapshot-renew", "snapshot-retire"); "" for requests that change
	// nothing, which get no audit line.
	op                   string
	agent, id, path, key string
	generation           uint64
	// code is the error code the request was answered with ("" while none).
	code string
}

type activityKey struct{}

func activityOf(ctx context.Context) *activity {
	a, _ := ctx.Value(activityKey{}).(*activity)
	return a
}

// mutation declares r a mutating request of operation op on (agent, id, path), before
// anything about it is checked, and returns r with the context its Service calls run in:
// it names the surface "rest/<op>", which the Service records as part of the producer of
// what it writes.
func mutation(r *http.Request, op, agent, id, path string) *http.Request {
	if a := activityOf(r.Context()); a != nil {
		a.op, a.agent, a.id, a.path = op, agent, id, path
	}
	return r.WithContext(workbench.WithSurface(r.Context(), "rest/"+op))
}

// idempotencyKeyOf reads the request's Idempotency-Key (idempotencyKey) and records it
// for the audit line once it is valid.
func idempotencyKeyOf(r *http.Request) (string, error) {
	k, err := idempotencyKey(r)
	if a := activityOf(r.Context()); a != nil && err == nil {
		a.key = k
	}
	return k, err
}

// produced records the generation a mutating request produced.
func produced(ctx context.Context, gen uint64) {
	if a := activityOf(ctx); a != nil {
		a.generation = gen
	}
}

// audit writes the audit line of a mutating request once it has been answered with
// status.
func (h *Handler) audit(r *http.Request, a *activity, status int) {
	outcome := a.code
	if outcome == "" {
		outcome = workbench.OutcomeOK
		if status >= 400 {
			outcome = http.StatusText(status)
		}
	}
	workbench.Audit{Surface: "rest/" + a.op, Agent: a.agent, Workbench: a.id, Path: a.path, Generation: a.generation,
		IdempotencyKey: a.key, Outcome: outcome}.Log(r.Context(), h.log, slog.String("method", r.Method), slog.Int("status", status))
}

// tenantSurface is the surface label of a request to a tenant route ("rest" or "mcp"),
// "" for the node-level routes (health, metrics, the OpenAPI document), which are neither
// counted per principal nor limited.
func tenantSurface(r *http.Request) string {
	raw := r.URL.EscapedPath()
	switch {
	case raw == "/mcp":
		return "mcp"
	case strings.HasPrefix(raw, "/v1/agents/"):
		if strings.HasSuffix(raw, "/mcp") && strings.Count(raw, "/") == 4 {
			return "mcp"
		}
		return "rest"
	}
	return ""
}

// principalCounter is cairn_principal_requests_total{principal, surface}. Its label set
// is bounded: the first max distinct principals it sees get their own label, every later
// one counts as PrincipalOther.
type principalCounter struct {
	vec *prometheus.CounterVec
	max int

	mu   sync.Mutex
	seen map[string]bool
	// series holds the vector's children by label and surface, each asked for once (as
	// bounded as the labels: max principals, "other", "none", two surfaces).
	series map[[2]string]prometheus.Counter
}

func newPrincipalCounter(max int) *principalCounter {
	return &principalCounter{max: max, seen: map[string]bool{}, series: map[[2]string]prometheus.Counter{},
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "principal", Name: "requests_total",
			Help: "Requests to tenant routes by principal id and surface (rest, mcp); principals beyond the label bound count as \"other\", requests without one as \"none\"."},
			[]string{"principal", "surface"})}
}

func (c *principalCounter) inc(principal, surface string) {
	label := principal
	c.mu.Lock()
	if label == "" {
		label = PrincipalNone
	} else if !c.seen[principal] {
		if len(c.seen) < c.max {
			c.seen[principal] = true
		} else {
			label = PrincipalOther
		}
	}
	k := [2]string{label, surface}
	n, ok := c.series[k]
	if !ok {
		n = c.vec.WithLabelValues(label, surface)
		c.series[k] = n
	}
	c.mu.Unlock()
	n.Inc()
}

// allowRequest checks the request against its principal's request rate (a handler without
// a Service, as some tests build, limits nothing).
func (h *Handler) allowRequest(r *http.Request) error {
	if h.svc == nil {
		return nil
	}
	return h.svc.AllowRequest(r.Context())
}
