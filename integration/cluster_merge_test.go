package integration

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// Issue 31's acceptance: kill -9 of the leader mid-merge leaves the parent either before
// or after, never between. A three-node cluster (one shard, so one leader holds the
// root): a fork writes mergeFanout paths, a merge is previewed, its apply is sent through
// a survivor under an Idempotency-Key and the shard's leader, paused first so the apply
// cannot finish before, is killed (kill -9) while it is in flight. Once a new leader is elected the parent holds none or all of the fork's paths;
// applying the token again under the key lands the merge exactly once: every path then
// holds the fork's body at one generation, with one version of its own.
func TestClusterMergeIsAllOrNothingAcrossALeaderKill(t *testing.T) {
	const agent, mergeFanout = "merger", 2000
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 1})
	servers := pc.Nodes
	ctx := t.Context()
	if code, b := clusterDo(http.MethodPut, fileURL(servers[0].URL, agent, "w", "input/seed.txt"), []byte("seed"), 60*time.Second); code/100 != 2 {
		t.Fatalf("seed the parent: %d %s", code, b)
	}
	leader := shardLeader(t, servers, 0, 3)
	survivors := others(servers, leader)
	via := client.New(survivors[0].URL, nil)
	if _, err := via.Fork(ctx, agent, "w", client.ForkRequest{Fork: "f", IdempotencyKey: "fork-f"}); err != nil {
		t.Fatal(err)
	}
	writeFanout(t, survivors, agent, "f", mergeFanout)
	preview, err := via.Merge(ctx, agent, "f", client.MergeRequest{DryRun: true})
	if err != nil || len(preview.Changes) != mergeFanout {
		t.Fatalf("preview: %v changes, %v; want %d", len(preview.Changes), err, mergeFanout)
	}

	// The apply in flight through a survivor while the leader dies: the leader is paused
	// (SIGSTOP) before the apply is sent, so it cannot answer it before the kill -9; the
	// survivor forwards it to the paused leader, or, once the survivors elect another, to
	// that one.
	apply := fmt.Appendf(nil, `{"token":%q}`, preview.Token)
	type answer struct {
		code int
		body []byte
	}
	sending, sent := make(chan struct{}), make(chan answer, 1)
	leader.Pause()
	go func() {
		close(sending)
		code, b := clusterSend(http.MethodPost, survivors[0].URL+"/v1/agents/"+agent+"/workbenches/f/merge", apply, 0, "merge-f",
			func(int, []byte) bool { return false })
		sent <- answer{code, b}
	}()
	<-sending
	leader.Kill()
	first := <-sent
	t.Logf("the apply in flight answered %d %.200s", first.code, first.body)
	newLeader := shardLeader(t, survivors, 0, 3)
	t.Logf("new leader %s", newLeader.URL)

	reader := client.New(newLeader.URL, nil)
	merged := countMerged(t, reader, agent)
	if merged != 0 && merged != mergeFanout {
		t.Fatalf("after the leader's kill the parent holds %d of the fork's %d paths: between before and after", merged, mergeFanout)
	}
	if first.code == http.StatusOK && merged != mergeFanout {
		t.Fatalf("the apply was acknowledged but the parent holds %d of %d paths", merged, mergeFanout)
	}

	// The retry under the key lands it exactly once (or answers the apply that landed).
	var again *client.MergeResult
	retry.Within(t, clusterFailoverBound, "the merge retried under its key", func() error {
		r, err := reader.Merge(ctx, agent, "f", client.MergeRequest{Token: preview.Token, IdempotencyKey: "merge-f"})
		var ce *client.Error
		if errors.As(err, &ce) && !ce.Retryable {
			t.Fatalf("the retry was refused: %v", err)
		}
		again = r
		return err
	})
	if merged == mergeFanout && !again.Replayed {
		t.Fatalf("the retry after the apply landed = %s, want it replayed", again.Raw)
	}
	if got := countMerged(t, reader, agent); got != mergeFanout || len(again.Changes) != mergeFanout {
		t.Fatalf("after the retry the parent holds %d paths, the answer names %d; want %d", got, len(again.Changes), mergeFanout)
	}
	for _, i := range []int{0, mergeFanout / 2, mergeFanout - 1} {
		p := fanoutPath(i)
		h, err := reader.History(ctx, agent, "w", p, client.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Versions) != 1 || h.Versions[0].Generation != again.Generation {
			t.Fatalf("history of %s = %+v, want one version at the merge's generation %d", p, h.Versions, again.Generation)
		}
		if code, body := clusterDo(http.MethodGet, fileURL(newLeader.URL, agent, "w", p), nil, clusterFailoverBound); code != http.StatusOK || string(body) != fanoutBody(i) {
			t.Fatalf("%s = %d %q, want the fork's %q", p, code, body, fanoutBody(i))
		}
	}
}

func fanoutPath(i int) string { return fmt.Sprintf("outputs/m/p%04d.txt", i) }
func fanoutBody(i int) string { return fmt.Sprintf("fork body %d\n", i) }

// writeFanout writes n paths on workbench wb through the servers, eight at a time, each
// under an Idempotency-Key so a retried write lands once.
func writeFanout(t *testing.T, servers []*framework.Process, agent, wb string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	failed := make(chan string, n)
	next := make(chan int)
	for w := range 8 {
		wg.Go(func() {
			for i := range next {
				s := servers[(w+i)%len(servers)]
				code, b := clusterDoKey(http.MethodPut, fileURL(s.URL, agent, wb, fanoutPath(i)), []byte(fanoutBody(i)), 60*time.Second, fmt.Sprintf("fan-%d", i))
				if code/100 != 2 {
					failed <- fmt.Sprintf("put %s: %d %s", fanoutPath(i), code, b)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(failed)
	for f := range failed {
		t.Fatal(f)
	}
}

// countMerged is how many of the fork's paths the parent lists (0 when it holds none).
func countMerged(t *testing.T, c *client.Client, agent string) int {
	t.Helper()
	var n int
	retry.Within(t, clusterFailoverBound, "list the parent's merged directory", func() error {
		page, err := c.List(t.Context(), agent, "w", "outputs/m", client.ListOptions{Limit: 1})
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && ce.Code == "NotFound":
			n = 0
			return nil
		case err != nil:
			return err
		}
		n = page.EntryCount
		return nil
	})
	return n
}
