package client

import (
	"context"
	"net/url"
	"strconv"
)

// AdminShardRecoveryPath plans (GET ?shard=&node=) or runs (POST) the recovery of a shard
// that lost a majority of its voters, on the survivor's admin listener.
const AdminShardRecoveryPath = "/v1/admin/cluster/shard-recovery"

// ShardRecoveryMember is one member of the shard's configuration as the survivor knows it.
type ShardRecoveryMember struct {
	ID         string `json:"id"`
	Voter      bool   `json:"voter"`
	Registered bool   `json:"registered"`
}

// ShardRecoveryPlan says what a recovery from the survivor Node keeps and may lose.
type ShardRecoveryPlan struct {
	Shard int    `json:"shard"`
	Node  string `json:"node"` // the survivor
	// Term is the survivor's Raft term.
	Term uint64 `json:"term"`
	// AppliedIndex is the last log entry the survivor applied, AppliedVersion the shard
	// version of the last command among them.
	AppliedIndex   uint64 `json:"applied_index"`
	AppliedVersion uint64 `json:"applied_version"`
	// CommitIndex is the last entry the survivor knows committed; entries after it, up to
	// LastIndex, survive too and become committed.
	CommitIndex uint64 `json:"commit_index"`
	// LastIndex is the survivor's last log entry: what other members committed after it
	// is lost, acknowledged writes included.
	LastIndex uint64 `json:"last_index"`
	// Members is the configuration the survivor knows; all but the survivor are dropped.
	Members []ShardRecoveryMember `json:"members"`
	// Epoch is the recovery epoch the shard's record will carry.
	Epoch uint64 `json:"epoch"`
}

// ShardRecovery is a recovery done: its plan and what the survivor's replica holds (its
// last log index and term, and the shard version of its last command).
type ShardRecovery struct {
	Plan      ShardRecoveryPlan `json:"plan"`
	Recovered struct {
		LastIndex uint64 `json:"last_index"`
		LastTerm  uint64 `json:"last_term"`
		Version   uint64 `json:"version"`
	} `json:"recovered"`
}

// PlanShardRecovery asks the node a is built on (its admin listener), which must be node,
// what a recovery of shard from it would keep and may lose; it changes nothing.
//
// Errors (*Error): InvalidState for an embedded node (wrapped with ErrNotCluster);
// NotFound for a shard the cluster does not have (details.field "shard"), or wrapped with
// ErrNoAdminRoutes when the URL serves no admin route; InvalidArguments, details.rule
// "not_survivor", when node is not this node or not a voter of the shard; InvalidState,
// details.reason "has_quorum", when the shard has a leader or a majority of registered
// voters; RoutingUnavailable (retryable) when etcd does not answer.
func (a *Admin) PlanShardRecovery(ctx context.Context, shard int, node string) (*ShardRecoveryPlan, error) {
	q := url.Values{"shard": {strconv.Itoa(shard)}, "node": {node}}
	out, err := getJSON[struct {
		Plan ShardRecoveryPlan `json:"plan"`
	}](ctx, a.tr, a.tr.base+AdminShardRecoveryPath+"?"+q.Encode())
	if err != nil {
		return nil, recoveryError(a, err)
	}
	return &out.Plan, nil
}

// RecoverShard makes node, the survivor a is built on, the only voter of shard: what its
// log holds survives, the cluster's controller then adds replicas back. Errors: as
// PlanShardRecovery's (the checks are made again). Never sent twice by the client's retry.
func (a *Admin) RecoverShard(ctx context.Context, shard int, node string) (*ShardRecovery, error) {
	var out ShardRecovery
	err := a.tr.postTool(ctx, a.tr.base+AdminShardRecoveryPath, map[string]any{"shard": shard, "node": node}, &out, notReplayable)
	if err != nil {
		return nil, recoveryError(a, err)
	}
	return &out, nil
}

// recoveryError classifies the route's answer as notCluster does.
func recoveryError(a *Admin, err error) error {
	return notCluster(a, AdminShardRecoveryPath, err)
}
