package host

import (
	"fmt"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// The cluster-version gate (meta/clusterversion.go): a command is proposed only to a shard
// whose every member runs a binary that applies its op, so no replica answers it with
// "unknown op" while the others apply it. Members are the Raft configuration of this
// node's replica of the shard; a member's version is what it last registered in etcd
// (kept while its registration lapses, as during its restart); a member never seen
// registered counts as version 1.

// ErrUpgradeInProgress is the gate's refusal: a member of the shard runs an older release
// that does not know the command. Retryable: it passes once every member is upgraded.
var ErrUpgradeInProgress = &meta.Error{Code: meta.CodeUpgradeInProgress,
	Message: "the cluster is being upgraded: a replica of this shard runs an older release that cannot apply this command; retry once every node runs the new release"}

// storeNodes publishes a registry listing and remembers each node's cluster version.
func (cs *clusterState) storeNodes(ns control.NodeSet) {
	cs.nodes.Store(&ns)
	for id, info := range ns {
		cs.versions.Store(id, max(1, info.ClusterVersion))
	}
}

// nodeVersion is the cluster version node last registered with (1 when never seen).
func (cs *clusterState) nodeVersion(node string) int {
	if v, ok := cs.versions.Load(node); ok {
		return v.(int)
	}
	return 1
}

// everyNodeAtLeast reports whether every registered node publishes cluster version v.
func (cs *clusterState) everyNodeAtLeast(v int) bool {
	ns := cs.nodes.Load()
	if ns == nil {
		return false
	}
	for id := range *ns {
		if cs.nodeVersion(id) < v {
			return false
		}
	}
	return true
}

// gate refuses b with ErrUpgradeInProgress when a member of shard id runs a release older
// than b needs (meta.CommandVersion: its op, and the fields it sets). The embedded
// default has one member, this binary: always passes.
func (l *leaderCalls) gate(id int, b meta.Body) error {
	need := meta.CommandVersion(b)
	if need <= 1 || l.cluster == nil {
		return nil
	}
	if need > meta.ClusterVersion {
		return fmt.Errorf("host: a command of op %d needs cluster version %d, this binary applies %d", b.Op(), need, meta.ClusterVersion)
	}
	r := l.replicas.get(id)
	if r == nil {
		return fmt.Errorf("%w: no replica of shard %d on this node", shard.ErrNotLeader, id)
	}
	members, err := r.Configuration()
	if err != nil {
		return fmt.Errorf("%w: shard %d configuration: %v", shard.ErrNotLeader, id, err)
	}
	for _, m := range members {
		if l.cluster.nodeVersion(m.ID) < need {
			return ErrUpgradeInProgress
		}
	}
	return nil
}
