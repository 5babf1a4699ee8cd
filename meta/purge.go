package meta

import (
	"strconv"
	"strings"

	"github.com/tidwall/btree"
)

// MaxPurgeBatch bounds the workbenches one PurgeRoot deletes.
const MaxPurgeBatch = 256

// purgeBatch bounds the records one retention step of a workbench purge visits.
const purgeBatch = 64

// DeleteWorkspace deletes a workbench: its name, files, snapshots and commits. The command
// itself is bounded: it removes the workbench record (the name is free at once; a new
// workbench of that name is a new incarnation that sees nothing of the old one), retires
// the workbench's held snapshots and takes its usage off the root. The incarnation's
// records (path chains, directory counters, index entries, commits, holds, snapshot
// records) go in bounded retention steps afterwards, each releasing the blob references
// it drops, so the blobs become garbage-collection candidates (docs/architecture.md#blob-storage-and-garbage-collection).
//
// It is refused with ForkRetentionActive while a restore reads from the workbench, and
// with InvalidState while the workbench is a restore's destination still staging.
// IfRevision, when non-zero, must equal the workbench's revision (Conflict otherwise).
type DeleteWorkspace struct {
	Agent      string `cbor:"1,keyasint"`
	Name       string `cbor:"2,keyasint"`
	IfRevision uint64 `cbor:"3,keyasint,omitempty"`
}

// PurgeRoot deletes up to Limit (1..MaxPurgeBatch) workbenches of an agent root, in name
// order, each as DeleteWorkspace does; Result.Deleted counts them and Result.More says
// workbenches remain (the caller proposes the next PurgeRoot). Refused with
// ForkRetentionActive while any restore of the root is in progress. The root record, its
// uid and its quotas stay; a purged root holds nothing.
type PurgeRoot struct {
	Agent string `cbor:"1,keyasint"`
	Limit int    `cbor:"2,keyasint"`
}

func (DeleteWorkspace) Op() Op { return OpDeleteWorkspace }
func (PurgeRoot) Op() Op       { return OpPurgeRoot }

// purgeApplier deletes workbenches (DeleteWorkspace, PurgeRoot) and runs the bounded
// retention steps that remove a deleted incarnation's records afterwards, each releasing
// the blob references it drops (files.account). A deletion frees the name at once and
// takes the workbench's usage off its root; nothing of the old incarnation ever resolves
// under the name again.
type purgeApplier struct {
	*applyCtx
	files *fileApplier
	feed  *feedApplier
}

func (a *purgeApplier) deleteWorkspace(c DeleteWorkspace) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("id", c.Name); err != nil {
		return Result{Err: err}
	}
	ws, ok := a.st.workspaces.Get(workspaceKey(c.Agent, c.Name))
	if !ok {
		return Result{Err: errorf(CodeNotFound, "workbench %q does not exist", c.Name)}
	}
	if c.IfRevision != 0 && ws.Revision != c.IfRevision {
		return Result{Err: &Error{Code: CodeConflict, CurrentGeneration: ws.Revision,
			Message: "the workbench changed: revision " + strconv.FormatUint(ws.Revision, 10) + ", expected " + strconv.FormatUint(c.IfRevision, 10)}}
	}
	if err := a.deletable(ws); err != nil {
		return Result{Err: err}
	}
	root, _ := a.st.roots.Get(c.Agent)
	a.removeWorkspace(root, ws)
	return Result{Deleted: 1, RootUID: root.UID}
}

// deletable refuses to delete a workbench a restore is using: as its source (the restore
// holds its history) or as its staging destination.
func (a *purgeApplier) deletable(ws *Workspace) *Error {
	if ws.State == WorkspaceStaging {
		return &Error{Code: CodeInvalidState, OperationID: ws.RestoreOp,
			Message: "workbench " + strconv.Quote(ws.Name) + " is being restored; delete it after the restore completes"}
	}
	if op := a.restoreReading(ws); op != nil {
		return &Error{Code: CodeForkRetentionActive, OperationID: op.ID,
			Message: "workbench " + strconv.Quote(ws.Name) + " is being restored from; delete it after the restore completes"}
	}
	return nil
}

