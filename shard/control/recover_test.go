package control

import (
	"errors"
	"slices"
	"testing"
)

func TestPlanKeepsTheRecordsRecoveryEpoch(t *testing.T) {
	st := State{Shards: 1, Replication: 2, Nodes: live("a", "b"), MaxPromoteLag: 1,
		Records: map[int]ReplicaSet{0: {Voters: []string{"a"}, Epoch: 3, Revision: 42}},
		Status:  map[int]ShardStatus{0: cfg("a", "a", nil)}}
	acts := Plan(st)
	if len(acts) == 0 || acts[0].Kind != ActionRecord || acts[0].Set.Epoch != 3 {
		t.Fatalf("Plan = %+v; want a record that keeps epoch 3", acts)
	}
}

func TestRecoverRecordMakesTheSurvivorTheOnlyVoterOnlyAtTheRevisionRead(t *testing.T) {
	e := startEtcd(t, 1)
	p := newPlane(t, e.client(), testConfig(t))
	ctx := t.Context()
	if err := p.RecoverRecord(ctx, 0, "a", 1, 0); err != nil {
		t.Fatalf("recover an absent record at revision 0: %v", err)
	}
	sets, err := p.ReplicaSets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := sets[0]
	if !slices.Equal(got.Voters, []string{"a"}) || len(got.Nonvoters) != 0 || got.Epoch != 1 {
		t.Fatalf("record %+v, want voters [a], no non-voter, epoch 1", got)
	}
	if err := p.RecoverRecord(ctx, 0, "b", 2, got.Revision-1); !errors.Is(err, ErrConflict) {
		t.Fatalf("recover at a stale revision: %v, want ErrConflict", err)
	}
	if err := p.RecoverRecord(ctx, 0, "b", 2, got.Revision); err != nil {
		t.Fatal(err)
	}
	if sets, err = p.ReplicaSets(ctx); err != nil || sets[0].Epoch != 2 || !slices.Equal(sets[0].Voters, []string{"b"}) {
		t.Fatalf("record %+v %v, want b alone at epoch 2", sets[0], err)
	}
	for _, bad := range []struct {
		shard int
		node  string
		epoch uint64
	}{{-1, "a", 1}, {0, "", 1}, {0, "a", 0}} {
		if err := p.RecoverRecord(ctx, bad.shard, bad.node, bad.epoch, 0); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("RecoverRecord(%d, %q, %d): %v, want ErrInvalidArgument", bad.shard, bad.node, bad.epoch, err)
		}
	}
}
