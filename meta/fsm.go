package meta

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/btree"
)

// Options tune the FSM. They are part of the replicated behaviour: every replica of a
// shard must run with equal Options.
type Options struct {
	// RetentionWindow is how long (command time) dedupe records and tombstones are kept.
	// Default 24h.
	RetentionWindow time.Duration
	// History is the node-default history retention of every agent root without a policy
	// of its own (SetRetention; retention.go): how many superseded versions of a path stay
	// readable, and for how long. Default (the zero Retention): DefaultRetention, the
	// newest 100 versions or 30 days, whichever keeps more, at most 1,000 per path.
	// Retention{Versions: 1} prunes superseded versions at once unless a hold needs them. A
	// zero MaxVersions takes the default cap (at least Versions).
	History Retention
	// DedupeMaxPerRoot bounds the dedupe records kept per agent root; the oldest go first.
	// Default 100,000.
	DedupeMaxPerRoot int
	// RetentionBatch bounds the retention items one command processes. Default 64.
	RetentionBatch int
	// SnapshotGrace is how long (command time) an expired snapshot can still be renewed
	// before it is reaped. Default 1h.
	SnapshotGrace time.Duration
	// RequireRootAssignment makes the shard serve only the roots placed on it (cluster
	// mode, docs/architecture.md#replication-and-placement): a command for an agent whose root this shard does not hold fails
	// with NotOwner (retryable: route it elsewhere) unless it is the AssignRoot that places
	// the root here. Off (the embedded node), roots are created by their first write.
	RequireRootAssignment bool
	// RootUIDPrefix starts every root uid this shard assigns (lower-case ASCII letters and
	// digits; root uids name blob namespaces, docs/architecture.md#blob-storage-and-garbage-collection). Shards that share one object
	// store must use distinct prefixes, so two roots never share a namespace. Default "r".
	RootUIDPrefix string
	// ProposalPendingTTL is how long (command time) an undecided proposal is kept before it
	// expires (proposal.go). Default 30 days.
	ProposalPendingTTL time.Duration
	// ProposalRetention is the least time (command time) a decided or superseded proposal
	// and its judgment are kept after the decision; a root whose history retention keeps
	// more by age keeps them that long (proposal.go). Default 30 days.
	ProposalRetention time.Duration
	// ProposalsMaxPerRoot bounds the proposals (pending and decided) one agent root keeps.
	// Default 10,000.
	ProposalsMaxPerRoot int
	// FeedRetention is how long (command time) a change-feed event is kept (feed.go).
	// Default 24h.
	FeedRetention time.Duration
	// FeedMaxPerRoot bounds the change-feed events kept per agent root; the oldest go
	// first. Default 100,000; negative: no feed is kept (every snapshot stays in the
	// format before the feed).
	FeedMaxPerRoot int
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{RetentionWindow: 24 * time.Hour, DedupeMaxPerRoot: 100_000, RetentionBatch: 64, SnapshotGrace: time.Hour,
		History:            DefaultRetention(),
		ProposalPendingTTL: 30 * 24 * time.Hour, ProposalRetention: 30 * 24 * time.Hour, ProposalsMaxPerRoot: 10_000,
		FeedRetention: 24 * time.Hour, FeedMaxPerRoot: 100_000}
}

// positiveOr sets *v to d when *v is not positive: a setting left zero (or negative, which
// means nothing) takes its default.
func positiveOr[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	positiveOr(&o.RetentionWindow, d.RetentionWindow)
	positiveOr(&o.DedupeMaxPerRoot, d.DedupeMaxPerRoot)
	positiveOr(&o.RetentionBatch, d.RetentionBatch)
	positiveOr(&o.SnapshotGrace, d.SnapshotGrace)
	positiveOr(&o.ProposalPendingTTL, d.ProposalPendingTTL)
	positiveOr(&o.ProposalRetention, d.ProposalRetention)
	positiveOr(&o.ProposalsMaxPerRoot, d.ProposalsMaxPerRoot)
	positiveOr(&o.FeedRetention, d.FeedRetention)
	if o.FeedMaxPerRoot == 0 {
		o.FeedMaxPerRoot = d.FeedMaxPerRoot
	}
	if o.RootUIDPrefix == "" {
		o.RootUIDPrefix = "r"
	}
	if o.History == (Retention{}) {
		o.History = DefaultRetention()
	}
	o.History = o.History.normalized()
	o.History.Versions = max(1, min(o.History.Versions, o.History.MaxVersions))
	return o
}

