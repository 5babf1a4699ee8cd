package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
)

// TestClusterRefusesRunSnapshotsWhileAReplicaRunsTheFirstRelease: a run's snapshot
// (OpenWOP POST /v1/runs, workbench.Lifecycle.RunSnapshot) is a SnapshotMint with the runs'
// pool, a field the first release (cluster version 1) does not decode: such a replica
// would apply it as a workbench snapshot, under the workbench's cap. So while a replica of
// the shard registers version 1 the command is refused before it is proposed (retryable
// RoutingUnavailable, "being upgraded"), as a command of a newer op is, while a workbench
// snapshot (an op and fields version 1 has) goes on; once the replica registers version 2
// again the run's snapshot is taken.
func TestClusterRefusesRunSnapshotsWhileAReplicaRunsTheFirstRelease(t *testing.T) {
	nodes := startCluster(t, 3, oneShard)
	threeVoters(t, nodes)
	ctx := t.Context()
	svc := nodes[0].svc
	retry.Within(t, 60*time.Second, "the workbench created", func() error {
		_, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/x", Body: strings.NewReader("x"), CreateWorkbench: true})
		return err
	})
	// gated reports whether nodes[0] refuses a command of version 2 (a workbench delete of
	// a workbench that does not exist: NotFound when it passes the gate).
	gated := func() error {
		var e *workbench.Error
		err := svc.Lifecycle.DeleteWorkbench(ctx, "a", "none", 0, "")
		switch {
		case errors.As(err, &e) && e.Code == workbench.CodeRoutingUnavailable && strings.Contains(e.Message, "being upgraded"):
			return nil
		case errors.As(err, &e) && e.Code == workbench.CodeNotFound:
			return errUngated
		}
		return fmt.Errorf("delete of a missing workbench: %v", err)
	}
	register := func(version int) { registerVersion(t, nodes, version) }
	run := func() error {
		_, err := svc.Lifecycle.RunSnapshot(ctx, "a", workbench.SnapshotInput{ID: "w"})
		return err
	}

	register(1)
	retry.Within(t, 30*time.Second, "node 0 sees a replica of version 1", gated)
	var e *workbench.Error
	if err := run(); !errors.As(err, &e) || e.Code != workbench.CodeRoutingUnavailable || !e.Retryable || !strings.Contains(e.Message, "being upgraded") {
		t.Fatalf("a run's snapshot while a replica runs version 1: %v; want a retryable RoutingUnavailable saying the cluster is being upgraded", err)
	}
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w"}); err != nil {
		t.Fatalf("a workbench snapshot while a replica runs version 1: %v", err)
	}
	list, err := svc.Tools.SnapshotList(ctx, "a", workbench.SnapshotListInput{ID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if snaps, _ := list["snapshots"].([]workbench.Result); len(snaps) != 1 {
		t.Fatalf("snapshots after the refusal: %v; want the workbench's one", list["snapshots"])
	}

	register(2)
	retry.Within(t, 30*time.Second, "node 0 sees every replica at version 2", func() error {
		if err := gated(); err == nil {
			return errors.New("still gated")
		} else if !errors.Is(err, errUngated) {
			return err
		}
		return nil
	})
	if err := run(); err != nil {
		t.Fatalf("a run's snapshot once every replica runs version 2: %v", err)
	}
}

var errUngated = errors.New("the command passed the gate")

// TestClusterGatesARestoreBegunAgainWhileAReplicaRunsVersion6: a restore repeated after
// the workbench it made was deleted begins again with RestoreBegin.Again, a field version 6
// does not decode (its replica would replay instead). While a replica registers version 6
// it is refused before it is proposed (retryable RoutingUnavailable) and nothing is made,
// an exact retry of a restore whose destination lives still replays (the plain begin), and
// once the replica registers version 7 the repeated restore makes its destination.
func TestClusterGatesARestoreBegunAgainWhileAReplicaRunsVersion6(t *testing.T) {
	nodes := startCluster(t, 3, oneShard)
	ctx := t.Context()
	svc := nodes[0].svc
	retry.Within(t, 60*time.Second, "the workbench created", func() error {
		_, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/x", Body: strings.NewReader("x"), CreateWorkbench: true})
		return err
	})
	threeVoters(t, nodes)
	name := "b"
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: &name}); err != nil {
		t.Fatal(err)
	}
	restore := func(dst string) (workbench.Result, error) {
		return svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "w", DestinationID: dst, AtSnapshot: json.RawMessage(`"b"`)})
	}
	for _, dst := range []string{"r1", "r2"} {
		if _, err := restore(dst); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Lifecycle.DeleteWorkbench(ctx, "a", "r2", 0, ""); err != nil {
		t.Fatal(err)
	}
	register := func(version int) { registerVersion(t, nodes, version) }
	// Node 0 has seen node 2's version once a command of version 2 is gated at 1 and
	// passes again at 6 (a workbench delete of a missing workbench: NotFound past the gate).
	passes := func() bool {
		var e *workbench.Error
		err := svc.Lifecycle.DeleteWorkbench(ctx, "a", "none", 0, "")
		return errors.As(err, &e) && e.Code == workbench.CodeNotFound
	}
	register(1)
	retry.Within(t, 30*time.Second, "node 0 sees a replica of version 1", func() error {
		if passes() {
			return errUngated
		}
		return nil
	})
	register(6)
	retry.Within(t, 30*time.Second, "node 0 sees a replica of version 6", func() error {
		if !passes() {
			return errors.New("still gated")
		}
		return nil
	})
	var e *workbench.Error
	if _, err := restore("r2"); !errors.As(err, &e) || e.Code != workbench.CodeRoutingUnavailable || !e.Retryable || !strings.Contains(e.Message, "being upgraded") {
		t.Fatalf("a restore begun again while a replica runs version 6: %v; want a retryable RoutingUnavailable saying the cluster is being upgraded", err)
	}
	if _, err := svc.Reads.Open(ctx, "a", "r2", "input/x"); !errors.As(err, &e) || e.Code != workbench.CodeNotFound {
		t.Fatalf("r2 after the refusal: %v; want NotFound", err)
	}
	if r, err := restore("r1"); err != nil || r["idempotent_replay"] != true {
		t.Fatalf("an exact retry of a restore whose destination lives, while a replica runs version 6: %v, %v; want its replay", r, err)
	}
	register(7)
	retry.Within(t, 30*time.Second, "the restore begun again once every replica runs version 7", func() error {
		r, err := restore("r2")
		if err != nil {
			return err
		}
		if r["idempotent_replay"] != false {
			return fmt.Errorf("restore of r2 = %v; want a new restore", r)
		}
		return nil
	})
}

