package workbench_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// gcSafetyDuration is how long the concurrent phase of TestGCIsSafeUnderConcurrency runs.
const gcSafetyDuration = 6 * time.Second

// TestGCIsSafeUnderConcurrency runs writes, overwrites, deletes, appends, compaction,
// snapshots, restores, commits and GC sweeps (grace 1 s) at once; the sweeps must delete
// unreferenced blobs, and afterwards every path visible live, in every alive snapshot and
// in every commit must read back with its digest (docs/architecture.md#blob-storage-and-garbage-collection).
func TestGCIsSafeUnderConcurrency(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 0, RestoreBatch: 8})
	svc := n.Service
	// Replaced bodies must become garbage at once (the sweeps are to delete some).
	if _, err := svc.Lifecycle.SetRetention(t.Context(), "a", pruneAtOnce); err != nil {
		t.Fatal(err)
	}
	// stop ends the concurrent phase; the operations themselves run to completion.
	stop, cancel := context.WithTimeout(context.Background(), gcSafetyDuration)
	defer cancel()
	ctx := context.Background()
	bodies := make([]string, 24) // few distinct bodies: writers dedupe against blobs GC may be deleting
	for i := range bodies {
		bodies[i] = fmt.Sprintf("body %d %s\n", i, strings.Repeat("z", i*37))
	}
	var unique atomic.Int64
	body := func(r *rand.Rand) string { // half shared (dedupe), half new (garbage once replaced)
		if r.IntN(2) == 0 {
			return bodies[r.IntN(len(bodies))]
		}
		return fmt.Sprintf("unique %d\n", unique.Add(1))
	}
	paths := []string{"input/a", "input/b", "input/c/d", "outputs/e", "outputs/f", "logs/run.log", "logs/other.log", "scripts/s.py"}
	var wg sync.WaitGroup
	var unexpected atomic.Value
	fail := func(what string, err error) {
		if err == nil {
			return
		}
		switch workbench.AsError(err).Code {
		case workbench.CodeConflict, workbench.CodeNotFound, workbench.CodeAlreadyExists, workbench.CodeNotDirectory,
			workbench.CodeNotArtifact, workbench.CodeSnapshotExpired, "ForkRetentionActive", workbench.CodeInvalidState:
			return // the ordinary outcomes of racing operations
		}
		unexpected.CompareAndSwap(nil, fmt.Sprintf("%s: %v", what, err))
	}
	loop := func(every time.Duration, fn func(r *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
			for stop.Err() == nil {
				fn(r)
				time.Sleep(every)
			}
		}()
	}
	for w := 0; w < 3; w++ {
		loop(time.Millisecond, func(r *rand.Rand) {
			p := paths[r.IntN(len(paths))]
			switch r.IntN(4) {
			case 0, 1:
				_, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: p,
					Body: strings.NewReader(body(r)), CreateWorkbench: true})
				fail("put", err)
			case 2:
				_, err := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: p,
					Body: strings.NewReader(body(r)), CreateWorkbench: true})
				fail("append", err)
			case 3:
				_, err := svc.Writes.Delete(ctx, "a", "w", p, 0, "")
				fail("delete", err)
			}
		})
	}
	var mu sync.Mutex
	var snapshots []uint64
	var commits []string
	loop(20*time.Millisecond, func(*rand.Rand) {
		_, err := n.Workers.Compact(ctx, 16)
		fail("compact", err)
	})
	loop(150*time.Millisecond, func(r *rand.Rand) {
		res, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w"})
		fail("snapshot", err)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			snapshots = append(snapshots, res["snapshot_id"].(uint64))
		}
		if len(snapshots) > 2 { // retire an older one: its history becomes garbage
			k := r.IntN(len(snapshots) - 1)
			id := snapshots[k]
			if _, err := svc.Tools.SnapshotRetire(ctx, "a", workbench.SnapshotRetireInput{ID: "w", SnapshotID: &id}); err == nil {
				snapshots = append(snapshots[:k], snapshots[k+1:]...)
			} else {
				fail("retire", err)
			}
		}
	})
	var restores atomic.Int64
	loop(time.Second, func(*rand.Rand) {
		mu.Lock()
		if len(snapshots) == 0 {
			mu.Unlock()
			return
		}
		id := snapshots[len(snapshots)-1]
		mu.Unlock()
		dst := fmt.Sprintf("r%d", restores.Add(1))
		_, err := svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "w", DestinationID: dst, AtSnapshot: json.RawMessage(fmt.Sprint(id))})
		fail("restore", err)
	})
	var commitN atomic.Int64
	loop(2*time.Second, func(*rand.Rand) { // commits pin their tree for good: a few only
		res, err := svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "w", Manifest: json.RawMessage(fmt.Sprintf(`{"n":%d}`, commitN.Add(1))),
			ContentDigestURI: "sha256:" + strings.Repeat("0", 64), Replace: ptr(true)})
		fail("commit", err)
		if err == nil {
			mu.Lock()
			commits = append(commits, res["commit_identity"].(string))
			mu.Unlock()
		}
	})
	var deleted, sweeps atomic.Int64
	loop(100*time.Millisecond, func(*rand.Rand) {
		rep, err := n.Workers.CollectGarbage(ctx, worker.GCOptions{Grace: time.Second})
		fail("gc", err)
		sweeps.Add(1)
		deleted.Add(int64(rep.Deleted))
	})
	wg.Wait()
	if msg := unexpected.Load(); msg != nil {
		t.Fatalf("unexpected error during the concurrent phase: %v", msg)
	}
	bg := context.Background()
	time.Sleep(1100 * time.Millisecond) // let the last garbage pass its grace
	rep, err := n.Workers.CollectGarbage(bg, worker.GCOptions{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	deleted.Add(int64(rep.Deleted))
	t.Logf("%d sweeps deleted %d blobs; %d snapshots alive, %d commits, %d restores", sweeps.Load(), deleted.Load(), len(snapshots), len(commits), restores.Load())
	if deleted.Load() == 0 {
		t.Fatal("the sweeps deleted no blob: the test did not exercise collection")
	}

	// Everything visible reads back with its digest.
	view, err := n.Shard.ReadView(bg)
	if err != nil {
		t.Fatal(err)
	}
	checkTree := func(what string, v *meta.View, ws *meta.Workspace, open func(path string) (*workbench.File, error)) int {
		files := 0
		v.Files(ws, "", func(p string, e *meta.Entry) bool {
			files++
			f, err := open(p)
			if err != nil {
				t.Fatalf("%s: open %s: %v", what, p, err)
			}
			body, err := f.ReadAll(bg, 1<<30)
			if err != nil {
				t.Fatalf("%s: read %s: %v", what, p, err)
			}
			if sha256.Sum256(body) != [32]byte(e.Digest) {
				t.Fatalf("%s: %s does not match its digest", what, p)
			}
			return true
		})
		return files
	}
	workbenches, _ := view.Workspaces("a", "", 1000)
	for _, ws := range workbenches {
		checkTree("live "+ws.Name, view, ws, func(p string) (*workbench.File, error) { return svc.Reads.Open(bg, "a", ws.Name, p) })
	}
	for _, id := range snapshots {
		sv, sws, _, err := view.Lifecycle().SnapshotView("a", "w", id, "")
		if err != nil {
			t.Fatalf("snapshot %d: %v", id, err)
		}
		checkTree(fmt.Sprint("snapshot ", id), sv, sws, func(p string) (*workbench.File, error) {
			return svc.Reads.OpenAt(bg, "a", "w", p, workbench.AtSnapshotID(id))
		})
	}
	for i, c := range commits {
		dst := fmt.Sprintf("commit%d", i)
		if _, err := svc.Tools.Restore(bg, "a", workbench.RestoreInput{ID: "w", DestinationID: dst, AtCommit: &c}); err != nil {
			t.Fatalf("restore of commit %s: %v", c, err)
		}
		v, _ := n.Shard.ReadView(bg)
		ws, _ := v.Workspace("a", dst)
		checkTree("commit "+c[:8], v, ws, func(p string) (*workbench.File, error) { return svc.Reads.Open(bg, "a", dst, p) })
	}
}
