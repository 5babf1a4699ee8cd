package workbench

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// A fork is a child workbench made for a parallel attempt (docs/architecture.md,
// "Attempts: fork and merge"). It is a restore (restore.go) of its parent at its base —
// a snapshot, a commit, or the live state through a snapshot the fork takes and pins —
// so no byte is copied, and the restore manifest the restore writes into the fork
// (metadata/restore_manifest.json, a reserved path only a restore writes) is the durable
// record of its parent and base that merge reads back: restored_from.workbench_id is the
// parent, restored_from.source the base, operation_id binds both to the parent's
// incarnation (RestoreOperationID), so a parent deleted and created again is never taken
// for the fork's.

// forkPinKey is the key of the snapshot annotation (metadata) that marks a snapshot a
// fork took of its parent's live state: {"pinned_by_fork": "<fork>"}. Discard retires
// exactly such a snapshot; a snapshot the caller named as the base is the caller's.
const forkPinKey = "pinned_by_fork"

// ForkRequest asks for a fork named Fork of workbench Parent at At: "live" (or empty),
// snapshot:<id or name> or commit:<identity> (ParseDiffSide's syntax, field "at").
type ForkRequest struct {
	Agent, Parent, Fork string
	At                  DiffSide
	// MintKey also mints a key bound to the fork (fork_key.go), expiring at KeyExpiresAt
	// (zero: when the caller's key does, or never).
	MintKey      bool
	KeyExpiresAt time.Time
	// RequestID (REST Idempotency-Key, MCP request_id) makes the fork idempotent: a retry
	// of a fork that landed answers the first fork (replayed true), and the id with
	// another fork (parent, name or base as asked) is refused.
	RequestID string
}

// ForkInput is cairn_fork's input and the REST body of POST …/workbenches/{id}/fork.
type ForkInput struct {
	ID   string  `json:"id"`
	Fork string  `json:"fork"`
	At   *string `json:"at"`
	// MintKey asks for a key bound to the fork in the answer (fork_key.go);
	// KeyExpiresAt (RFC 3339) is when it stops working.
	MintKey      bool    `json:"mint_key"`
	KeyExpiresAt *string `json:"key_expires_at"`
}

// Request returns the ForkRequest in asks for in agent's root under requestID ("" for
// none; InvalidArguments naming the field of a bad argument).
func (in ForkInput) Request(agent, requestID string) (ForkRequest, *Error) {
	req := ForkRequest{Agent: agent, Parent: in.ID, Fork: in.Fork, At: DiffSide{Kind: SideLive}, MintKey: in.MintKey, RequestID: requestID}
	exp, err := parseKeyExpiry(in.KeyExpiresAt)
	if err != nil {
		return req, err
	}
	req.KeyExpiresAt = exp
	if in.At != nil && *in.At != "" {
		d, err := ParseDiffSide("at", *in.At)
		kind, _, _ := strings.Cut(*in.At, ":")
		switch {
		case kind == SideCommit && err != nil:
			return req, err // the commit identity's own rule
		case err != nil, d.Kind == SideGeneration:
			// ParseDiffSide's syntax also names generation:<N>, which a fork does not take.
			return req, invalidArgument("at", "must be live, snapshot:<id or name> or commit:<commit_identity>, got %q", *in.At)
		}
		req.At = d
	}
	return req, nil
}

// forkRecord is what a fork's restore manifest says of it.
type forkRecord struct {
	Parent     string
	SnapshotID uint64 // the base, a snapshot of Parent ...
	Commit     string // ... or a commit of Parent
	OpID       string
}

// point is the base in RestoreOperationID's form.
func (r forkRecord) point() string {
	if r.Commit != "" {
		return SideCommit + ":" + r.Commit
	}
	return SideSnapshot + ":" + strconv.FormatUint(r.SnapshotID, 10)
}

