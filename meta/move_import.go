package meta

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
)

// The target's half of a move (move.go): the records of one root arrive in chunks
// exported from one source View, and land in this shard's tables as they are, but for
// what only has meaning on one shard:
//
//   - incarnations are numbered per shard, so every source incarnation is mapped to a new
//     one of this shard (state.moveIncs, kept until the confirmation so that an abort
//     finds the records), in every key and record that names one (paths, directories,
//     holds, commits, workbenches, snapshots, restores, proposals, the results kept for
//     idempotency keys);
//   - the retention queue and the derived sets are rebuilt from the records, the queue by
//     a bounded walk after the finish;
//   - the shard version continues past the source's: the finish raises the version shift
//     so that every later version of this shard exceeds every version the root's records
//     name (generations, snapshot read points, feed positions), and the segment list and
//     sequence counters past the source's.
//
// Everything else keeps its value: the root uid (so its blobs keep their names and no body
// is copied), generations, snapshot ids, commit identities, proposal ids, feed positions
// and the idempotency records. Until the finish the root is not held (HoldsRoot, Roots,
// the garbage collector) and every command of it but the move's own is refused.

// MoveImportBegin starts move MoveID's import of agent's root, whose uid is RootUID.
// Refused with AlreadyExists when this shard holds the root, InvalidArguments when another
// root here has the uid, Conflict while another move holds the agent. A repeat succeeds.
type MoveImportBegin struct {
	MoveRef
	RootUID string `cbor:"3,keyasint"`
}

// MoveImportChunk imports chunk Seq (from 0) of the root's records: Data of one
// MoveView.Export. A chunk already imported succeeds and changes nothing; one out of
// order is Conflict (a chunk is missing); one with a record that is not the root's, or
// malformed, is InvalidArguments and changes nothing.
type MoveImportChunk struct {
	MoveRef
	Seq  uint64 `cbor:"3,keyasint"`
	Data []byte `cbor:"4,keyasint"`
	// Delta: Data is a chunk of MoveView.ExportDelta (move_delta.go): a record the import
	// holds already is replaced, a deletion drops one. Cluster version MoveDeltaVersion.
	Delta bool `cbor:"5,keyasint,omitempty"`
	// Part: Data is a part of one record larger than a chunk (MoveExportChunk.Part,
	// move_parts.go), staged until its last part lands it. Cluster version
	// MovePartsVersion.
	Part *MovePart `cbor:"6,keyasint,omitempty"`
}

// MoveDeltaVersion is the cluster version of MoveImportChunk.Delta: a replica of version 5
// would decode a delta chunk without the field and refuse its deletions.
const MoveDeltaVersion = 6

func (c MoveImportChunk) fieldVersion() int {
	switch {
	case c.Part != nil:
		return MovePartsVersion
	case c.Delta:
		return MoveDeltaVersion
	}
	return 0
}

// MoveImportFinish makes the imported root held here, read-only until MoveImportConfirm.
// Chunks and Records must equal what arrived (Conflict otherwise: the import is
// incomplete); SourceVersion is the version of the View the chunks were exported from,
// SourceNextListID and SourceSeq its shard's counters (MoveView.Counters).
type MoveImportFinish struct {
	MoveRef
	Chunks           uint64 `cbor:"3,keyasint"`
	Records          int64  `cbor:"4,keyasint"`
	SourceVersion    uint64 `cbor:"5,keyasint"`
	SourceNextListID uint64 `cbor:"6,keyasint,omitempty"`
	SourceSeq        uint64 `cbor:"7,keyasint,omitempty"`
}

// MoveImportConfirm ends the move on the target once the placement names it: the root
// takes commands, its garbage collection included. A repeat succeeds.
type MoveImportConfirm struct{ MoveRef }

// MoveImportAbort rolls the import back (before the placement switched): the root is no
// longer held at once, its imported records go in bounded retention steps, then the move
// record. A repeat, or an abort of an import that is gone, succeeds.
type MoveImportAbort struct{ MoveRef }

