package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The probe routes every node answers on both listeners, without an API key.
const (
	// HealthPath answers 200 while the process serves HTTP at all (liveness).
	HealthPath = "/healthz"
	// ReadyPath answers 200 while the node serves writes and linearizable reads and its
	// object store and disks pass the readiness probe, else 503 listing what fails.
	ReadyPath = "/readyz"
)

// ErrNotReady is wrapped by Probe's error when the node answered that it is not ready
// (503 on ReadyPath).
var ErrNotReady = errors.New("node is not ready")

// Health is a node's answer on HealthPath or ReadyPath.
type Health struct {
	// Status is "ok" (HealthPath), "ready" or "not ready" (ReadyPath).
	Status string `json:"status"`
	// Failing lists, on a "not ready" answer, what keeps the node from being ready.
	Failing []string `json:"failing,omitempty"`
}

// maxProbeBytes bounds a probe answer read; the node's are a few hundred bytes.
const maxProbeBytes = 64 << 10

// Probe asks the node c is built on for path (HealthPath or ReadyPath) with one GET; it
// never retries (a prober repeats on its own schedule).
//
// Errors: the transport's error when the node cannot be reached; a *Health with an error
// wrapping ErrNotReady on a 503 "not ready" answer; an *Error for any other non-200
// answer.
func (c *Client) Probe(ctx context.Context, path string) (*Health, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.tr.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.tr.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer closeBody(resp)
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBytes))
	if err != nil {
		return nil, fmt.Errorf("client: GET %s: reading response: %w", path, err)
	}
	var h Health
	parsed := json.Unmarshal(body, &h) == nil
	switch {
	case resp.StatusCode == http.StatusOK && parsed && h.Status != "":
		return &h, nil
	case resp.StatusCode == http.StatusServiceUnavailable && parsed && h.Status == "not ready":
		return &h, fmt.Errorf("%s%s: %w: %s", c.tr.base, path, ErrNotReady, strings.Join(h.Failing, "; "))
	case resp.StatusCode == http.StatusOK:
		return nil, fmt.Errorf("client: GET %s: the answer is not a probe answer: %q", path, snippet(body))
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return nil, responseError(resp)
}
