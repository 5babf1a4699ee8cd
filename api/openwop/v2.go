package openwop

import (
	"net/http"
	"regexp"
	"strings"
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

func (h *Handler) serveV2(w http.ResponseWriter, r *http.Request, o Owner, path string) {
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