// Fork makes workbench req.Fork a zero-copy child of req.Parent at req.At.
//
// The walk: a fork under a request id first asks the core whether the id already made a
// fork (forkReplay), and answers that one if so (or refuses the id used for another
// request, or a name taken); a live fork without one first checks that its name is free.
// Then a live base mints a snapshot of the parent (the maximum lease,
// annotated {"pinned_by_fork": fork}), so the base is one exact shard version that the
// parent's history keeps while the fork lives; then Lifecycle.Restore makes the fork from
// that snapshot (or the given snapshot or commit), its first command under the request id,
// which writes the restore manifest that records parent and base. A restore that fails
// retires the snapshot it pinned. So a fork refused for its name or its request id pins
// nothing; one that fails between the pin and the restore's first command (a race on its
// name, the root's workbench quota, the parent replaced) leaves the pin retired, listed
// as such (the FSM keeps a retired snapshot's record; no command removes it).
//
// The answer: fork_id, parent_id, base {kind, snapshot_id, commit_id, read_version},
// pinned_snapshot_id (null unless the fork pinned one), replayed (a retry under the
// request id of a fork that landed: the answer is that fork's), the restore's fields
// (operation_id, destination_path, restored_files, …), and with req.MintKey the fork's
// key (fork_key.go: id, secret, workbench, scopes, expires_at, minted_by), checked before
// the fork is made and minted after; a replay mints no second key (key is null: the first
// answer carried the secret, which is shown once).
//
// Errors: InvalidArguments naming id, fork, at or idempotency_key (the request id was used
// for another request); NotFound (the parent, a commit; a root the caller may not see;
// the fork, for a key bound to another workbench, before anything is read or pinned);
// SnapshotNotFound, SnapshotExpired; AlreadyExists (a workbench named fork exists, not
// made under this request id); ResourceExhausted (the parent's snapshot cap);
// PermissionDenied without the write scope, or when the fork's key would be broader than
// the caller's.
func (s *Attempts) Fork(ctx context.Context, req ForkRequest) (Result, error) {
	if err := validateTarget(req.Agent, req.Parent, ""); err != nil {
		return nil, err
	}
	if req.Fork == "" {
		return nil, invalidArgument("fork", "is required: the name of the new workbench")
	}
	if err := meta.ValidateName("fork", req.Fork); err != nil {
		return nil, AsError(err)
	}
	if req.Fork == req.Parent {
		return nil, invalidArgument("fork", "must differ from the parent's name")
	}
	if err := mayWrite(ctx, req.Agent); err != nil {
		return nil, err
	}
	if err := mayWholeWorkbench(ctx, s.base, req.Agent); err != nil {
		return nil, err
	}
	// A key bound to one workbench cannot reach the fork it would make: refused as a
	// workbench it cannot create (mayMake), before a pin is taken of the parent.
	if err := mayMake(ctx, s.base, req.Agent, req.Parent, req.Fork); err != nil {
		return nil, err
	}
	mint, err := s.forkKey(ctx, req)
	if err != nil {
		return nil, err
	}
	// The request is the intent as asked: a live fork retried pins no second snapshot.
	h := meta.Header{RequestID: req.RequestID, RequestHash: requestHash("fork", req.Agent, req.Parent, req.Fork, req.At.String())}
	if req.RequestID != "" {
		if r, err := s.forkReplay(ctx, req, h); r != nil || err != nil {
			return r, err
		}
	} else if req.At.Kind == SideLive {
		if err := s.forkNameFree(ctx, req); err != nil {
			return nil, err
		}
	}
	in := RestoreInput{ID: req.Parent, DestinationID: req.Fork}
	var pinned uint64
	switch req.At.Kind {
	case SideCommit:
		in.AtCommit = &req.At.Commit
	case SideSnapshot:
		in.AtSnapshot = atSnapshotJSON(req.At.Snapshot)
	default:
		ttl := meta.MaxSnapshotTTLDays
		reason := "base of fork " + req.Fork
		md, _ := json.Marshal(map[string]string{forkPinKey: req.Fork})
		snap, err := s.life.Snapshot(ctx, req.Agent, SnapshotInput{ID: req.Parent, TTLDays: &ttl, Reason: &reason, Metadata: md}, "")
		if err != nil {
			return nil, err
		}
		pinned = snap["snapshot_id"].(uint64)
		in.AtSnapshot = atSnapshotJSON(AtSnapshotID(pinned))
	}
	r, err := s.life.restore(ctx, req.Agent, in, h)
	if err != nil {
		if pinned != 0 {
			s.retirePin(ctx, req.Agent, req.Parent, pinned, "fork "+req.Fork+" was not made")
		}
		if req.RequestID != "" && AsError(err).Code == CodeRestoreProtocolMismatch {
			// A racer under the same request id passed the probe too and its restore
			// landed first, from its own pin: the core answered that one. This pin is
			// retired; answer the fork the id made, as a retry after it would be.
			if r, rerr := s.forkReplay(ctx, req, h); r != nil || rerr != nil {
				return r, rerr
			}
		}
		return nil, err
	}
	replayed := r["idempotent_replay"] == true
	r = forkAnswer(r, req, pinned, replayed)
	if mint != nil && !replayed {
		// The fork exists: a key store that fails now leaves it without a key, which the
		// caller mints through POST /v1/keys.
		k, err := mint(ctx)
		if err != nil {
			return nil, err
		}
		r["key"] = k
	}
	return r, nil
}

