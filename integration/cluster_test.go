package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// Tests of `cairn serve --cluster`: a real etcd (embedded in the test process), a real
// MinIO, and three real `cairn serve` processes on loopback.

// clusterFailoverBound bounds the time from the kill of a shard leader to the first
// write acknowledged through a survivor. Generous: a failover takes about a second
// (election) plus the routing's leader-hint refresh.
const clusterFailoverBound = 20 * time.Second

// clusterDo sends one request, retrying retryable answers (503) and transport errors
// until bound has passed; it returns the last status and body (status 0: no answer).
func clusterDo(method, u string, body []byte, bound time.Duration) (int, []byte) {
	return clusterDoKey(method, u, body, bound, "")
}

// createClusterWorkbench creates workbench wb of agent through the node at base, retrying
// as clusterDo does for up to 60 s. A 409 counts as created (a retried create meets the
// workbench its first attempt made); any other failure fails the test.
func createClusterWorkbench(t testing.TB, base, agent, wb string) {
	t.Helper()
	if code, b := clusterDo(http.MethodPut, base+"/v1/agents/"+agent+"/workbenches/"+wb, nil, 60*time.Second); code/100 != 2 && code != http.StatusConflict {
		t.Fatalf("create workbench %s of %s: %d %s", wb, agent, code, b)
	}
}

// clusterDoKey is clusterDo with an Idempotency-Key (none when key is "").
func clusterDoKey(method, u string, body []byte, bound time.Duration, key string) (int, []byte) {
	return clusterSend(method, u, body, bound, key, func(code int, _ []byte) bool {
		return code == 0 || code == http.StatusServiceUnavailable
	})
}

