package meta

import (
	"slices"
	"strings"
)

// View is a consistent, read-only view of one shard's state at one shard version. It is an
// O(1) copy-on-write copy: taking it never blocks applies for long, and applies never
// change what it shows. A View is safe for concurrent use.
//
// A View answers the files of a workbench at its version (Workspace, File, FileVersion,
// Stat, List, Files), derives views (At, Only, OnlyPaths) and reads a root's settings
// (Root, Usage, Quota, Retention); its other reads are cut by concern into facets, each
// a type of its own:
//
//   - History (HistoryView): retained versions, files at a past generation or time, what
//     a command changed;
//   - Queries (QueryView): search, aggregate, catalog;
//   - Feed (FeedView): the change feed;
//   - Proposals (ProposalView): proposals, judgments, evidence;
//   - Lifecycle (LifecycleView): snapshots, commits, restores and the views they pin;
//   - Moves (MoveView): move records and root exports;
//   - Shard (ShardView): roots, blob references, backup holds, compaction candidates.
//
// A facet is a small value that holds its View and reads only through it: the same
// immutable state, at the same version, under the same restriction. So it is exactly as
// consistent as its View and as safe for concurrent use, it can never show a newer state
// than its View, and what a restricted View hides its facets hide. Take a facet from the
// View being read (v.History().FileAt(ws, path, gen)); a facet kept reads that View,
// never a later one.
type View struct {
	st *state
	at uint64 // the shard version reads resolve at
	// history is the node-default history retention (Options.History).
	history Retention
	// only, when set, restricts what the view shows of one agent root (Only).
	only *restriction
}

// restriction is the part of one agent root a restricted view shows: the workbenches
// named (all: every one), of them the paths at or below prefixes (none: every path), and
// none of the root's root-wide records.
type restriction struct {
	agent    string
	all      bool
	names    []string
	prefixes []string
}

// Only returns a view of the same state in which agent's root holds only the workbenches
// named: every other workbench of agent reads exactly as one that does not exist
// (Workspace, Workspaces, queries, snapshots, proposals, restores, the change feed,
// Staging), and agent's root-wide records read as unset (Usage, Quota, Retention). Other
// roots are unaffected. Views derived from it (At, SnapshotView, VersionView) keep the
// restriction. It is how a surface serves a principal that may use only part of a root
// (workbench, access.go); Only on a restricted view restricts it anew.
func (v *View) Only(agent string, names ...string) *View {
	return &View{st: v.st, at: v.at, history: v.history, only: &restriction{agent: agent, names: slices.Clone(names)}}
}

// OnlyPaths returns a view of the same state in which the workbenches of agent's root
// the view shows hold only the paths at or below prefixes (section-qualified, compared
// component by component: "outputs/run1" holds "outputs/run1/x", never
// "outputs/run10"): every other path reads exactly as one that does not exist (File,
// Stat, List, the history reads (History), queries, Files, proposals and judgments, the
// change feed), a directory above a prefix holds only what its prefixes hold (DirInfo,
// a workbench's Files and Bytes), and agent's root-wide records read as unset, as for
// Only. It keeps v's restriction of agent's workbenches (Only), if any; it is how a
// surface serves a principal bound to path prefixes (workbench, access.go).
func (v *View) OnlyPaths(agent string, prefixes ...string) *View {
	r := &restriction{agent: agent, all: true, prefixes: slices.Clone(prefixes)}
	if v.only != nil && v.only.agent == agent {
		r.all, r.names = v.only.all, v.only.names
	}
	return &View{st: v.st, at: v.at, history: v.history, only: r}
}

// History returns the view's history reads.
func (v *View) History() HistoryView { return HistoryView{v} }

// Queries returns the view's metadata queries.
func (v *View) Queries() QueryView { return QueryView{v} }

// Feed returns the view's change-feed reads.
func (v *View) Feed() FeedView { return FeedView{v} }

// Proposals returns the view's proposal reads.
func (v *View) Proposals() ProposalView { return ProposalView{v} }

// Lifecycle returns the view's reads of snapshots, commits and restores.
func (v *View) Lifecycle() LifecycleView { return LifecycleView{v} }