func (MoveImportBegin) Op() Op   { return OpMoveImportBegin }
func (MoveImportChunk) Op() Op   { return OpMoveImportChunk }
func (MoveImportFinish) Op() Op  { return OpMoveImportFinish }
func (MoveImportConfirm) Op() Op { return OpMoveImportConfirm }
func (MoveImportAbort) Op() Op   { return OpMoveImportAbort }

// Counters returns what MoveImportFinish needs of the source besides its records: the
// view's version, and its shard's segment list and sequence counters.
func (mv MoveView) Counters() (version, nextListID, seq uint64) {
	return mv.v.st.version, mv.v.st.nextListID, mv.v.st.seq
}

func (a *moveApplier) moveImportBegin(c MoveImportBegin) Result {
	_, done := a.moveStep(c.MoveRef, stepRule{repeats: []MoveState{MoveImporting}, want: "importing", replaceable: true})
	if done != nil {
		return *done
	}
	if err := ValidateName("root_uid", c.RootUID); err != nil {
		return Result{Err: err}
	}
	s := a.st
	if _, ok := s.roots.Get(c.Agent); ok {
		return Result{Err: errorf(CodeAlreadyExists, "agent root %q is held here", c.Agent)}
	}
	taken := false
	s.roots.Scan(func(_ string, r *Root) bool {
		taken = r.UID == c.RootUID
		return !taken
	})
	if taken {
		return Result{Err: invalidArg("root_uid", "names another root of this shard")}
	}
	m := &MoveRecord{Agent: c.Agent, MoveID: c.MoveID, State: MoveImporting, RootUID: c.RootUID}
	s.moves.Set(c.Agent, m)
	return Result{Move: m}
}

// importingRule is the rule of the steps of an import in progress: a repeat after the
// finish changes nothing (the finish counted every chunk).
func importingRule(agent string) stepRule {
	return stepRule{applies: []MoveState{MoveImporting}, repeats: []MoveState{MoveArrived, MoveConfirmed},
		want: "importing", absent: absentErr(errorf(CodeNotFound, "no move of agent root %q is importing here", agent))}
}

func (a *moveApplier) moveImportChunk(c MoveImportChunk) Result {
	m, done := a.moveStep(c.MoveRef, importingRule(c.Agent))
	switch {
	case done != nil:
		return *done
	case c.Seq < m.Chunks:
		return Result{Move: m.answer()}
	case c.Seq > m.Chunks:
		return Result{Err: &Error{Code: CodeConflict, OperationID: m.MoveID,
			Message: "chunk " + strconv.FormatUint(c.Seq, 10) + " arrived before chunk " + strconv.FormatUint(m.Chunks, 10)}}
	}
	if len(c.Data) > MaxMoveChunkBytes {
		return Result{Err: invalidArg("data", "holds %d bytes, more than %d", len(c.Data), MaxMoveChunkBytes)}
	}
	nm := *m
	data, whole, perr := stagePart(&nm, c)
	switch {
	case perr != nil:
		return Result{Err: perr}
	case !whole: // a part before the last: staged
		nm.Chunks++
		a.st.moves.Set(c.Agent, &nm)
		return Result{Move: nm.answer()}
	}
	recs, rerr := decodeChunk(c.Agent, m.RootUID, data, c.Delta)
	switch {
	case rerr != nil:
		return Result{Err: rerr}
	case c.Part != nil && len(recs) != 1:
		return Result{Err: invalidArg("part", "the parts hold %d records, not one", len(recs))}
	}
	for _, rec := range recs {
		if rec.T == recMoveDeleted {
			a.dropImported(c.Agent, uint8(rec.N), string(rec.K))
			continue
		}
		a.importRecord(&nm, rec, c.Delta)
	}
	nm.Chunks++
	nm.Records += int64(len(recs))
	a.st.moves.Set(c.Agent, &nm)
	return Result{Move: &nm}
}

