package integration

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterRootMoveSurvivesKill9OfTheSourceLeader: a root of a few thousand files moves
// to the other shard under writers, and the source shard's leader is killed with SIGKILL
// while the move is under way. The move ends anyway, completed or rolled back (resumed by
// the controller, a new one if the killed node held it); the root reads whole on the shard
// its placement names, every acknowledged write reads back, and a rolled-back move, started
// again, completes.
func TestClusterRootMoveSurvivesKill9OfTheSourceLeader(t *testing.T) {
	rootMoveUnderFault(t, killLeader(true))
}

// TestClusterRootMoveSurvivesKill9OfTheTargetLeader is the same with the target shard's
// leader killed.
func TestClusterRootMoveSurvivesKill9OfTheTargetLeader(t *testing.T) {
	rootMoveUnderFault(t, killLeader(false))
}

// TestClusterRootMoveSurvivesKill9OfTheController is the same with the node whose
// controller drives the move killed (it may lead a shard too).
func TestClusterRootMoveSurvivesKill9OfTheController(t *testing.T) {
	rootMoveUnderFault(t, moveFault{name: "kill -9 of the controller",
		inject: func(t *testing.T, pc *framework.Processes, _ moveShards, dead *atomic.Int32) func() {
			i := controllerNode(t, pc.Nodes)
			dead.Store(int32(i))
			pc.Nodes[i].Kill()
			return pc.Nodes[i].Restart
		}})
}

// controllerNode returns the index of the node whose controller leads
// (cairn_controller_leading 1).
func controllerNode(t *testing.T, servers []*framework.Process) int {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	found := -1
	retry.Within(t, 60*time.Second, "a node's controller leads", func() error {
		for i, s := range servers {
			resp, err := hc.Get(s.URL + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), "\ncairn_controller_leading 1\n") {
				found = i
				return nil
			}
		}
		return errors.New("no controller leads yet")
	})
	return found
}

// TestClusterRootMoveSurvivesEtcdUnavailable is the same with etcd stopped for longer than
// the nodes' etcd timeouts while the move is under way, and started again: the move's
// steps and its switch cannot be written meanwhile; once etcd is back the move ends,
// completed or rolled back, and a rolled-back one, started again, completes.
func TestClusterRootMoveSurvivesEtcdUnavailable(t *testing.T) {
	rootMoveUnderFault(t, moveFault{
		name: "etcd stopped",
		inject: func(t *testing.T, pc *framework.Processes, _ moveShards, _ *atomic.Int32) func() {
			pc.Stores.EtcdServer.Stop(0)
			// Down for longer than an etcd request's timeout (2 s) and the node leases'
			// renewals: the drive's steps fail, the registrations and the controller's
			// election have to survive or be won again.
			<-time.After(8 * time.Second)
			pc.Stores.EtcdServer.Restart(0)
			return func() {}
		},
	})
}

// moveShards are a move's source and target shards.
type moveShards struct{ from, to int }

// moveFault is what rootMoveUnderFault does to the cluster once the move is under way:
// inject returns the heal to run after the move ended (dead is the index of a node the
// writers must leave alone, -1 for none).
type moveFault struct {
	name   string
	inject func(t *testing.T, pc *framework.Processes, m moveShards, dead *atomic.Int32) (heal func())
}

// killLeader kills the leader of the move's source shard (source) or of its target with
// SIGKILL; the heal restarts it.
func killLeader(source bool) moveFault {
	name := map[bool]string{true: "source", false: "target"}[source]
	return moveFault{name: "kill -9 of the " + name + "'s leader",
		inject: func(t *testing.T, pc *framework.Processes, m moveShards, dead *atomic.Int32) func() {
			victim := m.to
			if source {
				victim = m.from
			}
			leader := shardLeader(t, pc.Nodes, victim, 3)
			for i, s := range pc.Nodes {
				if s == leader {
					dead.Store(int32(i))
				}
			}
			leader.Kill()
			return leader.Restart
		}}
}