// restoreReading returns a restore in progress that reads from ws, or nil. It visits the
// root's restore records (finished ones stay for the retention window).
func (a *purgeApplier) restoreReading(ws *Workspace) *RestoreOp {
	var found *RestoreOp
	prefix := ws.Agent + "\x00"
	a.st.restores.Ascend(prefix, func(k string, op *RestoreOp) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if op.State == RestoreCopying && op.SourceIncarnation == ws.Incarnation {
			found = op
			return false
		}
		return true
	})
	return found
}

// removeWorkspace deletes ws's record, retires its held snapshots (O(held snapshots),
// which SnapshotMint.MaxHeld bounds), takes its usage off the root and schedules the
// purge of its incarnation's records.
func (a *purgeApplier) removeWorkspace(root *Root, ws *Workspace) {
	s := a.st
	prefix := u64(ws.Incarnation)
	var held []string
	s.heldSnaps.Ascend(prefix, func(k string, _ struct{}) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		held = append(held, k)
		return true
	})
	for _, k := range held {
		s.heldSnaps.Delete(k)
		key := snapshotKey(ws.Agent, binaryU64(k[incarnationKeySize:]))
		if snap, ok := s.snapshots.Get(key); ok {
			ns := *snap
			ns.RetiredAtMs = s.nowMs
			ns.RetireReason = "workbench deleted"
			s.snapshots.Set(key, &ns)
		}
	}
	s.workspaces.Delete(workspaceKey(ws.Agent, ws.Name))
	a.files.addUsage(ws.Agent, Usage{Workbenches: -1, Files: -ws.Files, Bytes: -ws.Bytes, Snapshots: -int64(len(held))})
	a.schedulePurge(purgeItem{rootUID: root.UID, agent: ws.Agent, inc: ws.Incarnation, phase: purgePaths})
	a.feed.emit(ws.Agent, Event{Kind: EventWorkbenchDelete, Workbench: ws.Name, Generation: s.version, Producer: a.prod})
}

func (a *purgeApplier) purgeRoot(c PurgeRoot) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if c.Limit < 1 || c.Limit > MaxPurgeBatch {
		return Result{Err: invalidArg("limit", "must be between 1 and %d", MaxPurgeBatch)}
	}
	s := a.st
	root, ok := s.roots.Get(c.Agent)
	if !ok {
		return Result{} // nothing to purge
	}
	prefix := c.Agent + "\x00"
	if running := s.restoreCopying(c.Agent); running != nil {
		return Result{Err: &Error{Code: CodeForkRetentionActive, OperationID: running.ID,
			Message: "a restore of agent root " + strconv.Quote(c.Agent) + " is in progress; purge it after the restore completes"}}
	}
	var batch []*Workspace
	more := false
	s.workspaces.Ascend(prefix, func(k string, ws *Workspace) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if len(batch) == c.Limit {
			more = true
			return false
		}
		batch = append(batch, ws)
		return true
	})
	for _, ws := range batch {
		a.removeWorkspace(root, ws)
	}
	a.feed.emit(c.Agent, Event{Kind: EventRootPurge, Deleted: int64(len(batch)), Generation: s.version, Producer: a.prod})
	return Result{Deleted: int64(len(batch)), More: more, RootUID: root.UID}
}

// restoreCopying returns a restore of agent's root that is still copying, or nil.
func (s *state) restoreCopying(agent string) *RestoreOp {
	var running *RestoreOp
	prefix := agent + "\x00"
	s.restores.Ascend(prefix, func(k string, op *RestoreOp) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if op.State == RestoreCopying {
			running = op
		}
		return running == nil
	})
	return running
}

// Phases of a workbench purge, in order.
const (
	purgePaths     byte = 'p' // path chains: blob references, index entries, history, compaction
	purgeDirs      byte = 'd' // directory counters
	purgeCommits   byte = 'c' // commit records
	purgeHolds     byte = 'h' // history holds
	purgeSnapshots byte = 's' // snapshot records and the names that resolve to them
)

// purgeItem is the state of one workbench purge, kept in a retention item
// ('x' root uid \x00 agent \x00 u64(incarnation) phase resume).
type purgeItem struct {
	rootUID, agent string
	inc            uint64
	phase          byte
	resume         string // the last key the phase handled ("" = from its start)
}

func (p purgeItem) encode() string {
	return string(rune(retainPurge)) + p.rootUID + "\x00" + p.agent + "\x00" + u64(p.inc) + string(p.phase) + p.resume
}