// Moves returns the view's reads of root moves.
func (v *View) Moves() MoveView { return MoveView{v: v} }

// Shard returns the view's shard-wide reads.
func (v *View) Shard() ShardView { return ShardView{v} }

// shows reports whether the view shows workbench name of agent (Only).
func (v *View) shows(agent, name string) bool {
	return v.only == nil || v.only.agent != agent || v.only.all || slices.Contains(v.only.names, name)
}

// pathsRestricted reports whether the view shows only some paths of agent's workbenches
// (OnlyPaths).
func (v *View) pathsRestricted(agent string) bool {
	return v.only != nil && v.only.agent == agent && len(v.only.prefixes) > 0
}

// ShowsPath reports whether the view shows path of agent's workbenches (OnlyPaths):
// true unless the view is restricted to prefixes that do not hold it.
func (v *View) ShowsPath(agent, path string) bool {
	if !v.pathsRestricted(agent) {
		return true
	}
	for _, p := range v.only.prefixes {
		if hasPathPrefix(path, p) {
			return true
		}
	}
	return false
}

// showsKey is ShowsPath for a path key of ws.
func (v *View) showsKey(ws *Workspace, key string) bool {
	return !v.pathsRestricted(ws.Agent) || v.ShowsPath(ws.Agent, keyPath(key))
}

// record returns the record of path in ws, if the view shows the path.
func (v *View) record(ws *Workspace, path string) (*pathRecord, bool) {
	if !v.ShowsPath(ws.Agent, path) {
		return nil, false
	}
	return v.st.paths.Get(pathKey(ws.Incarnation, path))
}