// rootMoveUnderFault moves a root of many files under writers and injects fault while the
// move is under way.
func rootMoveUnderFault(t *testing.T, fault moveFault) {
	const (
		agent = "heavy"
		files = 8000
	)
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 2})
	servers := pc.Nodes
	body := func(i int) string { return fmt.Sprintf("populated file %d %s", i, strings.Repeat("h", 32)) }
	hc := &http.Client{Timeout: 30 * time.Second}
	started := time.Now()
	framework.Populate(t, hc, 8, files, func(i int) *http.Request {
		req, _ := http.NewRequest(http.MethodPut, fileURL(servers[i%3].URL, agent, "w", fmt.Sprintf("input/p/f%05d", i)), strings.NewReader(body(i)))
		return req
	})
	t.Logf("populated %d files in %v", files, time.Since(started).Round(time.Millisecond))

	var dead atomic.Int32
	dead.Store(-1)
	// The writers' addresses, read under mu: a restart writes the process's URL.
	var mu sync.Mutex
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL
	}
	load := framework.StartLoad(t, framework.LoadOptions{
		Writers: 3,
		Pause:   5 * time.Millisecond,
		Next: func(w, i int) framework.Write {
			return framework.Write{Agent: agent, Workbench: "w", Path: fmt.Sprintf("input/load/w%d-%05d", w, i),
				Body: fmt.Sprintf("writer %d write %d", w, i), Key: fmt.Sprintf("kill-%d-%d", w, i)}
		},
		Target: func(w, i, attempt int) (string, bool) {
			n := (w + i + attempt) % len(servers)
			mu.Lock()
			defer mu.Unlock()
			return urls[n], int32(n) != dead.Load()
		},
		Patience: 2 * time.Minute,
		// A node killed mid-request answers nothing (status 0); every answer must be the
		// typed retryable envelope.
		Retry:    func(code int, b []byte) bool { return code == 0 || typedRetryable(code, b) },
		Required: true,
	})
	retry.Within(t, time.Minute, "writes before the move", func() error {
		if err := load.Err(); err != nil {
			return fmt.Errorf("%w: %v", retry.ErrStop, err)
		}
		if load.Acked() < 30 {
			return fmt.Errorf("%d acknowledged", load.Acked())
		}
		return nil
	})

	// Start the move; the root's own shard refuses, naming itself. Inject the fault as
	// soon as the move is under way; a move that ended before the fault landed (the copy
	// is quick) moves the root back, and the next one is tried.
	to := 1
	code, res := postJSON(t, servers[0].AdminURL+"/v1/admin/cluster/root-moves", fmt.Sprintf(`{"root":%q,"to":1}`, agent), 30*time.Second)
	if code == http.StatusBadRequest && strings.Contains(fmt.Sprint(res["message"]), "already") {
		to = 0
		code, res = postJSON(t, servers[0].AdminURL+"/v1/admin/cluster/root-moves", fmt.Sprintf(`{"root":%q,"to":0}`, agent), 30*time.Second)
	}
	var (
		id   string
		from int
		step string
	)
	for attempt := 1; ; attempt++ {
		if code != http.StatusAccepted {
			t.Fatalf("start the move: %d %v", code, res)
		}
		from = 1 - to
		id = res["move"].(map[string]any)["id"].(string)
		step = ""
		for deadline := time.Now().Add(time.Minute); step == "" || step == "requested"; {
			_, got := getJSON(t, servers[0].AdminURL+"/v1/admin/cluster/root-moves?id="+id)
			if list, _ := got["moves"].([]any); len(list) == 1 {
				step, _ = list[0].(map[string]any)["step"].(string)
			}
			if time.Now().After(deadline) {
				t.Fatalf("move %s did not start: step %q", id, step)
			}
		}
		if step != "done" && step != "rolled_back" {
			break
		}
		if attempt == 4 {
			t.Fatalf("%d moves ended before the fault could land: raise the file count", attempt)
		}
		t.Logf("move %d to shard %d ended %s before the fault; moving the root back", attempt, to, step)
		if step == "done" {
			to = from
		}
		code, res = postJSON(t, servers[0].AdminURL+"/v1/admin/cluster/root-moves", fmt.Sprintf(`{"root":%q,"to":%d}`, agent, to), 30*time.Second)
	}
	heal := fault.inject(t, pc, moveShards{from: from, to: to}, &dead)
	t.Logf("%s at step %q", fault.name, step)
	var live []*framework.Process
	for i, s := range servers {
		if int32(i) != dead.Load() {
			live = append(live, s)
		}
	}

	move := waitMoveEnd(t, live[0].AdminURL, id)
	t.Logf("the move ended %s (%v)", move["step"], move["reason"])
	heal()
	mu.Lock()
	for i, s := range servers {
		urls[i] = s.URL
	}
	mu.Unlock()
	dead.Store(-1)
	if move["step"] == "rolled_back" {
		if move["reason"] == nil || move["reason"] == "" {
			t.Fatalf("a rolled-back move without a reason: %v", move)
		}
		code, res := postJSON(t, live[1].AdminURL+"/v1/admin/cluster/root-moves", fmt.Sprintf(`{"root":%q,"to":%d}`, agent, to), time.Minute)
		if code != http.StatusAccepted {
			t.Fatalf("start the move again: %d %v", code, res)
		}
		move = waitMoveEnd(t, live[1].AdminURL, res["move"].(map[string]any)["id"].(string))
	}
	if move["step"] != "done" {
		t.Fatalf("the move ended %v", move)
	}

	retry.Within(t, time.Minute, "writes after the move", func() error {
		if err := load.Err(); err != nil {
			return fmt.Errorf("%w: %v", retry.ErrStop, err)
		}
		return nil
	})
	acks := load.Stop()
	if err := load.Err(); err != nil {
		t.Fatal(err)
	}
	// The files (every seventh), through every node, the restarted one included.
	for i := 0; i < files; i += 7 {
		u := fileURL(servers[i%3].URL, agent, "w", fmt.Sprintf("input/p/f%05d", i))
		if code, b := clusterDo(http.MethodGet, u, nil, time.Minute); code != http.StatusOK || string(b) != body(i) {
			t.Fatalf("read back f%05d: %d %q", i, code, b)
		}
	}
	for i, a := range acks {
		u := fileURL(servers[i%3].URL, a.Agent, a.Workbench, a.Path)
		if code, b := clusterDo(http.MethodGet, u, nil, time.Minute); code != http.StatusOK || string(b) != a.Body {
			t.Fatalf("read back %s: %d %q, want %q", a.Path, code, b, a.Body)
		}
	}
	t.Logf("%d writes acknowledged, %d tries retried", len(acks), load.Retried())
}

// waitMoveEnd follows move id through the admin listener at admin until it ends and
// returns it.
func waitMoveEnd(t *testing.T, admin, id string) map[string]any {
	t.Helper()
	var m map[string]any
	retry.Within(t, 3*time.Minute, "move "+id+" ends", func() error {
		code, got := getJSON(t, admin+"/v1/admin/cluster/root-moves?id="+id)
		list, _ := got["moves"].([]any)
		if code != http.StatusOK || len(list) != 1 {
			return fmt.Errorf("root moves: %d %v", code, got)
		}
		m = list[0].(map[string]any)
		if m["ended"] != true {
			return fmt.Errorf("at step %v", m["step"])
		}
		return nil
	})
	return m
}
