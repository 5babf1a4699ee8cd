package console

import (
	"encoding/json"
	"net/http"

	"github.com/cairnstore/cairn/workbench/auth"
)

// Session is the answer of GET SessionPath: what the page needs to show only the controls
// the request's key may use. It repeats what the node already knows of the key (never its
// secret); the API decides every call on its own.
type Session struct {
	// Principal is the key's public record (auth.Principal: id, name, roots, scopes,
	// tenant and workspace; never its secret).
	Principal auth.Principal `json:"principal"`
	// Documents is the owner of the key's working documents; nil when it owns none (a key
	// not bound to a tenant and workspace, or a node without the surface).
	Documents *Owner `json:"documents"`
	// OpenWOP is the owner the OpenWOP facade serves the key as: its tenant's pack
	// proposals are read, applied and rejected there, and only there (only that surface
	// writes the packs workbench). nil when the facade refuses the key (one bound to no
	// tenant, such as a key of whole agent roots: it reads the packs workbench over REST
	// and decides nothing in it), or the node serves no facade.
	OpenWOP *Owner `json:"openwop"`
	// Runners are the registered proposal runners, in id order.
	Runners []SessionRunner `json:"runners"`
}

// Owner is an agent root (Tenant) and a workspace in it: who owns a key's documents, who
// the OpenWOP facade serves it as.
type Owner struct {
	Tenant    string `json:"tenant"`
	Workspace string `json:"workspace"`
}

// SessionRunner is one registered runner (api/documents Runner).
type SessionRunner struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	Inference bool   `json:"inference"`
}

// session answers GET SessionPath from the request's principal: 401 without one (a
// request that did not pass the node's authentication).
func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		plain(w, http.StatusUnauthorized, "the request carries no credential")
		return
	}
	s := Session{Principal: p, Runners: []SessionRunner{}}
	if h.docs != nil {
		if t, ws, ok := h.docs.Owner(r); ok {
			s.Documents = &Owner{Tenant: t, Workspace: ws}
		}
		for _, rn := range h.docs.Runners() {
			s.Runners = append(s.Runners, SessionRunner{ID: rn.ID(), Label: rn.Label(), Inference: rn.Inference()})
		}
	}
	if h.packs != nil {
		if t, ws, ok := h.packs.Owner(r); ok {
			s.OpenWOP = &Owner{Tenant: t, Workspace: ws}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s)
}
