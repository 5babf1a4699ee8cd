package documents

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/cairnstore/cairn/internal/strictjson"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Prefix is the path prefix of every route of this surface.
const Prefix = "/api/workbench/"

// MaxRequestBytes bounds a request body: the design's 98 KB (98 × 1024 bytes).
const MaxRequestBytes = 98 << 10

// Limits of the design (docs/documents.md#limits), in characters (Chars: UTF-16 units).
const (
	MaxBodyChars    = 64_000
	MaxTitleChars   = 200
	MaxExcerptChars = 2_000
	MaxEvidenceIDs  = 16
	// MaxSelectedIDs bounds the event ids, and the version ids, of one selection
	// (Cairn's bound; the design leaves it open).
	MaxSelectedIDs = 64
	// MaxRequestIDChars bounds a requestId or submissionId.
	MaxRequestIDChars = 128
	// CandidateWindow is how many of the root's newest observations candidates lists.
	CandidateWindow = 200
)

// DefaultActor is the actor of every event unless Options.Actor names another.
const DefaultActor = "operator:local"

// Options configures the surface.
type Options struct {
	// Tenant and Workspace own the requests of the Local principal (a node that requires
	// no API key): an agent root and a workbench name of it. Default "default".
	Tenant, Workspace string
	// Actor is the events' actor. Default DefaultActor.
	Actor string
	// Runners are registered besides FixtureRunner (ids must be unique).
	Runners []Runner
	// ReadOnly answers every write 405: the node has no way to check the design's Review
	// capability (docs/documents.md#access).
	ReadOnly bool
	// Admit, when set, admits a request before anything else is done for it: it counts
	// the principal's request rate and returns the context the request runs in, and
	// release, called once its answer is written (the node's memory shares it took).
	// An error wrapping ErrRateLimited answers 429. Default: every request is admitted.
	Admit func(ctx context.Context) (admitted context.Context, release func(), err error)
	// Now is the clock of occurredAt and run times. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Handler serves the routes under Prefix and hands every other request to next. It runs
// behind the node's authentication: the request's principal decides the owner.
type Handler struct {
	store   Store
	opt     Options
	next    http.Handler
	runners map[string]Runner
	locks   *[64]sync.Mutex // per-document serialization within this node (mutate.go)
	// proposals shares one walk among this node's concurrent requests of one run
	// (propose.go); proposing counts the requests in it (tests wait on it).
	proposals *singleflight.Group
	proposing *atomic.Int64
	// elsewhere is this surface over a root that holds nothing (absentRoot), for a
	// request that acts in another agent root than its owner's (Call).
	elsewhere *Handler
}

// New returns the surface over store in front of next. An error names a runner id that
// is empty or registered twice.
func New(store Store, opt Options, next http.Handler) (*Handler, error) {
	if opt.Tenant == "" {
		opt.Tenant = "default"
	}
	if opt.Workspace == "" {
		opt.Workspace = "default"
	}
	if opt.Actor == "" {
		opt.Actor = DefaultActor
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	h := &Handler{store: store, opt: opt, next: next, runners: map[string]Runner{}, locks: new([64]sync.Mutex),
		proposals: new(singleflight.Group), proposing: new(atomic.Int64)}
	for _, r := range append([]Runner{FixtureRunner{}}, opt.Runners...) {
		id := r.ID()
		if id == "" || h.runners[id] != nil {
			return nil, errors.New("documents: runner id " + id + " is empty or registered twice")
		}
		h.runners[id] = r
	}
	elsewhere := *h
	elsewhere.store = absentRoot{}
	h.elsewhere = &elsewhere
	return h, nil
}

// Owns reports whether this surface serves path (an escaped URL path).
func Owns(path string) bool { return strings.HasPrefix(path, Prefix) }

// Root returns the agent root a request of this surface acts on (its owner's tenant), for
// a cluster node's router; false for requests of other surfaces and ones it will refuse.
func (h *Handler) Root(r *http.Request) (string, bool) {
	if p := r.URL.EscapedPath(); !Owns(p) || p == OpenAPIPath {
		return "", false
	}
	o, err := h.owner(r)
	if err != nil {
		return "", false
	}
	return o.Tenant, true
}

// owner derives the owner from the principal only, as the OpenWOP facade does.
func (h *Handler) owner(r *http.Request) (owner, *Error) {
	p, ok := auth.FromContext(r.Context())
	switch {
	case !ok:
		return owner{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: "the request carries no credential"}
	case p.Tenant != "":
		return owner{Tenant: p.Tenant, Workspace: p.Workspace}, nil
	case p.ID == auth.LocalID:
		return owner{Tenant: h.opt.Tenant, Workspace: h.opt.Workspace}, nil
	}
	return owner{}, &Error{Status: http.StatusForbidden, Code: CodeForbidden,
		Message: "the API key is not bound to a tenant and workspace (cairn admin key create --tenant T --workspace W)"}
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// OpenAPIPath serves this surface's OpenAPI 3.1 document (openapi.json), to anyone.
const OpenAPIPath = Prefix + "openapi.json"

//go:embed openapi.json
var openAPI []byte

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !Owns(r.URL.EscapedPath()) {
		h.next.ServeHTTP(w, r)
		return
	}
	h.serve(w, r, true, "")
}

// serve answers a request of this surface; admit: take Options.Admit first. root, when
// not "", is the agent root the request acts in (Call): another root than the owner's
// tenant holds none of the owner's records, so the request is served over absentRoot
// and answers exactly as a root without documents would.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, admit bool, root string) {
	path := r.URL.EscapedPath()
	if path == OpenAPIPath && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
		return
	}
	o, oerr := h.owner(r)
	if oerr != nil {
		writeError(w, oerr)
		return
	}
	if admit && h.opt.Admit != nil {
		ctx, release, err := h.opt.Admit(r.Context())
		if err != nil {
			writeError(w, retryAdvice(fromStore(err), r))
			return
		}
		defer release()
		r = r.WithContext(ctx)
	}
	if root != "" && root != o.Tenant {
		h = h.elsewhere
	}
	parts := strings.Split(strings.TrimPrefix(path, Prefix), "/")
	route, id := "", ""
	switch {
	case len(parts) == 1 && parts[0] == "documents":
		route = "documents"
	case len(parts) == 1 && parts[0] == "candidates":
		route = "candidates"
	case len(parts) == 2 && parts[0] == "documents":
		route, id = "document", parts[1]
	case len(parts) == 3 && parts[0] == "documents" && slices.Contains([]string{"versions", "selections", "proposals"}, parts[2]):
		route, id = parts[2], parts[1]
	case len(parts) == 3 && parts[0] == "proposals" && parts[2] == "decisions":
		route, id = "decisions", parts[1]
	default:
		writeError(w, notFound("route"))
		return
	}
	if id != "" && !idPattern.MatchString(id) {
		// A malformed id names nothing: the answer of a well-formed missing one.
		what := "document"
		if route == "decisions" {
			what = "proposal"
		}
		writeError(w, notFound(what))
		return
	}
	get := map[string]bool{"documents": true, "candidates": true, "document": true, "versions": true}
	// Parameters are checked once the request is admitted, scope and all: before them on
	// a write, so a refused one reads no body.
	checkQuery := func() bool {
		if e := queryOnly(r, route); e != nil {
			writeError(w, e)
			return false
		}
		return true
	}
	post := map[string]bool{"documents": true, "versions": true, "selections": true, "proposals": true, "decisions": true}
	switch {
	case r.Method == http.MethodGet && get[route]:
		if p, _ := auth.FromContext(r.Context()); !p.Has(auth.ScopeRead) {
			writeError(w, &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: "reading documents needs the workspace:read scope"})
			return
		}
		if checkQuery() {
			h.serveRead(w, r, o, route, id)
		}
	case r.Method == http.MethodPost && post[route]:
		if e := h.mayWrite(r); e != nil {
			writeError(w, e)
			return
		}
		if !checkQuery() {
			return
		}
		b, e := readBody(w, r)
		if e != nil {
			writeError(w, e)
			return
		}
		h.serveWrite(w, r, o, route, id, b)
	default:
		allow := []string{}
		if get[route] {
			allow = append(allow, http.MethodGet)
		}
		if post[route] {
			allow = append(allow, http.MethodPost)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed, Message: "this route answers " + strings.Join(allow, ", ")})
	}
}

