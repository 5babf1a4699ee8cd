package client

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/internal/pause"
)

// RetryPolicy bounds the retries a Client makes on its own (WithRetry). A request is sent
// again only when it is safe and worth it:
//
//   - the connection was refused (the server is restarting): any request, since none of
//     it reached the server;
//   - the answer was 503 or 429 marked retryable (RoutingUnavailable while a shard elects
//     a leader, ObjectUnavailable, ResourceExhausted): only a request that means the same
//     sent twice as once: GET, HEAD, PUT, DELETE, a request carrying an Idempotency-Key,
//     and the read-only or replay-safe tool calls (search, aggregate, catalog, find, grep,
//     commit, snapshot renew).
//
// Either way the body must be replayable: bytes, strings, none, or a file read again from
// where it started (an io.Seeker); a stream that cannot be (stdin, a pipe) is sent again
// only after a refused connection, which read none of it. The wait is the answer's Retry-After when
// it gives one, else an exponential backoff with jitter; a wait that would end past
// MaxElapsed is not taken, and the last answer is returned.
type RetryPolicy struct {
	// MaxAttempts is the most times one request is sent, the first included; 1 or less
	// disables retries.
	MaxAttempts int
	// MaxElapsed bounds the time from the first send to the start of the last one (0
	// allows no retry).
	MaxElapsed time.Duration
	// BaseDelay is the first backoff; each further one doubles, up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps one backoff (a Retry-After above it is still honoured within
	// MaxElapsed).
	MaxDelay time.Duration
}

// DefaultRetryPolicy is what the CLI uses: up to 8 sends within 30 s, backoff from
// 100 ms to 5 s; enough to ride out a node restart or a leader election.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 8, MaxElapsed: 30 * time.Second, BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second}
}

// WithRetry returns a copy of c that retries as p says. The zero RetryPolicy (the
// default of New) never retries.
func (c *Client) WithRetry(p RetryPolicy) *Client {
	return newClient(c.tr.withRetry(p))
}

// retrySafety says whether a request may be sent again after the server answered it.
type retrySafety bool

const (
	// replayable: sending the request twice means the same as sending it once.
	replayable retrySafety = true
	// notReplayable: the request is sent again only if it never reached the server.
	notReplayable retrySafety = false
)

// safetyOf is the safety HTTP gives req: idempotent methods (RFC 9110 §9.2.2) and
// requests carrying an Idempotency-Key are replayable.
func safetyOf(req *http.Request) retrySafety {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return replayable
	}
	if req.Header.Get("Idempotency-Key") != "" {
		return replayable
	}
	return notReplayable
}

// send does req, retrying as t's policy allows; a request naming an agent or workbench id
// with a '/' in it is refused unsent (escapedSlash). A non-2xx answer it hands back has its
// body (at most maxErrorBodyBytes when the answer was retryable) still readable.
func (t *transport) send(req *http.Request, safety retrySafety) (*http.Response, error) {
	if err := t.escapedSlash(req.URL); err != nil {
		return nil, err
	}
	p := t.retry
	if p.MaxAttempts <= 1 {
		return t.hc.Do(req)
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		resp, err := t.hc.Do(req)
		wait, again := p.retryWait(attempt, resp, err, safety)
		if !again || !rewindable(req) || time.Since(start)+wait > p.MaxElapsed {
			return resp, err
		}
		if resp != nil {
			closeBody(resp)
		}
		if err := pause.For(req.Context(), wait); err != nil {
			return nil, err
		}
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// retryWait says whether the outcome of attempt is worth another one and how long to
// wait first. A retryable answer it inspects keeps its error body readable.
func (p RetryPolicy) retryWait(attempt int, resp *http.Response, err error, safety retrySafety) (time.Duration, bool) {
	if attempt >= p.MaxAttempts {
		return 0, false
	}
	backoff := p.backoff(attempt)
	if err != nil {
		return backoff, errors.Is(err, syscall.ECONNREFUSED)
	}
	if safety != replayable || (resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests) {
		return 0, false
	}
	// Read the envelope to learn whether it is retryable, and leave a copy for the caller.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	e := responseError(resp)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if !e.Retryable {
		return 0, false
	}
	if e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return backoff, true
}

// backoff is the wait after attempt: BaseDelay·2^(attempt-1), capped at MaxDelay, with
// "equal jitter" (half fixed, half random) so clients that failed together do not retry
// together.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// rewindable reports whether req's body can be sent again.
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil || untouched(req.Body)
}

// rewind returns req with a fresh copy of its body (a stream none of which was read is
// its own fresh copy).
func rewind(req *http.Request) (*http.Request, error) {
	if req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}
