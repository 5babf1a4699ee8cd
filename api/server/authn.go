package server

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cairnstore/cairn/api/console"
	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Authentication (workbench/auth/doc.go): one middleware in front of routing on the client
// listener and on the admin listener, and its counterpart on the peer port for requests
// another node forwarded.
//
//   - When the node requires keys (ops.Config.AuthRequired; on the admin listener also
//     AdminAuthRequired), every request but /healthz and /readyz (and /metrics from a
//     loopback connection to a listener bound to loopback, unless MetricsRequireKey)
//     carries "Authorization: Bearer <key>" naming a live key of the node's store, or is
//     answered 401 with the error envelope (code Unauthenticated) and WWW-Authenticate:
//     Bearer, before any routing. The request then carries the key's principal
//     (auth.WithPrincipal). A node that requires no key serves every request as
//     auth.Local.
//   - On the admin listener, /v1/admin/... needs a principal with auth.ScopeAdmin
//     (403 PermissionDenied otherwise), and one that reaches the whole of every root
//     (auth.Principal.EveryRoot) except on the routes of one root (rest.PerRootAdminRoute:
//     quotas, retention, purge, root moves), which check the root themselves: an admin
//     key bound to some roots could otherwise mint a key of every root, or manage the
//     cluster and read other roots' backups.
//   - /metrics names every principal's id and request counts: read with a key, it needs
//     auth.ScopeAdmin and every root (403 PermissionDenied otherwise), on both listeners. A listener
//     bound beyond loopback never serves it without a key, whatever the connection's
//     address (a reverse proxy on the node's host connects from loopback).
//   - A node that forwards a request to another (route.go) names the principal's id in
//     PrincipalHeader and drops the Authorization header: the secret never leaves the node
//     that received it. The receiving node resolves the id in its own store (a key revoked
//     since is refused there too), also where it requires no key itself: whether a node
//     requires keys depends on its listeners' addresses, and the forwarding node's
//     principal may not widen to the local operator on the way. PrincipalHeader is deleted from every client request,
//     so no client can claim a principal.
//   - The S3 gateway authenticates its own requests (SigV4, api/s3) on its own listener;
//     a cluster node forwards one with its signature, which is no secret, and the serving
//     node verifies it again (route_s3.go).

// PrincipalHeader is the internal header that carries the principal id of a forwarded
// request between nodes; never accepted from a client.
const PrincipalHeader = "Cairn-Internal-Principal"

// authn is the authentication middleware of a client or admin listener.
type authn struct {
	keys     auth.Store
	required bool
	// metricsKey: /metrics needs a key on loopback connections too.
	metricsKey bool
	// beyondLoopback: the listener binds an address other hosts can reach, so /metrics
	// needs a key from every connection.
	beyondLoopback bool
	// admin: the admin listener (its /v1/admin/... routes need ScopeAdmin).
	admin bool
	log   *slog.Logger
	next  http.Handler
}

func (a *authn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(PrincipalHeader)
	r.Header.Del(surfaceHeader)
	p, ok := a.principal(w, r)
	if !ok {
		return
	}
	if a.admin && strings.HasPrefix(r.URL.EscapedPath(), "/v1/admin/") && !p.Has(auth.ScopeAdmin) {
		writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodePermissionDenied,
			Message: "admin routes need a key with the admin scope", Details: map[string]any{"scope": string(auth.ScopeAdmin)}})
		return
	}
	if a.admin && strings.HasPrefix(r.URL.EscapedPath(), "/v1/admin/") && !p.EveryRoot() && !rest.PerRootAdminRoute(r.URL.EscapedPath()) {
		writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodePermissionDenied,
			Message: "this admin route acts on every agent root: it needs an admin key of every root (--all-agents), not one bound to some roots, a workbench or paths",
			Details: map[string]any{"scope": string(auth.ScopeAdmin), "field": "agents"}})
		return
	}
	if r.URL.EscapedPath() == "/metrics" && !p.Has(auth.ScopeAdmin) {
		writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodePermissionDenied,
			Message: "/metrics needs a key with the admin scope", Details: map[string]any{"scope": string(auth.ScopeAdmin)}})
		return
	}
	if r.URL.EscapedPath() == "/metrics" && !p.EveryRoot() {
		// It names every key and counts every root's requests.
		writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodePermissionDenied,
			Message: "/metrics covers every agent root: it needs an admin key of every root (--all-agents)",
			Details: map[string]any{"scope": string(auth.ScopeAdmin), "field": "agents"}})
		return
	}
	ctx := auth.WithPrincipal(r.Context(), p)
	if a.required && p.ID != auth.Local.ID {
		// A stream that outlives the request's moment looks the key up again before it
		// hands out more (auth.Recheck): a revoked or expired key reads nothing after.
		keys, id := a.keys, p.ID
		ctx = auth.WithRecheck(ctx, func() error { _, err := auth.Resolve(keys, id, time.Now()); return err })
	}
	a.next.ServeHTTP(w, r.WithContext(ctx))
}

