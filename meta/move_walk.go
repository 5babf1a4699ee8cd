package meta

import "strings"

// The bounded walks of a move (move.go), run as retention steps ('m' agent) of at most
// moveBatch records each, resumed from the move record's Walk position:
//
//   - a release (source) and an abort (target) drop the root's records whole: no blob
//     reference is released, since the records go with the references they count (the
//     other shard owns them, or keeps them);
//   - a finished import (target) queues the retention of its records, which the source's
//     queue held: each path's re-prune, each held snapshot's lease, each idempotency
//     record's expiry, each proposal's retirement, each finished restore's record, the
//     feed's pruning.

// MoveWalk runs up to moveWalkSteps steps of the bounded walk that move MoveID's record of
// agent runs on this shard (a release, an abort, the rescheduling after an import), at
// once rather than one retention step at a time: a later move of the root waits for that
// walk, and on an idle shard the retention queue advances only with the commands it
// applies, each taking its turn behind the per-record items the walk queues. A walk that
// ended, or a record of another move, changes nothing. Cluster version 6.
type MoveWalk struct{ MoveRef }

func (MoveWalk) Op() Op { return OpMoveWalk }

// moveWalkSteps bounds the walk steps of one MoveWalk (moveBatch records each).
const moveWalkSteps = 32

func (a *moveApplier) moveWalk(c MoveWalk) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("move_id", c.MoveID); err != nil {
		return Result{Err: err}
	}
	for range moveWalkSteps {
		m, ok := a.st.moves.Get(c.Agent)
		if !ok || m.MoveID != c.MoveID || !a.walkOnce(c.Agent) {
			break
		}
	}
	m, _ := a.st.moves.Get(c.Agent)
	return Result{Move: m}
}

// scheduleMoveWalk queues the next step of agent's move walk.
func (a *moveApplier) scheduleMoveWalk(agent string) {
	s := a.st
	s.seq++
	s.retention.Set(retentionKey(s.nowMs, s.seq), string(rune(retainMove))+agent)
}

// moveWalkStep runs one step of agent's move walk, the retention queue's item: the next
// step is queued while the walk goes on.
func (a *moveApplier) moveWalkStep(agent string) {
	if a.walkOnce(agent) {
		a.scheduleMoveWalk(agent)
	}
}

// walkOnce runs one step of agent's move walk and reports whether the walk goes on.
func (a *moveApplier) walkOnce(agent string) bool {
	s := a.st
	m, ok := s.moves.Get(agent)
	if !ok {
		return false
	}
	sp := spaceOf(s, agent, m.RootUID)
	nm := *m
	switch {
	case m.State == MoveReleasing || m.State == MoveAborting:
		type item struct {
			t *rootTable
			k string
		}
		var batch []item
		pos, done := walkRoot(s, sp, m.Walk, true, func(t *rootTable, k string, _ snapRecord) bool {
			if len(batch) == moveBatch {
				return false
			}
			batch = append(batch, item{t, k})
			return true
		})
		for _, it := range batch {
			it.t.drop(s, it.k)
		}
		nm.Walk = pos
		if done {
			if m.State == MoveAborting {
				s.moves.Delete(agent)
				return false
			}
			nm.State, nm.Walk = MoveReleased, MovePosition{}
		}
	case m.Rescheduling:
		n := 0
		pos, done := walkRoot(s, sp, m.Walk, false, func(t *rootTable, k string, rec snapRecord) bool {
			if n == moveBatch {
				return false
			}
			n++
			a.requeue(agent, m.RootUID, t, k, rec)
			return true
		})
		nm.Walk = pos
		if done {
			if m.State == MoveConfirmed {
				a.endImport(agent)
				return false
			}
			nm.Rescheduling, nm.Walk = false, MovePosition{}
		}
	default:
		return false
	}
	s.moves.Set(agent, &nm)
	return nm.State != MoveReleased && (nm.Rescheduling || nm.State != MoveArrived)
}

// requeue queues the retention item of one imported record, as the command that wrote it
// on the source did (due times are command times, which travel with the records).
func (a *moveApplier) requeue(agent, uid string, t *rootTable, k string, rec snapRecord) {
	s := a.st
	queue := func(dueMs int64, item string) {
		s.seq++
		s.retention.Set(retentionKey(dueMs, s.seq), item)
	}
	switch {
	case t.tag == recPath:
		queue(s.nowMs, string(rune(retainPath))+uid+"\x00"+k)
	case t.tag == recSnapshot && rec.Snap.holdsHistory():
		queue(rec.Snap.LeaseExpiresMs+a.opts.SnapshotGrace.Milliseconds(), string(rune(retainLease))+k)
	case t.tag == recDedupe:
		queue(rec.Dedupe.ExpiresAtMs, string(rune(retainDedupe))+k)
	case t.tag == recRestore && rec.Restore.State == RestoreComplete:
		queue(max(s.nowMs+a.opts.RetentionWindow.Milliseconds(), rec.Restore.RetainUntilMs), string(rune(retainRestore))+k)
	case t.tag == recProposal:
		p := rec.Proposal
		due := p.CreatedAtMs + a.opts.ProposalPendingTTL.Milliseconds()
		if p.State != ProposalPending {
			due = p.ClosedAtMs + a.props.closedRetentionMs(agent)
		}
		a.props.scheduleProposal(p, due)
	case t.tag == recFeed && rec.Feed.Floor != nil: // the floor table: once per root
		if _, oldest, ok := firstEvent(s.feed.events, agent+"\x00"); ok {
			a.feed.scheduleFeedPrune(agent, oldest.AtMs)
		}
	}
}

// droppedItem reports whether a retention item of kind with first operand x is about a
// root whose records are not the shard's to act on: an import in progress or rolling back
// (the item is a leftover of the root's earlier stay here: a lease reaped now would write
// a feed event below the source's versions), or a release (the root record is gone, and
// the steps that need it must not run). Dropping the item loses nothing: an import's
// finish queues every record's item, a release drops the records.
func (a *moveApplier) droppedItem(kind byte, x string) bool {
	s := a.st
	if s.moves.Len() == 0 || kind == retainMove {
		return false
	}
	dropped := func(m *MoveRecord) bool {
		return m.State == MoveImporting || m.State == MoveAborting || m.State == MoveReleasing
	}
	switch kind {
	case retainPath, retainReprune, retainRootReprune, retainPurge: // keyed by root uid
		uid, _, _ := strings.Cut(x, "\x00")
		found := false
		s.moves.Scan(func(_ string, m *MoveRecord) bool {
			found = m.RootUID == uid && dropped(m)
			return !found
		})
		return found
	}
	agent, _, _ := strings.Cut(x, "\x00") // keyed by agent
	m, ok := s.moves.Get(agent)
	return ok && dropped(m)
}
