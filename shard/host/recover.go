package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/internal/durable"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// Recovery of a shard that lost a majority of its voters (docs/runbook.md, "Recover a
// shard that lost a majority"): the operator names a survivor; this node, that survivor,
// closes its replica, rewrites it as the group's only voter (shard.Recover), opens it
// again (it elects itself), and makes itself the only voter of the shard's record in etcd
// with the next recovery epoch (control.RecoverRecord). The controller then adds replicas
// back on other live nodes as for any shard short of its replication; they start empty
// and install a snapshot.
//
// A replica directory records the epoch it belongs to (recoveryEpochFile). A node told to
// host a replica of a shard whose record has a newer epoch than its directory moves that
// directory aside before it opens the replica (alignEpoch): its log is of the group before
// the recovery, whose configuration still names the lost voters, and two such replicas
// could elect each other beside the recovered group.

// Errors of a recovery. Each refusal changes nothing.
var (
	// ErrNoSuchShard: the cluster has no shard of that number.
	ErrNoSuchShard = errors.New("host: no such shard")
	// ErrNotSurvivor: the node named is not this node (a recovery runs on the survivor), or
	// this node holds no replica of the shard, or its replica is not a voter.
	ErrNotSurvivor = errors.New("host: not a surviving voter of the shard")
	// ErrShardHasQuorum: the shard has a leader, or a majority of its voters are still
	// registered: recovering it would found a second group beside a working one.
	ErrShardHasQuorum = errors.New("host: the shard has a leader or a majority of live voters")
)

// recoveryEpochFile is the file, in a replica directory, naming the recovery epoch of
// the group the replica belongs to (absent: 0).
const recoveryEpochFile = "recovery-epoch"

// RecoveryMember is one member of the shard's configuration as the survivor knows it.
type RecoveryMember struct {
	ID    string `json:"id"`
	Voter bool   `json:"voter"`
	// Registered: the node is in the registry now (its lease is alive).
	Registered bool `json:"registered"`
}

// RecoveryPlan is what a recovery of Shard from Node would keep and may lose, from the
// survivor's replica (raft indexes; a shard version is the index of a command).
type RecoveryPlan struct {
	Shard int    `json:"shard"`
	Node  string `json:"node"`
	// Term is the survivor's Raft term; AppliedIndex, AppliedVersion the last entry and
	// command it applied; CommitIndex the last entry it knows committed; LastIndex the
	// last entry in its log. Everything up to LastIndex survives: the entries after
	// CommitIndex were never known committed here (a write answered with an unknown
	// outcome may be among them) and become committed.
	Term           uint64 `json:"term"`
	AppliedIndex   uint64 `json:"applied_index"`
	AppliedVersion uint64 `json:"applied_version"`
	CommitIndex    uint64 `json:"commit_index"`
	LastIndex      uint64 `json:"last_index"`
	// Members is the configuration the survivor holds; every other member is dropped.
	// Entries the others committed after LastIndex are lost: acknowledged writes among
	// them are gone.
	Members []RecoveryMember `json:"members"`
	// Epoch is the recovery epoch the shard's record will carry.
	Epoch uint64 `json:"epoch"`
}

// RecoveryResult is a recovery done: the plan it followed and what the survivor's
// replica holds (shard.Recovered).
type RecoveryResult struct {
	RecoveryPlan
	Recovered shard.Recovered `json:"recovered"`
}

// recoverTimeout bounds the etcd reads and the record write of a recovery.
const recoverTimeout = 10 * time.Second

// Recovery recovers the shards that lost a majority of their voters on this node, their
// survivor (see the top of this file), and aligns a replica directory with its shard's
// recovery epoch before the replica opens. It holds the node's replicas, whose recovered
// one it closes and reopens, and the cluster's state, whose control plane holds the
// shards' records. Invariant: a shard is recovered only while it has no leader, no leader
// hint and no majority of registered voters, and only on a voter of its group. On the
// embedded default, which has one voter, Plan and Recover answer ErrNotCluster.
type Recovery struct {
	self     string // this node's id
	log      *slog.Logger
	cluster  *clusterState // nil on the embedded default
	replicas *replicaSet
}

