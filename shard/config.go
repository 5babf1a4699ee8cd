package shard

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/mux"
)

// Config configures one shard replica.
type Config struct {
	// Dir holds the shard's Raft log (Dir/raft.db) and snapshots (Dir/snapshots). Created if
	// missing.
	Dir string
	// NodeID is the Raft server id of this replica.
	NodeID string
	// FSM options; equal on every replica.
	FSM meta.Options
	// SnapshotInterval is how often Raft checks whether to snapshot. Default 2m.
	SnapshotInterval time.Duration
	// SnapshotThreshold is how many log entries since the last snapshot trigger one.
	// Default 8192.
	SnapshotThreshold uint64
	// TickInterval is how long the leader lets a shard idle before it proposes a Tick so
	// that command time (leases, retention) still advances. Default 10s.
	TickInterval time.Duration
	// ApplyTimeout bounds a proposal when the caller's context has no deadline. Default 30s.
	ApplyTimeout time.Duration
	// MinFreeBytes is the free space, in bytes, the disk under Dir must keep: below it
	// proposals fail with ErrStorageFull before reaching the log (a log write that fails
	// leaves hashicorp/raft stepping down, and a failed term write panics it). 0 means
	// DefaultMinFreeBytes (64 MiB); negative disables the check.
	MinFreeBytes int64
	// Logger receives Raft's warnings and errors. Default: slog.Default().
	Logger *slog.Logger
	// OnReady, when set, is called (from the replica's leadership goroutine; it must not
	// block) each time this replica becomes a ready leader or stops being one, with the
	// new readiness. A cluster node publishes its leader hint from it at once instead of
	// waiting for a poll.
	OnReady func(ready bool)
	// Clock returns the leader's wall time for stamping commands. Default time.Now.
	Clock func() time.Time
	// Metrics receives the replica's latency observations (Metrics.Replica). Nil: none.
	Metrics *ReplicaMetrics

	// Cluster mode (docs/architecture.md#replication-and-placement). With Peer nil the replica is the embedded default: a
	// single voter on an in-memory transport, bootstrapped on first open.

	// Peer carries the replica's Raft traffic: the replica serves stream
	// RaftStream(ShardID) on it, and its address in the group is Peer.Addr() (the node's
	// advertised peer address). NodeID must then be the node's UUID from its data
	// directory, so a node that lost its disk cannot rejoin as its old self.
	Peer *mux.Mux
	// ShardID names the shard in the cluster. Required with Peer.
	ShardID string
	// Bootstrap lists the initial voters of a new group, this replica included; every
	// initial member passes the same list. Used only while Dir holds no Raft state. Empty
	// with Peer: the replica starts without a configuration and waits until a leader adds
	// it (AddNonvoter), receiving the log or a snapshot.
	Bootstrap []Member
	// HeartbeatTimeout: a follower that has not heard from the leader for a random time
	// between one and two HeartbeatTimeouts starts an election; the leader heartbeats ten
	// times per HeartbeatTimeout. Default 500ms in cluster mode: a LAN margin that still
	// fails over in about a second (TestFailoverTime on loopback: median 0.8–0.9s; with
	// 200ms/200ms/100ms, the loopback tuning of the tests, 0.4–0.5s). 200ms embedded.
	HeartbeatTimeout time.Duration
	// ElectionTimeout: how long a candidate waits for votes before it retries (randomized
	// up to twice as long). At least HeartbeatTimeout. Default 500ms in cluster mode, 200ms
	// embedded.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout: a leader that has not reached a quorum for this long steps down,
	// so a partitioned leader stops accepting writes. At most HeartbeatTimeout. Default
	// 250ms in cluster mode, 100ms embedded.
	LeaderLeaseTimeout time.Duration
	// TrailingLogs is how many log entries a snapshot leaves behind, so that a follower a
	// little behind catches up from the log instead of a snapshot install. Default 10240.
	TrailingLogs uint64
	// TransportTimeout is the I/O deadline of one Raft RPC between nodes (raft scales it
	// up for snapshot installs). Default 5s.
	TransportTimeout time.Duration

	// inmem, set by this package's tests only, runs the replica without Peer in an
	// in-memory group of several replicas (hashicorp/raft's InmemTransport).
	inmem *inmemMember
	// sinceOpen, set by this package's tests only, replaces the monotonic clock readiness
	// is measured with (a test advances it to model a pause of the process).
	sinceOpen func() time.Duration
	// beforeApply, set by this package's tests only, runs in raft's FSM goroutine before
	// each log entry is applied (a test holds it there to model a slow apply).
	beforeApply func(*raft.Log)
}

