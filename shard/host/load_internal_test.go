package host

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/control"
)

// TestShardLoadCountsRootsBytesAndNamesTheHeaviest: a leader's load counts the roots it
// holds and their bytes, and names the heaviest roots (by bytes, then name) as candidates,
// LoadCandidates at most, each with its bytes; the count is reused for storedLoadTTL.
func TestShardLoadCountsRootsBytesAndNamesTheHeaviest(t *testing.T) {
	h := openEmbeddedHost(t, 20*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var total int64
	roots := LoadCandidates + 4
	for i := range roots {
		agent := fmt.Sprintf("r%02d", i)
		body := make([]byte, 10*(i%7)+1)
		total += int64(len(body))
		c, err := h.For(agent)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Propose(ctx, meta.Header{}, meta.Put{Agent: agent, Workspace: "w", Path: "f", CreateWorkspace: true,
			Size: int64(len(body)), Segments: []meta.Segment{{Size: int64(len(body)), Inline: body}}})
		if err != nil || res.Err != nil {
			t.Fatalf("put %s: %v %v", agent, err, res.Err)
		}
	}
	r := h.Replica(EmbeddedShard)
	l := h.shardLoad(EmbeddedShard, r)
	if l.Roots != int64(roots) || l.Bytes != total || len(l.Candidates) != LoadCandidates {
		t.Fatalf("load: %d roots, %d bytes, %d candidates; want %d, %d, %d", l.Roots, l.Bytes, len(l.Candidates), roots, total, LoadCandidates)
	}
	// The heaviest: 61 bytes (i%7 == 6: r06, r13), then 51 (r05, r12, r19), ...
	if got := l.Candidates[:3]; fmt.Sprint(got) != fmt.Sprint([]control.RootLoad{{Root: "r06", Bytes: 61}, {Root: "r13", Bytes: 61}, {Root: "r05", Bytes: 51}}) {
		t.Fatalf("the heaviest: %+v", got)
	}
	for i, c := range l.Candidates[1:] {
		if prev := l.Candidates[i]; prev.Bytes < c.Bytes {
			t.Fatalf("candidates out of order: %+v before %+v", prev, c)
		}
	}
	// Reused within its TTL: a new root is not counted yet.
	c, _ := h.For("late")
	if _, err := c.Propose(ctx, meta.Header{}, meta.Put{Agent: "late", Workspace: "w", Path: "f", CreateWorkspace: true,
		Size: 1, Segments: []meta.Segment{{Size: 1, Inline: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	if again := h.shardLoad(EmbeddedShard, r); again.Roots != int64(roots) {
		t.Fatalf("counted anew within the TTL: %d roots", again.Roots)
	}
	if fresh := h.stored.get(r, time.Now().Add(storedLoadTTL)); fresh.roots != int64(roots)+1 {
		t.Fatalf("after the TTL: %d roots", fresh.roots)
	}
}

// TestALeaderReportsItsLoadWithItsStatus: the status a node asks of another node's
// leader (over the peer port, as the controller does every round) carries the shard's
// load as the leader measured it.
func TestALeaderReportsItsLoadWithItsStatus(t *testing.T) {
	c := newTestCluster(t, 1, true)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	core, err := c.hosts[0].For("a")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := core.Propose(ctx, meta.Header{}, meta.Put{Agent: "a", Workspace: "w", Path: "f", CreateWorkspace: true,
		Size: 5, Segments: []meta.Segment{{Size: 5, Inline: []byte("hello")}}}); err != nil || res.Err != nil {
		t.Fatalf("put: %v %v", err, res.Err)
	}
	other := c.hosts[(c.Leader(t, "a")+1)%len(c.hosts)] // not the leader: asked over the peer port
	st, err := clusterAdmin{other}.Status(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l := st.Load; l == nil || l.Shard != 0 || l.Roots != 1 || l.Bytes != 5 || len(l.Candidates) != 1 || l.Candidates[0] != (control.RootLoad{Root: "a", Bytes: 5}) {
		t.Fatalf("the leader's load: %+v", st.Load)
	}
}
