package openwop

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/cairnstore/cairn/workbench"
)

// The OpenWOP v2 routes this facade serves (unversioned at the server root: proposals,
// installed packs and the agent inventory). v2 negotiates by the OpenWOP-Version request
// header (RFC 0172 §A.3): absent selects the host's preferred version, a listed
// major.minor selects it, anything else is 406 protocol_version_unsupported; every answer
// names the version that produced it in the OpenWOP-Version response header (§A.4).
// This host serves major 2 on these routes and accepts any 2.<minor>: their wire is the
// same for every minor it knows.

// PreferredV2 is the version answered when the request names none.
const PreferredV2 = "2.0"

var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// v2Route reports whether escapedPath is one of the v2 routes.
func v2Route(escapedPath string) bool {
	for _, p := range []string{proposalsPrefix, installedPrefix, agentsPath} {
		if escapedPath == p || strings.HasPrefix(escapedPath, p+"/") {
			return true
		}
	}
	return false
}

// negotiate returns the version a request selects, false when this host does not serve it.
func negotiate(r *http.Request) (string, bool) {
	v := r.Header.Get("OpenWOP-Version")
	if v == "" {
		return PreferredV2, true
	}
	return v, versionPattern.MatchString(v) && strings.HasPrefix(v, "2.")
}

// packsHandler serves the v2 routes of a tenant's packs: its proposals (proposals.go,
// apply.go, review.go), its installed packs and its agent inventory (packs.go), all kept in
// the packs workbench of its agent root (proposal_record.go). Handler routes a request to
// it once the request is authenticated, admitted and its owner known; it holds nothing of
// the workspace and run endpoints. Its fields are set once by New: only the manifest cache
// changes after that (under its own lock), so it is safe for concurrent use.
type packsHandler struct {
	svc *workbench.Service
	// redactor redacts a proposal's title and rationale before they are stored
	// (Options.Redactor; nil: none).
	redactor Redactor
	// readback serves getInstalledPack (Options.Readback).
	readback bool
	// shipped indexes Options.ShippedPacks by name; manifests caches the pack files read.
	shipped   map[string]installedPack
	manifests manifestCache
}

func newPacksHandler(svc *workbench.Service, opt Options) *packsHandler {
	return &packsHandler{svc: svc, redactor: opt.Redactor, readback: opt.Readback, shipped: shippedPacks(opt.ShippedPacks)}
}

// serve answers a v2 route (path is the escaped request path) for owner o: it negotiates
// the version, then routes to the proposals, the installed packs or the agent inventory.
func (h *packsHandler) serve(w http.ResponseWriter, r *http.Request, o Owner, path string) {
	v, ok := negotiate(r)
	if !ok {
		w.Header().Set("OpenWOP-Version", PreferredV2)
		e := fail(http.StatusNotAcceptable, "protocol_version_unsupported", "this host serves OpenWOP-Version 2.x on this route")
		e.Details = map[string]any{"supported": []string{PreferredV2}}
		WriteError(w, e)
		return
	}
	w.Header().Set("OpenWOP-Version", v)
	switch {
	case strings.HasPrefix(path, proposalsPrefix):
		h.serveProposals(w, r, o, strings.TrimPrefix(path, proposalsPrefix))
	case strings.HasPrefix(path, installedPrefix):
		h.serveInstalled(w, r, o, strings.TrimPrefix(path, installedPrefix))
	default:
		h.serveAgents(w, r, o, strings.TrimPrefix(path, agentsPath))
	}
}
