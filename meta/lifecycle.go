package meta

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of snapshots, commits and restores (docs/workbench.md).
const (
	MaxSnapshotTTLDays       = 90
	MaxSnapshotNameBytes     = 256
	MaxSnapshotReasonChars   = 256
	MaxSnapshotMetadataBytes = 64 << 10
	// MaxRestoreBatch bounds the files one RestoreCopy command stages.
	MaxRestoreBatch = 4096
	// repruneBatch bounds the paths one retention step re-prunes after a hold is released.
	repruneBatch = 64
)

// Reserved manifest paths: written only by commit and restore, never sealed as members
// and never copied by a restore.
const (
	RunManifestPath     = "metadata/run_manifest.json"
	RestoreManifestPath = "metadata/restore_manifest.json"
)

// IsReservedPath reports whether path is one of the manifests only commit and restore write.
func IsReservedPath(path string) bool {
	return path == RunManifestPath || path == RestoreManifestPath
}

// addHold pins version of incarnation inc.
func (a *fileApplier) addHold(inc, version uint64) {
	k := holdKey(inc, version)
	n, _ := a.st.holds.Get(k)
	a.st.holds.Set(k, n+1)
}

// releaseHold unpins version of incarnation inc and schedules re-pruning of the history
// it may have kept (bounded steps, docs/architecture.md#the-metadata-core).
func (a *fileApplier) releaseHold(rootUID string, inc, version uint64) {
	s := a.st
	k := holdKey(inc, version)
	n, _ := s.holds.Get(k)
	if n <= 1 {
		s.holds.Delete(k)
	} else {
		s.holds.Set(k, n-1)
	}
	s.seq++
	s.retention.Set(retentionKey(s.nowMs, s.seq), string(rune(retainReprune))+rootUID+"\x00"+u64(inc))
}

// reprune re-prunes up to repruneBatch history paths of the incarnation named by resume's
// first 8 bytes, starting after resume, and schedules the rest.
func (a *fileApplier) reprune(rootUID, resume string) {
	s := a.st
	prefix := resume[:incarnationKeySize]
	pivot := resume
	if len(resume) > incarnationKeySize {
		pivot = resume + "\x00" // strictly after the last re-pruned key
	}
	keys, more := keyBatch(s.history, pivot, prefix, repruneBatch)
	for _, k := range keys {
		if rec, ok := s.paths.Get(k); ok {
			a.storeChain(rootUID, k, rec.Chain)
		}
	}
	if more {
		s.seq++
		s.retention.Set(retentionKey(s.nowMs, s.seq), string(rune(retainReprune))+rootUID+"\x00"+keys[len(keys)-1])
	}
}

func validateTTL(days int) *Error {
	if days < 1 || days > MaxSnapshotTTLDays {
		return invalidArg("ttl_days", "must be between 1 and %d, got %d", MaxSnapshotTTLDays, days)
	}
	return nil
}

func validateReason(field, r string) *Error {
	if r == "" {
		return nil
	}
	if n := utf8.RuneCountInString(r); !utf8.ValidString(r) || n > MaxSnapshotReasonChars {
		return invalidArg(field, "must be valid UTF-8 of 1..%d characters", MaxSnapshotReasonChars)
	}
	return nil
}

func validateSnapshotName(n string) *Error {
	if len(n) > MaxSnapshotNameBytes || !utf8.ValidString(n) {
		return invalidArg("name", "must be valid UTF-8 of 1..%d bytes", MaxSnapshotNameBytes)
	}
	digits := true
	for _, r := range n {
		if r < 0x20 || r == 0x7f {
			return invalidArg("name", "must not contain control characters")
		}
		digits = digits && r >= '0' && r <= '9'
	}
	if digits {
		// at_snapshot over REST and the CLI reads digits as a snapshot id.
		return invalidArg("name", "must not be all digits (it would read as a snapshot id)")
	}
	return nil
}