// forkAnswer adds a fork's fields to its restore's answer r.
func forkAnswer(r Result, req ForkRequest, pinned uint64, replayed bool) Result {
	r["fork_id"] = req.Fork
	r["parent_id"] = req.Parent
	r["base"] = baseInfo(r["snapshot_id"], r["commit_id"], r["read_version"])
	r["pinned_snapshot_id"] = nilIfZero(pinned)
	r["replayed"] = replayed
	if req.MintKey {
		r["key"] = nil // a replay mints no second key; a new fork's is set by Fork
	}
	return r
}

// forkNameFree answers AlreadyExists when a workbench named req.Fork exists (or is being
// restored), so a live fork refused for its name pins no snapshot.
func (s *Attempts) forkNameFree(ctx context.Context, req ForkRequest) error {
	view, err := s.base.readView(ctx, req.Agent)
	if err != nil {
		return AsError(err)
	}
	if _, err := view.Workspace(req.Agent, req.Fork); err == nil || view.Lifecycle().Staging(req.Agent, req.Fork) {
		return newError(CodeAlreadyExists, "workbench %q already exists", req.Fork)
	}
	return nil
}

// forkReplay asks the core whether request id h made a fork already, before anything is
// pinned: it proposes, under h, a restore begin that can never apply (source incarnation
// 0, which no workbench has), as Discard probes with a revision no workbench has. The
// FSM answers it from the id's dedupe record when the id landed (replayed: the first
// fork's restore, answered as the fork it made, driven to completion if a crash cut it
// off), refuses it when the id was used for another request (InvalidArguments naming
// idempotency_key) or when the name is taken (AlreadyExists), and otherwise refuses it as
// stale (Conflict): nil, nil, and the fork goes ahead.
func (s *Attempts) forkReplay(ctx context.Context, req ForkRequest, h meta.Header) (Result, error) {
	probe := meta.RestoreBegin{Agent: req.Agent, Source: req.Parent, Destination: req.Fork, SnapshotID: math.MaxUint64,
		OpID: RestoreOperationID(req.Agent, 0, "probe", req.Fork)}
	res, werr := s.base.propose(ctx, h, probe)
	switch {
	case werr != nil && werr.Code == CodeConflict:
		return nil, nil
	case werr != nil:
		return nil, werr
	case !res.Replayed || res.Restore == nil:
		return nil, newError(CodeInternal, "a fork's probe under its request id applied")
	}
	op, err := s.life.reloadRestore(ctx, res.Restore)
	if err != nil {
		op = res.Restore // the record outlived by its dedupe record: the one the id stored
	}
	if op.State != meta.RestoreComplete {
		if op, err = s.life.driveRestore(ctx, op); err != nil {
			return nil, err
		}
	}
	var pinned uint64
	if view, verr := s.base.readView(ctx, req.Agent); verr == nil && op.SnapshotID != 0 {
		if snap, serr := view.Lifecycle().Snapshot(req.Agent, op.Source, op.SnapshotID, ""); serr == nil && pinnedBy(snap) == req.Fork {
			pinned = op.SnapshotID
		}
	}
	return forkAnswer(s.life.restoreResult(op, true), req, pinned, true), nil
}

// atSnapshotJSON is a snapshot selector as workbench_restore's at_snapshot argument.
func atSnapshotJSON(at At) json.RawMessage {
	if at.SnapshotName != "" {
		b, _ := json.Marshal(at.SnapshotName)
		return b
	}
	return json.RawMessage(strconv.FormatUint(at.SnapshotID, 10))
}

