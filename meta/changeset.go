package meta

import (
	"slices"
	"strconv"
	"strings"
)

// OpChangeSet applies a set of per-path changes to one workbench as one command: the core
// of rewind (workbench/rewind.go), and of merge later (docs/architecture.md, "Attempts").
const OpChangeSet Op = 24

// MaxChangeSetChanges bounds the changes (and, separately, the guarded paths) of one
// ChangeSet: a change set is one Raft command and one FSM step, so what it touches is
// bounded to keep the command small and the step short.
const MaxChangeSetChanges = 4096

// MaxChangeSetScan bounds the path records a ChangeSet's Unchanged guard examines below
// its directory (a larger scope is InvalidArguments naming "unchanged.dir").
const MaxChangeSetScan = 100_000

// MaxChangeSetConflicts bounds the paths a refused ChangeSet lists (Error.Paths).
const MaxChangeSetConflicts = 100

// ChangeSet sets each of Changes' paths of workbench Workspace to a retained body of
// SourceWorkspace (zero-copy: the same segments and digest, referenced again like a copy's)
// or deletes it, all or nothing: every change must find its path at ExpectGeneration and
// its source, and Unchanged must hold, or nothing applies and the answer is a Conflict (or
// NotFound for a source) listing every path that failed (Error.Paths, at most
// MaxChangeSetConflicts). Each changed path gets a new version at the command's shard
// version, attributed to the command's producer and on the change feed; history keeps the
// versions before it.
type ChangeSet struct {
	Agent     string `cbor:"1,keyasint"`
	Workspace string `cbor:"2,keyasint"`
	// Incarnation is the incarnation of Workspace the changes were planned against: another
	// (the name was deleted and created again) is NotFound.
	Incarnation uint64 `cbor:"3,keyasint"`
	// SourceWorkspace and SourceIncarnation name the workbench the bodies come from (the
	// same root; for a rewind, Workspace itself).
	SourceWorkspace   string `cbor:"4,keyasint"`
	SourceIncarnation uint64 `cbor:"5,keyasint"`
	// Changes, in strictly increasing path order (ComparePaths), 1..MaxChangeSetChanges;
	// none only with Unchanged (a guard alone: what a retry under a request id sends when
	// it cannot know the first attempt's changes, rewind.go).
	Changes []PathChange `cbor:"6,keyasint"`
	// Unchanged, when set, also guards what the changes do not touch.
	Unchanged *ScopeGuard `cbor:"7,keyasint,omitempty"`
}

// PathChange is one change of a ChangeSet.
type PathChange struct {
	Path string `cbor:"1,keyasint"`
	// ExpectGeneration is the live generation the planner read at Path; 0: Path must hold
	// no file.
	ExpectGeneration uint64 `cbor:"2,keyasint,omitempty"`
	// SourcePath and SourceGeneration name the body Path gets: the retained version of
	// SourcePath in the source workbench whose generation is SourceGeneration (a body, not a
	// delete). SourceGeneration 0: Path is deleted (then ExpectGeneration must not be 0).
	SourcePath       string `cbor:"3,keyasint,omitempty"`
	SourceGeneration uint64 `cbor:"4,keyasint,omitempty"`
}

// Delete reports whether the change deletes its path.
func (c PathChange) Delete() bool { return c.SourceGeneration == 0 }

// ScopeGuard says that nothing changed in a scope of the workbench after shard version
// Since: no path record below Dir, nor any of Paths, has a newest version (a body or a
// delete) above Since. Without Paths, Dir "" is the whole workbench; with Paths, Dir ""
// adds nothing. Commit and restore manifests
// (IsReservedPath) are outside every scope.
type ScopeGuard struct {
	Dir   string   `cbor:"1,keyasint,omitempty"`
	Paths []string `cbor:"2,keyasint,omitempty"`
	Since uint64   `cbor:"3,keyasint"`
}

func (ChangeSet) Op() Op { return OpChangeSet }

// changeSetScope: the command reads its source workbench and writes the files of its
// target, like a restore's begin.
func changeSetScope(c ChangeSet) CommandScope {
	return CommandScope{Agent: c.Agent, Workbench: c.SourceWorkspace, Files: c.Workspace}
}

