package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/cairnstore/cairn/shard/control"
)

// Route is where a request for an agent root is served.
type Route struct {
	// Local: this node serves it (it hosts a replica of the root's shard, the root was
	// never placed, or its name is invalid and the surface answers the error).
	Local bool
	// Node and Addr name the shard leader to forward the request to, when this node has
	// no replica of the root's shard.
	Node, Addr string
	// Unavailable, when not empty, says why nobody can serve it right now (retryable);
	// Leader is the leader's node id when known.
	Unavailable string
	Leader      string
}

// Route decides where a request for agent's root is served. A node that hosts a replica
// of the root's shard serves it itself: writes upload their bodies here and forward only
// their commands, reads are served from the local replica (docs/architecture.md#the-write-path,
// #the-read-path). Only a node
// without such a replica forwards the whole request, to the shard's leader — and so does
// one whose shard leader runs an older release without command forwarding (a rolling
// upgrade).
func (h *Host) Route(ctx context.Context, agent string) Route {
	if h.cluster == nil {
		return Route{Local: true}
	}
	id, ok := h.placement.Cached(agent)
	if !ok {
		var err error
		id, err = h.placement.Resolve(ctx, agent)
		switch {
		case errors.Is(err, control.ErrRootNotPlaced):
			return Route{Local: true}
		case err != nil && control.IsRetryable(err):
			return Route{Unavailable: "the control plane cannot place this root right now; retry"}
		case err != nil:
			return Route{Local: true}
		}
	}
	node, addr := h.leaders.leaderOf(id)
	if h.Replica(id) != nil && (node == "" || node == h.cfg.NodeID || !h.peers.isLegacy(addr)) {
		return Route{Local: true}
	}
	deadline := time.Now().Add(leaderWait)
	for node == "" && time.Now().Before(deadline) && ctx.Err() == nil {
		select { // an election is under way: wait for its leader hint
		case <-time.After(leaderPoll):
		case <-ctx.Done():
		}
		node, addr = h.leaders.leaderOf(id)
	}
	switch {
	case node == "":
		return Route{Unavailable: fmt.Sprintf("shard %d has no leader right now; retry", id)}
	case node == h.cfg.NodeID || addr == "":
		return Route{Unavailable: fmt.Sprintf("this node does not host shard %d; retry", id), Leader: node}
	}
	return Route{Node: node, Addr: addr}
}

// Forwarder reverse-proxies whole requests to other nodes' fwd streams.
type Forwarder struct {
	proxy *httputil.ReverseProxy
}

type fwdTargetKey struct{}

type fwdTarget struct{ node, addr string }

// NewForwarder returns the forwarder of a cluster host; failed answers through
// unavailable(w, r, msg, leaderNode) (the surface's retryable error; r is the request
// that could not be forwarded). Nil for the embedded default.
func (h *Host) NewForwarder(unavailable func(w http.ResponseWriter, r *http.Request, msg, leader string)) *Forwarder {
	if h.peers == nil {
		return nil
	}
	log := h.log
	return &Forwarder{proxy: &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(fwdTargetKey{}).(fwdTarget)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = t.addr
			pr.Out.Host = pr.In.Host
		},
		Transport:     h.peers.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			t, _ := r.Context().Value(fwdTargetKey{}).(fwdTarget)
			log.Debug("forwarding failed", "node", t.node, "err", err)
			unavailable(w, r, "the shard's leader cannot be reached right now; retry", t.node)
		},
	}}
}

// Forward proxies r to the node of rt (a Route with Node set).
func (f *Forwarder) Forward(w http.ResponseWriter, r *http.Request, rt Route) {
	ctx := context.WithValue(r.Context(), fwdTargetKey{}, fwdTarget{node: rt.Node, addr: rt.Addr})
	f.proxy.ServeHTTP(w, r.WithContext(ctx))
}