// decodeChunk decodes and checks every record of a chunk before any lands: each must
// decode into its table (checked on a scratch state) and belong to agent's root; a
// deletion (delta only) must name a table of a root's records and a key of agent's root.
func decodeChunk(agent, uid string, data []byte, delta bool) ([]snapRecord, *Error) {
	dec := snapDecMode.NewDecoder(bytes.NewReader(data))
	scratch := newState()
	var recs []snapRecord
	for n := 0; ; n++ {
		var rec snapRecord
		err := dec.Decode(&rec)
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return nil, invalidArg("data", "record %d does not decode: %v", n, err)
		}
		if rec.T == recMoveDeleted {
			if !delta || rec.N < 0 || rec.N > 255 || rootTableFor(uint8(rec.N), string(rec.K), agent) == nil ||
				!deletedOfRoot(uint8(rec.N), string(rec.K), agent, uid) {
				return nil, invalidArg("data", "record %d deletes no record of agent root %q", n, agent)
			}
			recs = append(recs, rec)
			continue
		}
		if !recordOfRoot(rec, agent, uid) {
			return nil, invalidArg("data", "record %d (tag %d) is not a record of agent root %q", n, rec.T, agent)
		}
		t := snapTableByTag[rec.T]
		if t == nil || !t.read(scratch, rec) {
			return nil, invalidArg("data", "record %d (tag %d) is malformed", n, rec.T)
		}
		recs = append(recs, rec)
	}
}

// recordOfRoot reports whether rec is a record an export of agent's root (uid) holds.
func recordOfRoot(rec snapRecord, agent, uid string) bool {
	k := string(rec.K)
	agentPrefixed := strings.HasPrefix(k, agent+"\x00")
	switch rec.T {
	case recPath, recDir, recHold, recCommit:
		return len(k) >= incarnationKeySize
	case recWorkspace, recSnapshot, recSnapName, recRestore, recProposal, recDedupe, recDedupeOrder:
		return agentPrefixed
	case recDedupeCount, recUsage, recQuota:
		return k == agent
	case recRoot:
		return k == agent && rec.Root != nil && rec.Root.Agent == agent && rec.Root.UID == uid
	case recRetentionPolicy:
		return k == uid
	case recBlob:
		return strings.HasPrefix(k, uid+"\x00")
	case recFeed:
		if rec.Feed != nil && rec.Feed.Event != nil {
			return agentPrefixed && rec.Feed.Event.Agent == agent
		}
		return k == agent
	}
	return false
}

// incFor returns this shard's incarnation for source incarnation src of m's root,
// allocating it at first sight (0 stays 0: none).
func (a *moveApplier) incFor(agent string, src uint64) uint64 {
	if src == 0 {
		return 0
	}
	s := a.st
	k := agent + "\x00" + u64(src)
	if inc, ok := s.moveIncs.Get(k); ok {
		return inc
	}
	s.nextIncarnation++
	s.moveIncs.Set(k, s.nextIncarnation)
	return s.nextIncarnation
}

// importRecord lands one checked record of m's root, in this shard's incarnations; with
// replace (a delta), a record the shard holds at its key goes first, with what is derived
// from it.
func (a *moveApplier) importRecord(m *MoveRecord, rec snapRecord, replace bool) {
	s := a.st
	agent := m.Agent
	inc := incMap(func(src uint64) uint64 { return a.incFor(agent, src) })
	switch rec.T {
	case recRoot:
		r := *rec.Root
		m.Root = &r
		return
	case recPath, recDir, recHold, recCommit:
		to := inc(binaryU64(string(rec.K[:incarnationKeySize])))
		rec.K = append([]byte(u64(to)), rec.K[incarnationKeySize:]...)
		rec.Commit = remapped(rec.Commit, func(c *CommitRecord) { c.Incarnation = to })
	case recWorkspace:
		rec.Workspace = remapped(rec.Workspace, func(ws *Workspace) { ws.Incarnation = inc(ws.Incarnation) })
	case recSnapshot:
		rec.Snap = remapped(rec.Snap, inc.snapshot)
	case recRestore:
		rec.Restore = remapped(rec.Restore, inc.restore)
	case recProposal:
		rec.Proposal = remapped(rec.Proposal, inc.proposal)
	case recDedupe:
		rec.Dedupe = remapped(rec.Dedupe, func(d *dedupeRecord) { inc.result(&d.Result) })
	}
	k := string(rec.K)
	// A feed floor is set in place: dropping it would drop the root's event count.
	if replace && (rec.T != recFeed || rec.Feed.Floor == nil) {
		if t := rootTableFor(rec.T, k, agent); t != nil {
			if _, ok := lookupRecord(s, t, k); ok {
				t.drop(s, k)
			}
		}
	}
	snapTableByTag[rec.T].read(s, rec)
	switch rec.T {
	case recPath:
		p := rec.Path
		if len(p.Chain) > 1 || len(p.Chain) == 1 && p.Chain[0].Entry == nil {
			s.history.Set(k, struct{}{})
		}
		s.trackCompactable(k, p.live())
		s.indexFile(binaryU64(k[:incarnationKeySize]), keyPath(k), nil, p.live())
	case recSnapshot:
		if rec.Snap.holdsHistory() {
			s.heldSnaps.Set(heldSnapKey(rec.Snap.Incarnation, rec.Snap.ID), struct{}{})
		}
	case recProposal:
		s.props.index(rec.Proposal)
		n, _ := s.props.count.Get(agent)
		s.props.count.Set(agent, n+1)
	}
}

