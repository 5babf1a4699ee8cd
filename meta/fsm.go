package meta

import (
	"crypto/sha256"
	"encoding/binary"
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

// Applied returns, read together, the shard version of the last applied command and its
// Raft log index: the version less the version shift (move_import.go; both are in a
// snapshot, so a restored FSM answers them too).
func (f *FSM) Applied() (version, index uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.version, f.st.version - f.st.shift
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
//   - files (fileApplier, write.go): roots and workbenches, the path write path (put,
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
			// A record begun again keeps until its own item (RetainUntilMs), not its
			// earlier run's.
			if op, ok := s.restores.Get(x); ok && op.State == RestoreComplete && op.RetainUntilMs <= s.nowMs {
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