// queryParameters are the query parameters each route takes (every other route: none).
var queryParameters = map[string][]string{"candidates": {"documentId"}, "documents": {"limit", "cursor"}}

// queryOnly refuses a query parameter route does not take, one given twice, and a query
// that does not parse, as a body's unknown member is refused (ValidationError).
func queryOnly(r *http.Request, route string) *Error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return invalid("query", RuleFormat, "is not a URL query")
	}
	takes := queryParameters[route]
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(takes, k):
			name := k
			if len(name) > 64 {
				name = name[:64] + "…"
			}
			if len(takes) == 0 {
				return invalid(name, RuleUnknown, "is not a parameter of this route; it takes none")
			}
			return invalid(name, RuleUnknown, "is not a parameter of this route; it takes only %s", strings.Join(takes, ", "))
		case len(q[k]) > 1:
			return invalid(k, RuleFormat, "is given %d times; give it once", len(q[k]))
		}
	}
	return nil
}

// mayWrite is the design's Review capability: 405 when this node cannot check it
// (Options.ReadOnly), 403 without the review scope.
func (h *Handler) mayWrite(r *http.Request) *Error {
	if h.opt.ReadOnly {
		return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed, Message: "this node does not accept working-document writes (no Review capability verifier)"}
	}
	if p, _ := auth.FromContext(r.Context()); !p.Has(auth.ScopeReview) {
		return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: "working-document writes need the review scope"}
	}
	return nil
}

