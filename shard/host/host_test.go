package host_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/host"
)

func put(path, data string) meta.Put {
	return meta.Put{Agent: "a", Workspace: "w", Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Segments: []meta.Segment{{Size: int64(len(data)), Inline: []byte(data)}}}
}

// leadership records OnLeadership calls.
type leadership struct {
	mu    sync.Mutex
	calls []bool
}

func (l *leadership) record(id int, r *shard.Shard, leads bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, leads)
}

func (l *leadership) seen() []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.calls...)
}

func TestTheEmbeddedHostServesEveryRootFromItsOneShardAndReportsLeadership(t *testing.T) {
	var lead leadership
	h, err := host.Open(t.Context(), host.Config{DataDir: t.TempDir(), NodeID: "n1", OnLeadership: lead.record})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if !h.Embedded() || h.Replica(host.EmbeddedShard) == nil || len(h.Leaders()) != 1 {
		t.Fatalf("embedded host: embedded %v, replica %v, leaders %d", h.Embedded(), h.Replica(host.EmbeddedShard), len(h.Leaders()))
	}
	c, err := h.For("a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Propose(ctx, meta.Header{}, put("f", "x"))
	if err != nil || res.Err != nil {
		t.Fatalf("propose: %v %v", err, res.Err)
	}
	v, err := c.ReadView(ctx)
	if err != nil || v.Version() < res.Version {
		t.Fatalf("linearizable view %v at %d, want ≥ %d", err, v.Version(), res.Version)
	}
	av, err := c.ReadViewAt(ctx, res.Version)
	if err != nil || av.Version() < res.Version {
		t.Fatalf("applied view %v", err)
	}
	if _, err := av.Workspace("a", "w"); err != nil {
		t.Fatalf("the applied view misses the write: %v", err)
	}
	if st, ok := h.Status(ctx); ok || st.ClusterID != "" {
		t.Fatalf("an embedded host reports a cluster status: %+v", st)
	}
	// Leadership was reported once; Close withdraws it before the replica closes.
	retry.Within(t, 5*time.Second, "the replica's leadership reported", func() error {
		if len(lead.seen()) == 0 {
			return errors.New("no report yet")
		}
		return nil
	})
	if got := lead.seen(); len(got) != 1 || !got[0] {
		t.Fatalf("leadership calls before Close: %v, want [true]", got)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := lead.seen(); len(got) != 2 || got[1] {
		t.Fatalf("leadership calls after Close: %v, want [true false]", got)
	}
	if _, err := c.Propose(ctx, meta.Header{}, put("g", "y")); err == nil {
		t.Fatal("a closed host accepted a proposal")
	}
}