func baseInfo(snapshotID, commitID, readVersion any) map[string]any {
	kind := SideSnapshot
	if commitID != nil {
		kind = SideCommit
	}
	return map[string]any{"kind": kind, "snapshot_id": snapshotID, "commit_id": commitID, "read_version": readVersion}
}

// retirePin retires a snapshot a fork pinned; a failure is left to the lease (the
// snapshot expires by itself).
func (s *Attempts) retirePin(ctx context.Context, agent, parent string, id uint64, reason string) {
	_, _ = s.life.retireSnapshot(ctx, agent, SnapshotRetireInput{ID: parent, SnapshotID: &id, Reason: &reason}, "", "")
}

// forkOf reads the record of fork in view: its restore manifest. A workbench without one
// is InvalidArguments naming "fork" (details.rule "not_a_fork").
func (s *Attempts) forkOf(ctx context.Context, agent, fork string, view *meta.View, ws *meta.Workspace) (forkRecord, error) {
	return readFork(ctx, s.base, agent, fork, view, ws)
}

// readFork is forkOf for every part (fork_pins.go: a snapshot retire checks the forks).
func readFork(ctx context.Context, b *base, agent, fork string, view *meta.View, ws *meta.Workspace) (forkRecord, error) {
	notFork := func() (forkRecord, error) {
		e := invalidArgument("fork", "workbench %q is not a fork: it was not made by fork or restore", fork)
		e.Details["rule"] = "not_a_fork"
		return forkRecord{}, e
	}
	e, err := fileAt(view, ws, meta.RestoreManifestPath, DiffSide{Kind: SideLive})
	if err != nil || e == nil {
		return notFork()
	}
	if e.Size > maxForkManifestBytes {
		return notFork()
	}
	body, err := loadBody(ctx, b, agent, e)
	if err != nil {
		return forkRecord{}, err
	}
	var m struct {
		OpID         string `json:"operation_id"`
		RestoredFrom struct {
			Workbench string `json:"workbench_id"`
			Source    struct {
				Kind       string `json:"kind"`
				SnapshotID uint64 `json:"snapshot_id"`
				Commit     string `json:"commit_id"`
			} `json:"source"`
		} `json:"restored_from"`
	}
	if json.Unmarshal(body, &m) != nil || m.RestoredFrom.Workbench == "" {
		return notFork()
	}
	src := m.RestoredFrom.Source
	return forkRecord{Parent: m.RestoredFrom.Workbench, SnapshotID: src.SnapshotID, Commit: src.Commit, OpID: m.OpID}, nil
}

// maxForkManifestBytes bounds the restore manifest forkOf reads (one is about 1 KiB).
const maxForkManifestBytes = 64 << 10

// parentOf returns the fork's parent as view holds it, checking it is the incarnation the
// fork was made from (Conflict, details.reason "parent_replaced", otherwise).
//
// The fork's operation id binds the parent's incarnation number, which a move of the root
// to another shard renumbers (meta/move_import.go). So when the id does not match, the
// parent is still the one the fork was made from if its incarnation holds the fork's base:
// the snapshot (snapshot ids are unique in a root, and a snapshot belongs to one
// incarnation, which a move carries it with), or the commit, sealed before the fork was
// made (a parent deleted and made again seals its commits after).
func parentOf(view *meta.View, agent, fork string, rec forkRecord) (*meta.Workspace, error) {
	pws, err := view.Workspace(agent, rec.Parent)
	if err != nil {
		return nil, AsError(err)
	}
	if RestoreOperationID(agent, pws.Incarnation, rec.point(), fork) != rec.OpID && !holdsBase(view, pws, fork, rec) {
		e := newError(CodeConflict, "workbench %q was deleted and created again since fork %q was made from it", rec.Parent, fork)
		e.Details["reason"] = "parent_replaced"
		return nil, e
	}
	return pws, nil
}

// holdsBase reports whether pws, the parent's incarnation in view, holds fork's base as
// parentOf says.
func holdsBase(view *meta.View, pws *meta.Workspace, fork string, rec forkRecord) bool {
	if rec.Commit == "" {
		_, err := view.Lifecycle().Snapshot(pws.Agent, pws.Name, rec.SnapshotID, "")
		return rec.SnapshotID != 0 && err == nil
	}
	c, ok := view.Lifecycle().Commit(pws, rec.Commit)
	fws, err := view.Workspace(pws.Agent, fork)
	return ok && err == nil && c.Version < fws.CreatedVersion
}