// clusterSend sends one request (with an Idempotency-Key unless key is ""), again every
// 100 ms while again(status, body) holds (status 0: no answer, the body then the transport
// error) and until bound has passed; it returns the last status and body.
func clusterSend(method, u string, body []byte, bound time.Duration, key string, again func(int, []byte) bool) (int, []byte) {
	hc := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(bound)
	for {
		req, _ := http.NewRequest(method, u, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/octet-stream")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		code, b := 0, []byte(nil)
		resp, err := hc.Do(req)
		if err == nil {
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		} else {
			b = []byte(err.Error())
		}
		if !again(code, b) || time.Now().After(deadline) {
			return code, b
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// others returns servers without p, in their order.
func others(servers []*framework.Process, p *framework.Process) []*framework.Process {
	return slices.DeleteFunc(slices.Clone(servers), func(s *framework.Process) bool { return s == p })
}

// shardLeader finds, through /metrics, the server that leads shard with want voters.
func shardLeader(t *testing.T, servers []*framework.Process, shard int, want int) *framework.Process {
	t.Helper()
	ready := fmt.Sprintf("cairn_shard_ready{shard=\"%d\"} 1", shard)
	voters := fmt.Sprintf("cairn_shard_voters{shard=\"%d\"} %d", shard, want)
	hc := &http.Client{Timeout: 5 * time.Second}
	var leader *framework.Process
	retry.Within(t, 60*time.Second, fmt.Sprintf("shard %d has a ready leader with %d voters", shard, want), func() error {
		for _, s := range servers {
			if !s.Running() {
				continue
			}
			resp, err := hc.Get(s.URL + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), ready) && strings.Contains(string(b), voters) {
				leader = s
				return nil
			}
		}
		return fmt.Errorf("no such leader yet")
	})
	return leader
}

func TestClusterForwardingAndFailoverAfterKill9(t *testing.T) {
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 2})
	servers, etcd := pc.Nodes, pc.Stores.Etcd

	// Write through node 0; read back through the others (forwarded to the leader).
	const agent, wb = "alice", "w1"
	createClusterWorkbench(t, servers[0].URL, agent, wb)
	acked := map[string]string{}
	// Each put carries an Idempotency-Key, as a client that retries must: across the leader's
	// kill a forwarded write may have an unknown outcome, which the node retries for it only
	// when the request id makes a repeat safe.
	put := func(s *framework.Process, i int, bound time.Duration) bool {
		name := fmt.Sprintf("input/f%03d", i)
		body := fmt.Sprintf("body %d written through %s", i, s.URL)
		code, b := clusterDoKey(http.MethodPut, fileURL(s.URL, agent, wb, name), []byte(body), bound, "failover-"+name)
		if code/100 != 2 {
			t.Logf("put %s through %s: %d %s", name, s.URL, code, b)
			return false
		}
		acked[name] = body
		return true
	}
	for i := range 6 {
		if !put(servers[i%3], i, 30*time.Second) {
			t.Fatalf("put %d before the kill failed", i)
		}
	}
	for _, s := range servers {
		code, b := clusterDo(http.MethodGet, fileURL(s.URL, agent, wb, "input/f001"), nil, 30*time.Second)
		if code != http.StatusOK || string(b) != acked["input/f001"] {
			t.Fatalf("read through %s: %d %q", s.URL, code, b)
		}
	}

	// Which shard holds the root, from etcd; wait until its leader has three voters.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	resp, err := cli.Get(ctx, "/cairn/roots/"+agent)
	cancel()
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("placement of %s in etcd: %v %v", agent, err, resp)
	}
	var rec struct {
		Shard int `json:"shard"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		t.Fatal(err)
	}
	leader := shardLeader(t, servers, rec.Shard, 3)
	status := mustCLI(t, cliOptions{bin: cairnBin}, "admin", "cluster", "status", "--admin-server", servers[0].AdminURL)
	if len(regexp.MustCompile(`(?m)^[01] +\S+ +leader +\d+$`).FindAllString(status.stdout, -1)) != 2 ||
		!strings.Contains(status.stdout, "2 shards, replication 3") {
		t.Fatalf("cairn admin cluster status: want both shards with a leader:\n%s", status)
	}
	survivors := others(servers, leader)

	// A cursor minted by the leader must still verify on the next one (the cursor key is
	// the cluster's, kept in etcd).
	const listed = "listed" // a workbench no later write changes
	if code, b := clusterDo(http.MethodPut, servers[1].URL+"/v1/agents/"+agent+"/workbenches/"+listed, nil, 30*time.Second); code/100 != 2 {
		t.Fatalf("create workbench %s: %d %s", listed, code, b)
	}
	for i := range 3 {
		if code, b := clusterDo(http.MethodPut, fileURL(servers[2].URL, agent, listed, fmt.Sprintf("input/l%d", i)), []byte("x"), 30*time.Second); code/100 != 2 {
			t.Fatalf("put into %s: %d %s", listed, code, b)
		}
	}
	listURL := "/v1/agents/" + agent + "/workbenches/" + listed + "/list?path=input&limit=2"
	code, b := clusterDo(http.MethodGet, servers[0].URL+listURL, nil, 30*time.Second)
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &page) != nil || page.NextCursor == "" {
		t.Fatalf("list with limit 2: %d %s", code, b)
	}

	// Concurrent writers (each write with an Idempotency-Key, through every node) run
	// across the kill; every write they saw acknowledged must read back. A write is
	// retried under its key, through another node on every try, for up to 15 s.
	load := framework.StartLoad(t, framework.LoadOptions{
		Writers: 4,
		Pause:   50 * time.Millisecond,
		Next: func(w, i int) framework.Write {
			return framework.Write{Agent: agent, Workbench: wb, Path: fmt.Sprintf("input/c%d-%04d", w, i),
				Body: fmt.Sprintf("concurrent %d/%d", w, i), Key: fmt.Sprintf("cw-%d-%d", w, i)}
		},
		Target:   func(w, i, attempt int) (string, bool) { return servers[(w+i+attempt)%3].URL, true },
		Patience: 15 * time.Second,
	})
	// The kill comes once the writers are going.
	retry.Within(t, 30*time.Second, "concurrent writes acknowledged before the kill", func() error {
		if n := load.Acked(); n < 8 {
			return fmt.Errorf("%d acknowledged", n)
		}
		return nil
	})
	beforeKill := load.Acked()

	leader.Kill()
	killed := time.Now()
	if !put(survivors[0], 100, clusterFailoverBound) {
		t.Fatalf("no write was acknowledged through a survivor within %v of the leader's kill -9", clusterFailoverBound)
	}
	t.Logf("first write after kill -9 of the leader of shard %d acknowledged after %v", rec.Shard, time.Since(killed).Round(time.Millisecond))
	for i := 101; i < 106; i++ {
		if !put(survivors[i%2], i, 30*time.Second) {
			t.Fatalf("put %d after the failover failed", i)
		}
	}

	// The writers go on until some of them were acknowledged after the failover too.
	retry.Within(t, 30*time.Second, "concurrent writes acknowledged after the failover", func() error {
		if n := load.Acked() - beforeKill; n < 8 {
			return fmt.Errorf("%d acknowledged since the kill", n)
		}
		return nil
	})
	concurrent := 0
	for _, a := range load.Stop() {
		acked[a.Path] = a.Body
		concurrent++
	}
	t.Logf("%d concurrent writes acknowledged across the kill", concurrent)
	if concurrent == 0 {
		t.Fatal("no concurrent write was acknowledged")
	}

	// Every acknowledged write reads back through both survivors.
	// (each file through one of them in turn, so that every node serves reads)
	readAll := func(through []*framework.Process, when string) {
		t.Helper()
		i := 0
		for name, want := range acked {
			s := through[i%len(through)]
			i++
			code, b := clusterDo(http.MethodGet, fileURL(s.URL, agent, wb, name), nil, 30*time.Second)
			if code != http.StatusOK || string(b) != want {
				t.Fatalf("read %s through %s %s: %d %q, want %q", name, s.URL, when, code, b, want)
			}
		}
	}
	readAll(survivors, "after the failover")
	code, b = clusterDo(http.MethodGet, survivors[0].URL+listURL+"&cursor="+url.QueryEscape(page.NextCursor), nil, 30*time.Second)
	if code != http.StatusOK {
		t.Fatalf("list with a cursor minted by the killed leader: %d %s", code, b)
	}

	// The killed node restarts (on new ports: the leader learns its new peer address from
	// the registry) and its replica catches up with the leader's.
	leader.Restart()
	newLeader := shardLeader(t, survivors, rec.Shard, 3)
	metric := fmt.Sprintf("cairn_shard_applied_version{shard=\"%d\"}", rec.Shard)
	want := metricValue(t, newLeader, metric)
	retry.Within(t, 60*time.Second, "the restarted node's replica catches up", func() error {
		if got := metricValue(t, leader, metric); got < want {
			return fmt.Errorf("applied version %v, leader had %v", got, want)
		}
		return nil
	})

	if !strings.Contains(newLeader.Output(), "member peer address updated") {
		t.Errorf("the leader did not update the restarted node's peer address:\n%s", newLeader.OutputTail(8<<10))
	}

	// SIGTERM on the leader: it hands its leadership over before it exits, and writes go on.
	newLeader.Stop()
	if !strings.Contains(newLeader.Output(), "leadership transferred") {
		t.Errorf("the leader stopped by SIGTERM did not log a leadership transfer:\n%s", newLeader.OutputTail(8<<10))
	}
	var rest []*framework.Process
	for _, s := range servers {
		if s.Running() {
			rest = append(rest, s)
		}
	}
	for i := 200; i < 204; i++ {
		if !put(rest[i%2], i, clusterFailoverBound) {
			t.Fatalf("put %d after the SIGTERM of the leader failed", i)
		}
	}
	readAll(rest, "after the SIGTERM of the leader")
}

// metricValue reads one sample of s's /metrics (0 when absent).
func metricValue(t *testing.T, s *framework.Process, sample string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(s.URL + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// TestClusterLeaderThatStalledPastItsLeaseDoesNotHideTheNewLeader freezes the shard's
// leader (SIGSTOP) past its registry lease and the controller's grace period, so that
// another node leads and the frozen one is replaced, then lets it run again (SIGCONT).
// The node that woke up must not bring back its stale leader hint: within seconds every
// node, the woken one (which no longer hosts a replica) included, serves writes and reads.
func TestClusterLeaderThatStalledPastItsLeaseDoesNotHideTheNewLeader(t *testing.T) {
	servers := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 4, Shards: 1}).Nodes
	const agent, wb = "stall", "w"
	createClusterWorkbench(t, servers[0].URL, agent, wb)
	leader := shardLeader(t, servers, 0, 3)
	pid := leader.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	var others []*framework.Process
	for _, s := range servers {
		if s != leader {
			others = append(others, s)
		}
	}
	// Writes go on through the others; the frozen node is replaced after the grace period
	// (registry TTL 10 s + grace 30 s).
	if code, b := clusterDo(http.MethodPut, fileURL(others[0].URL, agent, wb, "input/during"), []byte("during"), 60*time.Second); code/100 != 2 {
		t.Fatalf("write while the leader is frozen: %d %s", code, b)
	}
	// Once its lease lapsed and before it is replaced, the CLI shows the frozen member down.
	downMember := regexp.MustCompile(`(?m)^0 +(\S+) +(?:voter|nonvoter) +down$`)
	retry.Within(t, 2*time.Minute, "cairn admin cluster status shows the frozen node down", func() error {
		r := runCLI(t, cliOptions{bin: cairnBin}, "admin", "cluster", "status", "--admin-server", others[0].AdminURL)
		m := downMember.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil {
			return fmt.Errorf("no member shown down:\n%s", r)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + ` +down +- +- +-$`).MatchString(r.stdout) {
			return fmt.Errorf("member %s is down but the node table does not say so:\n%s", m[1], r)
		}
		return nil
	})
	frozenID := ""
	retry.Within(t, 2*time.Minute, "the frozen node is removed from the shard", func() error {
		code, b := clusterDo(http.MethodGet, others[0].AdminURL+"/v1/admin/cluster", nil, 10*time.Second)
		var st struct {
			Nodes []struct {
				ID        string `json:"id"`
				ClientURL string `json:"client_url"`
			} `json:"nodes"`
			ShardStatus []struct {
				Members []struct {
					ID string `json:"id"`
				} `json:"members"`
			} `json:"shard_status"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil || len(st.ShardStatus) != 1 {
			return fmt.Errorf("cluster status: %d %s", code, b)
		}
		if len(st.Nodes) != 3 {
			return fmt.Errorf("%d registered nodes, want 3 (the frozen one's lease lapsed)", len(st.Nodes))
		}
		registered := map[string]bool{}
		for _, n := range st.Nodes {
			registered[n.ID] = true
		}
		for _, mb := range st.ShardStatus[0].Members {
			if !registered[mb.ID] {
				frozenID = mb.ID
				return fmt.Errorf("the shard still has %s", mb.ID)
			}
		}
		if len(st.ShardStatus[0].Members) != 3 {
			return fmt.Errorf("%d members", len(st.ShardStatus[0].Members))
		}
		return nil
	})
	t.Logf("frozen node %s replaced", frozenID)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	woke := time.Now()
	for i, s := range servers {
		// The woken node may still believe it leads for a moment and take a write it
		// cannot commit: an answer of unknown outcome ("retryable"), retried under the
		// same Idempotency-Key like any client does.
		name := fmt.Sprintf("input/after%d", i)
		if code, b := putIdempotent(fileURL(s.URL, agent, wb, name), name, "after-"+name, 30*time.Second); code/100 != 2 {
			t.Fatalf("write through n%d after the frozen leader woke up: %d %s", i, code, b)
		}
		if code, b := clusterDo(http.MethodGet, fileURL(s.URL, agent, wb, "input/during"), nil, 30*time.Second); code != http.StatusOK || string(b) != "during" {
			t.Fatalf("read through n%d after the frozen leader woke up: %d %q", i, code, b)
		}
	}
	// And it stays so: a stale hint written back late would show here.
	time.Sleep(3 * time.Second)
	for i, s := range servers {
		if code, b := putIdempotent(fileURL(s.URL, agent, wb, fmt.Sprintf("input/later%d", i)), "x", fmt.Sprintf("later-%d", i), 10*time.Second); code/100 != 2 {
			t.Fatalf("write through n%d %v after the frozen leader woke up: %d %s", i, time.Since(woke).Round(time.Second), code, b)
		}
	}
}

// putIdempotent PUTs body to u with Idempotency-Key key, retrying under the same key on
// transport errors and on answers marked retryable (a 503 RoutingUnavailable, a commit of unknown
// outcome) until bound has passed; it returns the last status and body.
func putIdempotent(u, body, key string, bound time.Duration) (int, []byte) {
	return clusterSend(http.MethodPut, u, []byte(body), bound, key, func(code int, b []byte) bool {
		return code/100 != 2 && (code == 0 || bytes.Contains(b, []byte(`"retryable":true`)))
	})
}