const dayMs = 24 * 60 * 60 * 1000

// lifecycleApplier applies the lifecycle of a workbench's history: snapshots (mint, renew,
// retire, and the reaping of expired leases), commits and restores (begin, bounded copies,
// finish). Each snapshot it holds, each commit it seals and each restore in progress pins
// history through a hold (files.addHold), released exactly once when the lease ends or
// the restore finishes; the files it writes go through files.publish.
type lifecycleApplier struct {
	*applyCtx
	files *fileApplier
	feed  *feedApplier
}

func (a *lifecycleApplier) snapshotMint(c SnapshotMint) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("id", c.Workspace); err != nil {
		return Result{Err: err}
	}
	if err := validateTTL(c.TTLDays); err != nil {
		return Result{Err: err}
	}
	if c.Name != "" {
		if err := validateSnapshotName(c.Name); err != nil {
			return Result{Err: err}
		}
	}
	if err := validateReason("reason", c.Reason); err != nil {
		return Result{Err: err}
	}
	if len(c.Metadata) > MaxSnapshotMetadataBytes {
		return Result{Err: invalidArg("metadata", "encodes to %d bytes, more than %d", len(c.Metadata), MaxSnapshotMetadataBytes)}
	}
	s := a.st
	ws, _, err := a.files.workspace(c.Agent, c.Workspace, false)
	if err != nil {
		return Result{Err: err}
	}
	if c.Pool > SnapshotPoolRuns {
		return Result{Err: invalidArg("pool", "unknown snapshot pool %d", c.Pool)}
	}
	if c.MaxHeld > 0 {
		if n := heldSnapshots(s, c.Agent, ws.Incarnation, c.Pool); n >= c.MaxHeld {
			what := "snapshots"
			if c.Pool == SnapshotPoolRuns {
				what = "run snapshots"
			}
			e := errorf(CodeResourceExhausted, "workbench %q holds %d %s, the most allowed; retire one (or let one expire) first", c.Workspace, n, what)
			e.Quota, e.Limit, e.Used, e.Requested = c.Pool.quota(), int64(c.MaxHeld), int64(n), 1
			return Result{Err: e}
		}
	}
	if err := a.files.checkQuota(c.Agent, Usage{Snapshots: 1}); err != nil {
		return Result{Err: err}
	}
	root, _ := s.roots.Get(c.Agent)
	nr := *root
	nr.LastSnapshotID++
	s.roots.Set(c.Agent, &nr)
	snap := &WorkbenchSnapshot{ID: nr.LastSnapshotID, Agent: c.Agent, Workspace: c.Workspace,
		Incarnation: ws.Incarnation, ReadVersion: s.version, Name: c.Name, Reason: c.Reason,
		Metadata: c.Metadata, TTLDays: c.TTLDays, CreatedAtMs: s.nowMs,
		LeaseExpiresMs: s.nowMs + int64(c.TTLDays)*dayMs, Producer: a.prod, Pool: c.Pool}
	key := snapshotKey(c.Agent, snap.ID)
	s.snapshots.Set(key, snap)
	s.heldSnaps.Set(heldSnapKey(snap.Incarnation, snap.ID), struct{}{})
	a.files.addUsage(c.Agent, Usage{Snapshots: 1})
	if c.Name != "" {
		s.snapNames.Set(snapNameKey(c.Agent, c.Workspace, c.Name), snap.ID)
	}
	a.files.addHold(ws.Incarnation, snap.ReadVersion)
	a.scheduleReap(key, snap)
	a.feed.emitSnapshot(EventSnapshotMint, snap, a.prod)
	return Result{Snapshot: snap, RootUID: root.UID}
}