// dropImported drops the imported record of agent's root at source key k of the table
// tagged tag (a delta's deletion), with what is derived from it; a key the import never
// held changes nothing.
func (a *moveApplier) dropImported(agent string, tag uint8, k string) {
	s := a.st
	if incTable(tag) {
		to, ok := s.moveIncs.Get(agent + "\x00" + k[:incarnationKeySize])
		if !ok {
			return
		}
		k = u64(to) + k[incarnationKeySize:]
	}
	if t := rootTableFor(tag, k, agent); t != nil {
		if _, ok := lookupRecord(s, t, k); ok {
			t.drop(s, k)
		}
	}
}

// incTable reports whether the keys of the table tagged tag start with an incarnation.
func incTable(tag uint8) bool {
	return tag == recPath || tag == recDir || tag == recHold || tag == recCommit
}

// rootTableFor returns the table of a root's records that holds key k of agent's root in
// the snapshot table tagged tag (the feed's events and its floor share a tag), nil for
// none (or a table the move keeps to itself).
func rootTableFor(tag uint8, k, agent string) *rootTable {
	for i := range rootTables {
		t := &rootTables[i]
		if t.tag != tag || t.walkOnly {
			continue
		}
		if tag == recFeed && (k == agent) != (t.space == spaceAgent) {
			continue
		}
		return t
	}
	return nil
}

// incMap maps the source incarnations of the root being imported to this shard's.
type incMap func(uint64) uint64

// remapped returns a copy of *p with fn applied (nil for nil): records reachable from a
// View are never mutated.
func remapped[T any](p *T, fn func(*T)) *T {
	if p == nil {
		return nil
	}
	c := *p
	fn(&c)
	return &c
}

func (m incMap) snapshot(s *WorkbenchSnapshot) { s.Incarnation = m(s.Incarnation) }

func (m incMap) restore(op *RestoreOp) {
	op.SourceIncarnation, op.DestIncarnation = m(op.SourceIncarnation), m(op.DestIncarnation)
}

func (m incMap) proposal(p *Proposal) {
	p.Incarnation = m(p.Incarnation)
	p.Evidence = append(p.Evidence[:0:0], p.Evidence...)
	for i := range p.Evidence {
		p.Evidence[i].HoldIncarnation = m(p.Evidence[i].HoldIncarnation)
	}
}

// result maps the incarnations a stored answer names, so a replay on this shard answers
// in its numbering.
func (m incMap) result(r *Result) {
	r.Snapshot = remapped(r.Snapshot, m.snapshot)
	r.Restore = remapped(r.Restore, m.restore)
	r.Proposal = remapped(r.Proposal, m.proposal)
}

