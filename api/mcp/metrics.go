package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count the tool calls of every server built with them (Options.Metrics), on both
// transports (Prometheus, namespace "cairn", subsystem "mcp"):
//
//   - cairn_mcp_tool_calls_total{tool, code}: calls by tool (the profile's tool names, a
//     fixed set) and outcome: "ok", or the contract's error code of the envelope
//     (InvalidArguments, NotFound, …);
//   - cairn_mcp_tool_duration_seconds{tool}: the time from the arguments' validation to the
//     encoded result, failed calls included.
//
// A tools/call of a tool the server does not offer is answered before any handler and is
// not counted here (the HTTP request still is, as route "mcp").
type Metrics struct {
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewMetrics registers the MCP tool metrics on reg (nil: unregistered). It fails when
// they are registered on reg already.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "mcp", Name: "tool_calls_total",
			Help: "MCP tool calls by tool and outcome (ok, or the error envelope's code)."}, []string{"tool", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cairn", Subsystem: "mcp", Name: "tool_duration_seconds",
			Help: "MCP tool call latency by tool, failed calls included.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)},
			[]string{"tool"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.calls, m.latency} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("mcp: metrics: %w", err)
			}
		}
	}
	return m, nil
}

// instrument counts the calls of tool's handler h on m; a nil m leaves h as it is.
func (m *Metrics) instrument(tool string, h sdk.ToolHandler) sdk.ToolHandler {
	if m == nil {
		return h
	}
	latency := m.latency.WithLabelValues(tool)
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		res, err := h(ctx, req)
		latency.Observe(time.Since(start).Seconds())
		m.calls.WithLabelValues(tool, outcome(res, err)).Inc()
		return res, err
	}
}

// outcome is "ok" for a successful result, the envelope's code for a tool error.
func outcome(res *sdk.CallToolResult, err error) string {
	if err != nil || res == nil {
		return "Internal" // handlers never return one (handler); counted as a defect
	}
	if !res.IsError {
		return "ok"
	}
	var env struct {
		Code string `json:"code"`
	}
	raw, ok := res.StructuredContent.(json.RawMessage)
	if !ok || json.Unmarshal(raw, &env) != nil || env.Code == "" {
		return "Internal"
	}
	return env.Code
}