// heldSnapshots counts the snapshots of agent's incarnation inc in pool that hold
// history: O(held snapshots of the incarnation), which the caps of its pools bound.
func heldSnapshots(s *state, agent string, inc uint64, pool SnapshotPool) int {
	n := 0
	prefix := u64(inc)
	s.heldSnaps.Ascend(prefix, func(k string, _ struct{}) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if snap, ok := s.snapshots.Get(snapshotKey(agent, binaryU64(k[incarnationKeySize:]))); ok && snap.Pool == pool {
			n++
		}
		return true
	})
	return n
}

func (a *lifecycleApplier) scheduleReap(key string, snap *WorkbenchSnapshot) {
	s := a.st
	s.seq++
	s.retention.Set(retentionKey(snap.LeaseExpiresMs+a.opts.SnapshotGrace.Milliseconds(), s.seq), string(rune(retainLease))+key)
}

// reapIfDue reaps the snapshot at key once its lease and grace period have passed.
func (a *lifecycleApplier) reapIfDue(key string) {
	s := a.st
	snap, ok := s.snapshots.Get(key)
	if !ok || !snap.holdsHistory() || s.nowMs < snap.LeaseExpiresMs+a.opts.SnapshotGrace.Milliseconds() {
		return // retired, already reaped, or renewed since (the renew scheduled its own check)
	}
	ns := *snap
	ns.ReapedAtMs = s.nowMs
	a.endSnapshot(key, &ns)
	a.feed.emitSnapshot(EventSnapshotExpire, &ns, Producer{}) // the node's own work
}

// endSnapshot stores ns at key, the record of a snapshot that no longer holds history
// (retired or reaped): it leaves its root's held snapshots and usage, and its hold on its
// read version is released.
func (a *lifecycleApplier) endSnapshot(key string, ns *WorkbenchSnapshot) {
	s := a.st
	s.snapshots.Set(key, ns)
	s.heldSnaps.Delete(heldSnapKey(ns.Incarnation, ns.ID))
	a.files.addUsage(ns.Agent, Usage{Snapshots: -1})
	root, _ := s.roots.Get(ns.Agent)
	a.files.releaseHold(root.UID, ns.Incarnation, ns.ReadVersion)
}

// findSnapshot resolves a snapshot of workbench ws by id or by name (exactly one given).
func findSnapshot(s *state, agent, ws string, id uint64, name string) (string, *WorkbenchSnapshot, *Error) {
	if name != "" {
		nid, ok := s.snapNames.Get(snapNameKey(agent, ws, name))
		if !ok {
			return "", nil, errorf(CodeSnapshotNotFound, "no snapshot of workbench %q is named %q", ws, name)
		}
		id = nid
	}
	key := snapshotKey(agent, id)
	snap, ok := s.snapshots.Get(key)
	if !ok || snap.Workspace != ws || !liveIncarnation(s, agent, ws, snap.Incarnation) {
		return "", nil, errorf(CodeSnapshotNotFound, "workbench %q has no snapshot %d", ws, id)
	}
	return key, snap, nil
}

func snapshotSelector(agent, ws string, id uint64, name string) *Error {
	if err := ValidateName("agent", agent); err != nil {
		return err
	}
	if err := ValidateName("id", ws); err != nil {
		return err
	}
	if (id == 0) == (name == "") {
		return invalidArg("snapshot_id", "give exactly one of snapshot_id and name")
	}
	return nil
}

func expiredError(snap *WorkbenchSnapshot, st SnapshotState) *Error {
	return &Error{Code: CodeSnapshotExpired, State: string(st), Workspace: snap.Workspace, SnapshotID: snap.ID,
		Message: "snapshot " + strconv.FormatUint(snap.ID, 10) + " is " + string(st)}
}

