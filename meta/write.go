package meta

import "strconv"

// The write path of the FSM (docs/architecture.md#the-write-path): roots and workbenches,
// the versions of a path, and what they maintain.

// fileApplier applies the writes of files and keeps what they maintain: it creates roots
// and workbenches, publishes bodies and tombstones on path chains (put, append, delete,
// compaction, change sets) and keeps everything derived from a live workbench's chains
// exact — directory and workbench counters, usage (quota.go), the secondary index, blob
// reference counts, the holds that pin history (lifecycle.go) and the pruning of what
// retention lets go (retention.go). Every element the other parts add to a chain goes
// through publish and every re-prune through storeChain; only the whole-record removals
// of purges and moves (purge.go, move_walk.go) pass it by. Its checks (target,
// checkShape, checkQuota, checkPublishable) change nothing, so a command runs them all
// before its first mutation.
type fileApplier struct {
	*applyCtx
	// feed receives the events of the workbenches and files it writes.
	feed *feedApplier
}

func (a *fileApplier) createRoot(agent string) Result {
	if err := ValidateName("agent", agent); err != nil {
		return Result{Err: err}
	}
	r := a.ensureRoot(agent)
	return Result{RootUID: r.UID}
}

func (a *fileApplier) ensureRoot(agent string) *Root {
	s := a.st
	if r, ok := s.roots.Get(agent); ok {
		return r
	}
	s.nextRootUID++
	r := &Root{Agent: agent, UID: a.opts.RootUIDPrefix + strconv.FormatUint(s.nextRootUID, 10), CreatedVersion: s.version}
	s.roots.Set(agent, r)
	return r
}

func (a *fileApplier) createWorkspace(c CreateWorkspace) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("id", c.Name); err != nil {
		return Result{Err: err}
	}
	if _, ok := a.st.workspaces.Get(workspaceKey(c.Agent, c.Name)); !ok {
		if err := a.checkQuota(c.Agent, Usage{Workbenches: 1}); err != nil {
			return Result{Err: err}
		}
	}
	r := a.ensureRoot(c.Agent)
	_, created, err := a.workspace(c.Agent, c.Name, true)
	if err != nil {
		return Result{Err: err}
	}
	return Result{Created: created, RootUID: r.UID}
}

// workspace returns the visible workbench name of agent, creating it when create is set.
// It does not validate names.
func (a *fileApplier) workspace(agent, name string, create bool) (*Workspace, bool, *Error) {
	s := a.st
	if ws, ok := s.workspaces.Get(workspaceKey(agent, name)); ok {
		if ws.State == WorkspaceStaging {
			return nil, false, errorf(CodeInvalidState, "workbench %q is being restored and accepts no writes yet", name)
		}
		return ws, false, nil
	}
	if !create {
		return nil, false, errorf(CodeNotFound, "workbench %q does not exist", name)
	}
	a.ensureRoot(agent)
	s.nextIncarnation++
	ws := &Workspace{Agent: agent, Name: name, Incarnation: s.nextIncarnation, Revision: s.version,
		CreatedVersion: s.version, CreatedAtMs: s.nowMs, Producer: a.prod}
	s.workspaces.Set(workspaceKey(agent, name), ws)
	a.addUsage(agent, Usage{Workbenches: 1})
	a.feed.emit(agent, Event{Kind: EventWorkbenchCreate, Workbench: name, Generation: s.version, Producer: a.prod})
	return ws, true, nil
}

// target validates the common fields of a path command and resolves its workbench. A
// missing workbench is NotFound unless create is set; then target returns nil and the
// caller materializes the workbench only once every check has passed (nothing
// half-applies).
func (a *fileApplier) target(agent, name, path string, create bool) (*Workspace, *Error) {
	if err := ValidateName("agent", agent); err != nil {
		return nil, err
	}
	if err := ValidateName("id", name); err != nil {
		return nil, err
	}
	if err := ValidatePath("path", path); err != nil {
		return nil, err
	}
	ws, ok := a.st.workspaces.Get(workspaceKey(agent, name))
	switch {
	case ok && ws.State == WorkspaceStaging:
		return nil, errorf(CodeInvalidState, "workbench %q is being restored and accepts no writes yet", name)
	case ok:
		return ws, nil
	case create:
		return nil, nil
	}
	return nil, errorf(CodeNotFound, "workbench %q does not exist", name)
}

