package openwop

import (
	_ "embed"
	"log/slog"
	"net/http"
	"strings"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Redactor replaces secret-shaped values and a tenant's registered secrets in content
// before it is persisted (OpenWOP WSR-1; workbench/redact implements it). nil: no redaction.
type Redactor interface {
	Redact(tenant, content string) string
}

// Options configures the facade (ops.OpenWOPConfig; defaults there).
type Options struct {
	// Enabled serves the workspace; false advertises supported:false, answers every
	// workspace and run endpoint 501 capability_not_provided and the v2 registry's
	// (proposals, installed packs, agents) 404 not_found, as unadvertised operations.
	Enabled bool
	// MaxFileBytes bounds a file's content (UTF-8 bytes); MaxFiles the live files of a
	// workspace; MaxVersions the versions ?version=N serves.
	MaxFileBytes int64
	MaxFiles     int
	MaxVersions  int
	// RunTTLDays is the lease of a run's snapshot, days.
	RunTTLDays int
	// Tenant and Workspace own the requests of the Local principal (a node that requires
	// no key).
	Tenant, Workspace string
	// TestSeams serves the conformance seams; without it their routes answer 404.
	TestSeams bool
	// Readback serves getInstalledPack (GET /installed-packs/{packName}) for every kind of
	// ArtifactKinds, which discovery lists as agents.proposals.readback; without it that
	// route answers 404 as an unadvertised operation, discovery has no readback and an
	// applied proposal names no installed artifact.
	Readback bool
	// ShippedPacks are packs the host installs for every tenant (read-only).
	ShippedPacks []ShippedPack
	Redactor     Redactor
	Logger       *slog.Logger
}

// Handler serves the facade's routes (Owns) and hands every other request to next. It
// runs behind the node's authentication middleware: the request's principal
// (auth.FromContext) decides the owner.
type Handler struct {
	svc  *workbench.Service
	opt  Options
	next http.Handler
	// packs serves the v2 routes of packs: proposals, installed packs, the agent
	// inventory (v2.go).
	packs *packsHandler
	// creates serializes the PUTs that create a file, per owner (files.go: put).
	creates createLocks
}

// New returns the facade over svc in front of next.
func New(svc *workbench.Service, opt Options, next http.Handler) *Handler {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Handler{svc: svc, opt: opt, next: next, packs: newPacksHandler(svc, opt)}
}

//go:embed openapi.json
var openAPI []byte

// Surface names this facade's requests to the Workbench service (attribution, and the
// only surface that writes PacksWorkbench: workbench.Config.ReservedWorkbenches).
const Surface = "openwop"

// Owner is an OpenWOP owner: a tenant (agent root) and a workspace (a workbench in it).
type Owner struct{ Tenant, Workspace string }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	if !Owns(path) {
		h.next.ServeHTTP(w, r)
		return
	}
	switch path {
	case DiscoveryPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD", "discovery answers GET only")
			return
		}
		writeJSON(w, http.StatusOK, h.discovery())
		return
	case OpenAPIPath:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
		return
	case seamPath, v2SeamPath:
		if !h.opt.TestSeams {
			WriteError(w, notFound("no such route"))
			return
		}
	}
	if strings.HasPrefix(path, v2FilesPrefix) && !h.opt.TestSeams {
		WriteError(w, notFound("no such route"))
		return
	}
	if !h.opt.Enabled {
		// The workspace's endpoints answer 501 (WIRE: every workspace endpoint of a host
		// that does not advertise it); the v2 registry's (proposals, installed packs,
		// agents) are unadvertised operations, which answer 404 not_found.
		if v2Route(path) {
			WriteError(w, notFound("no such route"))
			return
		}
		WriteError(w, fail(http.StatusNotImplemented, CodeCapabilityNotProvided, "this host does not provide host.workspace"))
		return
	}
	// The memory shares the request takes (a file listing, a proposal page) are kept until
	// its answer is written (workbench.Service.HoldAdmissions).
	ctx, releaseMemory := h.svc.HoldAdmissions(workbench.WithSurface(r.Context(), Surface))
	defer releaseMemory()
	r = r.WithContext(ctx)
	owner, oerr := h.owner(r)
	if oerr != nil {
		WriteError(w, oerr)
		return
	}
	if err := h.svc.AllowRequest(ctx); err != nil { // the principal's request rate, as on every surface
		WriteError(w, fromStore(err))
		return
	}
	if v2Route(path) {
		h.packs.serve(w, r, owner, path)
		return
	}
	switch {
	case path == seamPath || path == v2SeamPath:
		h.serveSeam(w, r, owner)
	case strings.HasPrefix(path, filesPrefix):
		h.serveFiles(w, r, owner, strings.TrimPrefix(path, filesPrefix))
	case strings.HasPrefix(path, v2FilesPrefix):
		h.serveFiles(w, r, owner, strings.TrimPrefix(path, v2FilesPrefix))
	default:
		h.serveRuns(w, r, owner, strings.TrimPrefix(path, runsPrefix))
	}
}

