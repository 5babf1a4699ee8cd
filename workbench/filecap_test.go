package workbench_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// gatedCore is a workbench.Core whose shard has a replica of cluster version `version`:
// it refuses a command that needs more with UpgradeInProgress before proposing anything,
// as shard/host's gate does (shard/host/versions.go), and records the puts it proposed.
type gatedCore struct {
	workbench.Core
	version atomic.Int64
	held    atomic.Int64
	mu      sync.Mutex
	puts    []meta.Put
}

func (c *gatedCore) Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	if int64(meta.CommandVersion(b)) > c.version.Load() {
		c.held.Add(1)
		return meta.Result{}, &meta.Error{Code: meta.CodeUpgradeInProgress, Message: "the cluster is being upgraded"}
	}
	if p, ok := b.(meta.Put); ok {
		c.mu.Lock()
		c.puts = append(c.puts, p)
		c.mu.Unlock()
	}
	return c.Core.Propose(ctx, h, b)
}

// lastPut is the put the core proposed last.
func (c *gatedCore) lastPut() meta.Put {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.puts[len(c.puts)-1]
}

// A write under a files cap (WriteRequest.MaxWorkbenchFiles) carries it to the store: at
// the cap a create is refused with ResourceExhausted, details quota files_per_workbench,
// its limit and usage, not retryable, while a replace goes through. While a replica runs
// cluster version 8 the gate holds the capped put back; the write is proposed once more
// without the cap and goes through (writes keep working during a rolling upgrade). A write
// without a cap never meets the gate.
func TestAWriteUnderAFilesCapIsCheckedByTheStoreAndFallsBackDuringAnUpgrade(t *testing.T) {
	cfg := workbench.Config{InlineMaxBytes: 4096, CursorKey: workbenchtest.CursorKey}
	n := workbenchtest.New(t, cfg)
	core := &gatedCore{Core: n.Shard}
	core.version.Store(meta.ClusterVersion)
	svc, err := workbench.New(core, n.Blobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	write := func(path string, limit int64) (workbench.FileResult, error) {
		return svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: strings.NewReader(path), CreateWorkbench: true, MaxWorkbenchFiles: limit})
	}
	for _, p := range []string{"input/1", "input/2", "input/3"} {
		if _, err := write(p, 3); err != nil {
			t.Fatalf("create %s under the cap of 3: %v", p, err)
		}
	}
	_, err = write("input/4", 3)
	we := workbench.AsError(err)
	if err == nil || we.Code != workbench.CodeResourceExhausted || we.Retryable || we.Details["quota"] != meta.QuotaFilesPerWorkbench ||
		we.Details["limit"] != int64(3) || we.Details["usage"] != int64(3) {
		t.Fatalf("a fourth create under the cap of 3: %+v, want ResourceExhausted, not retryable, quota %q, limit 3, usage 3", we, meta.QuotaFilesPerWorkbench)
	}
	if _, err := write("input/2", 3); err != nil {
		t.Fatalf("a replace at the cap: %v", err)
	}
	if p := core.lastPut(); p.MaxWorkbenchFiles != 3 || core.held.Load() != 0 {
		t.Fatalf("the store saw a cap of %d and the gate held %d puts back, want 3 and 0", p.MaxWorkbenchFiles, core.held.Load())
	}

	core.version.Store(meta.WorkbenchFilesVersion - 1)
	if res, err := write("input/4", 3); err != nil || !res.Created {
		t.Fatalf("a capped create while a replica runs version %d: %+v %v, want it written without the cap", meta.WorkbenchFilesVersion-1, res, err)
	}
	if p := core.lastPut(); core.held.Load() != 1 || p.MaxWorkbenchFiles != 0 || p.Path != "input/4" {
		t.Fatalf("the gate held %d puts back and the put proposed had cap %d (%s), want 1 held and the write proposed uncapped", core.held.Load(), p.MaxWorkbenchFiles, p.Path)
	}
	if _, err := write("input/5", 0); err != nil || core.held.Load() != 1 {
		t.Fatalf("an uncapped write while versions are mixed: %v, %d held back, want it written and none held", err, core.held.Load())
	}
}
