package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/shard/host"
	"github.com/cairnstore/cairn/workbench"
)

// Request routing on a cluster node's client port. A node that hosts a replica of a
// root's shard serves the request itself (a write uploads its body here and forwards only
// its command to the leader; a read is served from the local replica: shard/host). A node
// without such a replica reverse-proxies the whole request to the shard's leader over the
// peer port's fwd stream, where it is served and never forwarded again.

// ServedByHeader names the response header, set on every response a cluster node gives
// for an agent root, that carries the id of the node that executed the request (served
// it, or answered RoutingUnavailable). A node that forwards a request passes the
// executing node's header through unchanged.
const ServedByHeader = "Cairn-Served-By"

// agentOf returns the agent root a client request addresses: the {agent} of
// /v1/agents/{agent}/..., "default" for /mcp; false for node-level paths.
func agentOf(r *http.Request) (string, bool) {
	raw := r.URL.EscapedPath()
	if raw == "/mcp" || strings.HasPrefix(raw, "/mcp/") {
		return "default", true
	}
	rest, ok := strings.CutPrefix(raw, "/v1/agents/")
	if !ok {
		return "", false
	}
	seg, _, _ := strings.Cut(rest, "/")
	agent, err := url.PathUnescape(seg)
	if err != nil || agent == "" {
		return "", false
	}
	return agent, true
}

// writeNotOwner answers a retryable RoutingUnavailable; leader, when known, is the opaque
// node id of the shard's leader (never an address).
func writeNotOwner(w http.ResponseWriter, msg, leader string) {
	e := workbench.RoutingUnavailable(msg)
	if leader != "" {
		e.Details["leader"] = leader
	}
	w.Header().Set("Retry-After", "1")
	writeEnvelope(w, http.StatusServiceUnavailable, e)
}

// newRouter returns the client-port handler of a cluster node: local serves what this
// node can serve, the rest goes to the shard's leader. rootOf, when not nil, names the
// agent root of a request whose URL names none (the OpenWOP facade's: its root is the
// principal's tenant).
func newRouter(h *host.Host, local http.Handler, rootOf func(*http.Request) (string, bool)) http.Handler {
	fwd := h.NewForwarder(func(w http.ResponseWriter, _ *http.Request, msg, leader string) { writeNotOwner(w, msg, leader) })
	here := servedHere(h.NodeID(), local)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent, ok := agentOf(r)
		if !ok && rootOf != nil {
			agent, ok = rootOf(r)
		}
		if !ok {
			local.ServeHTTP(w, r)
			return
		}
		if hiddenRoot(r, agent) { // answered here, as a root never placed (route_hidden.go)
			here.ServeHTTP(w, r)
			return
		}
		rt := routeOf(h, r, agent)
		switch {
		case rt.Local:
			here.ServeHTTP(w, r)
		case rt.Unavailable != "":
			w.Header().Set(ServedByHeader, h.NodeID())
			writeNotOwner(w, rt.Unavailable, rt.Leader)
		default:
			// The executing node names itself; this node only when it answers itself.
			forwardPrincipal(r)
			fwd.Forward(&servedByFallback{ResponseWriter: w, node: h.NodeID()}, r, rt)
		}
	})
}

// newAdminRouter returns the admin listener's handler of a cluster node: local (the admin
// routes) serves every request but those of one root's settings and purge
// (rest.AdminRootRequest), which read or write through the root's shard in ways only a
// node with a replica of it can: a node without one forwards them to the shard's leader,
// as newRouter forwards the client port's requests, marked surfaceAdmin and with their
// principal (forwardPrincipal); the leader serves them with its admin routes
// (peerSurfaces). Without this such a node waited for a replica it would not get until
// the leader wait ran out. A request for a root its key may not use is answered here, as
// newRouter answers one (route_hidden.go).
func newAdminRouter(h *host.Host, local http.Handler) http.Handler {
	fwd := h.NewForwarder(func(w http.ResponseWriter, _ *http.Request, msg, leader string) { writeNotOwner(w, msg, leader) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(adminBodyWait)) // a body that stalls is the route's to refuse
		agent, ok := rest.AdminRootRequest(r)
		_ = rc.SetReadDeadline(time.Time{})
		if !ok || hiddenRoot(r, agent) { // a hidden root is answered here (route_hidden.go)
			local.ServeHTTP(w, r)
			return
		}
		switch rt := routeOf(h, r, agent); {
		case rt.Local:
			local.ServeHTTP(w, r)
		case rt.Unavailable != "":
			writeNotOwner(w, rt.Unavailable, rt.Leader)
		default:
			forwardPrincipal(r)
			r.Header.Set(surfaceHeader, surfaceAdmin)
			fwd.Forward(w, r, rt)
		}
	})
}

// adminBodyWait bounds how long newAdminRouter waits for the body that names a request's
// root (rest.AdminRootBodyBytes at most).
const adminBodyWait = 10 * time.Second

// routeOf finds where r, a request for agent's root, is served (host.Route), within
// routeTimeout.
func routeOf(h *host.Host, r *http.Request, agent string) host.Route {
	ctx, cancel := context.WithTimeout(r.Context(), routeTimeout)
	defer cancel()
	return h.Route(ctx, agent)
}

// routeTimeout bounds finding where a request is served (placement lookup, waiting for a
// leader hint).
const routeTimeout = 10 * time.Second

// servedHere names node in ServedByHeader of every response for an agent root that local
// serves.
func servedHere(node string, local http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := agentOf(r); ok {
			w.Header().Set(ServedByHeader, node)
		}
		local.ServeHTTP(w, r)
	})
}

// servedByFallback names this node in ServedByHeader of a forwarded request's response
// only when the response does not already name a node: the answer this node wrote itself
// because the leader could not be reached.
type servedByFallback struct {
	http.ResponseWriter
	node string
}

func (s *servedByFallback) WriteHeader(code int) {
	if code >= 200 && s.Header().Get(ServedByHeader) == "" {
		s.Header().Set(ServedByHeader, s.node)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *servedByFallback) Write(p []byte) (int, error) {
	if s.Header().Get(ServedByHeader) == "" {
		s.Header().Set(ServedByHeader, s.node)
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController (the reverse proxy's flushes) reach the connection.
func (s *servedByFallback) Unwrap() http.ResponseWriter { return s.ResponseWriter }
