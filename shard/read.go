package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// ReadView returns a linearizable view: every write acknowledged before ReadView was
// called is in it, and so is every write any replica's view showed before then.
// ErrNotLeader when this replica cannot guarantee that.
//
// The walk: the replica must be a leader that has applied its post-election barrier
// (caughtUp, for term leaderTerm); a confirmation round that began after this call proves
// a majority of voters still in that term (confirm.go, shared with the reads in flight);
// then the FSM here must have applied every command committed when the call began
// (catchUp), because a follower applies a committed entry as soon as it learns it is
// committed, which may be before this leader's FSM, busy with earlier entries, has: a
// read through the follower (whose view goes beyond the read index it waited for) could
// otherwise show a write that a later read here does not. The FSM's view at that point
// holds every acknowledged write and everything any replica applied before the call.
func (s *Shard) ReadView(ctx context.Context) (*meta.View, error) {
	if !s.caughtUp.Load() {
		return nil, ErrNotLeader
	}
	// An entry any replica had applied when the call began was committed by then: in this
	// leader's term, so at most its commit index now, or in an earlier one, and then
	// applied here before the post-election barrier completed (caughtUp).
	committed := s.raft.CommitIndex()
	err := s.confirm.confirm(ctx)
	if err == nil {
		err = s.catchUp(ctx, committed)
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrClosed) {
			return nil, fmt.Errorf("shard: read: %w", err)
		}
		return nil, err
	}
	return s.fsm.View(), nil
}

// catchUp returns once the FSM has applied every command in the log up to index
// committed. A replica that is the only server of its group (alone, learned by the
// confirmation round) skips it: no other replica applies anything it has not. Errors:
// ErrClosed, or ctx's error.
func (s *Shard) catchUp(ctx context.Context, committed uint64) error {
	if s.alone.Load() {
		return nil
	}
	version, index := s.fsm.Applied()
	if index >= committed {
		return nil
	}
	for target := s.log.lastCommand(index, committed); index < target; version, index = s.fsm.Applied() {
		if err := s.WaitApplied(ctx, version+1); err != nil {
			return err
		}
	}
	return nil
}

// AppliedView returns a view of everything this replica has applied, leader or not,
// without a leader round trip. It is NOT linearizable: a follower may lag the leader by
// any number of versions, and a deposed leader may not know it yet. Use it only for reads
// whose answer cannot depend on that lag: data at a fixed shard version that the view
// holds (a live snapshot's read version; docs/architecture.md#the-read-path). Never fails; its Version is the
// replica's applied shard version.
func (s *Shard) AppliedView() *meta.View { return s.fsm.View() }

// maxReadAtWait bounds how long ReadViewAt waits for this replica to apply a version.
const maxReadAtWait = 2 * time.Second

// ReadViewAt returns a view of this replica's applied state once it has applied shard
// version `version` (a version some earlier view or write reported), leader or not: what a
// version shows never changes, so no leader is needed (docs/architecture.md#the-read-path). The view may hold
// later versions too; call its At(version) for exactly that version. version 0 takes
// whatever is applied (AppliedView). It waits up to ctx's deadline, at most two seconds.
// Errors: ErrBehind (retry later or on another replica), ErrClosed.
func (s *Shard) ReadViewAt(ctx context.Context, version uint64) (*meta.View, error) {
	wctx, cancel := context.WithTimeout(ctx, maxReadAtWait)
	defer cancel()
	if err := s.WaitApplied(wctx, version); err != nil {
		if wctx.Err() != nil {
			return nil, fmt.Errorf("%w: version %d, applied %d", ErrBehind, version, s.fsm.AppliedVersion())
		}
		return nil, err
	}
	return s.fsm.View(), nil
}

// ReadIndex returns, on the ready leader, a shard version that every write acknowledged
// before the call has reached: its applied version once a leadership check (shared with
// the reads in flight) has passed. A follower that then applies that far serves a
// linearizable read without the leader carrying the data (docs/architecture.md#the-read-path: "a follower read
// asks the leader for that index first"). Errors: those of ReadView.
func (s *Shard) ReadIndex(ctx context.Context) (uint64, error) {
	v, err := s.ReadView(ctx)
	if err != nil {
		return 0, err
	}
	return v.Version(), nil
}

// WaitApplied returns once this replica has applied shard version `version`, leader or
// not, however long that takes: the notification a reader that follows the state (the
// change feed) waits on between reads. Errors: ctx's when it ends first, ErrClosed when
// the replica stops.
func (s *Shard) WaitApplied(ctx context.Context, version uint64) error {
	select {
	case <-s.stop:
		return ErrClosed
	default:
	}
	if s.fsm.AppliedVersion() >= version {
		return nil
	}
	ch := s.applied.add(version)
	defer s.applied.remove(ch)
	// Registered first, checked second: an apply between the two still wakes us.
	if s.fsm.AppliedVersion() >= version {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-s.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// applyWaiters wakes ReadViewAt calls waiting for a shard version.
type applyWaiters struct {
	n       atomic.Int32 // len(waiting), read without the lock on every apply
	mu      sync.Mutex
	waiting map[chan struct{}]uint64
}

func (w *applyWaiters) add(version uint64) chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	w.waiting[ch] = version
	w.n.Add(1)
	w.mu.Unlock()
	return ch
}

func (w *applyWaiters) remove(ch chan struct{}) {
	w.mu.Lock()
	if _, ok := w.waiting[ch]; ok {
		delete(w.waiting, ch)
		w.n.Add(-1)
	}
	w.mu.Unlock()
}

func (w *applyWaiters) notify(applied uint64) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	for ch, v := range w.waiting {
		if v <= applied {
			close(ch)
			delete(w.waiting, ch)
			w.n.Add(-1)
		}
	}
	w.mu.Unlock()
}