func (a *lifecycleApplier) snapshotRenew(c SnapshotRenew) Result {
	if err := snapshotSelector(c.Agent, c.Workspace, c.ID, c.Name); err != nil {
		return Result{Err: err}
	}
	if err := validateTTL(c.TTLDays); err != nil {
		return Result{Err: err}
	}
	s := a.st
	key, snap, err := findSnapshot(s, c.Agent, c.Workspace, c.ID, c.Name)
	if err != nil {
		return Result{Err: err}
	}
	if st := snap.StateAt(s.nowMs); st == SnapshotReaped || st == SnapshotRetired {
		return Result{Err: expiredError(snap, st)}
	}
	deadline := s.nowMs + int64(c.TTLDays)*dayMs
	if deadline <= snap.LeaseExpiresMs {
		return Result{Snapshot: snap} // a renew never shortens a lease
	}
	ns := *snap
	ns.LeaseExpiresMs = deadline
	ns.TTLDays = c.TTLDays
	ns.RenewedAtMs = s.nowMs
	s.snapshots.Set(key, &ns)
	a.scheduleReap(key, &ns)
	a.feed.emitSnapshot(EventSnapshotRenew, &ns, a.prod)
	return Result{Snapshot: &ns, Renewed: true}
}

func (a *lifecycleApplier) snapshotRetire(c SnapshotRetire) Result {
	if err := snapshotSelector(c.Agent, c.Workspace, c.ID, c.Name); err != nil {
		return Result{Err: err}
	}
	if err := validateReason("reason", c.Reason); err != nil {
		return Result{Err: err}
	}
	s := a.st
	key, snap, err := findSnapshot(s, c.Agent, c.Workspace, c.ID, c.Name)
	if err != nil {
		return Result{Err: err}
	}
	switch snap.StateAt(s.nowMs) {
	case SnapshotRetired:
		return Result{Snapshot: snap} // an exact retry: retired false, the original reason
	case SnapshotReaped:
		return Result{Err: expiredError(snap, SnapshotReaped)}
	}
	if snap.Consumers > 0 {
		return Result{Err: errorf(CodeForkRetentionActive, "snapshot %d is being restored from; retire it after the restore completes", snap.ID)}
	}
	ns := *snap
	ns.RetiredAtMs = s.nowMs
	ns.RetireReason = c.Reason
	ns.RetiredBy = a.prod
	a.endSnapshot(key, &ns) // ns.Agent is c.Agent: findSnapshot looked it up under c.Agent
	a.feed.emitSnapshot(EventSnapshotRetire, &ns, a.prod)
	return Result{Snapshot: &ns, Retired: true}
}

// validateFileBody checks a manifest body a command publishes.
func validateFileBody(field string, b FileBody) *Error {
	if err := validateSegments(field, b.Segments, b.Size); err != nil {
		return err
	}
	if len(b.ContentType) > 256 {
		return invalidArg(field, "content type must be at most 256 bytes")
	}
	return nil
}

func validDigestURI(field, s string) *Error {
	if len(s) != len("sha256:")+64 || !strings.HasPrefix(s, "sha256:") {
		return invalidArg(field, "must match ^sha256:[0-9a-f]{64}$")
	}
	for _, c := range s[len("sha256:"):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return invalidArg(field, "must match ^sha256:[0-9a-f]{64}$")
		}
	}
	return nil
}

func validIdentity(field, s string) *Error {
	if len(s) != 64 || validDigestURI(field, "sha256:"+s) != nil {
		return invalidArg(field, "must be 64 lower-case hex characters")
	}
	return nil
}

func validateCommitFields(identity, content, manifest, tree string, env FileBody) *Error {
	if err := validIdentity("commit_identity", identity); err != nil {
		return err
	}
	if err := validDigestURI("content_digest_uri", content); err != nil {
		return err
	}
	if err := validDigestURI("manifest_digest_uri", manifest); err != nil {
		return err
	}
	if err := validDigestURI("tree_digest_uri", tree); err != nil {
		return err
	}
	return validateFileBody("envelope", env)
}