// materialize returns the root and workbench of a command that passed its checks,
// creating them when ws is nil.
func (a *fileApplier) materialize(agent, name string, ws *Workspace) (*Root, *Workspace) {
	if ws == nil {
		ws, _, _ = a.workspace(agent, name, true)
	}
	r, _ := a.st.roots.Get(agent)
	return r, ws
}

// current returns the path record and live entry of path in ws (ws nil: a workbench about
// to be created, which holds nothing).
func (a *fileApplier) current(ws *Workspace, path string) (*pathRecord, *Entry) {
	if ws == nil {
		return nil, nil
	}
	rec, _ := a.st.paths.Get(pathKey(ws.Incarnation, path))
	return rec, rec.live()
}

func validateSegments(field string, segs []Segment, total int64) *Error {
	if len(segs) > MaxSegmentsPerCommand {
		return invalidArg(field, "has %d segments, more than %d", len(segs), MaxSegmentsPerCommand)
	}
	var sum int64
	for i, sg := range segs {
		if sg.Size <= 0 {
			return invalidArg(field, "segment %d has size %d; segments are non-empty", i, sg.Size)
		}
		if sg.Inline != nil && (int64(len(sg.Inline)) != sg.Size || sg.Size > MaxInlineSegmentBytes) {
			return invalidArg(field, "inline segment %d holds %d bytes for size %d (max %d)", i, len(sg.Inline), sg.Size, MaxInlineSegmentBytes)
		}
		sum += sg.Size
		if sum < 0 {
			return invalidArg(field, "sizes overflow")
		}
	}
	if sum != total {
		return invalidArg(field, "segments hold %d bytes but the size is %d", sum, total)
	}
	return nil
}

// checkShape enforces "a path is a file or an implicit directory, never both" for a file
// about to exist at path.
func (a *fileApplier) checkShape(inc uint64, path string) *Error {
	s := a.st
	key := pathKey(inc, path)
	for d := parentDir(path); d != ""; d = parentDir(d) {
		if rec, ok := s.paths.Get(ancestorKey(key, d)); ok && rec.live() != nil {
			return &Error{Code: CodeNotDirectory, Path: d, Message: "an ancestor of the path is a file: " + strconv.Quote(d)}
		}
	}
	if dr, ok := s.dirs.Get(key); ok && dr.Files > 0 {
		return &Error{Code: CodeAlreadyExists, Kind: "directory", Message: "the path is a directory"}
	}
	return nil
}

