package server

import (
	"net/http"
	"strings"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/s3"
	"github.com/cairnstore/cairn/shard/host"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// S3 gateway routing on a cluster node (docs/architecture.md, "Replication and
// placement"). The gateway (api/s3) serves every node's --s3-listen; a request's agent
// root is the one root of the key that signed it (s3.Handler.Root). A node that can serve
// that root serves the request itself (route.go's rule, host.Route); one that cannot
// forwards the request, exactly as it came, to the shard's leader over the peer port's
// fwd stream, marked with surfaceHeader, where the gateway verifies it again and serves
// it, never forwarding it again.
//
// Why the request is forwarded as it came and verified again at the target, and not
// verified here with only its principal passed on as REST does (authn.go): a SigV4
// request's body carries its own proofs — each aws-chunked chunk's signature, the
// trailer's, the promised digests — that are checked as the body is read, with the
// signing key derived from the secret. Only the node that reads the body can check them
// and answer a failed check with S3's error (and commit nothing); a node that checked the
// headers alone and passed a principal on would hand the target a body nobody verifies.
// Forwarding exactly keeps one code path for every check and every S3 error. The
// Authorization header crosses the peer port, unlike REST's bearer key: a signature is
// not the secret and opens only the one request it signs, until it expires; the target
// looks the secret up in its own key store (the cluster's, in etcd), so a key revoked in
// between is refused there. The forward keeps everything the signature covers: the
// request target byte for byte (sendAsReceived), the Host header, every end-to-end
// header and the body, streamed. The gateways of a cluster must share one region
// (--s3-gateway-region): the target checks the credential's scope against its own.

// surfaceHeader marks a request another node forwarded from its S3 listener: the peer
// port serves it with the S3 gateway (which verifies it again) instead of REST. It grants
// nothing; it is deleted from every client request all the same.
const surfaceHeader = "Cairn-Internal-Surface"

// surfaceS3 is surfaceHeader's value for the S3 gateway.
const surfaceS3 = "s3"

// surfaceAdmin is surfaceHeader's value for a request of one root's settings or purge
// that another node's admin listener forwarded (newAdminRouter).
const surfaceAdmin = "admin"

// newS3Router returns the S3 listener's handler of a cluster node: gw serves what this
// node can serve; the rest goes to the shard's leader; a request that is not
// authenticated, or whose key acts in no single root, is gw's to refuse here.
func newS3Router(h *host.Host, gw *s3.Handler) http.Handler {
	fwd := h.NewForwarder(func(w http.ResponseWriter, r *http.Request, msg, _ string) { gw.Unavailable(w, r, msg) })
	node := h.NodeID()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(surfaceHeader)
		r.Header.Del(PrincipalHeader)
		agent, ok := gw.Root(r)
		if !ok {
			gw.ServeHTTP(w, r)
			return
		}
		rt := routeOf(h, r, agent)
		switch {
		case rt.Local:
			w.Header().Set(ServedByHeader, node)
			gw.ServeHTTP(w, r)
		case rt.Unavailable != "":
			w.Header().Set(ServedByHeader, node)
			gw.Unavailable(w, r, rt.Unavailable)
		default:
			r.Header.Set(surfaceHeader, surfaceS3)
			sendAsReceived(r)
			fwd.Forward(&servedByFallback{ResponseWriter: w, node: node}, r, rt)
		}
	})
}

// sendAsReceived makes r's request target, when forwarded, the path the client sent, byte
// for byte: SigV4 signs the path as sent, and Go sends r.URL's own escaping of it, which
// differs when the client left a byte unescaped that Go escapes. (A path that starts with
// "//" is sent as Go escapes it: as an opaque URL it would be taken for an absolute one.)
func sendAsReceived(r *http.Request) {
	raw, _, _ := strings.Cut(r.RequestURI, "?")
	if strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, "//") && raw != r.URL.EscapedPath() {
		r.URL.Opaque = raw
	}
}

// peerSurfaces serves the requests other nodes forward over the peer port: S3 requests
// (surfaceHeader) with the S3 gateway, which verifies each signature again, requests of
// one root's settings or purge from an admin listener (surfaceAdmin) with admin
// (peerAuthn, then peerAdmin), and every other with rest (peerAuthn: the principal the
// forwarding node named).
type peerSurfaces struct {
	node  string
	s3    http.Handler
	admin http.Handler
	rest  http.Handler
}

func (p peerSurfaces) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Header.Get(surfaceHeader) {
	case surfaceS3:
		r.Header.Del(surfaceHeader)
		r.Header.Del(PrincipalHeader) // the signature names the key
		w.Header().Set(ServedByHeader, p.node)
		p.s3.ServeHTTP(w, r)
	case surfaceAdmin:
		r.Header.Del(surfaceHeader)
		p.admin.ServeHTTP(w, r)
	default:
		p.rest.ServeHTTP(w, r)
	}
}

// peerAdmin serves, of the admin routes (next), only what an admin listener forwards
// (rest.AdminRootRequest), and only to a principal with the admin scope, which the
// forwarding node checked already (authn): the peer port is no way into the admin routes
// for any other request. The route itself checks that the principal reaches the root.
type peerAdmin struct{ next http.Handler }

func (p peerAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := rest.AdminRootRequest(r); !ok {
		writeEnvelope(w, http.StatusNotFound, &workbench.Error{Code: workbench.CodeNotFound, Message: "no such route"})
		return
	}
	if p, _ := auth.FromContext(r.Context()); !p.Has(auth.ScopeAdmin) {
		writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodePermissionDenied,
			Message: "admin routes need a key with the admin scope", Details: map[string]any{"scope": string(auth.ScopeAdmin)}})
		return
	}
	p.next.ServeHTTP(w, r)
}
