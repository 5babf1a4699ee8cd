package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// ErrUnknownServer: a membership change names a server that is not in the group.
var ErrUnknownServer = errors.New("shard: no such server in the group")

// Bootstrap makes this replica, opened in cluster mode without Raft state, found its group
// with members as the initial voters (this node included; every initial member passes the
// same list). It is the runtime form of Config.Bootstrap, for a controller that decides
// after the replica opened. Idempotent: a replica that already has state (bootstrapped, or
// added by a leader) returns nil and changes nothing.
func (s *Shard) Bootstrap(ctx context.Context, members []Member) error {
	if s.cfg.Peer == nil {
		return errors.New("shard: Bootstrap needs cluster mode (Config.Peer)")
	}
	if len(members) == 0 {
		return errors.New("shard: Bootstrap needs at least one member")
	}
	if err := checkMembers(members, s.cfg.NodeID, s.cfg.Peer.Addr().String()); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	servers := make([]raft.Server, 0, len(members))
	for _, m := range members {
		servers = append(servers, raft.Server{ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Address), Suffrage: raft.Voter})
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	f := s.raft.BootstrapCluster(raft.Configuration{Servers: servers})
	s.closeMu.RUnlock()
	if err := f.Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return mapRaftError(err)
	}
	return nil
}

// Membership changes run on the leader (ErrNotLeader elsewhere) and return once the new
// configuration is committed. Raft allows one uncommitted configuration at a time; a
// change that arrives during another waits for it. The controller that issues them is
// fenced by its etcd election key (docs/architecture.md#replication-and-placement); Raft itself does not expose the index
// of the latest configuration, so the changes are unconditional.

// AddNonvoter adds server id at its advertised peer address as a non-voter: it receives
// the log (or a snapshot) but neither votes nor counts for commits, so a new replica
// cannot stall the group while it catches up. Adding a server that is already a member
// only updates its address.
func (s *Shard) AddNonvoter(ctx context.Context, id, addr string) error {
	if id == "" || addr == "" {
		return errors.New("shard: AddNonvoter needs a server id and address")
	}
	return s.changeMembers(ctx, func(timeout time.Duration) raft.IndexFuture {
		return s.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	})
}

// PromoteToVoter gives the non-voter id a vote (a no-op for a voter). Promote only a
// replica that has caught up (its Stats().AppliedIndex near the leader's CommitIndex):
// until it has, a quorum that needs it cannot commit. ErrUnknownServer if id is not a
// member.
func (s *Shard) PromoteToVoter(ctx context.Context, id string) error {
	members, err := s.Configuration()
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.ID != id {
			continue
		}
		if m.Voter {
			return nil
		}
		return s.changeMembers(ctx, func(timeout time.Duration) raft.IndexFuture {
			return s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(m.Address), 0, timeout)
		})
	}
	return fmt.Errorf("%w: %q", ErrUnknownServer, id)
}

// RemoveServer removes server id from the group (a no-op if it is not a member). A
// removed replica shuts its Raft down: its owner closes it and deletes its directory.
// Removing the leader itself makes it step down once the change commits; the others
// elect a new leader.
func (s *Shard) RemoveServer(ctx context.Context, id string) error {
	return s.changeMembers(ctx, func(timeout time.Duration) raft.IndexFuture {
		return s.raft.RemoveServer(raft.ServerID(id), 0, timeout)
	})
}

func (s *Shard) changeMembers(ctx context.Context, change func(timeout time.Duration) raft.IndexFuture) error {
	timeout := s.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return ErrTimeout
		}
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	f := change(timeout)
	s.closeMu.RUnlock()
	return awaitEntry(ctx, f, timeout)
}

// Configuration returns the group's latest configuration as this replica knows it (on
// the leader it may include a change not committed yet).
func (s *Shard) Configuration() ([]Member, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, mapRaftError(err)
	}
	servers := f.Configuration().Servers
	members := make([]Member, 0, len(servers))
	for _, sv := range servers {
		members = append(members, Member{ID: string(sv.ID), Address: string(sv.Address), Voter: sv.Suffrage == raft.Voter})
	}
	return members, nil
}

// Leader returns the server id and peer address of the leader this replica knows of, or
// empty strings when it knows none. A hint, not a promise: the leader may have changed.
func (s *Shard) Leader() (id, addr string) {
	a, i := s.raft.LeaderWithID()
	return string(i), string(a)
}

// LeaderChanged returns a channel closed the next time this replica learns of another
// leader, or loses the one it knew: a caller waiting on a call forwarded to the leader it
// knew gives up on it then (a frozen or deposed node may hold the call for as long as it
// stays stopped).
func (s *Shard) LeaderChanged() <-chan struct{} { return s.leaderMoved.wait() }

// notifier is a broadcast: wait returns a channel that the next broadcast closes.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) broadcast() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// TransferLeadership hands leadership to the most up-to-date voter and returns once that
// voter has been told to start its election (within about ElectionTimeout). A node that
// receives SIGTERM calls it for every shard it leads, so clients see a short handover
// instead of a heartbeat timeout. ErrNotLeader if this replica does not lead; an error if
// no other voter can take over.
func (s *Shard) TransferLeadership(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	f := s.raft.LeadershipTransfer()
	s.closeMu.RUnlock()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return mapRaftError(err)
		}
	case <-ctx.Done(): // raft ends the transfer on its own (an election timeout at most)
		return ctx.Err()
	}
	s.caughtUp.Store(false)
	s.publishReady()
	return nil
}