func (a *fileApplier) put(c Put) Result {
	if c.Cond > CondReplaceOnly {
		return Result{Err: invalidArg("condition", "unknown condition %d", c.Cond)}
	}
	if err := validateSegments("segments", c.Segments, c.Size); err != nil {
		return Result{Err: err}
	}
	if len(c.ContentType) > 256 {
		return Result{Err: invalidArg("content_type", "must be at most 256 bytes")}
	}
	if err := ValidateFields("fields", c.Fields); err != nil {
		return Result{Err: err}
	}
	if c.MaxWorkbenchFiles < 0 {
		return Result{Err: invalidArg("max_workbench_files", "must be 0 (no cap) or positive, got %d", c.MaxWorkbenchFiles)}
	}
	ws, err := a.target(c.Agent, c.Workspace, c.Path, c.CreateWorkspace)
	if err != nil {
		return Result{Err: err}
	}
	rec, cur := a.current(ws, c.Path)
	switch c.Cond {
	case CondCreateOnly:
		if cur != nil {
			return Result{Err: &Error{Code: CodeAlreadyExists, Kind: "file", CurrentGeneration: cur.Generation, Message: "the file exists"}}
		}
	case CondReplaceOnly:
		if cur == nil {
			return Result{Err: errorf(CodeNotFound, "the file does not exist")}
		}
	case CondIfGeneration:
		if cur == nil {
			return Result{Err: &Error{Code: CodeConflict, Message: "the file does not exist (expected generation " + strconv.FormatUint(c.IfGeneration, 10) + ")"}}
		}
		if cur.Generation != c.IfGeneration {
			return Result{Err: &Error{Code: CodeConflict, CurrentGeneration: cur.Generation, Message: "the file changed: generation " + strconv.FormatUint(cur.Generation, 10) + ", expected " + strconv.FormatUint(c.IfGeneration, 10)}}
		}
	}
	if cur == nil && ws != nil {
		if err := a.checkShape(ws.Incarnation, c.Path); err != nil {
			return Result{Err: err}
		}
		if err := checkWorkbenchFiles(ws, c.MaxWorkbenchFiles); err != nil {
			return Result{Err: err}
		}
	}
	if err := a.checkPublishable(c.Agent, c.Segments); err != nil {
		return Result{Err: err}
	}
	if err := a.checkQuota(c.Agent, fileGrowth(ws == nil, cur, &Entry{Size: c.Size})); err != nil {
		return Result{Err: err}
	}
	root, ws := a.materialize(c.Agent, c.Workspace, ws)
	key := pathKey(ws.Incarnation, c.Path)
	e := &Entry{Generation: a.st.version, Size: c.Size, Digest: c.Digest, ContentType: c.ContentType,
		Executable: c.Executable, Segments: c.Segments, HashState: c.HashState, ModifiedAtMs: a.st.nowMs,
		Fields: c.Fields, ListID: a.st.newListID(), Producer: a.prod}
	ord := a.publish(root, ws, key, c.Path, rec, e)
	return Result{Generation: e.Generation, Created: cur == nil, Size: e.Size, Digest: e.Digest,
		ContentType: e.ContentType, Executable: e.Executable, RootUID: root.UID, Ordinal: ord}
}

// checkWorkbenchFiles refuses a file about to be created in ws when ws already holds max
// live files or more (Put.MaxWorkbenchFiles; 0: no cap): ResourceExhausted naming
// QuotaFilesPerWorkbench, the cap, the count and the one file asked for. ws.Files is the
// count Stat answers for the workbench's top directory (both kept by publish; prune_test.go
// checks they agree). A workbench about to be created holds none.
func checkWorkbenchFiles(ws *Workspace, limit int64) *Error {
	if limit <= 0 || ws.Files < limit {
		return nil
	}
	e := errorf(CodeResourceExhausted, "workbench %q holds %d files, the most allowed (%d); delete one first", ws.Name, ws.Files, limit)
	e.Quota, e.Limit, e.Used, e.Requested = QuotaFilesPerWorkbench, limit, ws.Files, 1
	return e
}

