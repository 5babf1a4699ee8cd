package shard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Leadership confirmation: the read index (Raft thesis §6.4) done without trusting
// hashicorp/raft's VerifyLeader.
//
// VerifyLeader (hashicorp/raft v1.8.0) counts a follower's heartbeat reply as a vote for
// every verification pending when the reply is processed (replication.go, notifyAll), so a
// reply that followers sent before the leader was paused, processed after it resumed,
// confirms a verification that began after the resume: a deposed leader confirms itself
// and serves its old state.
//
// A round here counts only answers to heartbeats it sent itself after it began. Each
// heartbeat is an ordinary AppendEntries of the leader's term with no entries; a follower
// answers it with its current term (raft.go, appendEntries: Success only when the
// request's term is not older than its own). The round passes when a majority of the
// voters in the latest configuration, this replica included while its own term is still
// the leader term, answer with that term. The argument:
//
//   - A write acknowledged before the read began was committed either in an earlier term
//     (then applied here before the post-election barrier completed: caughtUp) or in the
//     leader term, by this replica (the only leader of that term), which acknowledges only
//     what it applied; or in a later term T' by another leader.
//   - The last case is impossible once the round passes: committing in T' needs a majority
//     that had moved to T' before the read began, and the round's majority answered, after
//     the read began, that it was still in the leader term. Terms never decrease, and two
//     majorities of one configuration share a voter (single-server membership changes keep
//     that true across consecutive configurations).
//
// Nothing in the argument reads a clock, so pauses and clock jumps of this process cannot
// break it. Clocks only decide readiness (Ready): a leader is reported ready while its
// last passed round began less than a leader lease ago.

// confirmer batches leadership confirmations: reads that arrive while a round runs share
// the next round, which starts after they all arrived. The single voter of a group sends
// no heartbeat, so each of its reads runs a round of its own instead (confirm).
type confirmer struct {
	s       *Shard
	mu      sync.Mutex
	waiting []chan error
	running bool
	probes  map[raft.ServerID]*probe
}

// confirm returns nil once a round that began after the call has passed. Errors:
// ErrNotLeader (not the caught-up leader, deposed, or no majority answered in time),
// ErrClosed, or ctx's error.
func (c *confirmer) confirm(ctx context.Context) error {
	if c.s.soloVoter.Load() {
		// The single voter's round reads only this replica's own state and sends no
		// heartbeat, so it runs here, a round of its own that began after the call,
		// rather than through the loop's goroutine and a wake-up per read.
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := c.begin()
		if err != nil {
			return err
		}
		if r.passed() {
			c.s.confirmed(r.start)
			return nil
		}
		// The configuration has other voters now: their heartbeats are the loop's.
	}
	ch := make(chan error, 1)
	c.mu.Lock()
	c.waiting = append(c.waiting, ch)
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *confirmer) loop() {
	for {
		c.mu.Lock()
		batch := c.waiting
		c.waiting = nil
		if len(batch) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		err := c.round()
		for _, ch := range batch {
			ch <- err
		}
	}
}

// roundStart is what a round learns from this replica alone (begin).
type roundStart struct {
	start        time.Duration // s.monotonic() when the round began
	term         uint64        // the leader term the round confirms
	voters, acks int           // voters of the latest configuration; this replica's ack
	others       []raft.Server // the voters that must answer a heartbeat
}

// passed reports whether this replica's own ack is a majority of the voters.
func (r *roundStart) passed() bool { return r.acks >= r.voters/2+1 }

// begin starts a round: this replica must still be the caught-up leader of its leader
// term; it reads the latest configuration's voters and records whether this replica is
// the only one (soloVoter).
func (c *confirmer) begin() (roundStart, error) {
	s := c.s
	r := roundStart{start: s.monotonic(), term: s.leaderTerm.Load()}
	if !s.caughtUp.Load() {
		return r, ErrNotLeader
	}
	select {
	case <-s.stop:
		return r, ErrClosed
	default:
	}
	if s.raft.State() != raft.Leader || s.raft.CurrentTerm() != r.term {
		return r, fmt.Errorf("%w: leadership of term %d ended", ErrNotLeader, r.term)
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return r, mapRaftError(err)
	}
	for _, sv := range f.Configuration().Servers {
		if sv.Suffrage != raft.Voter {
			continue
		}
		r.voters++
		if sv.ID == raft.ServerID(s.cfg.NodeID) {
			r.acks++ // this replica, still in the leader term (checked above, after start)
			continue
		}
		r.others = append(r.others, sv)
	}
	s.soloVoter.Store(r.voters == 1 && r.acks == 1)
	s.alone.Store(r.voters == 1 && r.acks == 1 && len(f.Configuration().Servers) == 1)
	return r, nil
}

// round runs one confirmation: see the comment at the top of this file.
func (c *confirmer) round() error {
	s := c.s
	rs, err := c.begin()
	if err != nil {
		return err
	}
	if rs.passed() {
		s.confirmed(rs.start)
		return nil
	}
	start, term, voters, acks, others := rs.start, rs.term, rs.voters, rs.acks, rs.others
	need := voters/2 + 1
	replies := make(chan probeReply, len(others))
	for _, sv := range others {
		c.send(sv, term, replies)
	}
	bound := time.NewTimer(s.cfg.HeartbeatTimeout)
	defer bound.Stop()
	for answered := 0; acks < need; {
		select {
		case r := <-replies:
			answered++
			switch {
			case r.err == nil && r.term > term:
				s.deposed(term)
				return fmt.Errorf("%w: a voter is in term %d, after this leader's term %d", ErrNotLeader, r.term, term)
			case r.err == nil && r.success && r.term == term:
				acks++
			}
			if acks < need && answered == len(others) {
				return fmt.Errorf("%w: %d of %d voters confirmed term %d", ErrNotLeader, acks, voters, term)
			}
		case <-bound.C:
			return fmt.Errorf("%w: a majority of voters did not confirm term %d within %v", ErrNotLeader, term, s.cfg.HeartbeatTimeout)
		case <-s.stop:
			return ErrClosed
		}
	}
	s.confirmed(start)
	return nil
}

