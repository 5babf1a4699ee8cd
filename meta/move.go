package meta

import (
	"slices"
	"strconv"
)

// Moving a root between shards, the FSM's half (docs/architecture.md#moving-a-root).
//
// A move is driven from outside (the controller) as a sequence of commands on two shards,
// each idempotent under the move's id:
//
//	source  MoveFence      the root turns read-only: every other command of it is refused
//	                       with RootMoving (retryable) until a MoveLift or a MoveRelease
//	target  MoveImportBegin, MoveImportChunk…, MoveImportFinish
//	                       the root's records, exported from one source View
//	                       (MoveView.Export), land under fresh incarnations; until the
//	                       finish the root is not held (HoldsRoot, Roots) and every
//	                       command of it is refused
//	(etcd)                 the placement switches to the target
//	target  MoveImportConfirm
//	                       the root takes writes and garbage collection
//	source  MoveRelease    the root's records go in bounded steps; the shard keeps a
//	                       tombstone that answers NotOwner
//
// A move that stops before the placement switch rolls back: MoveImportAbort on the target
// (its staged records go in bounded steps), MoveLift on the source.
//
// Garbage collection stays safe because between the fence and the confirmation nobody
// collects the root: the fence refuses GCIntent and GCDeleted on the source, the target
// refuses them until the confirmation, and a root that is not held is never swept.
// Reference records move as they are, counts and intents included: a blob the source's
// sweeper was deleting stays under intent on the target, whose sweeper takes it over.
// Neither side ever decrements a count for the move (the release drops records whole),
// so no count reaches zero because of it.

// Move ops (numbers are part of the log format: never renumber), and the snapshot
// record tags of the move tables.
const (
	OpMoveFence         Op = 40
	OpMoveLift          Op = 41
	OpMoveRelease       Op = 42
	OpMoveImportBegin   Op = 43 // move_import.go
	OpMoveImportChunk   Op = 44
	OpMoveImportFinish  Op = 45
	OpMoveImportConfirm Op = 46
	OpMoveImportAbort   Op = 47
	OpMoveWalk          Op = 48 // move_walk.go; cluster version 6

	recMove    uint8 = 38
	recMoveInc uint8 = 39
)

// CodeRootMoving: the agent root is being moved between shards; its commands are refused
// until the move completes or rolls back (about a second). Retryable: route the request
// again (the placement may have changed) and retry it, with the same idempotency key.
const CodeRootMoving Code = "RootMoving"

// MaxMoveChunkBytes bounds the encoded records of one MoveImportChunk, so a chunk is a
// bounded Raft entry whatever the root's size (far below MaxCommandBytes).
const MaxMoveChunkBytes = 4 << 20

// moveBatch bounds the records one bounded step of a release, abort or reschedule visits.
const moveBatch = 256

// MoveState is the state of a root's move on one shard.
type MoveState uint8

// Move states. Numbers are part of the snapshot format: never renumber.
const (
	// MoveFenced: on the source, the root is read-only for the move.
	MoveFenced MoveState = 1
	// MoveReleasing: on the source, after the switch, the root's records are being dropped.
	MoveReleasing MoveState = 2
	// MoveReleased: on the source, the root moved away (a tombstone: NotOwner).
	MoveReleased MoveState = 3
	// MoveImporting: on the target, chunks are arriving; the root is not held yet.
	MoveImporting MoveState = 4
	// MoveArrived: on the target, the import finished; reads see the root, commands wait
	// for the confirmation.
	MoveArrived MoveState = 5
	// MoveAborting: on the target, a rolled-back import's records are being dropped.
	MoveAborting MoveState = 6
	// MoveConfirmed: on the target, the root takes commands; the walk that queues its
	// retention still runs, then the record goes.
	MoveConfirmed MoveState = 7
)

var moveStateNames = [...]string{MoveFenced: "fenced", MoveReleasing: "releasing", MoveReleased: "released",
	MoveImporting: "importing", MoveArrived: "arrived", MoveAborting: "aborting", MoveConfirmed: "confirmed"}

// String names the state ("fenced", "importing", …).
func (s MoveState) String() string {
	if int(s) < len(moveStateNames) && moveStateNames[s] != "" {
		return moveStateNames[s]
	}
	return "state-" + strconv.Itoa(int(s))
}

