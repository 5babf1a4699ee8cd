package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterGrowsShardsUnderWriteLoad: three nodes, two shards, writers that keep
// creating roots and writing files through every node; `cairn admin shards add 2` grows
// the cluster to four shards while they write. The new shards get their three voters,
// the roots first written after the command returned all land on them (they are the least
// loaded), and no write fails but with a typed retryable answer, each retried until
// acknowledged; every acknowledged write reads back.
func TestClusterGrowsShardsUnderWriteLoad(t *testing.T) {
	framework.Run(t, framework.Options{Nodes: 3, Shards: 2}, clusterImplementations, growsShardsUnderWriteLoad)
}

// growStatus is the part of GET /v1/admin/cluster the grow reads.
type growStatus struct {
	Shards      int `json:"shards"`
	ShardStatus []struct {
		Shard   int    `json:"shard"`
		Error   string `json:"error"`
		Closed  bool   `json:"closed"`
		Roots   int64  `json:"roots"`
		Members []struct {
			Voter bool `json:"voter"`
		} `json:"members"`
	} `json:"shard_status"`
}

// typedRetryable accepts for another try only an answer that is the error envelope marked
// retryable (a 503 RoutingUnavailable while a shard elects its leader, say): no node is
// stopped here, so a connection that fails, or any other answer, fails the test.
func typedRetryable(code int, body []byte) bool {
	return code != 0 && strings.Contains(string(body), `"retryable":true`)
}

func readGrowStatus(adminURL string) (growStatus, error) {
	var st growStatus
	code, b := clusterDo(http.MethodGet, adminURL+"/v1/admin/cluster", nil, 10*time.Second)
	if code != http.StatusOK {
		return st, fmt.Errorf("cluster status: %d %s", code, b)
	}
	return st, json.Unmarshal(b, &st)
}

func growsShardsUnderWriteLoad(t *testing.T, c framework.Cluster) {
	const (
		writers       = 6
		writesPerRoot = 4  // each writer moves to a new root every few writes
		rootsBefore   = 24 // roots written before the grow, spread over shards 0 and 1
	)
	// firstTry records when each root's first write was handed to a writer: a root whose
	// first try began after the grow command returned is placed after the new shards opened.
	var (
		mu       sync.Mutex
		firstTry = map[string]time.Time{}
	)
	urls := []string{c.ClientURL(0), c.ClientURL(1), c.ClientURL(2)}
	load := framework.StartLoad(t, framework.LoadOptions{
		Writers: writers,
		Pause:   10 * time.Millisecond,
		Next: func(w, i int) framework.Write {
			agent := fmt.Sprintf("grow-w%d-r%d", w, i/writesPerRoot)
			mu.Lock()
			if _, ok := firstTry[agent]; !ok {
				firstTry[agent] = time.Now()
			}
			mu.Unlock()
			return framework.Write{Agent: agent, Workbench: "w", Path: fmt.Sprintf("input/f%04d", i),
				Body: fmt.Sprintf("writer %d write %d %s", w, i, strings.Repeat("g", 64)), Key: fmt.Sprintf("grow-%d-%d", w, i)}
		},
		Target:   func(w, i, attempt int) (string, bool) { return urls[(w+i+attempt)%len(urls)], true },
		Patience: time.Minute,
		Retry:    typedRetryable,
		Required: true,
	})
	roots := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(firstTry)
	}
	waitRoots := func(n int, what string) {
		t.Helper()
		retry.Within(t, 3*time.Minute, what, func() error {
			if err := load.Err(); err != nil {
				return fmt.Errorf("%w: %v", retry.ErrStop, err)
			}
			if got := roots(); got < n || load.Acked() < int64(n*writesPerRoot/2) {
				return fmt.Errorf("%d roots, %d writes acknowledged", got, load.Acked())
			}
			return nil
		})
	}
	waitRoots(rootsBefore, "roots written before the grow")

	// The grow, through the CLI, while the writers write: it returns once every new shard
	// has a leader and takes roots.
	r := mustCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "shards", "add", "2", "--admin-server", c.AdminURL(1))
	opened := time.Now()
	if !strings.Contains(r.stdout, "cluster grows from 2 to 4 shards") || !strings.Contains(r.stdout, "takes roots: 4 shards") {
		t.Fatalf("admin shards add 2 said:\n%s", r.stdout)
	}
	t.Logf("grow in %v: %s", r.elapsed.Round(100*time.Millisecond), strings.ReplaceAll(strings.TrimSpace(r.stdout), "\n", "; "))

	// Some more roots, fewer than were written before (so the new shards stay the least
	// loaded while they arrive).
	waitRoots(roots()+rootsBefore/2, "roots written after the grow")
	acks := load.Stop()
	if err := load.Err(); err != nil {
		t.Fatal(err)
	}
	if f := load.Failures(); len(f) > 0 {
		t.Fatalf("writes failed: %v", f)
	}
	mu.Lock()
	after := 0
	for _, at := range firstTry {
		if at.After(opened) {
			after++
		}
	}
	mu.Unlock()

	// Every shard, on every node's view, has three voters and takes roots; the roots first
	// tried after the grow returned are on the new shards.
	retry.Within(t, time.Minute, "four shards of three voters", func() error {
		for i := range 3 {
			st, err := readGrowStatus(c.AdminURL(i))
			if err != nil {
				return err
			}
			if st.Shards != 4 || len(st.ShardStatus) != 4 {
				return fmt.Errorf("node %d: %d shards (%d statuses)", i, st.Shards, len(st.ShardStatus))
			}
			for _, s := range st.ShardStatus {
				voters := 0
				for _, m := range s.Members {
					if m.Voter {
						voters++
					}
				}
				if s.Error != "" || s.Closed || voters != 3 {
					return fmt.Errorf("node %d: shard %d: %d voters, closed %v, %s", i, s.Shard, voters, s.Closed, s.Error)
				}
			}
		}
		return nil
	})
	st, err := readGrowStatus(c.AdminURL(0))
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int64, 4)
	for _, s := range st.ShardStatus {
		counts[s.Shard] = s.Roots
	}
	t.Logf("roots per shard %v; %d roots first tried after the grow returned; %d writes acknowledged, %d retried tries",
		counts, after, len(acks), load.Retried())
	if counts[2] == 0 || counts[3] == 0 || counts[2]+counts[3] < int64(after) {
		t.Fatalf("roots per shard %v: the %d roots written after the grow must all be on shards 2 and 3", counts, after)
	}
	if total := counts[0] + counts[1] + counts[2] + counts[3]; total != int64(roots()) {
		t.Fatalf("roots per shard %v sum to %d, %d roots were written", counts, total, roots())
	}

	// Every acknowledged write reads back, through every node.
	for i, a := range acks {
		u := fileURL(urls[i%len(urls)], a.Agent, a.Workbench, a.Path)
		if code, b := clusterDo(http.MethodGet, u, nil, 30*time.Second); code != http.StatusOK || string(b) != a.Body {
			t.Fatalf("read back %s/%s: %d %q, want %q", a.Agent, a.Path, code, b, a.Body)
		}
	}
}
