package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// TransportOptions say how a client reaches a server beyond loopback: which CAs sign the
// server's certificate, which certificate the client presents (mutual TLS), and the API
// key it authenticates with. The zero value is a plain client (system CAs, no
// certificate, no key). Its String and LogValue never show the key.
type TransportOptions struct {
	// CAFile is a PEM bundle of the CAs trusted to sign the server's certificate, in
	// place of the system's; "" trusts the system's.
	CAFile string
	// ClientCertFile and ClientKeyFile are the PEM certificate and key presented to a
	// server that asks for one (--tls-client-ca); both or neither.
	ClientCertFile string
	ClientKeyFile  string
	// APIKey is sent as "Authorization: Bearer <APIKey>" with every request to the server
	// (its scheme and host; a redirect elsewhere goes without it); "" sends none. It must be
	// printable ASCII without spaces.
	APIKey string
}

// String shows which options are set, never the key itself.
func (o TransportOptions) String() string {
	key := "unset"
	if o.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("{CAFile:%q ClientCertFile:%q ClientKeyFile:%q APIKey:%s}", o.CAFile, o.ClientCertFile, o.ClientKeyFile, key)
}

// GoString is String, so that %#v does not show the key either.
func (o TransportOptions) GoString() string { return "client.TransportOptions" + o.String() }

// LogValue is String for log/slog.
func (o TransportOptions) LogValue() slog.Value { return slog.StringValue(o.String()) }

// OptionError reports a TransportOptions field that cannot be used; its text names the
// field and the rule, and never holds the API key.
type OptionError struct {
	// Field is the TransportOptions field ("CAFile", "APIKey", ...).
	Field string
	// Rule is the rule it broke, phrased to follow the field name.
	Rule string
	// Err is the underlying error (reading or parsing a file), or nil.
	Err error
}

func (e *OptionError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("client: %s %s: %v", e.Field, e.Rule, e.Err)
	}
	return fmt.Sprintf("client: %s %s", e.Field, e.Rule)
}

func (e *OptionError) Unwrap() error { return e.Err }