// FSM is the metadata state machine of one shard. Apply, Snapshot and Restore are called
// by the replication layer (one at a time for Apply/Restore); View may be called from any
// goroutine at any time.
type FSM struct {
	opts Options
	mu   sync.RWMutex
	st   *state
	// view is the View of st that View hands out until the next Apply or Restore drops
	// it (nil: none taken since): readers between two applies share one copy of the
	// state instead of each copying its trees.
	view *View
}

// New returns an empty FSM.
func New(opts Options) *FSM {
	return &FSM{opts: opts.withDefaults(), st: newState()}
}

// AppliedVersion returns the shard version of the last applied command.
func (f *FSM) AppliedVersion() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.version
}

// Apply applies one encoded command at shard version index (its Raft log index) and
// returns its deterministic result. It never panics on bad input: an undecodable command
// yields a Result with an InvalidArguments error and changes nothing but the version and
// command time.
func (f *FSM) Apply(index uint64, data []byte) Result {
	h, body, err := DecodeCommand(data)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.view = nil
	return newApplier(f.opts, f.st).apply(index, h, body, err)
}

// ApplyBody applies an already decoded command; it is Apply without the decoding step
// (tests and the in-process model use it). The result is identical to Apply of the
// encoded command.
func (f *FSM) ApplyBody(index uint64, h Header, body Body) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.view = nil
	return newApplier(f.opts, f.st).apply(index, h, body, nil)
}

// applyCtx is what every part of one command's apply shares: the state it changes, the
// FSM's options and the command being applied. It has no methods; each part embeds a
// pointer to the one context of its command, so they all see the same header, producer
// and state.
type applyCtx struct {
	opts Options
	st   *state
	hdr  Header // of the command being applied
	// prod is the producer of what the command writes: the command's own (hdr), or, for
	// the bounded commands of a restore, the producer recorded when it began.
	prod Producer
	// op is the operation of the command being applied.
	op Op
	// index is the Raft log index of the command being applied.
	index uint64
}

// applier applies one command: FSM.Apply makes a fresh one per command (newApplier).
// It owns the command's way through the FSM (apply: version and command time, ownership,
// the move fence, idempotency, the op's apply function through the op table, retention
// steps) and the shard's and roots' settings (placement, quotas, history retention,
// backup holds, garbage collection); every other op is applied by the part of its
// concern, each a type of its own over the same applyCtx:
//
//   - files (fileApplier, fsm.go): roots and workbenches, the path write path (put,
//     append, delete, compaction, change sets) and what it maintains — path chains and
//     their pruning, directory counters, blob references, holds, usage;
//   - feed (feedApplier, feed.go): the change-feed events the command emits, numbered in
//     emission order, and the feed's pruning;
//   - life (lifecycleApplier, lifecycle.go): snapshots, commits and restores;
//   - props (proposalApplier, proposal_apply.go): proposals and their decisions;
//   - purge (purgeApplier, purge.go): workbench deletion and root purges;
//   - moves (moveApplier, move.go, move_import.go, move_walk.go): moving a root between
//     shards.
//
// The parts point at each other and at the applier's applyCtx, so an applier is never
// copied once made. Which part applies an op changes nothing the FSM does: every step
// runs in the order it did on one type, and a command's feed events are numbered by the
// one feedApplier of its applier.
type applier struct {
	applyCtx
	files fileApplier
	feed  feedApplier
	life  lifecycleApplier
	props proposalApplier
	purge purgeApplier
	moves moveApplier
}

// newApplier assembles the applier of one command over st, in one allocation.
func newApplier(opts Options, st *state) *applier {
	a := &applier{applyCtx: applyCtx{opts: opts, st: st}}
	c := &a.applyCtx
	a.feed = feedApplier{applyCtx: c}
	a.files = fileApplier{applyCtx: c, feed: &a.feed}
	a.life = lifecycleApplier{applyCtx: c, files: &a.files, feed: &a.feed}
	a.props = proposalApplier{applyCtx: c, files: &a.files, feed: &a.feed}
	a.purge = purgeApplier{applyCtx: c, files: &a.files, feed: &a.feed}
	a.moves = moveApplier{applyCtx: c, feed: &a.feed, props: &a.props}
	return a
}

