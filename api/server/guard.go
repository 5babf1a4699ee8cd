package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/cairnstore/cairn/api/console"
	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench"
)

// guard is the one check of who may talk to a client listener, in front of REST and MCP
// alike (docs/architecture.md#surfaces; the MCP SDK's own loopback Host check is off, api/mcp):
//
//   - Host must name this node: a loopback address or "localhost", the host of Listen or
//     AdvertiseClient, or one of AllowedHosts. A DNS-rebound page reaches a loopback
//     listener under its own name, so anything else is refused.
//   - A state-changing request (any method but GET, HEAD, OPTIONS) from a browser must be
//     same-origin (Sec-Fetch-Site, else Origin against Host; net/http's
//     CrossOriginProtection). There is no CORS: a cross-site page's text/plain POST to
//     append, restore, commit or snapshots is refused, and its reads stay unreadable to it.
//   - A read (GET, HEAD) a browser marks Sec-Fetch-Site: cross-site is refused on every
//     route but the probes and OpenWOP's public discovery: without CORS a cross-site page
//     has no business reading anything here, and the reads it can make are embeds
//     (<script src>, <img>, <link>) that would run or show stored bytes in its own origin
//     (issue 25: a stored text/javascript body served to a cross-site <script>). Every
//     answer also carries Cross-Origin-Resource-Policy: same-origin, so a browser that
//     sends no Sec-Fetch-Site still refuses to hand a body to another origin's embed.
//
// They answer 403 with the surface's envelope: the contract's (InvalidArguments naming
// the header), or OpenWOP's (forbidden) on the facade's routes.
type guard struct {
	names map[string]bool // lower-case host names, and host:port forms
	csrf  *http.CrossOriginProtection
	next  http.Handler
}

func newGuard(cfg ops.Config, advertise string, next http.Handler) *guard {
	g := &guard{names: map[string]bool{}, csrf: http.NewCrossOriginProtection(), next: next}
	for _, n := range cfg.HostNames() {
		g.names[n] = true
	}
	if host, ok := strings.CutPrefix(advertise, "http://"); ok || strings.HasPrefix(advertise, "https://") {
		if !ok {
			host = strings.TrimPrefix(advertise, "https://")
		}
		host = strings.TrimSuffix(host, "/")
		g.names[strings.ToLower(host)] = true
		if h, _, err := net.SplitHostPort(host); err == nil {
			g.names[strings.ToLower(h)] = true
		}
	}
	return g
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if console.Owns(r.URL.EscapedPath()) {
		console.SetHeaders(w.Header()) // on the refusals below and authn's 401 too
	}
	if !g.hostAllowed(r.Host) {
		forbid(w, r, "Host", fmt.Sprintf("Host: %q is not a name of this server (add it with --allowed-hosts)", truncate(r.Host, 128)))
		return
	}
	if err := g.csrf.Check(r); err != nil {
		// net/http's check trusts Sec-Fetch-Site when the browser sent it, else Origin.
		if r.Header.Get("Sec-Fetch-Site") != "" {
			forbid(w, r, "Sec-Fetch-Site", "Sec-Fetch-Site: cross-origin requests may not change state (this server answers no CORS)")
		} else {
			forbid(w, r, "Origin", "Origin: cross-origin requests may not change state (this server answers no CORS)")
		}
		return
	}
	w.Header().Set("Cross-Origin-Resource-Policy", "same-origin")
	if crossSiteRead(r) {
		forbid(w, r, "Sec-Fetch-Site", "Sec-Fetch-Site: cross-site reads are refused (this server answers no CORS)")
		return
	}
	g.next.ServeHTTP(w, r)
}

// crossSiteRead reports whether r is a read a browser made for a page of another site
// (Sec-Fetch-Site: cross-site, Fetch Metadata) of a route that is not open to anyone:
// every route but /healthz, /readyz and OpenWOP's public discovery.
func crossSiteRead(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || r.Header.Get("Sec-Fetch-Site") != "cross-site" {
		return false
	}
	path := r.URL.EscapedPath()
	return path != "/healthz" && path != "/readyz" && !openwop.Public(path)
}

// hostAllowed reports whether a Host header names this server. An empty Host (HTTP/1.0,
// which browsers never send) is allowed.
func (g *guard) hostAllowed(host string) bool {
	if host == "" {
		return true
	}
	host = strings.ToLower(host)
	if g.names[host] {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if name == "localhost" || g.names[name] {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// forbid answers 403 naming the header that was refused, in the shape of the surface the
// path belongs to (OpenWOP's and working documents' own envelopes, else REST's).
func forbid(w http.ResponseWriter, r *http.Request, field, msg string) {
	switch path := r.URL.EscapedPath(); {
	case openwop.Owns(path):
		openwop.WriteError(w, &openwop.Error{Status: http.StatusForbidden, Code: openwop.CodeForbidden, Message: msg})
	case documents.Owns(path):
		documents.WriteError(w, &documents.Error{Status: http.StatusForbidden, Code: documents.CodeForbidden, Field: field, Message: msg})
	default:
		writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodeInvalidArguments, Message: msg, Details: map[string]any{"field": field}})
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