// Recovery returns the host's shard recovery.
func (h *Host) Recovery() *Recovery { return h.recovery }

// Plan checks that shard id may be recovered from node, which must be this node, and says
// what it would keep and may lose; it changes nothing. Errors: ErrNotCluster;
// ErrNoSuchShard; ErrNotSurvivor; ErrShardHasQuorum; control.ErrControlPlaneUnavailable.
func (rc *Recovery) Plan(ctx context.Context, id int, node string) (RecoveryPlan, error) {
	p, _, err := rc.plan(ctx, id, node)
	return p, err
}

func (rc *Recovery) plan(ctx context.Context, id int, node string) (RecoveryPlan, int64, error) {
	if rc.cluster == nil {
		return RecoveryPlan{}, 0, ErrNotCluster
	}
	ctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	plane := rc.cluster.cfg.Plane
	cl, err := plane.Cluster(ctx)
	if err != nil {
		return RecoveryPlan{}, 0, err
	}
	if id < 0 || id >= cl.Shards {
		return RecoveryPlan{}, 0, control.Refuse(ErrNoSuchShard, "no such shard %d: the cluster has shards 0 to %d", id, cl.Shards-1)
	}
	if node != rc.self {
		return RecoveryPlan{}, 0, control.Refuse(ErrNotSurvivor, "this node is %s, not %s: run the recovery on the survivor's admin listener", rc.self, node)
	}
	r := rc.replicas.get(id)
	if r == nil {
		return RecoveryPlan{}, 0, control.Refuse(ErrNotSurvivor, "node %s holds no open replica of shard %d", node, id)
	}
	members, err := r.Configuration()
	if err != nil {
		return RecoveryPlan{}, 0, err
	}
	st := r.Stats()
	if st.LeaderID != "" || st.State == "Leader" {
		return RecoveryPlan{}, 0, control.Refuse(ErrShardHasQuorum, "shard %d may still have a majority of live voters: it has a leader (%s)", id, st.LeaderID)
	}
	hints, err := plane.LeaderHints(ctx)
	if err != nil {
		return RecoveryPlan{}, 0, err
	}
	if hint, ok := hints[id]; ok {
		return RecoveryPlan{}, 0, control.Refuse(ErrShardHasQuorum, "shard %d may still have a majority of live voters: node %s claims its leadership (term %d); wait until its claim lapses",
			id, hint.Node, hint.Term)
	}
	nodes, _, err := plane.Nodes(ctx)
	if err != nil {
		return RecoveryPlan{}, 0, err
	}
	plan := RecoveryPlan{Shard: id, Node: node, Term: st.Term, AppliedIndex: st.AppliedIndex, AppliedVersion: st.AppliedVersion,
		CommitIndex: st.CommitIndex, LastIndex: st.LastIndex}
	voters, live, self := 0, []string{}, false
	for _, m := range members {
		_, registered := nodes[m.ID]
		plan.Members = append(plan.Members, RecoveryMember{ID: m.ID, Voter: m.Voter, Registered: registered})
		if m.Voter {
			voters++
			if registered {
				live = append(live, m.ID)
			}
			self = self || m.ID == node
		}
	}
	if !self {
		return RecoveryPlan{}, 0, control.Refuse(ErrNotSurvivor, "node %s is not a voter of shard %d", node, id)
	}
	if len(live) > voters/2 {
		return RecoveryPlan{}, 0, control.Refuse(ErrShardHasQuorum, "shard %d may still have a majority of live voters: %d of its %d voters are registered (%s); wait until the lost nodes' registrations lapse",
			id, len(live), voters, strings.Join(live, ", "))
	}
	sets, err := plane.ReplicaSets(ctx)
	if err != nil {
		return RecoveryPlan{}, 0, err
	}
	rec := sets[id]
	plan.Epoch = rec.Epoch + 1
	if have := readEpoch(rc.replicas.dir(id)); have >= plan.Epoch {
		plan.Epoch = have + 1
	}
	return plan, rec.Revision, nil
}