// changeSet applies c: it checks everything first (names, order, the workbenches, the
// guards, the sources, the shape of the tree afterwards, the quota), then deletes, then
// sets, so that a delete of "a/b" and a set of "a" in one command pass the shape rule.
func (a *fileApplier) changeSet(c ChangeSet) Result {
	if err := validateChangeSet(c); err != nil {
		return Result{Err: err}
	}
	s := a.st
	ws, err := a.changeSetWorkspace(c.Agent, c.Workspace, c.Incarnation)
	if err != nil {
		return Result{Err: err}
	}
	src := ws
	if c.SourceWorkspace != c.Workspace {
		if src, err = a.changeSetWorkspace(c.Agent, c.SourceWorkspace, c.SourceIncarnation); err != nil {
			return Result{Err: err}
		}
	} else if c.SourceIncarnation != c.Incarnation {
		return Result{Err: invalidArg("source_incarnation", "must equal the workbench's incarnation when the source is the workbench itself")}
	}
	if err := a.checkUnchanged(ws, c.Unchanged); err != nil {
		return Result{Err: err}
	}
	cur := make([]*Entry, len(c.Changes))
	bodies := make([]*Entry, len(c.Changes))
	var stale, missing []string
	for i, ch := range c.Changes {
		_, cur[i] = a.current(ws, ch.Path)
		if g := generationOf(cur[i]); g != ch.ExpectGeneration {
			stale = appendBounded(stale, ch.Path)
		}
		if ch.Delete() {
			continue
		}
		if bodies[i] = retainedBody(s, src, ch.SourcePath, ch.SourceGeneration); bodies[i] == nil {
			missing = appendBounded(missing, ch.Path)
		}
	}
	if len(stale) > 0 {
		return Result{Err: &Error{Code: CodeConflict, Paths: stale, Reason: "stale",
			Message: strconv.Itoa(len(stale)) + " path(s) changed since the change set was planned"}}
	}
	if len(missing) > 0 {
		return Result{Err: &Error{Code: CodeNotFound, Field: "changes", Paths: missing,
			Message: "the source versions of " + strconv.Itoa(len(missing)) + " path(s) are no longer retained"}}
	}
	if err := a.checkChangeSetShape(ws, c.Changes); err != nil {
		return Result{Err: err}
	}
	var grow Usage
	for i, ch := range c.Changes {
		if !ch.Delete() {
			if err := a.checkPublishable(c.Agent, bodies[i].Segments); err != nil {
				return Result{Err: err}
			}
		}
		grow = grow.add(fileGrowth(false, cur[i], bodies[i]))
	}
	if err := a.checkQuota(c.Agent, grow); err != nil {
		return Result{Err: err}
	}
	root, _ := s.roots.Get(c.Agent)
	for _, deletes := range []bool{true, false} {
		for i, ch := range c.Changes {
			if ch.Delete() != deletes {
				continue
			}
			now, _ := s.workspaces.Get(workspaceKey(c.Agent, c.Workspace)) // publish replaces the record each time
			key := pathKey(now.Incarnation, ch.Path)
			rec, _ := s.paths.Get(key)
			var e *Entry
			if !deletes {
				ne := *bodies[i]
				ne.Generation = s.version
				ne.ModifiedAtMs = s.nowMs
				ne.Segments = slices.Clip(bodies[i].Segments) // never extends the source's list in place
				ne.ListID = s.newListID()
				ne.Producer = a.prod
				ne.Proposal = "" // a version a proposal made; this one the change set makes
				e = &ne
			}
			a.publish(root, now, key, ch.Path, rec, e)
		}
	}
	return Result{Generation: s.version, RootUID: root.UID, Deleted: int64(countDeletes(c.Changes))}
}