// inmemMember is one replica's place in an in-memory test group: its transport (an
// *raft.InmemTransport, or a wrapper of one) and the group's initial voters.
type inmemMember struct {
	transport raft.Transport
	voters    []raft.Server
}

// Member is one server of a shard's Raft group.
type Member struct {
	// ID is the Raft server id: the node's UUID.
	ID string
	// Address is the node's advertised peer address (its mux.Mux).
	Address string
	// Voter: counts for elections and commits. A non-voter only receives the log.
	Voter bool
}

// RaftStream is the mux stream that carries the Raft traffic of shard id.
func RaftStream(shardID string) string { return "raft/" + shardID }

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("shard: Dir is required")
	}
	if c.Peer == nil {
		if c.ShardID != "" || len(c.Bootstrap) > 0 {
			return errors.New("shard: ShardID and Bootstrap need Peer (cluster mode)")
		}
	} else {
		if c.NodeID == "" {
			return errors.New("shard: NodeID (the node's UUID) is required in cluster mode")
		}
		if c.ShardID == "" {
			return errors.New("shard: ShardID is required in cluster mode")
		}
		if err := checkMembers(c.Bootstrap, c.NodeID, c.Peer.Addr().String()); err != nil {
			return err
		}
	}
	if c.HeartbeatTimeout < 0 || c.ElectionTimeout < 0 || c.LeaderLeaseTimeout < 0 {
		return errors.New("shard: negative Raft timeout")
	}
	if c.HeartbeatTimeout > 0 && c.ElectionTimeout > 0 && c.ElectionTimeout < c.HeartbeatTimeout {
		return fmt.Errorf("shard: ElectionTimeout %v is shorter than HeartbeatTimeout %v", c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.HeartbeatTimeout > 0 && c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return fmt.Errorf("shard: LeaderLeaseTimeout %v is longer than HeartbeatTimeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	return nil
}

func checkMembers(ms []Member, self, selfAddr string) error {
	if len(ms) == 0 {
		return nil
	}
	seen := map[string]bool{}
	found := false
	for _, m := range ms {
		if m.ID == "" || m.Address == "" {
			return fmt.Errorf("shard: bootstrap member %+v needs an ID and an Address", m)
		}
		if seen[m.ID] {
			return fmt.Errorf("shard: bootstrap member %q listed twice", m.ID)
		}
		seen[m.ID] = true
		if !m.Voter {
			return fmt.Errorf("shard: bootstrap member %q must be a voter (non-voters join later)", m.ID)
		}
		if m.ID == self {
			found = true
			if m.Address != selfAddr {
				return fmt.Errorf("shard: bootstrap lists this node at %s, but its peer address is %s", m.Address, selfAddr)
			}
		}
	}
	if !found {
		return fmt.Errorf("shard: bootstrap members do not include this node %q", self)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.MinFreeBytes == 0 {
		c.MinFreeBytes = DefaultMinFreeBytes
	}
	if c.SnapshotInterval <= 0 {
		c.SnapshotInterval = 2 * time.Minute
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TickInterval <= 0 {
		c.TickInterval = 10 * time.Second
	}
	if c.ApplyTimeout <= 0 {
		c.ApplyTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.NodeID == "" && c.Peer == nil {
		c.NodeID = "node-1"
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.TransportTimeout <= 0 {
		c.TransportTimeout = 5 * time.Second
	}
	hb, el, lease := 500*time.Millisecond, 500*time.Millisecond, 250*time.Millisecond
	if c.Peer == nil {
		// A single voter elects itself as soon as its election timer fires.
		hb, el, lease = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = hb
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = max(el, c.HeartbeatTimeout)
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = min(lease, c.HeartbeatTimeout)
	}
}