func (a *applier) apply(index uint64, h Header, body Body, decodeErr error) Result {
	s := a.st
	a.hdr = h
	a.prod = h.Producer()
	if body != nil {
		a.op = body.Op()
	}
	// The shard version is the log index plus the shift (0 until a root moved in,
	// move_import.go).
	a.index = index
	if v := index + s.shift; v > s.version {
		s.version = v
	}
	if h.TimeMs > s.nowMs {
		s.nowMs = h.TimeMs
	}
	defer a.runRetention()
	if decodeErr != nil {
		e, _ := decodeErr.(*Error)
		if e == nil {
			e = invalidArg("command", "%v", decodeErr)
		}
		return Result{Err: e, Version: index + s.shift}
	}
	agent := ScopeOf(body).Agent
	if err := a.checkOwner(agent, body); err != nil {
		return Result{Err: err, Version: index + s.shift}
	}
	if err := a.moves.checkMove(agent, body); err != nil {
		return Result{Err: err, Version: index + s.shift}
	}
	var dkey string
	if _, move := body.(moveBody); h.RequestID != "" && agent != "" && !move {
		dkey = dedupeKey(agent, h.Principal, h.RequestID)
		if rec, ok := s.dedupe.Get(dkey); ok {
			if rec.RequestHash != h.RequestHash {
				return Result{Err: invalidArg("idempotency_key", "was already used for a different request"), Version: index + s.shift}
			}
			r := rec.Result
			r.Replayed = true
			return r
		}
	}
	var res Result
	if d := opTable[body.Op()]; d != nil {
		res = d.apply(a, body)
	} else {
		res = Result{Err: invalidArg("command", "unsupported body %T", body)}
	}
	res.Version = index + s.shift // a finished import may have raised the shift
	// Only successes are remembered: a failed command changed nothing, so a retry may run
	// again (and an internal retry after a Conflict must not meet its own stored failure).
	if dkey != "" && res.Err == nil {
		a.remember(agent, dkey, h.RequestHash, res)
	}
	return res
}