func (h *Handler) serveRead(w http.ResponseWriter, r *http.Request, o owner, route, id string) {
	var out any
	var e *Error
	switch route {
	case "documents":
		out, e = h.listDocuments(r, o)
	case "candidates":
		out, e = h.candidates(r, o)
	case "document":
		out, e = h.getDocument(r, o, id)
	case "versions":
		out, e = h.listVersions(r, o, id)
	}
	if e != nil {
		writeError(w, retryAdvice(e, r))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) serveWrite(w http.ResponseWriter, r *http.Request, o owner, route, id string, b body) {
	var out any
	var e *Error
	status := http.StatusOK
	switch route {
	case "documents":
		out, e = h.create(r.Context(), o, b)
		status = http.StatusCreated
	case "versions":
		out, e = h.edit(r.Context(), o, id, b)
	case "selections":
		out, e = h.selectContext(r.Context(), o, id, b)
	case "proposals":
		out, e = h.requestProposal(r.Context(), o, id, b)
	case "decisions":
		out, e = h.decide(r.Context(), o, id, b)
	}
	if e != nil {
		writeError(w, retryAdvice(e, r))
		return
	}
	writeJSON(w, status, out)
}

// body is a request's closed JSON object, decoded once.
type body map[string]json.RawMessage

// readBody reads at most MaxRequestBytes of one JSON object.
func readBody(w http.ResponseWriter, r *http.Request) (body, *Error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	var over *http.MaxBytesError
	if errors.As(err, &over) {
		return nil, tooLarge(MaxRequestBytes)
	}
	if err != nil {
		return nil, invalid("body", RuleFormat, "could not be read")
	}
	var m body
	var syntax *json.SyntaxError
	if err := json.Unmarshal(b, &m); errors.As(err, &syntax) {
		return nil, invalid("body", RuleFormat, "is not JSON: %s (at byte %d)", syntax, syntax.Offset)
	} else if err != nil || m == nil {
		return nil, invalid("body", RuleFormat, "must be a JSON object")
	}
	// encoding/json keeps the last of two members of one name, and turns text that is not
	// Unicode into U+FFFD; a request's text is taken as sent or refused.
	if cerr := strictjson.Check(b); cerr != nil && cerr.Duplicate {
		return nil, invalid(cerr.Field, RuleDuplicate, "appears twice in one object; name each member once")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !isUnicodeJSON(m[k]) {
			return nil, invalid(k, RuleUTF8, notUnicode)
		}
	}
	if !isUnicodeJSON(b) {
		return nil, invalid("body", RuleUTF8, notUnicode)
	}
	return m, nil
}

const notUnicode = "must be Unicode text: valid UTF-8 and no unpaired surrogate escape (\\ud800-\\udfff)"

// isUnicodeJSON reports whether raw is Unicode text (internal/strictjson): valid UTF-8,
// every surrogate escape one half of a pair, as far as strictjson.Check reads before the
// first member named twice (which readBody and decodeResult refuse first).
func isUnicodeJSON(raw []byte) bool {
	err := strictjson.Check(raw)
	return err == nil || err.Duplicate
}

// only refuses a member not in names.
func (b body) only(names ...string) *Error {
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range b {
			if !yield(k) {
				return
			}
		}
	}) {
		if !slices.Contains(names, k) {
			name := k
			if len(name) > 64 {
				name = name[:64] + "…"
			}
			return invalid(name, RuleUnknown, "is not a member of this request; it holds only %s", strings.Join(names, ", "))
		}
	}
	return nil
}