// Recover recovers shard id from node, this node (see the top of this file), after the
// checks of Plan, which it repeats. Its answer says what the survivor's replica holds. A
// failure before the replica was rewritten reopens it as it was; one after leaves a
// replica that is its group's only voter, and running Recover again finishes the record.
// Errors: Plan's; shard.Recover's; control.ErrConflict when the record kept changing.
func (rc *Recovery) Recover(ctx context.Context, id int, node string) (RecoveryResult, error) {
	plan, rev, err := rc.plan(ctx, id, node)
	if err != nil {
		return RecoveryResult{}, err
	}
	if !rc.replicas.closeForRecovery(id) {
		return RecoveryResult{}, control.Refuse(ErrNotSurvivor, "the replica of shard %d is closed or being recovered", id)
	}
	dir := rc.replicas.dir(id)
	err = writeEpoch(dir, plan.Epoch)
	var rec shard.Recovered
	if err == nil {
		rec, err = shard.Recover(rc.replicas.config(id))
	}
	if oerr := rc.replicas.reopenAfterRecovery(id); oerr != nil && err == nil {
		err = oerr
	}
	if err != nil {
		return RecoveryResult{}, fmt.Errorf("recover shard %d: %w", id, err)
	}
	rc.log.Warn("shard recovered from a lost majority: this node is its only voter", "shard", id,
		"epoch", plan.Epoch, "last_index", rec.LastIndex, "version", rec.Version)
	wctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	plane := rc.cluster.cfg.Plane
	for {
		err = plane.RecoverRecord(wctx, id, node, plan.Epoch, rev)
		if !errors.Is(err, control.ErrConflict) {
			break
		}
		// The controller rewrote the record meanwhile (from the old configuration): read
		// it again and write over it; the replica is the only voter already.
		sets, rerr := plane.ReplicaSets(wctx)
		if rerr != nil {
			err = rerr
			break
		}
		rev = sets[id].Revision
	}
	if err != nil {
		return RecoveryResult{}, fmt.Errorf("recover shard %d: the replica is its only voter, the record is not written yet (run the recovery again): %w", id, err)
	}
	return RecoveryResult{RecoveryPlan: plan, Recovered: rec}, nil
}

// readEpoch returns the recovery epoch recorded in the replica directory dir (0 when
// none is).
func readEpoch(dir string) uint64 {
	b, err := os.ReadFile(filepath.Join(dir, recoveryEpochFile))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func writeEpoch(dir string, epoch uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, recoveryEpochFile), []byte(strconv.FormatUint(epoch, 10)+"\n"), 0o644)
}

// alignEpoch prepares the directory of shard id's replica, not open, for a record of
// recovery epoch epoch: a directory of an older epoch that holds Raft state is moved
// aside (to shards/<id>.before-epoch-<epoch>, replacing an earlier one) so the replica
// starts empty and receives the recovered group's snapshot; then the directory records
// epoch.
func (rc *Recovery) alignEpoch(id int, epoch uint64) error {
	dir := rc.replicas.dir(id)
	if epoch == 0 || readEpoch(dir) >= epoch {
		return nil
	}
	if shard.HasState(dir) {
		aside := fmt.Sprintf("%s.before-epoch-%d", dir, epoch)
		if err := os.RemoveAll(aside); err != nil {
			return err
		}
		if err := os.Rename(dir, aside); err != nil {
			return err
		}
		rc.log.Warn("replica directory predates the shard's recovery: moved aside, the replica starts empty",
			"shard", id, "epoch", epoch, "moved_to", aside)
	}
	return writeEpoch(dir, epoch)
}