// validateChangeSet checks what needs no state: names, bounds, paths and their order.
func validateChangeSet(c ChangeSet) *Error {
	if err := ValidateName("agent", c.Agent); err != nil {
		return err
	}
	if err := ValidateName("id", c.Workspace); err != nil {
		return err
	}
	if err := ValidateName("source", c.SourceWorkspace); err != nil {
		return err
	}
	if len(c.Changes) == 0 && c.Unchanged == nil || len(c.Changes) > MaxChangeSetChanges {
		return invalidArg("changes", "must hold 1 to %d changes (0 only with an Unchanged guard), got %d", MaxChangeSetChanges, len(c.Changes))
	}
	for i, ch := range c.Changes {
		if err := validateChangePath("changes", ch.Path); err != nil {
			return err
		}
		if i > 0 && ComparePaths(c.Changes[i-1].Path, ch.Path) >= 0 {
			return invalidArg("changes", "paths must be in strictly increasing order; %q follows %q", ch.Path, c.Changes[i-1].Path)
		}
		if ch.Delete() {
			if ch.ExpectGeneration == 0 || ch.SourcePath != "" {
				return invalidArg("changes", "the delete of %q needs the generation it deletes and no source", ch.Path)
			}
			continue
		}
		if err := validateChangePath("changes", ch.SourcePath); err != nil {
			return err
		}
	}
	if g := c.Unchanged; g != nil {
		if g.Dir != "" {
			if err := ValidatePath("unchanged.dir", g.Dir); err != nil {
				return err
			}
		}
		if len(g.Paths) > MaxChangeSetChanges {
			return invalidArg("unchanged.paths", "must hold at most %d paths, got %d", MaxChangeSetChanges, len(g.Paths))
		}
		for _, p := range g.Paths {
			if err := ValidatePath("unchanged.paths", p); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateChangePath checks a path a change names: valid, and not a manifest only commit
// and restore write.
func validateChangePath(field, p string) *Error {
	if err := ValidatePath(field, p); err != nil {
		return err
	}
	if IsReservedPath(p) {
		return invalidArg(field, "%q is written only by commit and restore", p)
	}
	return nil
}

// changeSetWorkspace returns the visible workbench name of agent with incarnation inc:
// NotFound when there is none (missing, or deleted and created again since the plan).
func (a *fileApplier) changeSetWorkspace(agent, name string, inc uint64) (*Workspace, *Error) {
	ws, _, err := a.workspace(agent, name, false)
	if err != nil {
		return nil, err
	}
	if ws.Incarnation != inc {
		return nil, errorf(CodeNotFound, "workbench %q does not exist", name)
	}
	return ws, nil
}

// checkUnchanged enforces g (nil: nothing to check): a Conflict listing the paths of the
// scope whose newest version is above g.Since.
func (a *fileApplier) checkUnchanged(ws *Workspace, g *ScopeGuard) *Error {
	if g == nil {
		return nil
	}
	if g.Since > a.st.version {
		return invalidArg("unchanged.since", "%d is beyond the applied shard version %d", g.Since, a.st.version)
	}
	changed, err := changedSince(a.st, ws, *g)
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		return &Error{Code: CodeConflict, Paths: changed, Reason: "stale",
			Message: strconv.Itoa(len(changed)) + " path(s) of the scope changed since the change set was planned"}
	}
	return nil
}

// ChangedSince returns the paths of g's scope in ws whose newest version is above g.Since
// (in path order, at most MaxChangeSetConflicts): what a ChangeSet with Unchanged g would
// refuse, as of the view's applied state. InvalidArguments naming "unchanged.dir" when the
// scope holds more than MaxChangeSetScan path records.
func (h HistoryView) ChangedSince(ws *Workspace, g ScopeGuard) ([]string, error) {
	changed, err := changedSince(h.v.st, ws, g)
	if err != nil {
		return nil, err
	}
	return changed, nil
}

func changedSince(st *state, ws *Workspace, g ScopeGuard) ([]string, *Error) {
	var changed []string
	err := eachInScope(st, ws, g, func(p string, rec *pathRecord) {
		if len(rec.Chain) > 0 && rec.Chain[0].Version > g.Since {
			changed = appendBounded(changed, p)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(changed, ComparePaths)
	return slices.Compact(changed), nil
}

// eachInScope calls fn with the path and record of each path of g's scope in ws that has a
// record (g.Paths, then every record below g.Dir; a path may come twice), commit and
// restore manifests left out. InvalidArguments naming "unchanged.dir" when more than
// MaxChangeSetScan records lie below g.Dir.
func eachInScope(st *state, ws *Workspace, g ScopeGuard, fn func(path string, rec *pathRecord)) *Error {
	visit := func(key string, rec *pathRecord) {
		if p := keyPath(key); !IsReservedPath(p) {
			fn(p, rec)
		}
	}
	for _, p := range g.Paths {
		key := pathKey(ws.Incarnation, p)
		if rec, ok := st.paths.Get(key); ok {
			visit(key, rec)
		}
	}
	if g.Dir != "" || len(g.Paths) == 0 {
		prefix := childPrefix(ws.Incarnation, g.Dir)
		scanned := 0
		st.paths.Ascend(prefix, func(key string, rec *pathRecord) bool {
			if !strings.HasPrefix(key, prefix) {
				return false
			}
			if scanned++; scanned > MaxChangeSetScan {
				return false
			}
			visit(key, rec)
			return true
		})
		if scanned > MaxChangeSetScan {
			return invalidArg("unchanged.dir", "covers more than %d paths; guard a narrower directory", MaxChangeSetScan)
		}
	}
	return nil
}

// checkChangeSetShape enforces changeSetShape in the applied state.
func (a *fileApplier) checkChangeSetShape(ws *Workspace, changes []PathChange) *Error {
	return changeSetShape(a.st, ws, changes)
}

// CheckChangeSetShape answers what a ChangeSet of changes (valid, in path order) applied
// to ws now would answer for the shape of the tree it leaves (changeSetShape): a planner
// refuses a change set that can never apply before it hands it out (workbench/rewind.go).
// It needs a live view.
func (v *View) CheckChangeSetShape(ws *Workspace, changes []PathChange) error {
	if !v.live() {
		return invalidArg("changes", "the shape check needs a live view")
	}
	if err := changeSetShape(v.st, ws, changes); err != nil {
		return err
	}
	return nil
}

// changeSetShape enforces "a path is a file or an implicit directory, never both" on the
// tree the changes leave: for every set path, no ancestor is a file afterwards
// (NotDirectory) and nothing lives below it afterwards (AlreadyExists, kind directory).
// The error names the clashing path (Path) and both paths (Paths).
func changeSetShape(s *state, ws *Workspace, changes []PathChange) *Error {
	byPath := make(map[string]PathChange, len(changes))
	for _, ch := range changes {
		byPath[ch.Path] = ch
	}
	liveAfter := func(p string) bool {
		if ch, ok := byPath[p]; ok {
			return !ch.Delete()
		}
		rec, _ := s.paths.Get(pathKey(ws.Incarnation, p))
		return rec.live() != nil
	}
	for i, ch := range changes {
		if ch.Delete() {
			continue
		}
		for d := parentDir(ch.Path); d != ""; d = parentDir(d) {
			if liveAfter(d) {
				return &Error{Code: CodeNotDirectory, Path: d, Paths: []string{d, ch.Path},
					Message: "an ancestor of " + strconv.Quote(ch.Path) + " is a file: " + strconv.Quote(d)}
			}
		}
		var below int64
		if dr, ok := s.dirs.Get(pathKey(ws.Incarnation, ch.Path)); ok {
			below = dr.Files
		}
		// The changes below ch.Path follow it (path order keeps a subtree together).
		for _, d := range changes[i+1:] {
			if !strings.HasPrefix(d.Path, ch.Path+"/") {
				break
			}
			rec, _ := s.paths.Get(pathKey(ws.Incarnation, d.Path))
			switch {
			case d.Delete() && rec.live() != nil:
				below--
			case !d.Delete() && rec.live() == nil:
				below++
			}
		}
		if below > 0 {
			return &Error{Code: CodeAlreadyExists, Kind: "directory", Path: ch.Path, Paths: slices.DeleteFunc([]string{ch.Path, fileBelow(s, ws, changes, i)}, func(p string) bool { return p == "" }),
				Message: strconv.Quote(ch.Path) + " is a directory"}
		}
	}
	return nil
}

// retainedBody returns the body path of ws had at generation gen, when a retained chain
// element holds it (nil otherwise: never that generation, pruned, or a delete's version).
func retainedBody(s *state, ws *Workspace, path string, gen uint64) *Entry {
	rec, ok := s.paths.Get(pathKey(ws.Incarnation, path))
	if !ok {
		return nil
	}
	for _, el := range rec.Chain {
		if el.Version == gen && el.Entry != nil {
			return el.Entry
		}
		if el.Version < gen {
			break
		}
	}
	return nil
}

func generationOf(e *Entry) uint64 {
	if e == nil {
		return 0
	}
	return e.Generation
}

// appendBounded appends p while the list holds fewer than MaxChangeSetConflicts paths.
func appendBounded(list []string, p string) []string {
	if len(list) < MaxChangeSetConflicts {
		list = append(list, p)
	}
	return list
}

func countDeletes(changes []PathChange) int {
	n := 0
	for _, ch := range changes {
		if ch.Delete() {
			n++
		}
	}
	return n
}

// fileBelow names a path below changes[i].Path that holds a file after the changes: the
// first set path below it among the changes (path order keeps a subtree together), else
// the first live file below it not deleted by them, within MaxChangeSetScan records ("" past).
func fileBelow(s *state, ws *Workspace, changes []PathChange, i int) string {
	dir := changes[i].Path
	deleted := map[string]bool{}
	for _, d := range changes[i+1:] {
		if !strings.HasPrefix(d.Path, dir+"/") {
			break
		}
		if !d.Delete() {
			return d.Path
		}
		deleted[d.Path] = true
	}
	prefix := childPrefix(ws.Incarnation, dir)
	found, scanned := "", 0
	s.paths.Ascend(prefix, func(key string, rec *pathRecord) bool {
		if scanned++; !strings.HasPrefix(key, prefix) || scanned > MaxChangeSetScan {
			return false
		}
		if p := keyPath(key); rec.live() != nil && !deleted[p] {
			found = p
			return false
		}
		return true
	})
	return found
}