// remember stores the answer to a request id, evicting the root's oldest record past the
// count bound and scheduling expiry after the retention window.
func (a *applier) remember(agent, dkey string, hash Digest, res Result) {
	s := a.st
	if _, ok := s.roots.Get(agent); !ok {
		return // the command failed before the root existed; nothing to scope it to
	}
	s.seq++
	rec := &dedupeRecord{RequestHash: hash, Result: res, ExpiresAtMs: s.nowMs + a.opts.RetentionWindow.Milliseconds(), Seq: s.seq}
	s.dedupe.Set(dkey, rec)
	s.dedupeOrder.Set(agent+"\x00"+u64(rec.Seq), dkey)
	n, _ := s.dedupeCount.Get(agent)
	n++
	for n > int64(a.opts.DedupeMaxPerRoot) {
		k, v, ok := firstWithPrefix(s.dedupeOrder, agent+"\x00")
		if !ok {
			break
		}
		s.dedupeOrder.Delete(k)
		s.dedupe.Delete(v)
		n--
	}
	s.dedupeCount.Set(agent, n)
	s.retention.Set(retentionKey(rec.ExpiresAtMs, rec.Seq), string(rune(retainDedupe))+dkey)
}

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
	for d := parentDir(path); d != ""; d = parentDir(d) {
		if rec, ok := s.paths.Get(pathKey(inc, d)); ok && rec.live() != nil {
			return &Error{Code: CodeNotDirectory, Path: d, Message: "an ancestor of the path is a file: " + strconv.Quote(d)}
		}
	}
	if dr, ok := s.dirs.Get(pathKey(inc, path)); ok && dr.Files > 0 {
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
// It returns the new element's Ordinal.
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
		a.liveDelta(ws.Incarnation, path, +1, e.Size, true)
		nws.Files++
		nws.Bytes += e.Size
	case old != nil && e == nil:
		a.liveDelta(ws.Incarnation, path, -1, -old.Size, true)
		nws.Files--
		nws.Bytes -= old.Size
	case old != nil && e != nil:
		a.liveDelta(ws.Incarnation, path, 0, e.Size-old.Size, false)
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

// listHeads returns, for each segment list a chain holds, its longest member: the
// segments the chain references through that list. Entries without a list id (older
// logs) are each a list of their own.
func listHeads(chain []version) map[uint64]*Entry {
	heads := make(map[uint64]*Entry) // a chain holds few lists: appends share theirs
	for i, el := range chain {
		if el.Entry == nil {
			continue
		}
		id := el.Entry.ListID
		if id == 0 {
			id = 1<<63 | uint64(i) // never a real list id
		}
		if h, ok := heads[id]; !ok || len(el.Entry.Segments) > len(h.Segments) {
			heads[id] = el.Entry
		}
	}
	return heads
}

// account moves the blob reference counts of one path from what chain old references to
// what chain new references. A path references, per segment list, the segments of the
// longest version it keeps of that list: so an append adds references for its new
// segments only, and dropping a version whose list a newer kept version extends changes
// nothing — O(delta) in segments, O(chain) in versions.
func (a *fileApplier) account(rootUID string, old, new []version) {
	before, after := listHeads(old), listHeads(new)
	for id, b := range before {
		n := 0
		if e, ok := after[id]; ok {
			n = min(len(e.Segments), len(b.Segments))
		}
		a.ref(rootUID, b.Segments[n:], -1)
	}
	for id, e := range after {
		n := 0
		if b, ok := before[id]; ok {
			n = min(len(e.Segments), len(b.Segments))
		}
		a.ref(rootUID, e.Segments[n:], +1)
	}
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

// liveDelta updates the directory records above path when a file appears (files +1),
// disappears (files -1) or changes size (files 0).
func (a *fileApplier) liveDelta(inc uint64, path string, files, bytes int64, childChanges bool) {
	s := a.st
	changed := childChanges
	for d := parentDir(path); ; d = parentDir(d) {
		k := pathKey(inc, d)
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

// runRetention processes up to RetentionBatch due retention items.
func (a *applier) runRetention() {
	s := a.st
	for i := 0; i < a.opts.RetentionBatch; i++ {
		k, v, ok := s.retention.Min()
		if !ok || int64(binaryU64(k[:8])) > s.nowMs {
			return
		}
		s.retention.Delete(k)
		kind, x, y := splitRetentionItem(v)
		if a.moves.droppedItem(kind, x) {
			continue // a root on the move (move_walk.go)
		}
		switch kind {
		case retainPath:
			if rec, ok := s.paths.Get(y); ok {
				a.files.storeChain(x, y, rec.Chain)
			}
		case retainLease:
			a.life.reapIfDue(x)
		case retainFeed:
			a.feed.pruneFeed(x)
		case retainReprune:
			a.files.reprune(x, y)
		case retainPurge:
			a.purge.purgeStep(x)
		case retainRootReprune:
			a.rootRepruneStep(x)
		case retainProposal:
			a.props.retireProposal(x)
		case retainMove:
			a.moves.moveWalkStep(x)
		case retainRestore:
			if op, ok := s.restores.Get(x); ok && op.State == RestoreComplete {
				s.restores.Delete(x)
			}
		case retainDedupe:
			if rec, ok := s.dedupe.Get(x); ok && rec.ExpiresAtMs <= s.nowMs {
				agent := x[:indexNUL(x)]
				s.dedupe.Delete(x)
				s.dedupeOrder.Delete(agent + "\x00" + u64(rec.Seq))
				n, _ := s.dedupeCount.Get(agent)
				if n <= 1 {
					s.dedupeCount.Delete(agent)
				} else {
					s.dedupeCount.Set(agent, n-1)
				}
			}
		}
	}
}

// firstWithPrefix returns the first key/value of m whose key starts with prefix.
func firstWithPrefix(m *btree.Map[string, string], prefix string) (k, v string, ok bool) {
	m.Ascend(prefix, func(key, val string) bool {
		if strings.HasPrefix(key, prefix) {
			k, v, ok = key, val, true
		}
		return false
	})
	return k, v, ok
}

func indexNUL(s string) int {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return i
	}
	return len(s)
}

func binaryU64(b string) uint64 { return binary.BigEndian.Uint64([]byte(b)) }

func digestOf(p []byte) Digest { return sha256.Sum256(p) }