func (a *moveApplier) moveImportFinish(c MoveImportFinish) Result {
	m, done := a.moveStep(c.MoveRef, importingRule(c.Agent))
	switch {
	case done != nil:
		return *done
	case c.Chunks != m.Chunks || c.Records != m.Records:
		return Result{Err: &Error{Code: CodeConflict, OperationID: m.MoveID,
			Message: "the import holds " + strconv.FormatUint(m.Chunks, 10) + " chunks and " + strconv.FormatInt(m.Records, 10) +
				" records, the export " + strconv.FormatUint(c.Chunks, 10) + " and " + strconv.FormatInt(c.Records, 10)}}
	case m.Parts != nil:
		return Result{Err: partsPending(m)}
	case m.Root == nil:
		return Result{Err: &Error{Code: CodeConflict, OperationID: m.MoveID, Message: "the import holds no root record"}}
	}
	s := a.st
	// Every later version must exceed every version the root's records name.
	if c.SourceVersion >= s.version {
		s.version = c.SourceVersion + 1
		s.shift = s.version - a.index
	}
	s.nextListID = max(s.nextListID, c.SourceNextListID)
	s.seq = max(s.seq, c.SourceSeq)
	root := *m.Root
	// A publish fenced at a view older than the arrival (of either shard: their versions
	// are not comparable) uploads again before it references a blob without a record.
	root.BlobsDeletedVersion = s.version
	s.roots.Set(c.Agent, &root)
	nm := *m
	nm.State, nm.Root, nm.SourceVersion = MoveArrived, nil, c.SourceVersion
	nm.Walk, nm.Rescheduling = MovePosition{}, true
	s.moves.Set(c.Agent, &nm)
	a.scheduleMoveWalk(c.Agent)
	return Result{Move: &nm, RootUID: root.UID}
}

func (a *moveApplier) rootUID(agent string) string {
	if r, ok := a.st.roots.Get(agent); ok {
		return r.UID
	}
	return ""
}

func (a *moveApplier) moveImportConfirm(c MoveImportConfirm) Result {
	m, done := a.moveStep(c.MoveRef, stepRule{applies: []MoveState{MoveArrived},
		repeats: []MoveState{MoveConfirmed}, want: "arrived",
		absent: func(held bool) Result {
			if held {
				return Result{RootUID: a.rootUID(c.Agent)} // a repeat: the move ended here
			}
			return Result{Err: errorf(CodeNotFound, "no move of agent root %q arrived here", c.Agent)}
		}})
	if done != nil {
		return *done
	}
	s := a.st
	if m.Rescheduling {
		// The walk that queues the root's retention is still running: it finishes first,
		// then the record goes (move_walk.go).
		nm := *m
		nm.State = MoveConfirmed
		s.moves.Set(c.Agent, &nm)
		return Result{Move: &nm, RootUID: a.rootUID(c.Agent)}
	}
	a.endImport(c.Agent)
	return Result{RootUID: a.rootUID(c.Agent)}
}

// endImport drops a confirmed import's bookkeeping: its move record and its incarnation
// map (O(workbenches of the root), which quotas bound).
func (a *moveApplier) endImport(agent string) {
	s := a.st
	s.moves.Delete(agent)
	keys, _ := keyBatch(s.moveIncs, agent+"\x00", agent+"\x00", int(^uint(0)>>1))
	for _, k := range keys {
		s.moveIncs.Delete(k)
	}
}

func (a *moveApplier) moveImportAbort(c MoveImportAbort) Result {
	m, done := a.moveStep(c.MoveRef, stepRule{applies: []MoveState{MoveImporting, MoveArrived},
		repeats: []MoveState{MoveAborting}, want: "importing or arrived (only an import aborts)", replaceable: true,
		absent: func(held bool) Result {
			if held {
				return Result{Err: errorf(CodeInvalidState, "the move of agent root %q was confirmed here; it cannot be aborted", c.Agent)}
			}
			return Result{}
		}})
	if done != nil {
		return *done
	}
	s := a.st
	nm := *m
	s.roots.Delete(c.Agent)
	nm.State, nm.Walk, nm.Rescheduling, nm.Parts = MoveAborting, MovePosition{}, false, nil
	s.moves.Set(c.Agent, &nm)
	a.scheduleMoveWalk(c.Agent)
	return Result{Move: &nm}
}