// publishBody writes a manifest body at path of ws (a file the command itself owns).
func (a *lifecycleApplier) publishBody(root *Root, ws *Workspace, path string, b FileBody) *Entry {
	s := a.st
	key := pathKey(ws.Incarnation, path)
	rec, _ := s.paths.Get(key)
	e := &Entry{Generation: s.version, Size: b.Size, Digest: b.Digest, ContentType: b.ContentType,
		Segments: b.Segments, HashState: b.HashState, ModifiedAtMs: s.nowMs, ListID: s.newListID(), Producer: a.prod}
	a.files.publish(root, ws, key, path, rec, e)
	return e
}

// seal records a commit of ws sealed at the current version and makes it the head. The
// envelope must already be published at RunManifestPath.
func (a *lifecycleApplier) seal(ws *Workspace, rec *CommitRecord) {
	s := a.st
	s.commits.Set(commitKey(ws.Incarnation, rec.Identity), rec)
	cur, _ := s.workspaces.Get(workspaceKey(ws.Agent, ws.Name))
	nws := *cur
	nws.HeadIdentity = rec.Identity
	nws.HeadVersion = rec.Version
	s.workspaces.Set(workspaceKey(ws.Agent, ws.Name), &nws)
	a.files.addHold(ws.Incarnation, rec.Version) // a commit is permanent: its tree stays readable
	a.feed.emitCommit(ws, rec)
}

func (a *lifecycleApplier) commit(c Commit) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("id", c.Workspace); err != nil {
		return Result{Err: err}
	}
	if err := validateCommitFields(c.Identity, c.ContentDigestURI, c.ManifestDigestURI, c.TreeDigestURI, c.Envelope); err != nil {
		return Result{Err: err}
	}
	s := a.st
	ws, err := a.files.target(c.Agent, c.Workspace, RunManifestPath, c.CreateWorkspace)
	if err != nil {
		return Result{Err: err}
	}
	if ws != nil {
		if prev, ok := s.commits.Get(commitKey(ws.Incarnation, c.Identity)); ok {
			root, _ := s.roots.Get(c.Agent)
			return Result{Commit: prev, Replayed: true, Generation: prev.Version, RootUID: root.UID}
		}
		if ws.HeadIdentity != "" && !c.Replace {
			return Result{Err: commitConflict(s, ws, "workbench %q already has a different commit; pass replace to supersede it", c.Workspace)}
		}
		if c.Replace && ws.HeadIdentity != c.ExpectHead {
			return Result{Err: commitConflict(s, ws, "the head commit of workbench %q changed concurrently", c.Workspace)}
		}
		if ws.Revision != c.ExpectRevision {
			return Result{Err: &Error{Code: CodeConflict, Message: "the workbench changed while the commit was prepared"}}
		}
	} else if c.ExpectRevision != 0 || c.ExpectHead != "" {
		return Result{Err: &Error{Code: CodeConflict, Message: "the workbench changed while the commit was prepared"}}
	}
	if err := a.files.checkPublishable(c.Agent, c.Envelope.Segments); err != nil {
		return Result{Err: err}
	}
	_, curManifest := a.files.current(ws, RunManifestPath)
	if err := a.files.checkQuota(c.Agent, fileGrowth(ws == nil, curManifest, &Entry{Size: c.Envelope.Size})); err != nil {
		return Result{Err: err}
	}
	root, ws := a.files.materialize(c.Agent, c.Workspace, ws)
	a.publishBody(root, ws, RunManifestPath, c.Envelope)
	rec := &CommitRecord{Identity: c.Identity, Workspace: c.Workspace, Incarnation: ws.Incarnation,
		Version: s.version, EnvelopeSize: c.Envelope.Size, EnvelopeDigest: c.Envelope.Digest,
		ContentDigestURI: c.ContentDigestURI, ManifestDigestURI: c.ManifestDigestURI,
		TreeDigestURI: c.TreeDigestURI, Replace: c.Replace, CommittedAtMs: s.nowMs, Producer: a.prod}
	a.seal(ws, rec)
	return Result{Commit: rec, Generation: rec.Version, Size: rec.EnvelopeSize, Digest: rec.EnvelopeDigest, RootUID: root.UID}
}

