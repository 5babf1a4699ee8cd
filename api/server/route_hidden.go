package server

import (
	"net/http"

	"github.com/cairnstore/cairn/workbench/auth"
)

// hiddenRoot reports whether the principal of r, a client request for agent's root, may
// not use that root (auth.Principal.MayUse). Such a root answers exactly as a root that
// does not exist (workbench/access.go), and a root that does not exist is served by the
// node that received the request: so is a hidden one (newRouter), never forwarded to its
// shard's leader. A forwarded answer would name the node that executed it
// (ServedByHeader), come at another node's pace, close or keep the connection as that
// node's server does, and fail while the shard has no leader: each would tell the caller
// that the root exists, and where. A request without a principal (a node that requires
// no key serves every root) is not hidden.
func hiddenRoot(r *http.Request, agent string) bool {
	p, ok := auth.FromContext(r.Context())
	return ok && !p.MayUse(agent)
}