// MoveRecord is one shard's record of a root's move (state.moves, keyed by agent).
type MoveRecord struct {
	Agent  string    `cbor:"1,keyasint"`
	MoveID string    `cbor:"2,keyasint"`
	State  MoveState `cbor:"3,keyasint"`
	// FencedVersion is the source's shard version of the fence.
	FencedVersion uint64 `cbor:"4,keyasint,omitempty"`
	// Root is, on the target until the finish, the root record the import brought.
	Root *Root `cbor:"5,keyasint,omitempty"`
	// Chunks counts the chunks imported: the next MoveImportChunk must carry Seq Chunks.
	Chunks uint64 `cbor:"6,keyasint,omitempty"`
	// Records counts the records imported.
	Records int64 `cbor:"7,keyasint,omitempty"`
	// Walk is the position of the bounded walk the state runs (release, abort,
	// reschedule after the finish); Rescheduling says a finished import still
	// reschedules its retention.
	Walk         MovePosition `cbor:"8,keyasint,omitempty"`
	Rescheduling bool         `cbor:"9,keyasint,omitempty"`
	// SourceVersion is the version of the source View the import was exported from.
	SourceVersion uint64 `cbor:"10,keyasint,omitempty"`
	// RootUID is the root's uid (its blob namespace), on both shards.
	RootUID string `cbor:"11,keyasint,omitempty"`
	// Parts is, on the target, the record arriving in parts that the import received so
	// far (move_parts.go); a command's answer carries its Total only.
	Parts *MoveParts `cbor:"12,keyasint,omitempty"`
}

// MoveRef names a move of an agent root: every move command carries it, and its MoveID
// makes the command idempotent (move commands never use Header.RequestID).
type MoveRef struct {
	Agent  string `cbor:"1,keyasint"`
	MoveID string `cbor:"2,keyasint"`
}

func (r MoveRef) ref() MoveRef { return r }

// moveBody is a move command: it passes the ownership and move checks (it does its own).
type moveBody interface {
	Body
	ref() MoveRef
}

// MoveFence makes agent's root read-only on this shard for move MoveID (the source's first
// step). Refused with InvalidState while a restore of the root copies or a deleted
// workbench of it is still being purged (wait and retry), with Conflict naming the other
// move while another move holds the root. A repeat for the same move succeeds.
type MoveFence struct{ MoveRef }

// MoveLift lifts move MoveID's fence (a rollback on the source). A repeat, or a lift of a
// root not fenced, succeeds; a lift of another move's fence is Conflict; after a release
// it is InvalidState (the move completed).
type MoveLift struct{ MoveRef }

// MoveRelease drops the fenced root from this shard once the placement names the target:
// the root is no longer held at once, its records go in bounded retention steps (no blob
// reference is released: the records go whole, the target owns them now), and a
// tombstone answers NotOwner for the agent. A repeat succeeds.
type MoveRelease struct{ MoveRef }

func (MoveFence) Op() Op   { return OpMoveFence }
func (MoveLift) Op() Op    { return OpMoveLift }
func (MoveRelease) Op() Op { return OpMoveRelease }

// moveApplier applies the FSM's half of moving a root between shards: the source's fence,
// lift and release (move.go), the target's import (move_import.go) and the bounded walks
// both run (move_walk.go), and it keeps the move fence every other command meets
// (checkMove, droppedItem). It moves records whole and never changes a blob reference
// count; what it needs of the other parts is the scheduling of the retention items a
// finished import queues again (the feed's pruning, a proposal's retirement).
type moveApplier struct {
	*applyCtx
	feed  *feedApplier
	props *proposalApplier
}

// checkMove refuses a command of a root that a move holds on this shard.
func (a *moveApplier) checkMove(agent string, body Body) *Error {
	if agent == "" {
		return nil
	}
	if _, ok := body.(moveBody); ok {
		return nil
	}
	m, ok := a.st.moves.Get(agent)
	if !ok || m.State == MoveConfirmed {
		return nil
	}
	if m.State == MoveReleased || m.State == MoveReleasing {
		return &Error{Code: CodeNotOwner, OperationID: m.MoveID,
			Message: "agent root " + strconv.Quote(agent) + " moved to another shard"}
	}
	return &Error{Code: CodeRootMoving, OperationID: m.MoveID, State: m.State.String(),
		Message: "agent root " + strconv.Quote(agent) + " is being moved between shards; retry"}
}

// stepRule says what a move step does with the move record of its root that it finds.
type stepRule struct {
	// applies are the states the step acts in (besides no record at all, which each step
	// answers itself); repeats those a repeat of it finds (answered with the record, a
	// step is idempotent); any other is InvalidState naming want.
	applies, repeats []MoveState
	want             string
	// replaceable: a released root's tombstone counts as no record (an import of the root
	// back replaces it).
	replaceable bool
	// absent, when set, answers when there is no record, given whether the shard holds
	// the root (nil: the step acts).
	absent func(held bool) Result
}

// absentErr is an absent answer that is err whatever the shard holds.
func absentErr(err *Error) func(bool) Result { return func(bool) Result { return Result{Err: err} } }