// str returns string member name (required: present and non-empty) of at most max
// characters.
func (b body) str(name string, required bool, max int) (string, *Error) {
	raw, ok := b[name]
	if !ok {
		if required {
			return "", invalid(name, RuleRequired, "is required")
		}
		return "", nil
	}
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return "", invalid(name, RuleType, "must be a string")
	}
	if required && s == "" {
		return "", invalid(name, RuleRequired, "must not be empty")
	}
	if Chars(s) > max {
		return "", invalid(name, RuleMaxLength, "must be at most %d characters, got %d", max, Chars(s))
	}
	return s, nil
}

// versionMembers returns the members of a create or an edit that make a version: title
// (1..MaxTitleChars characters, checkTitle's characters), body (a string of at most MaxBodyChars characters,
// required but possibly empty) and requestId (id), checked in that order.
func (b body) versionMembers() (title, text, requestID string, e *Error) {
	if title, e = b.str("title", true, MaxTitleChars); e != nil {
		return "", "", "", e
	}
	if e = checkTitle(title); e != nil {
		return "", "", "", e
	}
	if _, ok := b["body"]; !ok {
		return "", "", "", invalid("body", RuleRequired, "is required")
	}
	if text, e = b.str("body", false, MaxBodyChars); e != nil {
		return "", "", "", e
	}
	if requestID, e = b.id("requestId"); e != nil {
		return "", "", "", e
	}
	return title, text, requestID, nil
}

// id returns member name as a client-generated id: 1..MaxRequestIDChars printable ASCII
// characters without spaces.
func (b body) id(name string) (string, *Error) {
	s, e := b.str(name, true, MaxRequestIDChars)
	if e != nil {
		return "", e
	}
	for _, c := range s {
		if c <= ' ' || c > '~' {
			return "", invalid(name, RuleFormat, "must be printable ASCII without spaces")
		}
	}
	return s, nil
}

// isNull reports whether raw is JSON's null, which no member of a request may be: a
// member is given with its type, or not at all.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// ids returns array member name: at most max distinct ids, each of the form pattern
// accepts. An absent member is refused when required, else none ([] is always none).
func (b body) ids(name string, required bool, max int, pattern func(string) bool) ([]string, *Error) {
	raw, ok := b[name]
	switch {
	case !ok && required:
		return nil, invalid(name, RuleRequired, "is required (an array; [] selects none)")
	case !ok:
		return []string{}, nil
	}
	var out []string
	if isNull(raw) || json.Unmarshal(raw, &out) != nil {
		return nil, invalid(name, RuleType, "must be an array of strings")
	}
	if len(out) > max {
		return nil, invalid(name, RuleMaxItems, "must hold at most %d ids, got %d", max, len(out))
	}
	seen := map[string]bool{}
	for i, s := range out {
		field := name + "[" + strconv.Itoa(i) + "]"
		if !pattern(s) {
			return nil, invalid(field, RuleFormat, "is not an id of this kind")
		}
		if seen[s] {
			return nil, invalid(field, RuleFormat, "repeats %s", s)
		}
		seen[s] = true
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

func isRecordID(s string) bool { return idPattern.MatchString(s) }

// recordID returns required member name, the id (64 hex digits) of a what.
func (b body) recordID(name, what string) (string, *Error) {
	s, e := b.str(name, true, 64)
	if e == nil && !isRecordID(s) {
		e = invalid(name, RuleFormat, "must be a %s id (64 hex digits)", what)
	}
	return s, e
}

// Owner returns the owner (agent root and workspace) of r's working documents, as the
// routes derive it from the request's principal; false when the principal owns none (no
// credential, or a key not bound to a tenant). The web console (api/console) shows
// its Documents destination from it.
func (h *Handler) Owner(r *http.Request) (tenant, workspace string, ok bool) {
	o, err := h.owner(r)
	return o.Tenant, o.Workspace, err == nil
}

// Runners returns the registered runners in id order (the ids a proposal request may name).
func (h *Handler) Runners() []Runner {
	ids := make([]string, 0, len(h.runners))
	for id := range h.runners {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]Runner, len(ids))
	for i, id := range ids {
		out[i] = h.runners[id]
	}
	return out
}