func decodePurgeItem(v string) (purgeItem, bool) {
	uid, rest, ok := strings.Cut(v, "\x00")
	if !ok {
		return purgeItem{}, false
	}
	agent, rest, ok := strings.Cut(rest, "\x00")
	if !ok || len(rest) < incarnationKeySize+1 {
		return purgeItem{}, false
	}
	return purgeItem{rootUID: uid, agent: agent, inc: binaryU64(rest[:incarnationKeySize]),
		phase: rest[incarnationKeySize], resume: rest[incarnationKeySize+1:]}, true
}

func (a *purgeApplier) schedulePurge(p purgeItem) {
	s := a.st
	s.seq++
	s.retention.Set(retentionKey(s.nowMs, s.seq), p.encode())
}

// purgeStep handles up to purgeBatch records of one phase of a workbench purge and
// schedules the rest (the same phase after its last key, or the next phase).
func (a *purgeApplier) purgeStep(v string) {
	p, ok := decodePurgeItem(v)
	if !ok {
		return
	}
	s := a.st
	prefix := u64(p.inc)
	pivot := prefix
	if p.resume != "" {
		pivot = p.resume + "\x00"
	}
	var keys []string
	more := false
	next := byte(0)
	switch p.phase {
	case purgePaths:
		keys, more = keyBatch(s.paths, pivot, prefix, purgeBatch)
		for _, k := range keys {
			rec, _ := s.paths.Get(k)
			a.files.account(p.rootUID, rec.Chain, nil)
			s.indexFile(p.inc, keyPath(k), rec.live(), nil)
			s.paths.Delete(k)
			s.history.Delete(k)
			s.compactable.Delete(k)
		}
		next = purgeDirs
	case purgeDirs:
		keys, more = purgeTable(s.dirs, pivot, prefix)
		next = purgeCommits
	case purgeCommits:
		keys, more = purgeTable(s.commits, pivot, prefix)
		next = purgeHolds
	case purgeHolds:
		keys, more = purgeTable(s.holds, pivot, prefix)
		next = purgeSnapshots
	case purgeSnapshots:
		a.purgeSnapshotRecords(p)
		return
	default:
		return
	}
	if more {
		p.resume = keys[len(keys)-1]
	} else {
		p.phase, p.resume = next, ""
	}
	a.schedulePurge(p)
}

// purgeTable deletes the next purgeBatch keys of m with prefix from pivot on (keyBatch),
// and returns them.
func purgeTable[V any](m *btree.Map[string, V], pivot, prefix string) (keys []string, more bool) {
	keys, more = keyBatch(m, pivot, prefix, purgeBatch)
	for _, k := range keys {
		m.Delete(k)
	}
	return keys, more
}

// purgeSnapshotRecords deletes, visiting up to purgeBatch snapshot records of the agent
// root per step, the records of the purged incarnation and the names resolving to them.
func (a *purgeApplier) purgeSnapshotRecords(p purgeItem) {
	s := a.st
	prefix := p.agent + "\x00"
	pivot := prefix
	if p.resume != "" {
		pivot = p.resume + "\x00"
	}
	var gone []*WorkbenchSnapshot
	var last string
	visited, more := 0, false
	s.snapshots.Ascend(pivot, func(k string, snap *WorkbenchSnapshot) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if visited == purgeBatch {
			more = true
			return false
		}
		visited++
		last = k
		if snap.Incarnation == p.inc {
			gone = append(gone, snap)
		}
		return true
	})
	for _, snap := range gone {
		s.snapshots.Delete(snapshotKey(snap.Agent, snap.ID))
		if snap.Name == "" {
			continue
		}
		nk := snapNameKey(snap.Agent, snap.Workspace, snap.Name)
		if id, ok := s.snapNames.Get(nk); ok && id == snap.ID {
			s.snapNames.Delete(nk)
		}
	}
	if more {
		p.resume = last
		a.schedulePurge(p)
	}
}

// liveIncarnation reports whether workbench name of agent currently is incarnation inc:
// records of a deleted workbench that its purge has not reached yet never resolve under a
// new workbench of the same name.
func liveIncarnation(s *state, agent, name string, inc uint64) bool {
	ws, ok := s.workspaces.Get(workspaceKey(agent, name))
	return ok && ws.Incarnation == inc
}