func (a *lifecycleApplier) restoreBegin(c RestoreBegin) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("id", c.Source); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("destination_id", c.Destination); err != nil {
		return Result{Err: err}
	}
	if err := validIdentity("operation_id", c.OpID); err != nil {
		return Result{Err: err}
	}
	if (c.SnapshotID == 0) == (c.CommitIdentity == "") {
		return Result{Err: invalidArg("at_snapshot", "give exactly one of at_snapshot and at_commit")}
	}
	s := a.st
	rkey := restoreKey(c.Agent, c.OpID)
	var again uint32
	if op, ok := s.restores.Get(rkey); ok {
		if op.State != RestoreComplete {
			return Result{Err: &Error{Code: CodeConflict, OperationID: op.ID, Message: "the restore is still running; retry later"}}
		}
		if !c.Again || a.restoredLives(op) {
			return Result{Restore: op, Replayed: true, Generation: op.DestinationGeneration}
		}
		// Begun again: the workbench the operation made is gone, so this is a new
		// restore under the same identity, checked and applied as a first begin (the
		// name taken by another workbench is AlreadyExists). The record is replaced.
		again = op.Again + 1
	}
	if _, ok := s.workspaces.Get(workspaceKey(c.Agent, c.Destination)); ok {
		return Result{Err: errorf(CodeAlreadyExists, "workbench %q already exists", c.Destination)}
	}
	src, _, err := a.files.workspace(c.Agent, c.Source, false)
	if err != nil {
		return Result{Err: err}
	}
	if src.Incarnation != c.SourceIncarnation {
		return Result{Err: &Error{Code: CodeConflict, Message: "the source workbench was replaced while the restore was prepared"}}
	}
	var readVersion uint64
	var snapKey string
	if c.SnapshotID != 0 {
		key, snap, err := findSnapshot(s, c.Agent, c.Source, c.SnapshotID, "")
		if err != nil {
			return Result{Err: err}
		}
		if st := snap.StateAt(s.nowMs); st != SnapshotAlive {
			return Result{Err: expiredError(snap, st)}
		}
		readVersion, snapKey = snap.ReadVersion, key
	} else {
		if err := validIdentity("at_commit", c.CommitIdentity); err != nil {
			return Result{Err: err}
		}
		cm, ok := s.commits.Get(commitKey(src.Incarnation, c.CommitIdentity))
		if !ok {
			return Result{Err: errorf(CodeNotFound, "workbench %q has no commit %s", c.Source, c.CommitIdentity)}
		}
		readVersion = cm.Version
	}
	if err := a.files.checkQuota(c.Agent, Usage{Workbenches: 1}); err != nil {
		return Result{Err: err}
	}
	if snapKey != "" {
		snap, _ := s.snapshots.Get(snapKey)
		ns := *snap
		ns.Consumers++
		s.snapshots.Set(snapKey, &ns)
	}
	s.nextIncarnation++
	dst := &Workspace{Agent: c.Agent, Name: c.Destination, Incarnation: s.nextIncarnation, State: WorkspaceStaging,
		Revision: s.version, CreatedVersion: s.version, CreatedAtMs: s.nowMs, RestoreOp: c.OpID, Producer: a.prod}
	s.workspaces.Set(workspaceKey(c.Agent, c.Destination), dst)
	a.files.addUsage(c.Agent, Usage{Workbenches: 1})
	a.files.addHold(src.Incarnation, readVersion)
	op := &RestoreOp{ID: c.OpID, Agent: c.Agent, Source: c.Source, SourceIncarnation: src.Incarnation,
		ReadVersion: readVersion, SnapshotID: c.SnapshotID, CommitIdentity: c.CommitIdentity,
		Destination: c.Destination, DestIncarnation: dst.Incarnation, State: RestoreCopying, StartedAtMs: s.nowMs,
		Producer: a.prod, Again: again}
	s.restores.Set(rkey, op)
	root, _ := s.roots.Get(c.Agent)
	a.feed.emitRestore(EventRestoreBegin, op, "")
	return Result{Restore: op, RootUID: root.UID}
}