func (a *fileApplier) append(c Append) Result {
	if err := validateSegments("segments", c.Segments, c.AppendedBytes); err != nil {
		return Result{Err: err}
	}
	ws, err := a.target(c.Agent, c.Workspace, c.Path, c.CreateWorkspace)
	if err != nil {
		return Result{Err: err}
	}
	rec, cur := a.current(ws, c.Path)
	var e *Entry
	if cur == nil {
		if c.ExpectGeneration != 0 {
			return Result{Err: &Error{Code: CodeConflict, Message: "the file does not exist (expected generation " + strconv.FormatUint(c.ExpectGeneration, 10) + ")"}}
		}
		if c.NewSize != c.AppendedBytes {
			return Result{Err: invalidArg("size", "a created file's size %d must equal the appended bytes %d", c.NewSize, c.AppendedBytes)}
		}
		if ws != nil {
			if err := a.checkShape(ws.Incarnation, c.Path); err != nil {
				return Result{Err: err}
			}
		}
		e = &Entry{Generation: a.st.version, Size: c.NewSize, Digest: c.NewDigest, ContentType: c.ContentType,
			Executable: c.Executable, Segments: c.Segments, HashState: c.NewHashState, ModifiedAtMs: a.st.nowMs,
			ListID: a.st.newListID(), Producer: a.prod}
	} else {
		if cur.Generation != c.ExpectGeneration {
			return Result{Err: &Error{Code: CodeConflict, CurrentGeneration: cur.Generation, Message: "the file changed: generation " + strconv.FormatUint(cur.Generation, 10) + ", expected " + strconv.FormatUint(c.ExpectGeneration, 10)}}
		}
		if c.NewSize != cur.Size+c.AppendedBytes {
			return Result{Err: invalidArg("size", "new size %d is not %d + %d", c.NewSize, cur.Size, c.AppendedBytes)}
		}
		segs, sameList := appendSegments(cur.Segments, c.Segments, c.InlineMaxBytes)
		list := cur.ListID
		if !sameList || list == 0 {
			list = a.st.newListID()
		}
		e = &Entry{Generation: a.st.version, Size: c.NewSize, Digest: c.NewDigest, ContentType: cur.ContentType,
			Executable: cur.Executable, Segments: segs, HashState: c.NewHashState, ModifiedAtMs: a.st.nowMs,
			Fields: cur.Fields, ListID: list, Producer: a.prod}
	}
	if err := a.checkPublishable(c.Agent, c.Segments); err != nil {
		return Result{Err: err}
	}
	if err := a.checkQuota(c.Agent, fileGrowth(ws == nil, cur, e)); err != nil {
		return Result{Err: err}
	}
	root, ws := a.materialize(c.Agent, c.Workspace, ws)
	ord := a.publish(root, ws, pathKey(ws.Incarnation, c.Path), c.Path, rec, e)
	return Result{Generation: e.Generation, Created: cur == nil, Size: e.Size, Digest: e.Digest,
		ContentType: e.ContentType, Executable: e.Executable, RootUID: root.UID, Ordinal: ord}
}

// appendSegments returns the segment list after an append and whether it extends old's
// list (sameList) rather than starting a new one.
//
// The list is shared, append-only, between a file's versions (docs/architecture.md#the-write-path): the new
// version's slice is old's slice extended in place when its backing array has room, so an
// append costs O(len(add)), not O(len(old)). Older versions never see the new elements —
// their slices end where they did — and only a file's live version is ever extended;
// every other copy of a list (a restore copy) is clipped to its length, so two versions
// never extend one array.
//
// A file that is a single tiny inline segment absorbs a tiny inline addition while the
// merged bytes stay within inlineMax (a small log stays one inline segment); that starts a
// new one-element list (O(1)). Longer runs of small segments are rolled up by the
// compactor.
func appendSegments(old, add []Segment, inlineMax int64) ([]Segment, bool) {
	if len(old) == 1 && len(add) == 1 && old[0].IsInline() && add[0].IsInline() {
		if n := old[0].Size + add[0].Size; n <= inlineMax && n <= MaxInlineSegmentBytes {
			merged := make([]byte, 0, n)
			merged = append(append(merged, old[0].Inline...), add[0].Inline...)
			return []Segment{{Digest: digestOf(merged), Size: n, Inline: merged}}, false
		}
	}
	return append(old, add...), true
}

func (a *fileApplier) delete(c Delete) Result {
	ws, err := a.target(c.Agent, c.Workspace, c.Path, false)
	if err != nil {
		return Result{Err: err}
	}
	key := pathKey(ws.Incarnation, c.Path)
	rec, cur := a.current(ws, c.Path)
	if cur == nil {
		if dr, ok := a.st.dirs.Get(key); ok && dr.Files > 0 {
			return Result{Err: &Error{Code: CodeNotArtifact, Kind: "directory", Message: "the path is a directory, not a file"}}
		}
		return Result{Err: errorf(CodeNotFound, "the file does not exist")}
	}
	if c.IfGeneration != 0 && cur.Generation != c.IfGeneration {
		return Result{Err: &Error{Code: CodeConflict, CurrentGeneration: cur.Generation, Message: "the file changed: generation " + strconv.FormatUint(cur.Generation, 10) + ", expected " + strconv.FormatUint(c.IfGeneration, 10)}}
	}
	root, _ := a.st.roots.Get(c.Agent)
	ord := a.publish(root, ws, key, c.Path, rec, nil)
	return Result{Generation: a.st.version, RootUID: root.UID, Ordinal: ord}
}