// registerVersion rewrites node 2's registration in etcd, through node 0's client, to say
// its binary applies cluster versions up to version (what a node of that release
// publishes), under the lease it already has.
func registerVersion(t *testing.T, nodes []*testClusterNode, version int) {
	t.Helper()
	ctx := t.Context()
	key := "/cairn/nodes/" + nodes[2].nodeID
	resp, err := nodes[0].etcd.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("registration of node 2: %v %v", resp, err)
	}
	var info control.NodeInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
		t.Fatal(err)
	}
	info.ClusterVersion = version
	b, _ := json.Marshal(info)
	if _, err := nodes[0].etcd.Put(ctx, key, string(b), clientv3.WithIgnoreLease()); err != nil {
		t.Fatal(err)
	}
}

// threeVoters waits until the shard of nodes has three voters, as node 0 sees it.
func threeVoters(t *testing.T, nodes []*testClusterNode) {
	t.Helper()
	retry.Within(t, 60*time.Second, "three voters of the shard", func() error {
		n := 0
		for _, m := range voterSets(t, nodes[0])[0] {
			if !strings.HasPrefix(m, "nonvoter:") {
				n++
			}
		}
		if n != 3 {
			return fmt.Errorf("%d voters: %v", n, voterSets(t, nodes[0]))
		}
		return nil
	})
}