// restoredLives reports whether the workbench completed restore op made still exists: its
// destination's name holds the incarnation the op created.
func (a *lifecycleApplier) restoredLives(op *RestoreOp) bool {
	ws, ok := a.st.workspaces.Get(workspaceKey(op.Agent, op.Destination))
	return ok && ws.Incarnation == op.DestIncarnation
}

// runningRestore returns the copying restore op of a command, or an error.
func (a *lifecycleApplier) runningRestore(agent, opID string) (*RestoreOp, *Error) {
	op, ok := a.st.restores.Get(restoreKey(agent, opID))
	if !ok {
		return nil, errorf(CodeNotFound, "restore operation %s does not exist", opID)
	}
	if op.State != RestoreCopying {
		return nil, &Error{Code: CodeConflict, OperationID: op.ID, Message: "the restore operation already completed"}
	}
	return op, nil
}

func (a *lifecycleApplier) restoreCopy(c RestoreCopy) Result {
	if c.Limit < 1 || c.Limit > MaxRestoreBatch {
		return Result{Err: invalidArg("limit", "must be between 1 and %d", MaxRestoreBatch)}
	}
	s := a.st
	op, err := a.runningRestore(c.Agent, c.OpID)
	if err != nil {
		return Result{Err: err}
	}
	if op.CopyDone || op.After != c.After {
		return Result{Err: &Error{Code: CodeConflict, OperationID: op.ID, Message: "the restore operation moved on; re-read it"}}
	}
	a.prod = op.Producer // the restore writes, whoever proposes its steps
	root, _ := s.roots.Get(c.Agent)
	prefix := u64(op.SourceIncarnation)
	pivot := prefix
	if op.After != "" {
		pivot = prefix + op.After + "\x00"
	}
	type staged struct {
		path string
		e    *Entry
	}
	var batch []staged
	last, scanned, done := op.After, 0, true
	s.paths.Ascend(pivot, func(k string, rec *pathRecord) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if len(batch) == c.Limit || scanned == 4*c.Limit {
			done = false
			return false
		}
		scanned++
		last = k[len(prefix):]
		if e := rec.at(op.ReadVersion); e != nil {
			if p := keyPath(k); !IsReservedPath(p) {
				batch = append(batch, staged{p, e})
			}
		}
		return true
	})
	dkey := workspaceKey(op.Agent, op.Destination)
	var grow Usage
	for _, b := range batch {
		grow = grow.add(fileGrowth(false, nil, b.e))
	}
	if err := a.files.checkQuota(c.Agent, grow); err != nil {
		return Result{Err: err}
	}
	for _, b := range batch {
		dst, _ := s.workspaces.Get(dkey) // publish replaces the record each time
		ne := *b.e
		ne.Generation = s.version
		ne.ModifiedAtMs = s.nowMs
		ne.Segments = slices.Clip(b.e.Segments) // a copy never extends the source's list in place
		ne.ListID = s.newListID()
		ne.Producer = a.prod
		k := pathKey(dst.Incarnation, b.path)
		rec, _ := s.paths.Get(k)
		a.files.publish(root, dst, k, b.path, rec, &ne)
	}
	nop := *op
	nop.After = last
	nop.Copied += int64(len(batch))
	nop.CopyDone = done
	s.restores.Set(restoreKey(c.Agent, c.OpID), &nop)
	return Result{Restore: &nop}
}