// publish makes e (nil: a tombstone) the newest element of the path's chain and updates
// everything derived from the live tree: directory counts, workbench counters, blob
// references, and retention of what the new element superseded.
//
// key is the path's key, pathKey(ws.Incarnation, path). It returns the new element's
// Ordinal.
func (a *fileApplier) publish(root *Root, ws *Workspace, key, path string, rec *pathRecord, e *Entry) uint64 {
	s := a.st
	old := rec.live()
	chain := make([]version, 0, 1+len(chainOf(rec)))
	ord := nextOrdinal(chainOf(rec), e == nil)
	el := version{Version: s.version, Entry: e, AtMs: s.nowMs, Ordinal: ord}
	if e == nil && !a.prod.IsZero() {
		p := a.prod
		el.DeletedBy = &p
	}
	chain = append(chain, el)
	chain = append(chain, chainOf(rec)...)
	nws := *ws
	nws.Revision = s.version
	nws.Producer = a.prod
	switch {
	case old == nil && e != nil:
		a.liveDelta(key, path, +1, e.Size, true)
		nws.Files++
		nws.Bytes += e.Size
	case old != nil && e == nil:
		a.liveDelta(key, path, -1, -old.Size, true)
		nws.Files--
		nws.Bytes -= old.Size
	case old != nil && e != nil:
		a.liveDelta(key, path, 0, e.Size-old.Size, false)
		nws.Bytes += e.Size - old.Size
	}
	a.addUsage(ws.Agent, Usage{Files: nws.Files - ws.Files, Bytes: nws.Bytes - ws.Bytes})
	s.workspaces.Set(workspaceKey(ws.Agent, ws.Name), &nws)
	s.indexFile(ws.Incarnation, path, old, e)
	a.storeChain(root.UID, key, chain)
	a.feed.emitFile(ws, path, e, ord)
	return ord
}

func chainOf(r *pathRecord) []version {
	if r == nil {
		return nil
	}
	return r.Chain
}

// storeChain prunes chain, stores it (or deletes the record when nothing is left) and
// schedules the next pruning.
func (a *fileApplier) storeChain(rootUID, key string, chain []version) {
	s := a.st
	kept, _, nextDue := a.prune(a.retentionOf(rootUID), binaryU64(key[:incarnationKeySize]), chain)
	prev, _ := s.paths.Get(key)
	a.account(rootUID, chainOf(prev), kept)
	if len(kept) == 0 {
		s.paths.Delete(key)
	} else {
		s.paths.Set(key, &pathRecord{Chain: kept})
	}
	if len(kept) > 1 || len(kept) == 1 && kept[0].Entry == nil {
		s.history.Set(key, struct{}{})
	} else {
		s.history.Delete(key)
	}
	var live *Entry
	if len(kept) > 0 {
		live = kept[0].Entry
	}
	s.trackCompactable(key, live)
	if nextDue > 0 {
		s.seq++
		s.retention.Set(retentionKey(nextDue, s.seq), string(rune(retainPath))+rootUID+"\x00"+key)
	}
}

