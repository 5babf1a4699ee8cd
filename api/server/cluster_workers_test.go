package server

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/ops"
)

// The leader-only workers of a cluster node are the embedded node's: compaction rolls up
// small segments and a garbage-collection sweep that leaves more behind is followed at
// once by another, observed through their metrics on the shard's leader.
func TestClusterLeaderRunsTheSameWorkersAsTheEmbeddedNode(t *testing.T) {
	nodes := startCluster(t, 3, func(cfg *ops.Config) {
		cfg.Shards = 1
		cfg.GCInterval = time.Second
		cfg.GCGrace = 2 * time.Second
		cfg.GCMaxBatch = 2
		// The overwritten bodies are garbage at once (no history kept beyond the live one).
		cfg.HistoryVersions, cfg.HistoryAge = 1, 0
	})
	ws := "/v1/agents/alice/workbenches/w1"
	mustSend(t, "create workbench", http.MethodPut, nodes[0].url+ws, nil)
	// Garbage: five bodies above the inline threshold written over one path, through every
	// node in turn; four are unreferenced once the fifth lands.
	for i := range 5 {
		body := make([]byte, 8<<10)
		rand.Read(body)
		if code, b := request(t, http.MethodPut, nodes[i%3].url+ws+"/files/input/garbage", body); code/100 != 2 {
			t.Fatalf("put %d: %d %s", i, code, b)
		}
	}
	// A compaction candidate: a file of meta.CompactMinSegments small appended segments,
	// each above the inline threshold (inline appends merge into one inline segment).
	var want []byte
	for i := range meta.CompactMinSegments {
		seg := make([]byte, 5<<10)
		rand.Read(seg)
		want = append(want, seg...)
		method, target := http.MethodPost, nodes[i%3].url+ws+"/files/logs/run.log?append"
		if i == 0 {
			method, target = http.MethodPut, nodes[i%3].url+ws+"/files/logs/run.log"
		}
		if code, b := request(t, method, target, seg); code/100 != 2 {
			t.Fatalf("%s segment %d: %d %s", method, i, code, b)
		}
	}
	sum := func(name string) float64 {
		total := 0.0
		for _, n := range nodes {
			total += metricstest.Value(t, n.registry, name)
		}
		return total
	}
	retry.SucceedsSoon(t, "a compaction and a garbage-collection follow-up sweep on the leader", func() error {
		compacted, followUps, deleted := sum("cairn_compaction_files_total"), sum("cairn_gc_follow_up_sweeps_total"), sum("cairn_gc_blobs_deleted_total")
		if compacted < 1 || followUps < 1 || deleted < 4 {
			return fmt.Errorf("compacted files %v, follow-up sweeps %v, deleted blobs %v", compacted, followUps, deleted)
		}
		return nil
	})
	code, body := request(t, http.MethodGet, nodes[2].url+ws+"/files/logs/run.log", nil)
	if code != http.StatusOK || !bytes.Equal(body, want) {
		t.Fatalf("the compacted log reads %d %q", code, body)
	}
}
