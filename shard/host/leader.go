package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// leaderCalls runs calls on the leader of a shard: on this node's replica when it is the
// ready leader, else on the leader another node's replica is, over the peer port, waiting
// up to leaderWait while the shard has no ready leader known. Only a call that applied
// nothing is tried again (an answer that there was no leader, or none any more); a command
// whose forwarded attempt has an unknown outcome only when it carries a request id.
// Every command it proposes passed the cluster-version gate (versions.go).
type leaderCalls struct {
	self     string // this node's id
	replicas *replicaSet
	// cluster and peers are nil in the embedded default: it has no other node.
	cluster *clusterState
	peers   *peerClient
	// readIndexes batches the read-index calls of follower reads (nil with peers).
	readIndexes *readIndexBatcher
}

// newLeaderCalls returns the leader calls of this node (self) over its replicas; cluster
// and peers are nil in the embedded default. A follower read's read-index call ends when
// the leader moves (forwardContext).
func newLeaderCalls(self string, replicas *replicaSet, cluster *clusterState, peers *peerClient) *leaderCalls {
	l := &leaderCalls{self: self, replicas: replicas, cluster: cluster, peers: peers}
	if peers != nil {
		l.readIndexes = newReadIndexBatcher(func(ctx context.Context, addr string, id int) (uint64, error) {
			ctx, cancel := l.forwardContext(ctx, id)
			defer cancel()
			return peers.readIndex(ctx, addr, id)
		})
	}
	return l
}

// leaderWait bounds how long a call waits for its shard to have a known, ready leader (an
// election in progress) before it answers a retryable error.
const leaderWait = 3 * time.Second

// leaderPoll is how often a call waiting for a leader looks again.
const leaderPoll = 50 * time.Millisecond

// proposeRetryWindow bounds how long propose keeps retrying a command with a request id
// whose forwarded attempt had an unknown outcome (a leader lost mid-call).
const proposeRetryWindow = 10 * time.Second

// propose proposes on shard id's leader, waiting up to leaderWait for one. A forwarded
// attempt whose outcome is unknown (the leader was reached, then lost) is tried again when
// the command carries a request id: the FSM answers a repeat of an applied command with
// its stored result (the dedupe record), so the retry cannot apply it twice, and the
// caller gets an answer instead of "it may still apply" across a failover.
func (l *leaderCalls) propose(ctx context.Context, id int, hd meta.Header, b meta.Body) (meta.Result, error) {
	if err := l.gate(id, b); err != nil {
		return meta.Result{}, err
	}
	deadline := time.Now().Add(proposeRetryWindow)
	for {
		var res meta.Result
		forwarded := false
		err := l.onLeader(ctx, id, func(r *shard.Shard) (err error) {
			res, err = r.Propose(ctx, hd, b)
			return err
		}, func(addr string) (err error) {
			forwarded = true
			fctx, cancel := l.forwardContext(ctx, id)
			defer cancel()
			res, err = l.peers.propose(fctx, addr, id, hd, b)
			return err
		})
		if !forwarded || hd.RequestID == "" || !errors.Is(err, shard.ErrTimeout) || time.Now().After(deadline) || ctx.Err() != nil {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(leaderPoll):
		}
	}
}

// forwardContext returns ctx, ended early when this node's replica of shard id learns of
// a leader change: a call forwarded to the leader it knew stops waiting on a node that may
// be frozen (SIGSTOP, a long GC pause: it still accepts connections) or deposed. A command
// cut off so has an unknown outcome (propose retries it when it carries a request id); a
// read index, none. The caller calls cancel.
func (l *leaderCalls) forwardContext(ctx context.Context, id int) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	r := l.replicas.get(id)
	if r == nil {
		return ctx, cancel
	}
	moved := r.LeaderChanged()
	go func() {
		select {
		case <-moved:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// readView returns a linearizable view of shard id from the local replica: directly when
// it is the ready leader, else after the leader's read index (one call per batch of
// concurrent reads, readindex.go) is applied here.
func (l *leaderCalls) readView(ctx context.Context, id int) (*meta.View, error) {
	var v *meta.View
	err := l.onLeader(ctx, id, func(r *shard.Shard) (err error) {
		v, err = r.ReadView(ctx)
		return err
	}, func(addr string) error {
		r := l.replicas.get(id)
		if r == nil {
			return fmt.Errorf("%w: no replica of shard %d on this node", shard.ErrNotLeader, id)
		}
		index, err := l.readIndexes.get(ctx, addr, id)
		if err != nil {
			return err
		}
		v, err = r.ReadViewAt(ctx, index)
		return err
	})
	return v, err
}

// onLeader runs local when this node's replica of shard id is the ready leader, remote
// with the leader's peer address when another node leads, and waits (up to leaderWait)
// while no leader is known or the call met a replica that just stopped leading: those
// answers applied nothing. Any other error is returned as is.
func (l *leaderCalls) onLeader(ctx context.Context, id int, local func(*shard.Shard) error, remote func(addr string) error) error {
	deadline := time.Now().Add(leaderWait)
	for {
		var err error
		r := l.replicas.get(id)
		if r != nil && r.Ready() {
			err = local(r)
		} else if node, addr := l.leaderOf(id); node != "" && node != l.self && l.peers != nil && addr != "" {
			err = remote(addr)
		} else if l.peers == nil && r == nil {
			return shard.ErrClosed
		} else {
			err = fmt.Errorf("%w: shard %d has no ready leader right now", shard.ErrNotLeader, id)
		}
		if err == nil || !errors.Is(err, shard.ErrNotLeader) || l.replicas.closing.Load() {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(leaderPoll):
		}
	}
}

// leaderOf returns the node id and peer address of shard id's leader as this node knows
// it: its own replica's view first, then (cluster) the leader hint and the registry.
func (l *leaderCalls) leaderOf(id int) (node, addr string) {
	if r := l.replicas.get(id); r != nil {
		if n, a := r.Leader(); n != "" {
			return n, a
		}
	}
	if l.cluster == nil {
		return "", ""
	}
	return l.cluster.hintedLeader(id)
}
