package workbench

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// Listing limits.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListRequest asks for the direct children of a directory.
type ListRequest struct {
	Agent, Workbench string
	// Path is the directory's full path inside the workbench; "" = the workbench top,
	// where the five sections always appear.
	Path   string
	Cursor string
	Limit  int // 1..MaxListLimit; 0 = DefaultListLimit
	// At selects a snapshot; the zero value lists live state. Snapshot cursors never fail
	// with ReadFenceChanged.
	At At
}

// ListEntry is one direct child.
type ListEntry struct {
	Name         string
	Path         string // full path inside the workbench
	Kind         string // "file" or "directory"
	Size         int64  // the file's bytes, or the bytes below the directory
	Generation   uint64 // files
	EntryCount   int64  // directories: direct children
	Executable   bool
	ContentType  string
	ModifiedAtMs int64
}

// ListResult is one page of a listing.
type ListResult struct {
	Path       string
	EntryCount int64 // direct children of the directory
	Entries    []ListEntry
	NextCursor string // "" on the last page
	Truncated  bool
}

// List returns one page of the direct children of req.Path in byte order of their names.
// The page holds its estimate of the node's memory budget while it is built (pages.go),
// and is cut short of req.Limit, truncated with a next_cursor, where that estimate would
// pass a page's share. Errors: NotDirectory for a file, NotFound for a missing directory
// (sections always exist), InvalidArguments for a bad or foreign cursor, ReadFenceChanged
// (retryable) when the workbench changed since the cursor's first page,
// ResourceExhausted (retryable) when the budget stayed taken for the queue timeout.
func (s *Reads) List(ctx context.Context, req ListRequest) (ListResult, error) {
	if err := validateTarget(req.Agent, req.Workbench, req.Path); err != nil {
		return ListResult{}, err
	}
	if err := mayRead(ctx, req.Agent); err != nil {
		return ListResult{}, err
	}
	var werr *Error
	if req.Limit, werr = pageLimit(req.Limit, DefaultListLimit, MaxListLimit); werr != nil {
		return ListResult{}, werr
	}
	var cur cursor
	at := req.At
	if req.Cursor != "" {
		var cerr *Error
		if cur, cerr = s.base.cursors.decode(ctx, req.Cursor, "list", req.Agent, req.Workbench, req.Path); cerr != nil {
			return ListResult{}, cerr
		}
		if cur.Args != snapshotArgs(req.At, cur.Snapshot) {
			return ListResult{}, invalidArgument("cursor", "was issued for another at_snapshot")
		}
		if !at.Live() {
			at = AtSnapshotID(cur.Snapshot) // a snapshot cursor stays on the snapshot it started on
		}
	}
	view, ws, snap, err := s.base.resolve(ctx, req.Agent, req.Workbench, at)
	if err != nil {
		return ListResult{}, err
	}
	fence, after := ws.Revision, ""
	if req.Cursor != "" {
		if !cur.issuedFor(ws) {
			return ListResult{}, invalidArgument("cursor", "was issued for another incarnation of the workbench")
		}
		if cur.Fence != ws.Revision {
			e := newError(CodeReadFenceChanged, "the workbench changed since the first page; list again from the start")
			e.Retryable = true
			return ListResult{}, e
		}
		fence, after = cur.Fence, cur.After
	}
	var snapID uint64
	if snap != nil {
		snapID = snap.ID
	}
	out := ListResult{Path: req.Path}
	var ents []meta.DirEntry
	var more bool
	switch {
	case req.Path == "":
		ents, more = s.listTop(view, ws, after, req.Limit)
		out.EntryCount = int64(len(s.topNames(view, ws)))
	default:
		ents, more, err = view.List(ws, req.Path, after, req.Limit)
		if meta.CodeOf(err) == meta.CodeNotFound && isSection(req.Path) {
			err = nil // an empty section
		}
		if err != nil {
			return ListResult{}, AsError(err)
		}
		if st, err := view.Stat(ws, req.Path); err == nil {
			out.EntryCount = st.Dir.Children
		}
	}
	// The answer's memory (pages.go), before it is built: a page whose estimate would pass
	// a page's share of the budget is cut, with a next_cursor.
	ents, more, cost := fitPage(ents, more, s.base.listingPageMaxBytes(), func(e meta.DirEntry) int64 { return listEntryAnswerBytes(req.Path, e) })
	release, aerr := s.base.admit(ctx, cost, "the listing", -1)
	if aerr != nil {
		return ListResult{}, aerr
	}
	defer release()
	out.Entries = make([]ListEntry, len(ents))
	for i, e := range ents {
		le := &out.Entries[i]
		le.Name, le.Kind = e.Name, string(e.Kind)
		if e.Entry != nil {
			le.Size, le.Generation, le.Executable, le.ContentType, le.ModifiedAtMs = e.Entry.Size, e.Entry.Generation, e.Entry.Executable, e.Entry.ContentType, e.Entry.ModifiedAtMs
		} else {
			le.Size, le.EntryCount = e.Dir.Bytes, e.Dir.Children
		}
	}
	setPaths(req.Path, out.Entries)
	if more && len(ents) > 0 {
		out.Truncated = true
		out.NextCursor = s.base.cursors.encode(ctx, cursor{Kind: "list", Agent: req.Agent, Workbench: req.Workbench,
			Incarnation: ws.Incarnation, Created: ws.CreatedVersion, Path: req.Path, Args: snapshotArgs(req.At, snapID), Snapshot: snapID, Fence: fence, After: ents[len(ents)-1].Name})
	}
	return out, nil
}

// listTop merges the five always-present sections into the real top-level children.
func (s *Reads) listTop(view *meta.View, ws *meta.Workspace, after string, limit int) ([]meta.DirEntry, bool) {
	real, more, _ := view.List(ws, "", after, limit)
	byName := map[string]meta.DirEntry{}
	for _, e := range real {
		byName[e.Name] = e
	}
	for _, sec := range Sections {
		if sec > after {
			if _, ok := byName[sec]; !ok {
				byName[sec] = meta.DirEntry{Name: sec, Kind: meta.KindDirectory}
			}
		}
	}
	// A real entry beyond the page may sort before a virtual section; only names up to the
	// last real one (or all of them when the real listing ended) are certain.
	all := make([]meta.DirEntry, 0, len(byName))
	for _, e := range byName {
		if more && len(real) > 0 && e.Name > real[len(real)-1].Name {
			continue
		}
		all = append(all, e)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	if len(all) > limit {
		return all[:limit], true
	}
	return all, more || len(all) < len(byName)
}

// setPaths sets each entry's Path to joinPath(dir, its Name): substrings of one string
// built for the page, so a page costs one allocation for its paths, not one per entry.
func setPaths(dir string, entries []ListEntry) {
	if dir == "" {
		for i := range entries {
			entries[i].Path = entries[i].Name
		}
		return
	}
	n := 0
	for i := range entries {
		n += len(dir) + 1 + len(entries[i].Name)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range entries {
		b.WriteString(dir)
		b.WriteByte('/')
		b.WriteString(entries[i].Name)
	}
	all := b.String()
	for i := range entries {
		n := len(dir) + 1 + len(entries[i].Name)
		entries[i].Path, all = all[:n], all[n:]
	}
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// snapshotArgs binds a cursor to the at_snapshot selector it was issued for and the
// snapshot that selector resolved to.
func snapshotArgs(at At, snapID uint64) string {
	if at.Live() {
		return ""
	}
	return at.String() + "=" + strconv.FormatUint(snapID, 10)
}