// prune splits a chain (newest first) into what must be kept and what may go under
// policy pol (retention.go), and returns the command time at which something kept becomes
// droppable (0: never by time alone). The newest element stays unless it is a tombstone
// older than the retention window; a superseded element stays while pol retains it (its
// position in the current life, its age since it was superseded, the cap) or a hold pins
// it. The rules are applied to the retained prefix only: from the first element they let
// go on, only holds keep anything.
func (a *fileApplier) prune(pol Retention, inc uint64, chain []version) (kept, dropped []version, nextDue int64) {
	now := a.st.nowMs
	// kept aliases a prefix of chain (never written to: chains are immutable) while what
	// is kept is one, so a write that drops only the oldest elements (a log at its cap)
	// does not copy its chain a second time.
	kept = chain[:0]
	copied := false
	keep := func(i int) {
		switch {
		case copied:
			kept = append(kept, chain[i])
		case i == len(kept):
			kept = chain[:i+1]
		default: // an element kept after one dropped: the rest is a copy
			kept, copied = append(append(make([]version, 0, len(chain)-1), kept...), chain[i]), true
		}
	}
	drop := func(i int) { dropped = append(dropped, chain[i]) }
	ageMs := pol.Age.Milliseconds()
	due := func(t int64) {
		if nextDue == 0 || t < nextDue {
			nextDue = t
		}
	}
	retaining := true // still inside the retained prefix
	// life: inside the live body's current life, told by the Ordinals counting down by one
	// from the head (records.go): an element a delete or a gap (a tombstone pruned since)
	// separates from the head is not, so the count rule never reaches across one.
	life := len(chain) > 0 && chain[0].Entry != nil
	for i, el := range chain {
		if i == 0 {
			if el.Entry != nil {
				keep(i)
				continue
			}
			if until := el.AtMs + a.opts.RetentionWindow.Milliseconds(); until > now {
				keep(i)
				due(until)
			} else {
				drop(i)
			}
			continue
		}
		life = life && el.Entry != nil && el.Ordinal+uint64(i) == chain[0].Ordinal
		if retaining {
			byCount := life && i < pol.Versions
			until := chain[i-1].AtMs + ageMs
			if i < pol.MaxVersions && (byCount || until > now) {
				keep(i)
				if !byCount {
					due(until)
				}
				continue
			}
			retaining = false
		}
		if a.held(inc, el.Version, chain[i-1].Version) {
			keep(i)
		} else {
			drop(i)
		}
	}
	// A head tombstone stays while anything older is kept: dropping it would resurrect the
	// older element for live reads. Once nothing older is kept, an expired one goes.
	if len(chain) > 0 && chain[0].Entry == nil && len(dropped) > 0 && dropped[0].Version == chain[0].Version && len(kept) > 0 {
		kept = append([]version{chain[0]}, kept...)
		dropped = dropped[1:]
	}
	return kept, dropped, nextDue
}

// held reports whether a hold of incarnation inc pins a version in [lo, hi): then the
// chain element that starts at lo and is superseded at hi is what reads at that version
// see.
func (a *fileApplier) held(inc, lo, hi uint64) bool {
	found := false
	a.st.holds.Ascend(holdKey(inc, lo), func(k string, _ int64) bool {
		found = k < holdKey(inc, hi)
		return false
	})
	return found
}

// ref adds delta to the reference count of every non-inline segment of segs.
func (a *fileApplier) ref(rootUID string, segs []Segment, delta int64) {
	s := a.st
	for _, sg := range segs {
		if sg.IsInline() {
			continue
		}
		k := blobKey(rootUID, sg.Digest)
		br, _ := s.blobs.Get(k)
		br.Count += delta
		if br.Count == 0 {
			br.ZeroSinceMs = s.nowMs
		} else {
			br.ZeroSinceMs = 0
		}
		s.blobs.Set(k, br)
	}
}

// liveDelta updates the directory records above path, whose key is key (pathKey), when a
// file appears (files +1), disappears (files -1) or changes size (files 0).
func (a *fileApplier) liveDelta(key, path string, files, bytes int64, childChanges bool) {
	s := a.st
	changed := childChanges
	for d := parentDir(path); ; d = parentDir(d) {
		k := ancestorKey(key, d)
		dr, _ := s.dirs.Get(k)
		wasEmpty := dr.Files == 0
		dr.Files += files
		dr.Bytes += bytes
		if changed {
			if files > 0 {
				dr.Children++
			} else if files < 0 {
				dr.Children--
			}
		}
		// The directory itself appeared in (or vanished from) its parent.
		changed = files != 0 && (wasEmpty || dr.Files == 0)
		if dr.Files == 0 {
			s.dirs.Delete(k)
		} else {
			s.dirs.Set(k, dr)
		}
		if d == "" {
			return
		}
	}
}