// Discard releases fork: it retires the snapshot of the parent a fork pinned (a live
// fork's base; a base the caller named stays) when no other fork has it as its base
// (releasePin: a fork made at another's pin keeps it; the last one to go retires it),
// then deletes the fork workbench (its files, snapshots and commits; blobs only it
// referenced become garbage). The pin is the fork's own: it is released whatever the
// caller reaches of the parent (a key bound to the fork alone, as a fork's minted key
// is). Retiring first makes a retry after a failure finish the job, and a pin an earlier
// try retired is still reported. The answer: fork_id, parent_id (as the fork's restore
// manifest, which the fork's key reads, names it), retired_snapshot_id (null when none,
// and for a caller that does not reach the parent: the parent's snapshots are hidden from
// it), deleted true, replayed.
//
// requestID (REST Idempotency-Key, MCP request_id) makes it idempotent: the delete is one
// command under it, and a retry that finds the fork gone proposes that command again with
// a revision no workbench has, so the FSM answers the first delete (replayed true; the
// answer then has no parent_id and a null retired_snapshot_id: the first answer's are not
// kept) or refuses it, deleting nothing.
//
// Errors: NotFound (the fork; a root the caller may not see), InvalidArguments naming
// "fork" (not a fork) or "idempotency_key" (used for another request), PermissionDenied
// without the write scope or for a key bound to path prefixes (a discard ends a whole
// workbench).
func (s *Attempts) Discard(ctx context.Context, agent, fork, requestID string) (Result, error) {
	if err := validateTarget(agent, fork, ""); err != nil {
		return nil, err
	}
	if err := mayWrite(ctx, agent); err != nil {
		return nil, err
	}
	if err := mayWholeWorkbench(ctx, s.base, agent); err != nil {
		return nil, err // before anything is read or retired
	}
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("discard", agent, fork)}
	r := success()
	r["fork_id"] = fork
	view, ws, err := s.base.workspaceView(ctx, agent, fork)
	if err != nil {
		if requestID == "" || AsError(err).Code != CodeNotFound {
			return nil, err
		}
		res, werr := s.base.propose(ctx, h, meta.DeleteWorkspace{Agent: agent, Name: fork, IfRevision: math.MaxUint64})
		switch {
		case werr != nil && werr.Code == CodeInvalidArguments:
			return nil, werr // the key was used for another request
		case werr != nil || !res.Replayed:
			return nil, err // the fork's NotFound: nothing was deleted
		}
		r["retired_snapshot_id"] = nil
		r["deleted"], r["replayed"] = true, true
		return r, nil
	}
	rec, err := s.forkOf(ctx, agent, fork, view, ws)
	if err != nil {
		return nil, err
	}
	// The fork's keys end with it, before it is deleted: a failure leaves the fork for a
	// retry, and no key outlives it to reach a later workbench of its name.
	if err := s.revokeForkKeys(ctx, agent, fork); err != nil {
		return nil, err
	}
	retired := s.releasePin(ctx, agent, fork, rec)
	res, werr := s.base.propose(ctx, h, meta.DeleteWorkspace{Agent: agent, Name: fork})
	if werr != nil {
		return nil, werr
	}
	if !s.base.reach(ctx, agent).has(rec.Parent) {
		retired = 0 // whether it was retired, or another fork keeps it, is the parent's to tell
	}
	r["parent_id"] = rec.Parent
	r["retired_snapshot_id"] = nilIfZero(retired)
	r["deleted"] = true
	r["replayed"] = res.Replayed
	return r, nil
}

// pinScanPage is how many workbenches forkOn takes from a view at a time.
const pinScanPage = 256

// pinnedBy returns the fork a snapshot's annotation says pinned it ("" for none).
func pinnedBy(snap *meta.WorkbenchSnapshot) string {
	var md map[string]any
	if json.Unmarshal(snap.Metadata, &md) != nil {
		return ""
	}
	name, _ := md[forkPinKey].(string)
	return name
}
