package openwop

import (
	"context"
	"hash/fnv"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// DefaultContentType is a file's content type when a PUT names none
// (workspace-file-create.schema.json).
const DefaultContentType = "text/markdown"

// File is a WorkspaceFile (workspace-file.schema.json, closed). Content is nil in list
// rows, where the key is absent altogether.
type File struct {
	Path        string  `json:"path"`
	Content     *string `json:"content,omitempty"`
	ContentType string  `json:"contentType"`
	Version     uint64  `json:"version"`
	Etag        string  `json:"etag"`
	UpdatedAt   string  `json:"updatedAt"`
}

type fileList struct {
	Files []File `json:"files"`
}

// putBody is a WorkspaceFileCreate (workspace-file-create.schema.json, closed).
type putBody struct {
	Content     *string `json:"content"`
	ContentType *string `json:"contentType"`
}

// Etag returns the etag of a body of generation gen: opaque, quoted, never reused (a
// generation is the shard version that made the body visible).
func Etag(gen uint64) string { return `"g` + strconv.FormatUint(gen, 10) + `"` }

// parseEtag returns the generation etag names, false when etag is not exactly one Etag
// returns (a generation is at least 1).
func parseEtag(etag string) (uint64, bool) {
	digits, ok := strings.CutPrefix(etag, `"g`)
	if !ok {
		return 0, false
	}
	if digits, ok = strings.CutSuffix(digits, `"`); !ok || digits == "" || digits[0] == '0' {
		return 0, false
	}
	gen, err := strconv.ParseUint(digits, 10, 64)
	return gen, err == nil && Etag(gen) == etag
}

// timestamp formats command time ms as ISO-8601 with milliseconds and Z.
func timestamp(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

func row(path string, fv meta.FileVersion) File {
	return File{Path: path, ContentType: fv.Entry.ContentType, Version: fv.Ordinal, Etag: Etag(fv.Entry.Generation), UpdatedAt: timestamp(fv.AtMs)}
}

// bodyLimit bounds a PUT body: the content escaped as JSON at its worst (\u00XX, six bytes
// per byte) plus room for the rest, so an oversized content always reaches the size check
// and answers workspace_too_large, never the server's own 413.
func (h *Handler) bodyLimit() int64 { return 6*h.opt.MaxFileBytes + 64<<10 }

// decodePut reads the closed request object: invalid JSON, unknown fields, a missing or
// non-string content are validation_error; a body beyond bodyLimit workspace_too_large.
func (h *Handler) decodePut(w http.ResponseWriter, r *http.Request) (putBody, *Error) {
	var in putBody
	if tooBig, err := readClosed(w, r, h.bodyLimit(), &in); tooBig {
		return putBody{}, h.tooLarge()
	} else if err != nil {
		return putBody{}, invalid(err.Error())
	}
	if in.Content == nil {
		return putBody{}, invalid("content: must be a string")
	}
	if in.ContentType != nil && *in.ContentType != "" {
		if err := workbench.CheckContentType("contentType", *in.ContentType); err != nil {
			return putBody{}, invalid(err.Message)
		}
	}
	return in, nil
}

func (h *Handler) tooLarge() *Error {
	return fail(http.StatusRequestEntityTooLarge, CodeTooLarge, "content is larger than maxFileBytes ("+strconv.FormatInt(h.opt.MaxFileBytes, 10)+" bytes)")
}

// view returns the view of o's workbench at `at`; ws nil when the workbench does not
// exist (an empty workspace).
func (h *Handler) view(ctx context.Context, o Owner, at workbench.At) (*meta.View, *meta.Workspace, *meta.WorkbenchSnapshot, *Error) {
	v, ws, snap, err := h.svc.Reads.ViewAt(ctx, o.Tenant, o.Workspace, at)
	if err != nil {
		if at.Live() && workbench.AsError(err).Code == workbench.CodeNotFound {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, fromStore(err)
	}
	return v, ws, snap, nil
}

// writeView is view of the live state for a write (workbench.Reads.ViewToWrite): the
// precondition, the file count and the version a PUT answers are the write's, which
// workspace:write allows without workspace:read.
func (h *Handler) writeView(ctx context.Context, o Owner) (*meta.View, *meta.Workspace, *Error) {
	v, ws, err := h.svc.Reads.ViewToWrite(ctx, o.Tenant, o.Workspace)
	if err != nil {
		if workbench.AsError(err).Code == workbench.CodeNotFound {
			return nil, nil, nil
		}
		return nil, nil, fromStore(err)
	}
	return v, ws, nil
}

// list returns o's live files at `at` whose path starts with prefix, sorted by path. The
// listing holds its share of the node's memory budget (admitFiles), kept until the answer
// is written (ServeHTTP holds the request's admissions).
func (h *Handler) list(ctx context.Context, o Owner, at workbench.At, prefix string) ([]File, *Error) {
	v, ws, _, err := h.view(ctx, o, at)
	if err != nil || ws == nil {
		return []File{}, err
	}
	release, err := h.admitFiles(ctx, v, ws, prefix, fileRowBytes)
	if err != nil {
		return nil, err
	}
	defer release()
	return files(v, ws, prefix, row), nil
}

// Memory of a file listing (issue 25 finding 11): an OpenWOP listing is the whole
// workspace, or all of it under a prefix, in one answer (the contract has no pages), so
// it takes its estimate of the node's memory budget (workbench.Service.AdmitMemory)
// before it is built, counted on the view it lists: per file a fixed part and
// fileTextCopies copies of its path and content type.
const (
	// fileListBaseBytes is a listing's fixed part.
	fileListBaseBytes = 16 << 10
	// fileRowBytes is one listed file's fixed part: its File (the etag and timestamp
	// strings), its entry in the sorted path slice, its metadata lookup and its JSON
	// besides the strings. runFileBytes is a run's file (a path and a version).
	fileRowBytes = 512
	runFileBytes = 256
	// fileTextCopies is how many copies of a path an answer holds at once: the sorted
	// slice's, the row's, and the JSON encoder's buffer, which grows by doubling, with the
	// copy written out.
	fileTextCopies = 5
)

// admitFiles takes the memory share of a listing of the files of ws at v whose path
// starts with prefix, each of rowBytes besides its strings. Under ServeHTTP the share is
// kept until the request's answer is written, whatever the caller does with release; an
// in-process caller gives it back with release.
func (h *Handler) admitFiles(ctx context.Context, v *meta.View, ws *meta.Workspace, prefix string, rowBytes int64) (func(), *Error) {
	var n, text int64
	v.Files(ws, "", func(path string, e *meta.Entry) bool {
		if strings.HasPrefix(path, prefix) {
			n++
			text += int64(len(path) + len(e.ContentType))
		}
		return true
	})
	release, err := h.svc.AdmitMemory(ctx, fileListBaseBytes+n*rowBytes+fileTextCopies*text, "the file listing")
	if err != nil {
		return nil, fromStore(err)
	}
	return release, nil
}

// files maps every file of ws visible at v whose path starts with prefix, sorted by path
// bytes (the reference host's order).
func files[T any](v *meta.View, ws *meta.Workspace, prefix string, f func(string, meta.FileVersion) T) []T {
	var paths []string
	v.Files(ws, "", func(path string, _ *meta.Entry) bool {
		if strings.HasPrefix(path, prefix) {
			paths = append(paths, path)
		}
		return true
	})
	sort.Strings(paths)
	out := make([]T, 0, len(paths))
	for _, p := range paths {
		if fv, err := v.FileVersion(ws, p); err == nil {
			out = append(out, f(p, fv))
		}
	}
	return out
}

// get returns o's file at path at `at`: the visible version, or version N of its current
// life while the store retains it (the newest MaxVersions).
func (h *Handler) get(ctx context.Context, o Owner, at workbench.At, path string, version *int64) (File, *Error) {
	v, ws, _, err := h.view(ctx, o, at)
	if err != nil {
		return File{}, err
	}
	if ws == nil {
		return File{}, notFound("No such workspace file.")
	}
	fv, ferr := v.FileVersion(ws, path)
	if ferr != nil {
		if isDirectory(ferr) {
			return File{}, notFound("No such workspace file.") // no file is there (RFC 0059 §C: 404)
		}
		return File{}, fromStore(ferr)
	}
	if version != nil && uint64(*version) != fv.Ordinal {
		fv, err = h.version(v, ws, path, *version)
		if err != nil {
			return File{}, err
		}
	}
	body, rerr := h.svc.Reads.ReadEntry(ctx, o.Tenant, fv.Entry, h.opt.MaxFileBytes)
	if rerr != nil {
		return File{}, fromStore(rerr)
	}
	f := row(path, fv)
	content := string(body)
	f.Content = &content
	return f, nil
}

// version finds version n among the newest MaxVersions of path's current life.
func (h *Handler) version(v *meta.View, ws *meta.Workspace, path string, n int64) (meta.FileVersion, *Error) {
	if n >= 1 {
		hist, err := v.History().Life(ws, path, h.opt.MaxVersions)
		if err != nil {
			return meta.FileVersion{}, fromStore(err)
		}
		for _, fv := range hist {
			if fv.Ordinal == uint64(n) {
				return fv, nil
			}
		}
	}
	return meta.FileVersion{}, notFound("No such workspace file version.")
}

// precondition is what a write or delete requires of the file's current state (RFC 9110
// §13.1): IfMatch, the etag of the live version it applies to (compared byte for byte, no
// lists, no "*": the reference host's rule); CreateOnly (If-None-Match: *), that the path
// holds no live file. Either is checked by the store in the same command that writes, so a
// precondition that fails between the check here and the write still fails.
type precondition struct {
	IfMatch    *string
	CreateOnly bool
}

// put writes content at path of o (the reference host's order of checks: size, If-Match,
// maxFiles). With If-Match the write is conditional on the generation the live etag names,
// with If-None-Match: * on the path holding no file; a failed precondition is 409
// workspace_conflict with details.currentVersion (0: no live file), whether it fails here or
// in the store's compare-and-swap.
func (h *Handler) put(ctx context.Context, o Owner, path string, in putBody, pre precondition, requestID string) (File, *Error) {
	if int64(len(*in.Content)) > h.opt.MaxFileBytes {
		return File{}, h.tooLarge()
	}
	v, ws, live, err := h.liveOf(ctx, o, path)
	if err != nil {
		return File{}, err
	}
	if live.Entry == nil {
		// A new file: the maxFiles check and the write hold the workspace's create lock, and
		// the check reads a view taken under it, so creates racing through this node meet
		// the clear answer here rather than in the store. The store's check in the write
		// (WriteRequest.MaxWorkbenchFiles) is what holds across the nodes of a cluster.
		unlock := h.creates.lock(o)
		defer unlock()
		if v, ws, live, err = h.liveOf(ctx, o, path); err != nil {
			return File{}, err
		}
	}
	req := workbench.WriteRequest{Agent: o.Tenant, Workbench: o.Workspace, Path: path, CreateWorkbench: true, RequestID: requestID,
		MaxWorkbenchFiles: int64(h.opt.MaxFiles)}
	// A precondition that fails on this view fails here, before the body is redacted and
	// stored, unless the request carries an Idempotency-Key: then the store decides, and a
	// retry of a write that went through answers its first answer (the store looks up a
	// request id before it checks the condition) where the check here would see the write
	// itself and refuse it.
	replayable := requestID != ""
	if pre.IfMatch != nil && pre.CreateOnly {
		// A live file to match and none to create over: no write ever met both.
		return File{}, conflict(live.Ordinal)
	}
	if pre.IfMatch != nil {
		gen, ok := parseEtag(*pre.IfMatch)
		if !ok || (!replayable && (live.Entry == nil || gen != live.Entry.Generation)) {
			return File{}, conflict(live.Ordinal)
		}
		req.Cond, req.IfGeneration = meta.CondIfGeneration, gen
	}
	if pre.CreateOnly {
		if live.Entry != nil && !replayable {
			return File{}, exists(live.Ordinal)
		}
		req.Cond = meta.CondCreateOnly
	}
	if live.Entry == nil && ws != nil {
		if st, serr := v.Stat(ws, ""); serr == nil && st.Dir.Files >= int64(h.opt.MaxFiles) {
			return File{}, h.tooManyFiles()
		}
	}
	content := *in.Content
	if h.opt.Redactor != nil {
		content = h.opt.Redactor.Redact(o.Tenant, content)
		if int64(len(content)) > h.opt.MaxFileBytes {
			// A marker can be longer than the secret it replaces: a file stored above
			// maxFileBytes could never be read back (get reads at most MaxFileBytes).
			return File{}, fail(http.StatusRequestEntityTooLarge, CodeTooLarge, "content is larger than maxFileBytes ("+
				strconv.FormatInt(h.opt.MaxFileBytes, 10)+" bytes) once its secrets are redacted ("+strconv.Itoa(len(content))+" bytes)")
		}
	}
	req.ContentType = DefaultContentType
	if in.ContentType != nil && *in.ContentType != "" { // "": none given (the store would keep application/octet-stream)
		req.ContentType = *in.ContentType
	}
	req.Body, req.SizeHint = strings.NewReader(content), int64(len(content))
	res, werr := h.svc.Writes.Write(ctx, req)
	if werr != nil {
		// A conditional write that lost a race: the file changed (Conflict), was deleted
		// (NotFound for the generation it expected) or was created (AlreadyExists) since the
		// check above.
		if lostRace(pre, werr) {
			return File{}, preconditionFailed(pre, h.currentVersion(ctx, o, path))
		}
		if atFilesCap(werr) {
			// A create another node wrote since the check above filled the workspace: the
			// store refused this one in the write (meta.Put.MaxWorkbenchFiles).
			return File{}, h.tooManyFiles()
		}
		return File{}, fromStore(werr)
	}
	f := File{Path: path, Content: &content, ContentType: res.ContentType, Version: res.Ordinal, Etag: Etag(res.Generation),
		UpdatedAt: timestamp(h.writtenAt(ctx, o, path, res.Generation))}
	return f, nil
}

// tooManyFiles is the answer of a create into a workspace that holds maxFiles files,
// whether the check above or the store's in the write refused it: 413
// workspace_too_large (the reference host's).
func (h *Handler) tooManyFiles() *Error {
	return fail(http.StatusRequestEntityTooLarge, CodeTooLarge,
		"the workspace holds maxFiles ("+strconv.Itoa(h.opt.MaxFiles)+") files already")
}

// atFilesCap says whether err is the store's refusal of a create at the workspace's files
// cap (meta.QuotaFilesPerWorkbench).
func atFilesCap(err error) bool {
	we := workbench.AsError(err)
	return we.Code == workbench.CodeResourceExhausted && we.Details["quota"] == meta.QuotaFilesPerWorkbench
}

// liveOf is writeView with path's live version (zero when it has none).
func (h *Handler) liveOf(ctx context.Context, o Owner, path string) (*meta.View, *meta.Workspace, meta.FileVersion, *Error) {
	v, ws, err := h.writeView(ctx, o)
	if err != nil {
		return nil, nil, meta.FileVersion{}, err
	}
	var live meta.FileVersion
	if ws != nil {
		if fv, ferr := v.FileVersion(ws, path); ferr == nil {
			live = fv
		}
	}
	return v, ws, live, nil
}

// createLocks serializes, per owner, the PUTs through this node that create a file, from
// the maxFiles check to the write (striped: owners that share a stripe wait for each
// other, which only slows them).
type createLocks [64]sync.Mutex

func (l *createLocks) lock(o Owner) func() {
	d := fnv.New32a()
	d.Write([]byte(o.Tenant))
	d.Write([]byte{0})
	d.Write([]byte(o.Workspace))
	m := &l[d.Sum32()%uint32(len(l))]
	m.Lock()
	return m.Unlock
}

// currentVersion returns path's live version (0 when it has none), for a conflict.
func (h *Handler) currentVersion(ctx context.Context, o Owner, path string) uint64 {
	v, ws, err := h.writeView(ctx, o)
	if err != nil || ws == nil {
		return 0
	}
	fv, _ := v.FileVersion(ws, path)
	return fv.Ordinal
}

// writtenAt returns the command time of the write that made generation gen of path: from
// the path's chain while it holds that element, in this life or an earlier one (a retry
// answered after a delete), else now (the store pruned it before this read).
func (h *Handler) writtenAt(ctx context.Context, o Owner, path string, gen uint64) int64 {
	if v, ws, err := h.writeView(ctx, o); err == nil && ws != nil {
		if fv, err := v.History().FileAt(ws, path, gen); err == nil {
			return fv.AtMs
		}
	}
	return time.Now().UnixMilli()
}

// isDirectory reports the store's answer for a path that names a directory (the parent of
// other files' paths, "a" of "a/b"): a path that holds no file, which a GET or DELETE
// answers as a missing one. A PUT there is refused (400): Cairn cannot keep a file and a
// directory under one name.
func isDirectory(err error) bool { return workbench.AsError(err).Code == workbench.CodeNotArtifact }

// lostRace reports whether the store refused a conditional write or delete because the
// file is no longer in the state its precondition named.
func lostRace(pre precondition, err error) bool {
	switch workbench.AsError(err).Code {
	case workbench.CodeConflict, workbench.CodeNotFound:
		return pre.IfMatch != nil
	case workbench.CodeAlreadyExists:
		return pre.CreateOnly
	}
	return false
}

// preconditionFailed is the 409 of pre failing at current (the live version, 0 for none).
func preconditionFailed(pre precondition, current uint64) *Error {
	if pre.IfMatch == nil {
		return exists(current)
	}
	return conflict(current)
}

// remove deletes path of o: not_found when it has no live version. With If-Match the delete
// applies only to the generation the etag names, in the store's compare-and-swap (meta
// Delete.IfGeneration): an etag of another version, or one this host never issued, is 409
// workspace_conflict and deletes nothing.
func (h *Handler) remove(ctx context.Context, o Owner, path string, pre precondition, requestID string) *Error {
	var gen uint64
	if pre.IfMatch != nil {
		g, ok := parseEtag(*pre.IfMatch)
		if !ok {
			return conflict(h.currentVersion(ctx, o, path))
		}
		gen = g
	}
	if _, err := h.svc.Writes.Delete(ctx, o.Tenant, o.Workspace, path, gen, requestID); err != nil {
		if isDirectory(err) { // no file is there: as a missing one
			if pre.IfMatch != nil {
				return conflict(0)
			}
			return notFound("No such workspace file.")
		}
		if lostRace(pre, err) {
			return preconditionFailed(pre, h.currentVersion(ctx, o, path))
		}
		return fromStore(err)
	}
	return nil
}