// dirOf is dirInfo of ws as the view shows it: for a view restricted to prefixes, a
// directory at or below a prefix as it is, one above prefixes the sum of what they hold
// (a prefix naming a file counts that file), any other nothing.
func (v *View) dirOf(ws *Workspace, dir string) DirInfo {
	if !v.pathsRestricted(ws.Agent) || dir != "" && v.ShowsPath(ws.Agent, dir) {
		return v.dirInfo(ws.Incarnation, dir)
	}
	var info DirInfo
	children := map[string]bool{}
	for _, p := range v.only.prefixes {
		if p == dir || !hasPathPrefix(p, dir) {
			continue
		}
		sub := v.dirInfo(ws.Incarnation, p)
		if rec, ok := v.st.paths.Get(pathKey(ws.Incarnation, p)); ok {
			if e := rec.at(v.at); e != nil {
				sub.Files++
				sub.Bytes += e.Size
			}
		}
		if sub.Files == 0 {
			continue
		}
		info.Files += sub.Files
		info.Bytes += sub.Bytes
		rest := p
		if dir != "" {
			rest = p[len(dir)+1:]
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		children[rest] = true
	}
	info.Children = int64(len(children))
	return info
}

// shown returns ws as the view shows it: for a view restricted to prefixes, its Files and
// Bytes count only what they hold (dirOf).
func (v *View) shown(ws *Workspace) *Workspace {
	if !v.pathsRestricted(ws.Agent) {
		return ws
	}
	c := *ws
	info := v.dirOf(ws, "")
	c.Files, c.Bytes = info.Files, info.Bytes
	return &c
}

// showsRoot reports whether the view shows agent's root-wide records (Only).
func (v *View) showsRoot(agent string) bool { return v.only == nil || v.only.agent != agent }

// derive returns a view of the same state at version at, with v's restriction.
func (v *View) derive(at uint64) *View {
	return &View{st: v.st, at: at, history: v.history, only: v.only}
}

// View returns a view of the live state (at the last applied shard version). Calls with
// no Apply or Restore between them return the same View: a View is never mutated, and
// the state it copied has not changed since, so it is the live state of every such call.
func (f *FSM) View() *View {
	f.mu.RLock()
	v := f.view
	f.mu.RUnlock()
	if v != nil {
		return v
	}
	f.mu.Lock() // copy() re-tags the trees it shares, so it needs the write lock
	defer f.mu.Unlock()
	if f.view == nil {
		c := f.st.copy()
		f.view = &View{st: c, at: c.version, history: f.opts.History}
	}
	return f.view
}

// Version returns the shard version this view reads at.
func (v *View) Version() uint64 { return v.at }

// AppliedVersion returns the last applied shard version of the state behind the view
// (equal to Version for a live view).
func (v *View) AppliedVersion() uint64 { return v.st.version }

// NowMs returns the command time of the state behind the view (Unix milliseconds).
func (v *View) NowMs() int64 { return v.st.nowMs }

// At returns a view of the same state that resolves paths at an older shard version
// (MVCC). It sees, for each path, the newest retained chain element with version ≤ at.
// InvalidArguments if at is beyond the applied version.
func (v *View) At(at uint64) (*View, error) {
	if at > v.st.version {
		return nil, invalidArg("version", "%d is beyond the applied shard version %d", at, v.st.version)
	}
	return v.derive(at), nil
}

func (v *View) live() bool { return v.at == v.st.version }

// Root returns the agent root, if it exists.
func (v *View) Root(agent string) (*Root, bool) { return v.st.roots.Get(agent) }

// Workspace returns the visible workbench name of agent. NotFound when it does not exist
// or is still staging (staged workbenches are invisible to reads).
func (v *View) Workspace(agent, name string) (*Workspace, error) {
	ws, ok := v.st.workspaces.Get(workspaceKey(agent, name))
	if !ok || ws.State != WorkspaceVisible || ws.CreatedVersion > v.at || !v.shows(agent, name) {
		return nil, errorf(CodeNotFound, "workbench %q does not exist", name)
	}
	return v.shown(ws), nil
}

// DirInfo summarizes an implicit directory: live files anywhere below it, their bytes, and
// its direct children (files and non-empty directories).
type DirInfo struct {
	Files    int64
	Bytes    int64
	Children int64
}

// Kind says whether a path names a file or an implicit directory.
type Kind string

// Path kinds as the contract spells them.
const (
	KindFile      Kind = "file"
	KindDirectory Kind = "directory"
)

// Stat describes a path: a file (Entry) or a directory (Dir).
type Stat struct {
	Kind  Kind
	Entry *Entry  // files
	Dir   DirInfo // directories
}

// File returns the entry visible at path. NotFound when nothing is there, NotArtifact
// (Kind "directory") when the path is a directory; InvalidArguments for a bad path.
func (v *View) File(ws *Workspace, path string) (*Entry, error) {
	if err := ValidatePath("path", path); err != nil {
		return nil, err
	}
	if rec, ok := v.record(ws, path); ok {
		if e := rec.at(v.at); e != nil {
			return e, nil
		}
	}
	if info := v.dirOf(ws, path); info.Files > 0 {
		return nil, &Error{Code: CodeNotArtifact, Kind: string(KindDirectory), Message: "the path is a directory, not a file"}
	}
	return nil, errorf(CodeNotFound, "the file does not exist")
}

// FileVersion is one element of a path's history as a reader sees it.
type FileVersion struct {
	// Entry is the body; nil for a tombstone (a delete).
	Entry *Entry
	// Version is the shard version of the command that made the element; for a body it
	// equals Entry.Generation.
	Version uint64
	// AtMs is that command's time, Unix milliseconds.
	AtMs int64
	// Ordinal is the element's number within the path's current life (records.go).
	Ordinal uint64
	// Producer made the element: Entry.Producer for a body, the delete's producer for a
	// tombstone (zero: unknown).
	Producer Producer
	// The proposal whose acceptance made a version is its Entry.Proposal; history rows
	// carry it through Entry.
}

// fileVersion is the reader's form of a chain element.
func fileVersion(el version) FileVersion {
	fv := FileVersion{Entry: el.Entry, Version: el.Version, AtMs: el.AtMs, Ordinal: el.Ordinal}
	switch {
	case el.Entry != nil:
		fv.Producer = el.Entry.Producer
	case el.DeletedBy != nil:
		fv.Producer = *el.DeletedBy
	}
	return fv
}

// FileVersion returns the element of path visible at the view, with its Ordinal. Errors
// as File.
func (v *View) FileVersion(ws *Workspace, path string) (FileVersion, error) {
	if err := ValidatePath("path", path); err != nil {
		return FileVersion{}, err
	}
	if rec, ok := v.record(ws, path); ok {
		for _, el := range rec.Chain {
			if el.Version > v.at {
				continue
			}
			if el.Entry != nil {
				return fileVersion(el), nil
			}
			break
		}
	}
	_, err := v.File(ws, path)
	return FileVersion{}, err
}

// Stat describes path ("" = the workbench's top directory). NotFound when nothing is there.
func (v *View) Stat(ws *Workspace, path string) (Stat, error) {
	if path == "" {
		return Stat{Kind: KindDirectory, Dir: v.dirOf(ws, "")}, nil
	}
	e, err := v.File(ws, path)
	if err == nil {
		return Stat{Kind: KindFile, Entry: e}, nil
	}
	if CodeOf(err) == CodeNotArtifact {
		return Stat{Kind: KindDirectory, Dir: v.dirOf(ws, path)}, nil
	}
	return Stat{}, err
}

// DirEntry is one direct child in a listing.
type DirEntry struct {
	Name  string
	Kind  Kind
	Entry *Entry  // files
	Dir   DirInfo // directories
}

// List returns up to limit direct children of dir ("" = the top), in byte order of their
// names, starting after the name after ("" = from the first). more reports whether
// children remain. NotDirectory when dir is a file; NotFound when dir does not exist (the
// top always exists).
func (v *View) List(ws *Workspace, dir, after string, limit int) (entries []DirEntry, more bool, err error) {
	if dir != "" {
		if err := ValidatePath("path", dir); err != nil {
			return nil, false, err
		}
		if rec, ok := v.record(ws, dir); ok && rec.at(v.at) != nil {
			return nil, false, &Error{Code: CodeNotDirectory, Path: dir, Message: "the path is a file, not a directory"}
		}
		if v.dirOf(ws, dir).Files == 0 {
			return nil, false, errorf(CodeNotFound, "the directory does not exist")
		}
	}
	if limit <= 0 {
		limit = 1
	}
	prefix := childPrefix(ws.Incarnation, dir)
	pivot := prefix
	if after != "" {
		pivot = prefix + after + "\x01"
	}
	entries = make([]DirEntry, 0, min(limit, 128)) // a page, grown past 128 only for long ones
	for {
		var next string
		done := true
		v.st.paths.Ascend(pivot, func(key string, rec *pathRecord) bool {
			if !strings.HasPrefix(key, prefix) {
				return false
			}
			rest := key[len(prefix):]
			i := strings.IndexByte(rest, 0)
			if i < 0 {
				if e := rec.at(v.at); e != nil && v.showsKey(ws, key) {
					if len(entries) == limit {
						more = true
						return false
					}
					entries = append(entries, DirEntry{Name: rest, Kind: KindFile, Entry: e})
				}
				return true
			}
			name := rest[:i]
			info := v.dirOf(ws, joinPath(dir, name))
			if info.Files > 0 {
				if len(entries) == limit {
					more = true
					return false
				}
				entries = append(entries, DirEntry{Name: name, Kind: KindDirectory, Dir: info})
			}
			// Skip the rest of this subtree: restart the scan after it.
			next = prefix + name + "\x01"
			done = false
			return false
		})
		if done || more {
			return entries, more, nil
		}
		pivot = next
	}
}

// dirInfo summarizes the directory dir. Live views read the maintained counters; views at
// older versions count by scanning the subtree.
func (v *View) dirInfo(inc uint64, dir string) DirInfo {
	if v.live() {
		dr, _ := v.st.dirs.Get(pathKey(inc, dir))
		return DirInfo{Files: dr.Files, Bytes: dr.Bytes, Children: dr.Children}
	}
	var info DirInfo
	prefix := childPrefix(inc, dir)
	lastChild := ""
	v.st.paths.Ascend(prefix, func(key string, rec *pathRecord) bool {
		if !strings.HasPrefix(key, prefix) {
			return false
		}
		e := rec.at(v.at)
		if e == nil {
			return true
		}
		info.Files++
		info.Bytes += e.Size
		rest := key[len(prefix):]
		child := rest[:indexNUL(rest)]
		if child != lastChild {
			info.Children++
			lastChild = child
		}
		return true
	})
	return info
}