// Owner returns the owner the facade serves r as (owner): the tenant and workspace r's
// key is bound to, or the configured ones for the Local principal of a node without keys;
// ok false when the facade refuses r (no credential, or a key bound to no tenant, such as
// one of whole agent roots). The web console asks it to show a key the pack proposals it
// may decide here (api/console).
func (h *Handler) Owner(r *http.Request) (tenant, workspace string, ok bool) {
	o, err := h.owner(r)
	return o.Tenant, o.Workspace, err == nil
}

// owner derives the request's owner from its principal only: a key bound to a tenant and
// workspace, or the configured default for the Local principal of a node without keys.
func (h *Handler) owner(r *http.Request) (Owner, *Error) {
	p, ok := auth.FromContext(r.Context())
	switch {
	case !ok:
		return Owner{}, fail(http.StatusUnauthorized, CodeUnauthenticated, "the request carries no credential")
	case p.Tenant != "":
		return Owner{Tenant: p.Tenant, Workspace: p.Workspace}, nil
	case p.ID == auth.LocalID:
		return Owner{Tenant: h.opt.Tenant, Workspace: h.opt.Workspace}, nil
	}
	return Owner{}, fail(http.StatusForbidden, CodeForbidden,
		"the API key is not bound to an OpenWOP tenant and workspace (cairn admin key create --tenant T --workspace W)")
}

// serveFiles routes rest ("" or "/{path}") of the files endpoints.
func (h *Handler) serveFiles(w http.ResponseWriter, r *http.Request, o Owner, rest string) {
	if rest == "" {
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET", "the file list answers GET only")
			return
		}
		prefix := r.URL.Query().Get("prefix")
		if len(prefix) > MaxPathBytes {
			WriteError(w, invalid("prefix must be at most 256 characters."))
			return
		}
		files, err := h.list(r.Context(), o, workbench.At{}, prefix)
		if err != nil {
			WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, fileList{Files: files})
		return
	}
	raw := strings.TrimPrefix(rest, "/")
	if raw == "" {
		WriteError(w, notFound("no such route"))
		return
	}
	path, perr := DecodePath(raw)
	if perr != nil {
		WriteError(w, perr)
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.serveGet(w, r, o, workbench.At{}, path)
	case http.MethodPut:
		pre, perr := preconditionOf(r, true)
		if perr != nil {
			WriteError(w, perr)
			return
		}
		in, err := h.decodePut(w, r)
		if err != nil {
			WriteError(w, err)
			return
		}
		f, err := h.put(r.Context(), o, path, in, pre, r.Header.Get("Idempotency-Key"))
		if err != nil {
			WriteError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, f)
	case http.MethodDelete:
		pre, perr := preconditionOf(r, false)
		if perr != nil {
			WriteError(w, perr)
			return
		}
		if err := h.remove(r.Context(), o, path, pre, r.Header.Get("Idempotency-Key")); err != nil {
			WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, PUT, DELETE", "a workspace file answers GET, PUT and DELETE")
	}
}

// maxHeaderLength is the maxLength openapi.json gives If-Match (workspace files) and
// Idempotency-Key (proposals).
const maxHeaderLength = 255

// preconditionOf reads a PUT's or DELETE's preconditions: If-Match (its first value, as
// sent) and, on a PUT (create true), If-None-Match, which must be "*" (create only). A
// precondition this host cannot hold atomically (If-None-Match with etags, or on a DELETE)
// is validation_error, never ignored.
func preconditionOf(r *http.Request, create bool) (precondition, *Error) {
	var pre precondition
	if v := r.Header.Values("If-Match"); len(v) > 0 {
		if len(v[0]) > maxHeaderLength {
			return pre, invalid("If-Match: at most 255 characters.")
		}
		pre.IfMatch = &v[0]
	}
	if v := r.Header.Values("If-None-Match"); len(v) > 0 {
		if !create {
			return pre, invalid("If-None-Match: a DELETE takes If-Match only.")
		}
		if len(v) > 1 || strings.TrimSpace(v[0]) != "*" {
			return pre, invalid(`If-None-Match: must be "*" (create only).`)
		}
		pre.CreateOnly = true
	}
	return pre, nil
}

// serveGet answers a file of o at `at`, or one of its versions (?version=N).
func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request, o Owner, at workbench.At, path string) {
	var version *int64
	if raw, ok := r.URL.Query()["version"]; ok {
		n, err := parseVersion(raw[0])
		if err != nil {
			WriteError(w, err)
			return
		}
		version = &n
	}
	f, err := h.get(r.Context(), o, at, path, version)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// Root returns the agent root a request of this facade acts on (its owner's tenant), for
// a cluster node's router to send it to a node holding that root's shard; false for the
// public routes, the seams (their owner is in the body) and requests it will refuse.
func (h *Handler) Root(r *http.Request) (string, bool) {
	path := r.URL.EscapedPath()
	if !Owns(path) || Public(path) || path == seamPath || path == v2SeamPath {
		return "", false
	}
	o, err := h.owner(r)
	if err != nil {
		return "", false
	}
	return o.Tenant, true
}
