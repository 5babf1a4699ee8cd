package openwop

import (
	"net/http"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// The cross-owner conformance seam POST /v1/host/sample/workspace/op (OpenWOP
// host-sample-test-seams.md §9), served only with Options.TestSeams: the body names the
// owner, and the answer is the status and body of the matching workspace endpoint, through
// the same store. The operation runs as the caller's principal bound to the named owner
// (with the caller's scopes), so the owner-scoped store decides exactly as for a key bound
// to that owner. A missing tenant or workspace falls back to the caller's owner.

type seamRequest struct {
	Tenant      *string `json:"tenant"`
	Workspace   *string `json:"workspace"`
	Op          string  `json:"op"`
	Path        *string `json:"path"`
	Content     *string `json:"content"`
	ContentType *string `json:"contentType"`
	IfMatch     *string `json:"ifMatch"`
	Prefix      *string `json:"prefix"`
	Version     *int64  `json:"version"`
}

func (h *Handler) serveSeam(w http.ResponseWriter, r *http.Request, o Owner) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST", "the seam answers POST")
		return
	}
	var in seamRequest
	if tooBig, err := readClosed(w, r, h.bodyLimit(), &in); tooBig {
		WriteError(w, h.tooLarge())
		return
	} else if err != nil {
		WriteError(w, invalid(err.Error()))
		return
	}
	if in.Tenant != nil && *in.Tenant != "" {
		o.Tenant = *in.Tenant
	}
	if in.Workspace != nil && *in.Workspace != "" {
		o.Workspace = *in.Workspace
	}
	p, _ := auth.FromContext(r.Context())
	ctx := auth.WithPrincipal(r.Context(), auth.Principal{ID: p.ID, Name: p.Name, Scopes: p.Scopes, Tenant: o.Tenant, Workspace: o.Workspace})
	switch in.Op {
	case "list", "get", "put", "delete":
	default:
		WriteError(w, invalid(`op must be "list", "get", "put" or "delete"`))
		return
	}
	var path string
	if in.Op != "list" {
		if in.Path == nil {
			WriteError(w, invalid("path is required for op "+in.Op))
			return
		}
		var perr *Error
		if path, perr = DecodePath(*in.Path); perr != nil {
			WriteError(w, perr)
			return
		}
	}
	switch in.Op {
	case "list":
		prefix := ""
		if in.Prefix != nil {
			prefix = *in.Prefix
		}
		files, err := h.list(ctx, o, workbench.At{}, prefix)
		if err != nil {
			WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, fileList{Files: files})
	case "get":
		f, err := h.get(ctx, o, workbench.At{}, path, in.Version)
		if err != nil {
			WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, f)
	case "put":
		if in.Content == nil {
			WriteError(w, invalid("content: must be a string"))
			return
		}
		f, err := h.put(ctx, o, path, putBody{Content: in.Content, ContentType: in.ContentType}, precondition{IfMatch: in.IfMatch}, "")
		if err != nil {
			WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, f)
	case "delete":
		if err := h.remove(ctx, o, path, precondition{IfMatch: in.IfMatch}, ""); err != nil {
			WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