func (a *lifecycleApplier) restoreFinish(c RestoreFinish) Result {
	if err := validateCommitFields(c.Identity, c.ContentDigestURI, c.ManifestDigestURI, c.TreeDigestURI, c.Envelope); err != nil {
		return Result{Err: err}
	}
	if err := validateFileBody("manifest", c.Manifest); err != nil {
		return Result{Err: err}
	}
	s := a.st
	op, err := a.runningRestore(c.Agent, c.OpID)
	if err != nil {
		return Result{Err: err}
	}
	if !op.CopyDone {
		return Result{Err: &Error{Code: CodeConflict, OperationID: op.ID, Message: "the restore has not staged every file yet"}}
	}
	a.prod = op.Producer
	if err := a.files.checkPublishable(c.Agent, append(slices.Clip(c.Manifest.Segments), c.Envelope.Segments...)); err != nil {
		return Result{Err: err}
	}
	root, _ := s.roots.Get(c.Agent)
	dkey := workspaceKey(op.Agent, op.Destination)
	dst, _ := s.workspaces.Get(dkey)
	_, curRestore := a.files.current(dst, RestoreManifestPath)
	_, curRun := a.files.current(dst, RunManifestPath)
	grow := fileGrowth(false, curRestore, &Entry{Size: c.Manifest.Size}).add(fileGrowth(false, curRun, &Entry{Size: c.Envelope.Size}))
	if err := a.files.checkQuota(c.Agent, grow); err != nil {
		return Result{Err: err}
	}
	a.publishBody(root, dst, RestoreManifestPath, c.Manifest)
	dst, _ = s.workspaces.Get(dkey)
	a.publishBody(root, dst, RunManifestPath, c.Envelope)
	dst, _ = s.workspaces.Get(dkey)
	rec := &CommitRecord{Identity: c.Identity, Workspace: op.Destination, Incarnation: dst.Incarnation,
		Version: s.version, EnvelopeSize: c.Envelope.Size, EnvelopeDigest: c.Envelope.Digest,
		ContentDigestURI: c.ContentDigestURI, ManifestDigestURI: c.ManifestDigestURI,
		TreeDigestURI: c.TreeDigestURI, CommittedAtMs: s.nowMs, Producer: a.prod}
	a.seal(dst, rec)
	dst, _ = s.workspaces.Get(dkey)
	vis := *dst
	vis.State = WorkspaceVisible
	vis.RestoreOp = ""
	// Reads at versions before this one never saw the destination (it was staging).
	vis.CreatedVersion = s.version
	s.workspaces.Set(dkey, &vis)
	a.files.releaseHold(root.UID, op.SourceIncarnation, op.ReadVersion)
	if op.SnapshotID != 0 {
		if snap, ok := s.snapshots.Get(snapshotKey(op.Agent, op.SnapshotID)); ok && snap.Consumers > 0 {
			ns := *snap
			ns.Consumers--
			s.snapshots.Set(snapshotKey(op.Agent, op.SnapshotID), &ns)
		}
	}
	nop := *op
	nop.State = RestoreComplete
	nop.FinishedAtMs = s.nowMs
	nop.DestinationGeneration = s.version
	due := s.nowMs + a.opts.RetentionWindow.Milliseconds()
	if nop.Again > 0 {
		nop.RetainUntilMs = due // the earlier run's item is still queued (fsm.go, retainRestore)
	}
	rkey := restoreKey(c.Agent, c.OpID)
	s.restores.Set(rkey, &nop)
	s.seq++
	s.retention.Set(retentionKey(due, s.seq), string(rune(retainRestore))+rkey)
	a.feed.emitRestore(EventRestoreFinish, &nop, rec.Identity)
	return Result{Restore: &nop, Commit: rec, Generation: s.version, RootUID: root.UID}
}

// commitConflict is a WorkbenchCommitConflict whose CurrentGeneration is the version of the
// workbench's head commit (the generation of its stored run manifest), 0 without one.
func commitConflict(s *state, ws *Workspace, format string, args ...any) *Error {
	e := errorf(CodeWorkbenchCommitConflict, format, args...)
	if head, ok := s.commits.Get(commitKey(ws.Incarnation, ws.HeadIdentity)); ok {
		e.CurrentGeneration = head.Version
	}
	return e
}