// moveStep validates a move command and returns the shard's record of a move of its
// root (nil: none), or the answer the step gives without acting: bad names, another
// move holds the root (Conflict), a repeat, or a state it does not act in.
func (a *moveApplier) moveStep(r MoveRef, rule stepRule) (*MoveRecord, *Result) {
	if err := ValidateName("agent", r.Agent); err != nil {
		return nil, &Result{Err: err}
	}
	if err := ValidateName("move_id", r.MoveID); err != nil {
		return nil, &Result{Err: err}
	}
	m, ok := a.st.moves.Get(r.Agent)
	switch {
	case (!ok || rule.replaceable && m.State == MoveReleased) && rule.absent != nil:
		_, held := a.st.roots.Get(r.Agent)
		res := rule.absent(held)
		return nil, &res
	case !ok || rule.replaceable && m.State == MoveReleased:
		return nil, nil
	case m.MoveID != r.MoveID:
		return m, &Result{Err: otherMove(m)}
	case slices.Contains(rule.repeats, m.State):
		return m, &Result{Move: m.answer(), RootUID: a.rootUID(r.Agent)}
	case !slices.Contains(rule.applies, m.State):
		return m, &Result{Err: wrongState(m, rule.want)}
	}
	return m, nil
}

// wrongState is the InvalidState a move step answers in a state it does not apply in.
func wrongState(m *MoveRecord, want string) *Error {
	return &Error{Code: CodeInvalidState, OperationID: m.MoveID, State: m.State.String(),
		Message: "move " + strconv.Quote(m.MoveID) + " is " + m.State.String() + " here, not " + want}
}

func otherMove(m *MoveRecord) *Error {
	return &Error{Code: CodeConflict, OperationID: m.MoveID, State: m.State.String(),
		Message: "agent root " + strconv.Quote(m.Agent) + " is held by move " + strconv.Quote(m.MoveID)}
}

func (a *moveApplier) moveFence(c MoveFence) Result {
	_, done := a.moveStep(c.MoveRef, stepRule{repeats: []MoveState{MoveFenced}, want: "unfenced"})
	if done != nil {
		return *done
	}
	s := a.st
	root, ok := s.roots.Get(c.Agent)
	if !ok {
		return Result{Err: errorf(CodeNotFound, "agent root %q does not exist", c.Agent)}
	}
	if err := a.movable(root); err != nil {
		return Result{Err: err}
	}
	m := &MoveRecord{Agent: c.Agent, MoveID: c.MoveID, State: MoveFenced, FencedVersion: s.version, RootUID: root.UID}
	s.moves.Set(c.Agent, m)
	return Result{Move: m, RootUID: root.UID}
}

// movable refuses to fence a root while a restore of it copies or a purge of one of its
// deleted workbenches is pending: their bounded steps would be refused under the fence,
// and the export reads only the records of live incarnations.
func (a *moveApplier) movable(root *Root) *Error {
	s := a.st
	if running := s.restoreCopying(root.Agent); running != nil {
		return &Error{Code: CodeInvalidState, OperationID: running.ID,
			Message: "a restore of agent root " + strconv.Quote(root.Agent) + " is in progress; move it after the restore completes"}
	}
	purging := false
	s.retention.Scan(func(_, v string) bool {
		if v != "" && v[0] == retainPurge {
			if p, ok := decodePurgeItem(v[1:]); ok && p.agent == root.Agent {
				purging = true
			}
		}
		return !purging
	})
	if purging {
		return errorf(CodeInvalidState, "a deleted workbench of agent root %q is still being purged; move it after the purge", root.Agent)
	}
	return nil
}

func (a *moveApplier) moveLift(c MoveLift) Result {
	_, done := a.moveStep(c.MoveRef, stepRule{applies: []MoveState{MoveFenced}, want: "fenced (a released root stays released)",
		absent: func(bool) Result { return Result{} }})
	if done != nil {
		return *done
	}
	a.st.moves.Delete(c.Agent)
	return Result{}
}

func (a *moveApplier) moveRelease(c MoveRelease) Result {
	m, done := a.moveStep(c.MoveRef, stepRule{applies: []MoveState{MoveFenced},
		repeats: []MoveState{MoveReleasing, MoveReleased}, want: "fenced",
		absent: absentErr(errorf(CodeInvalidState, "agent root %q is not fenced for a move", c.Agent))})
	if done != nil {
		return *done
	}
	s := a.st
	nm := *m
	nm.State, nm.Walk = MoveReleasing, MovePosition{}
	s.moves.Set(c.Agent, &nm)
	s.roots.Delete(c.Agent)
	a.scheduleMoveWalk(c.Agent)
	return Result{Move: &nm}
}

// MoveView is the reads of one View about moving roots between shards (View.Moves): the
// shard's move records, and the export of a root's records a target imports
// (move_export.go, move_delta.go). It reads only through its View, as every facet does,
// so an export is of one shard version.
type MoveView struct {
	v     *View
	split bool // Split: records larger than a chunk go in parts (move_parts.go)
}

// Of returns this shard's record of a move of agent's root; false when none.
func (mv MoveView) Of(agent string) (*MoveRecord, bool) { return mv.v.st.moves.Get(agent) }

// All calls fn for every move record of the shard, in agent order, until fn returns
// false (what `cairn admin root moves` lists per shard).
func (mv MoveView) All(fn func(*MoveRecord) bool) {
	mv.v.st.moves.Scan(func(_ string, m *MoveRecord) bool { return fn(m) })
}