// NewHTTPClient returns the *http.Client for New (and for anything else that talks to
// the server at serverURL, such as the MCP proxy) with opts applied: a TLS configuration
// when a CA file or client certificate is given, and the API key on every request to
// serverURL's scheme and host. It otherwise behaves as http.DefaultTransport (proxy from
// the environment, HTTP/2 over TLS) and has no overall timeout, as New asks.
//
// Errors: an *OptionError for an unreadable or malformed file, half a certificate pair,
// an API key that cannot be a header value, or a serverURL that is not http(s)://host.
func NewHTTPClient(serverURL string, opts TransportOptions) (*http.Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &OptionError{Field: "server URL", Rule: "must be http(s)://host[:port]"}
	}
	tc, err := opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(opts.APIKey); i++ {
		if c := opts.APIKey[i]; c <= ' ' || c > '~' {
			return nil, &OptionError{Field: "APIKey", Rule: "must be printable ASCII without spaces"}
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if tc != nil {
		base.TLSClientConfig = tc
	}
	var rt http.RoundTripper = base
	if opts.APIKey != "" {
		rt = &bearer{key: opts.APIKey, scheme: u.Scheme, host: u.Host, next: base}
	}
	return &http.Client{Transport: rt}, nil
}

// tlsConfig returns the client TLS of opts, or nil when opts set none.
func (o TransportOptions) tlsConfig() (*tls.Config, error) {
	if o.CAFile == "" && o.ClientCertFile == "" && o.ClientKeyFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, &OptionError{Field: "CAFile", Rule: "must be a readable PEM file", Err: err}
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &OptionError{Field: "CAFile", Rule: "must hold at least one PEM certificate", Err: errors.New(o.CAFile)}
		}
	}
	switch {
	case o.ClientCertFile == "" && o.ClientKeyFile == "":
	case o.ClientCertFile == "" || o.ClientKeyFile == "":
		return nil, &OptionError{Field: "ClientCertFile", Rule: "and ClientKeyFile must be set together"}
	default:
		cert, err := tls.LoadX509KeyPair(o.ClientCertFile, o.ClientKeyFile)
		if err != nil {
			return nil, &OptionError{Field: "ClientCertFile", Rule: "must be a PEM certificate whose private key is ClientKeyFile", Err: err}
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// bearer adds the API key to the requests for one scheme and host that carry no
// Authorization of their own.
type bearer struct {
	key, scheme, host string
	next              http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != b.scheme || r.URL.Host != b.host || r.Header.Get("Authorization") != "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// transport is the plumbing every request of a Client or an Admin goes through: the
// server's base URL (no trailing "/"), the *http.Client that carries the TLS
// configuration and the API key (NewHTTPClient, withAPIKey), and the retry policy
// (WithRetry). It builds the URLs of the REST routes, sends requests under the policy
// (send) and decodes their answers (doJSON, openStream); the generic helpers getJSON,
// postJSON, putJSON and decodeAnswer take it. It is never changed once built: withRetry
// and withAPIKey return a new one, so it is safe for concurrent use and may be shared by
// any number of clients.
type transport struct {
	base  string
	hc    *http.Client
	retry RetryPolicy
	// agents is the escaped path of the agent routes under base ("/v1/agents/", after
	// base's own path), where escapedSlash looks for the names it refuses.
	agents string
}

// newTransport returns the transport of a client for the server at baseURL (a trailing
// "/" is ignored); httpClient nil means http.DefaultClient. It never retries.
func newTransport(baseURL string, httpClient *http.Client) *transport {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	base := strings.TrimRight(baseURL, "/")
	agents := "/v1/agents/"
	if u, err := url.Parse(base); err == nil {
		agents = u.EscapedPath() + agents
	}
	return &transport{base: base, hc: httpClient, agents: agents}
}

// withRetry returns a copy of t that retries as p says.
func (t *transport) withRetry(p RetryPolicy) *transport {
	cp := *t
	cp.retry = p
	return &cp
}

// withAPIKey returns a copy of t that sends key (Authorization: Bearer) on every request
// to t's own server, never to another host a redirect names (the same rule as
// TransportOptions.APIKey).
func (t *transport) withAPIKey(key string) *transport {
	cp := *t
	hc := *t.hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	scheme, host := "", ""
	if u, err := url.Parse(t.base); err == nil {
		scheme, host = u.Scheme, u.Host
	}
	hc.Transport = &bearer{key: key, scheme: scheme, host: host, next: base}
	cp.hc = &hc
	return &cp
}

// maxResultBytes bounds a JSON success body (a list page of 1000 entries is well under
// 1 MiB); anything larger is a broken server, not a result.
const maxResultBytes = 32 << 20

// agentURL returns the URL of an agent root's endpoints.
func (t *transport) agentURL(agent string) string {
	return t.base + "/v1/agents/" + url.PathEscape(agent)
}

// workbenchURL returns the URL of a workbench resource.
func (t *transport) workbenchURL(agent, wb string) string {
	return t.agentURL(agent) + "/workbenches/" + url.PathEscape(wb)
}

// escapedSlash refuses, before it is sent, a request whose agent id or workbench id (the
// URL builders escape each with url.PathEscape) holds a '/': the server would refuse it
// in terms of the escape it arrives as (%2F), which the caller never wrote. The answer is
// the server's code and field (InvalidArguments; details.field agent, or id for a
// workbench) with the id as the caller gave it. A URL without an escape that keeps a '/'
// (RawPath empty: every URL of valid names) costs nothing more.
func (t *transport) escapedSlash(u *url.URL) error {
	if u.RawPath == "" {
		return nil
	}
	rest, ok := strings.CutPrefix(u.EscapedPath(), t.agents)
	if !ok {
		return nil
	}
	segs := strings.SplitN(rest, "/", 4)
	for i, name := range []struct{ field, what string }{{"agent", "agent id"}, {"id", "workbench id"}} {
		if i == 1 && (len(segs) < 3 || segs[1] != "workbenches") {
			break
		}
		if id, err := url.PathUnescape(segs[2*i]); err == nil && strings.Contains(id, "/") {
			return &Error{HTTPStatus: http.StatusBadRequest, Code: "InvalidArguments",
				Message: fmt.Sprintf("%s %q: must not contain '/'", name.what, id), Details: map[string]any{"field": name.field}}
		}
	}
	return nil
}

// FileURL returns the URL a Client made by New(baseURL, ...) addresses path's file at
// (the resource of every file call: GET, HEAD, PUT, DELETE), each path component escaped
// on its own, as the calls escape it.
func FileURL(baseURL, agent, wb, path string) string {
	return newTransport(baseURL, nil).fileURL(agent, wb, path)
}

// ListURL returns the URL a Client made by New(baseURL, ...) GETs for one page of dir's
// listing with opts (List): the workbench's list resource with path, cursor, limit and
// at_snapshot as query parameters when they are set. Its error is List's for a bad
// opts.AtSnapshot.
func ListURL(baseURL, agent, wb, dir string, opts ListOptions) (string, error) {
	return newTransport(baseURL, nil).listURL(agent, wb, dir, opts)
}

// listURL returns the URL of one page of dir's listing with opts.
func (t *transport) listURL(agent, wb, dir string, opts ListOptions) (string, error) {
	q := url.Values{}
	if dir != "" {
		q.Set("path", dir)
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	return withSnapshot(t.workbenchURL(agent, wb)+"/list", q, opts.AtSnapshot)
}

// fileURL returns the URL of a file inside a workbench: each path component escaped on
// its own, joined by "/".
func (t *transport) fileURL(agent, wb, path string) string {
	var b strings.Builder
	b.Grow(len(t.base) + len("/v1/agents/") + len(agent) + len("/workbenches/") + len(wb) + len("/files/") + len(path))
	b.WriteString(t.base)
	b.WriteString("/v1/agents/")
	b.WriteString(url.PathEscape(agent))
	b.WriteString("/workbenches/")
	b.WriteString(url.PathEscape(wb))
	b.WriteString("/files/")
	first := true
	for comp := range strings.SplitSeq(path, "/") {
		if !first {
			b.WriteByte('/')
		}
		first = false
		b.WriteString(url.PathEscape(comp))
	}
	return b.String()
}

// bodyRequest builds a request streaming body, with Content-Length when size > 0.
func (t *transport) bodyRequest(ctx context.Context, method, u string, body io.Reader, size int64) (*http.Request, error) {
	if body == nil {
		body = http.NoBody
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		req.ContentLength = size
	}
	if req.GetBody != nil || body == http.NoBody {
		return req, nil // bytes or strings: net/http replays them
	}
	if s, ok := body.(io.Seeker); ok {
		// A regular file is read again from where it started. net/http closes a request
		// body that is an io.Closer; the caller's file stays the caller's to close, and the
		// transport unwraps NopCloser, so sendfile still applies.
		if start, err := s.Seek(0, io.SeekCurrent); err == nil {
			req.Body = io.NopCloser(body)
			req.GetBody = func() (io.ReadCloser, error) {
				if _, err := s.Seek(start, io.SeekStart); err != nil {
					return nil, err
				}
				return io.NopCloser(body), nil
			}
			return req, nil
		}
	}
	// A stream (stdin, a pipe) is sent again only if none of it was read (untouched).
	req.Body = &streamBody{r: body}
	return req, nil
}

// streamBody is a request body that cannot be read twice, and knows whether it was read:
// a connection refused before any byte was sent leaves it whole, to be sent again
// (rewindable). Close leaves the caller's reader open.
type streamBody struct {
	r    io.Reader
	read atomic.Bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.r.Read(p)
}

func (b *streamBody) Close() error { return nil }

// untouched reports whether body is a stream none of which was read.
func untouched(body io.ReadCloser) bool {
	b, ok := body.(*streamBody)
	return ok && !b.read.Load()
}

// doJSON sends req and decodes a 2xx JSON answer into out; any other status is a *Error.
// Numbers in untyped values (map[string]any, any) decode as json.Number, exactly as the
// server wrote them. A result implementing rawResult also keeps the bytes.
func (t *transport) doJSON(req *http.Request, out any) error {
	return t.doJSONAs(req, out, safetyOf(req))
}

// doJSONAs is doJSON for a request whose retry safety the caller knows.
func (t *transport) doJSONAs(req *http.Request, out any, safety retrySafety) error {
	resp, err := t.send(req, safety)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return responseError(resp)
	}
	body, err := readResult(resp)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", req.Method, req.URL.Path, err)
	}
	if err := decodeResult(body, out); err != nil {
		return fmt.Errorf("client: %s %s: decoding response: %w", req.Method, req.URL.Path, err)
	}
	if r, ok := out.(rawResult); ok {
		r.setRaw(bytes.TrimSpace(body))
	}
	return nil
}

// readResult reads a success body of at most maxResultBytes: into a buffer of its
// declared length when it has one (net/http ends the body there, and reports one that
// ends sooner), else grown as it comes.
func readResult(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n > maxResultBytes {
		return nil, fmt.Errorf("the response is larger than %d bytes", maxResultBytes)
	} else if n >= 0 {
		body := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, fmt.Errorf("reading response: %w", err)
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResultBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if len(body) > maxResultBytes {
		return nil, fmt.Errorf("the response is larger than %d bytes", maxResultBytes)
	}
	return body, nil
}

// openStream sends req and hands back a 200 answer with its body unread, for the caller
// to stream and close; any other status is a *Error.
func (t *transport) openStream(req *http.Request, safety retrySafety) (*http.Response, error) {
	resp, err := t.send(req, safety)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer closeBody(resp)
		return nil, responseError(resp)
	}
	return resp, nil
}

// postTool sends in as the JSON body of a POST to u and decodes the result into out;
// safety says whether the call may be repeated after a retryable answer.
func (t *transport) postTool(ctx context.Context, u string, in any, out any, safety retrySafety) error {
	req, err := jsonRequest(ctx, http.MethodPost, u, in)
	if err != nil {
		return err
	}
	return t.doJSONAs(req, out, safety)
}

// postKeyed is postTool for a call that changes state and takes an idempotency key: it
// is repeated after a retryable answer under a key (sent as Idempotency-Key; the server
// answers a repeat with the first result), or without one only when safeUnkeyed says the
// call means the same sent twice (a preview, which changes nothing; a commit or a renew,
// which the server answers alike when repeated). Rewind, Merge, Discard, Fork, Commit,
// Snapshot, Restore, Renew and Retire use it.
func (t *transport) postKeyed(ctx context.Context, u string, in any, safeUnkeyed bool, key string, out any) error {
	req, err := jsonRequest(ctx, http.MethodPost, u, in)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	safety := safetyOf(req)
	if safeUnkeyed {
		safety = replayable
	}
	return t.doJSONAs(req, out, safety)
}

// postKeyedJSON is postKeyed returning the result as a new T.
func postKeyedJSON[T any](ctx context.Context, t *transport, u string, in any, safeUnkeyed bool, key string) (*T, error) {
	var out T
	if err := t.postKeyed(ctx, u, in, safeUnkeyed, key, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// jsonRequest is a request of method to u whose body is in, encoded as JSON.
func jsonRequest(ctx context.Context, method, u string, in any) (*http.Request, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// postJSON is postTool returning the result as a new T.
func postJSON[T any](ctx context.Context, t *transport, u string, in any, safety retrySafety) (*T, error) {
	var out T
	if err := t.postTool(ctx, u, in, &out, safety); err != nil {
		return nil, err
	}
	return &out, nil
}

// putJSON sends in as the JSON body of a PUT to u and returns the result as a new T.
func putJSON[T any](ctx context.Context, t *transport, u string, in any) (*T, error) {
	req, err := jsonRequest(ctx, http.MethodPut, u, in)
	if err != nil {
		return nil, err
	}
	return decodeAnswer[T](t, req)
}

// getJSON GETs u and returns the result as a new T.
func getJSON[T any](ctx context.Context, t *transport, u string) (*T, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return decodeAnswer[T](t, req)
}

// decodeAnswer sends req (doJSON) and returns the result as a new T.
func decodeAnswer[T any](t *transport, req *http.Request) (*T, error) {
	var out T
	if err := t.doJSON(req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// withQuery appends ?q to u when q holds anything.
func withQuery(u string, q url.Values) string {
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// closeBody drains a little of what is left (so the connection can be reused) and closes.
func closeBody(resp *http.Response) {
	if resp.Body == http.NoBody { // a HEAD's, a 204's, a 304's: nothing to drain or close
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
}