// probe sends this replica's confirmation heartbeats to one voter, one at a time: a round
// that finds a heartbeat in flight waits for the next one, which starts after the round
// did (an answer to an older heartbeat proves nothing about the round), so a voter that
// does not answer holds one goroutine, not one per round.
type probe struct {
	busy    bool
	waiting []probeWait
}

type probeWait struct {
	term    uint64
	replies chan<- probeReply
}

type probeReply struct {
	term    uint64 // the voter's term when it answered
	success bool
	err     error
}

// send asks voter sv to answer a heartbeat of term that starts after this call.
func (c *confirmer) send(sv raft.Server, term uint64, replies chan<- probeReply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probes == nil {
		c.probes = map[raft.ServerID]*probe{}
	}
	p := c.probes[sv.ID]
	if p == nil {
		p = &probe{}
		c.probes[sv.ID] = p
	}
	p.waiting = append(p.waiting, probeWait{term: term, replies: replies})
	if p.busy {
		return
	}
	if !c.s.trackProbe() {
		for _, w := range p.waiting {
			w.replies <- probeReply{err: ErrClosed}
		}
		p.waiting = nil
		return
	}
	p.busy = true
	go c.heartbeats(sv, p)
}

// heartbeats sends heartbeats to sv while rounds wait for one, each answering the rounds
// that were waiting when it was sent.
func (c *confirmer) heartbeats(sv raft.Server, p *probe) {
	defer c.s.wg.Done()
	defer c.s.probing.Done()
	for {
		c.mu.Lock()
		batch := p.waiting
		p.waiting = nil
		if len(batch) == 0 {
			p.busy = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		term := batch[len(batch)-1].term // the newest round's; older rounds have ended
		r := c.heartbeat(sv, term)
		for _, w := range batch {
			w.replies <- r // buffered for every voter of the round
		}
	}
}

// heartbeat sends one AppendEntries of term without entries to sv, as raft's own
// heartbeats are (replication.go, heartbeat), bounded by the transport's I/O timeout.
func (c *confirmer) heartbeat(sv raft.Server, term uint64) probeReply {
	s := c.s
	self := s.transport.EncodePeer(raft.ServerID(s.cfg.NodeID), s.transport.LocalAddr())
	req := raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(s.cfg.NodeID), Addr: self},
		Term:      term,
		//lint:ignore SA1019 raft's own heartbeats still set Leader beside RPCHeader.Addr (replication.go), and this one must look like them to every follower
		Leader: self,
	}
	var resp raft.AppendEntriesResponse
	if err := s.transport.AppendEntries(sv.ID, sv.Address, &req, &resp); err != nil {
		return probeReply{err: err}
	}
	return probeReply{term: resp.Term, success: resp.Success}
}

// trackProbe registers a confirmation heartbeat's goroutine with the replica's wait group
// and counts it in probing, under the close lock, unless the replica is closing: once
// Close has set closed, no heartbeat is added while drainProbes waits for those in flight
// (a WaitGroup must not grow from zero while it is waited on).
func (s *Shard) trackProbe() bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	s.probing.Add(1)
	return true
}

// monotonic is the time since the replica opened, from the monotonic clock: a pause of
// the process counts, a wall-clock jump does not.
func (s *Shard) monotonic() time.Duration {
	if s.cfg.sinceOpen != nil {
		return s.cfg.sinceOpen()
	}
	return time.Since(s.opened0)
}

// confirmed records that a round begun at start passed, and publishes readiness.
func (s *Shard) confirmed(start time.Duration) {
	for {
		old := s.confirmedAt.Load()
		if int64(start) <= old || s.confirmedAt.CompareAndSwap(old, int64(start)) {
			break
		}
	}
	s.publishReady()
}

// deposed records that a voter answered in a term after the leader term: this replica no
// longer leads in it, whatever raft has noticed yet.
func (s *Shard) deposed(term uint64) {
	if s.leaderTerm.Load() == term {
		s.caughtUp.Store(false)
	}
	s.publishReady()
}

// probeDrain bounds how long Close waits for confirmation heartbeats in flight: a peer
// that answers within it is not left reading a connection closed under its answer.
const probeDrain = 200 * time.Millisecond

// drainProbes waits, up to probeDrain, until no confirmation heartbeat is in flight (Close,
// after no new one can start). Its waiter is one of the replica's goroutines: Close waits
// for it with the others.
func (s *Shard) drainProbes() {
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.probing.Wait()
		close(done)
	}()
	t := time.NewTimer(probeDrain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// onlyVoter reports whether id is the one voter of configuration c.
func onlyVoter(c raft.Configuration, id raft.ServerID) bool {
	var voters int
	var self bool
	for _, sv := range c.Servers {
		if sv.Suffrage == raft.Voter {
			voters++
			self = self || sv.ID == id
		}
	}
	return voters == 1 && self
}