// principal authenticates r; false when it answered 401. Open routes get auth.Local (they
// read nothing a principal could be refused).
func (a *authn) principal(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	if !a.required {
		return auth.Local, true
	}
	switch path := r.URL.EscapedPath(); {
	case path == "/healthz" || path == "/readyz":
		return auth.Local, true
	case path == "/metrics" && !a.metricsKey && !a.beyondLoopback && loopbackRemote(r):
		return auth.Local, true
	case !a.admin && openwop.Public(path):
		return auth.Local, true // OpenWOP discovery is public; a key sent along is not checked
	case !a.admin && console.Public(path):
		return auth.Local, true // the console's files hold no data; its session and API calls need the key
	}
	token, err := auth.ParseAuthorization(r.Header.Get("Authorization"))
	if len(r.Header.Values("Authorization")) > 1 {
		// Two credentials: a proxy may act on one and this node on the other.
		err = auth.ErrMalformed
	}
	var p auth.Principal
	if err == nil {
		p, err = auth.Authenticate(a.keys, token, time.Now())
	}
	if err != nil {
		if a.log != nil {
			a.log.Debug("request refused: not authenticated", "method", r.Method, "path", r.URL.EscapedPath(), "reason", err)
		}
		if !a.admin && openwop.Owns(r.URL.EscapedPath()) {
			openwop.WriteUnauthenticated(w, unauthenticatedMessage(err)) // the facade's envelope
			return auth.Principal{}, false
		}
		if !a.admin && documents.Owns(r.URL.EscapedPath()) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
			documents.WriteError(w, &documents.Error{Status: http.StatusUnauthorized, Code: documents.CodeUnauthenticated, Message: unauthenticatedMessage(err)})
			return auth.Principal{}, false
		}
		unauthenticated(w, err)
		return auth.Principal{}, false
	}
	return p, true
}

// unauthenticated answers 401 (RFC 6750 §3: WWW-Authenticate: Bearer, with
// error="invalid_token" when a key was sent). The message never says which check failed.
func unauthenticated(w http.ResponseWriter, err error) {
	challenge := `Bearer realm="cairn"`
	if !errors.Is(err, auth.ErrNoCredentials) {
		challenge += `, error="invalid_token"`
	}
	msg := unauthenticatedMessage(err)
	w.Header().Set("WWW-Authenticate", challenge)
	writeEnvelope(w, http.StatusUnauthorized, &workbench.Error{Code: workbench.CodeUnauthenticated, Message: msg})
}

// unauthenticatedMessage says why a request was refused 401, never which check failed.
func unauthenticatedMessage(err error) string {
	if errors.Is(err, auth.ErrNoCredentials) {
		return "this server requires an API key: send Authorization: Bearer " + auth.TokenPrefix + "…"
	}
	return "the API key is not valid (malformed, unknown, revoked or expired)"
}

// loopbackRemote reports whether r came over a loopback connection.
func loopbackRemote(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// peerAuthn resolves the principal of a request another node forwarded (PrincipalHeader)
// in this node's store; a node that requires no key serves it as auth.Local.
type peerAuthn struct {
	keys     auth.Store
	required bool
	next     http.Handler
}

func (a *peerAuthn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(PrincipalHeader)
	r.Header.Del(PrincipalHeader)
	p := auth.Local
	// A key's id is resolved here even where this node requires no key: the forwarding
	// node required one (its listener's address decides), and acting as the local
	// operator would widen a key bound to some roots to every root.
	if a.required || (id != "" && id != auth.LocalID) {
		var err error
		if p, err = auth.Resolve(a.keys, id, time.Now()); err != nil {
			unauthenticated(w, auth.ErrMalformed)
			return
		}
	}
	a.next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
}

// forwardPrincipal prepares r, which this node forwards, for the node that serves it: its
// principal's id in PrincipalHeader, no Authorization header.
func forwardPrincipal(r *http.Request) {
	r.Header.Del("Authorization")
	if p, ok := auth.FromContext(r.Context()); ok {
		r.Header.Set(PrincipalHeader, p.ID)
	}
}

// writeEnvelope answers status with e's envelope, in the bytes REST answers it
// (rest.WriteJSON: "status" first), so a node's own refusals read like any other error.
func writeEnvelope(w http.ResponseWriter, status int, e *workbench.Error) {
	rest.WriteJSON(w, status, e.Envelope())
}
