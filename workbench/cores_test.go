package workbench_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// twoShards routes agents whose names start with "a" to one shard, the rest to the other.
type twoShards struct{ a, b *shard.Shard }

func (t twoShards) For(_ context.Context, agent string) (workbench.Core, error) {
	if strings.HasPrefix(agent, "a") {
		return t.a, nil
	}
	return t.b, nil
}

func openShard(t *testing.T, uidPrefix string) *shard.Shard {
	t.Helper()
	return workbenchtest.Replica(t, shard.Config{FSM: meta.Options{RootUIDPrefix: uidPrefix, History: pruneAtOnce}})
}

// TestRootsLiveOnTheirOwnShard: a service over two shards keeps each root's metadata on
// the shard its router names, and the background workers act on every shard.
func TestRootsLiveOnTheirOwnShard(t *testing.T) {
	// Both shards' roots share one object store: their root uids (blob namespaces) must
	// differ, or one root's garbage collection would see the other's blobs as orphans.
	cores := twoShards{openShard(t, "s1r"), openShard(t, "s2r")}
	bs := blobtest.Dir(t)
	svc, err := workbench.NewWithCores(cores, bs, workbench.Config{CursorKey: workbenchtest.CursorKey, InlineMaxBytes: 0})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, agent := range []string{"alice", "bob"} {
		for i := 0; i < 40; i++ { // enough small segments to make a compaction candidate
			if _, err := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: agent, Workbench: "w", Path: "logs/run.log",
				Body: strings.NewReader(strings.Repeat("x", 100) + "\n"), CreateWorkbench: true}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.Tools.Snapshot(ctx, agent, workbench.SnapshotInput{ID: "w", Name: ptr("s")}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Tools.Restore(ctx, agent, workbench.RestoreInput{ID: "w", DestinationID: "copy", AtSnapshot: json.RawMessage(`"s"`)}); err != nil {
			t.Fatal(err)
		}
	}
	va, _ := cores.a.ReadView(ctx)
	vb, _ := cores.b.ReadView(ctx)
	if _, ok := va.Root("alice"); !ok {
		t.Fatal("alice is not on shard a")
	}
	if _, ok := va.Root("bob"); ok {
		t.Fatal("bob is on shard a")
	}
	if _, ok := vb.Root("bob"); !ok {
		t.Fatal("bob is not on shard b")
	}
	workers := workbenchtest.Workers(t, svc, bs, cores.a, cores.b)
	rep, err := workers.Compact(ctx, 10)
	if err != nil || rep.Compacted != 4 { // the live log and its restored copy, on each shard
		t.Fatalf("compaction across shards: %+v %v", rep, err)
	}
	time.Sleep(20 * time.Millisecond)
	gc, err := workers.CollectGarbage(ctx, worker.GCOptions{DryRun: true, Grace: time.Millisecond})
	if err != nil || len(gc.Roots) != 2 {
		t.Fatalf("a sweep across shards: %+v %v", gc, err)
	}
	for _, r := range gc.Roots {
		// Each root's only garbage is the one (deduplicated) segment its compactions rolled up.
		if len(r.Candidates) != 1 || r.Candidates[0].Orphan {
			t.Fatalf("root %s: candidates %+v", r.Agent, r.Candidates)
		}
	}
}
