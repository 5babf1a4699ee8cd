package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterLinearizableAcrossRootMoves: the clients of the linearizability test (gets,
// puts, conditional puts and appends on four paths of one root, through every node, over
// REST and MCP) run
// while the root moves back and forth between two shards: plain moves, and moves during
// which the source's or the target's shard leader is cut off from its peers or killed with
// kill -9 (the move completes or rolls back; a rolled-back move is started again until the
// root has moved). The whole history, checked with porcupine against the file model, is
// linearizable; each move's time from request to end is logged.
func TestClusterLinearizableAcrossRootMoves(t *testing.T) {
	lc := startLinCluster(t, "--shards", "2")
	const agent = "linmove"
	rec, paths := newLinRecorder(t, lc, agent)
	clients := startLinClients(t, lc, rec, paths)
	clients.progress("before any move")

	var took []time.Duration
	var windows [][2]time.Duration // each completed move's request and end, since the recorder's start
	current := -1                  // the root's shard, unknown until the first move says
	for m, fault := range []string{"", "", "isolate source", "kill target", "isolate target", "kill source", ""} {
		to := 1
		if current >= 0 {
			to = 1 - current
		}
		victim := m % 3
		switch {
		case strings.HasSuffix(fault, "source"):
			victim = lc.leaderOf(t, 1-to)
		case strings.HasSuffix(fault, "target"):
			victim = lc.leaderOf(t, to)
		}
		admin := lc.servers[(victim+1)%3].AdminURL
		for attempt := 0; ; attempt++ {
			code, res := postJSON(t, admin+"/v1/admin/cluster/root-moves", fmt.Sprintf(`{"root":%q,"to":%d}`, agent, to), 30*time.Second)
			if code == http.StatusBadRequest && current < 0 && strings.Contains(fmt.Sprint(res["message"]), "already") {
				current, to = to, 1-to // placed on shard 1 at first
				code, res = postJSON(t, admin+"/v1/admin/cluster/root-moves", fmt.Sprintf(`{"root":%q,"to":%d}`, agent, to), 30*time.Second)
			}
			move, _ := res["move"].(map[string]any)
			if code != http.StatusAccepted || move == nil {
				t.Fatalf("move %d to shard %d: %d %v", m+1, to, code, res)
			}
			began := time.Now()
			switch {
			case strings.HasPrefix(fault, "isolate") && attempt == 0:
				t.Logf("move %d: n%d, the %s shard's leader, cut off from its peers", m+1, victim, strings.Fields(fault)[1])
				lc.net.Isolate(victim)
			case strings.HasPrefix(fault, "kill") && attempt == 0:
				t.Logf("move %d: kill -9 of n%d, the %s shard's leader", m+1, victim, strings.Fields(fault)[1])
				lc.servers[victim].Kill()
			}
			id := fmt.Sprint(move["id"])
			if strings.HasPrefix(fault, "isolate") && attempt == 0 {
				// Cut off for partitionFor at most: a controller cut off from its peers
				// (but not from etcd) drives nothing until the partition heals, or until
				// it steps down after three reconcile intervals (15 s), longer than this.
				_, err := retry.Until(partitionFor, func() error { return moveEnded(t, admin, id) })
				t.Logf("move %d: healed after %v (the move ended meanwhile: %v)", m+1, time.Since(began).Round(time.Millisecond), err == nil)
				lc.net.Heal()
			}
			step := fmt.Sprint(waitMoveEnd(t, admin, id)["step"])
			if strings.HasPrefix(fault, "kill") && attempt == 0 {
				lc.restart(victim)
			}
			t.Logf("move %d (to shard %d, try %d): %s in %v", m+1, to, attempt+1, step, time.Since(began).Round(time.Millisecond))
			if step == "done" {
				took = append(took, time.Since(began))
				windows = append(windows, [2]time.Duration{began.Sub(rec.t0), time.Since(rec.t0)})
				current = to
				break
			}
			if attempt == 3 {
				t.Fatalf("move %d rolled back %d times", m+1, attempt+1)
			}
		}
		clients.progress(fmt.Sprintf("after move %d", m+1))
	}
	slices.Sort(took)
	t.Logf("moves that completed: median %v, max %v", took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))

	clients.stop()
	var gaps []time.Duration
	writes := rec.writeReturns()
	for _, w := range windows {
		gaps = append(gaps, longestWriteGap(writes, w[0], w[1]))
	}
	t.Logf("write unavailability per move (the longest time without an acknowledged write around it): median %v, max %v",
		median(gaps), maxOf(gaps))
	rec.finalReads(t, paths)
	rec.check(t)
}

// longestWriteGap is the longest time between two consecutive acknowledgements of writes
// (their return times) around the window from began to ended: from the last one before it
// to the first one after it.
func longestWriteGap(writes [][2]time.Duration, began, ended time.Duration) time.Duration {
	acks := make([]time.Duration, 0, len(writes))
	for _, w := range writes {
		acks = append(acks, w[1])
	}
	slices.Sort(acks)
	var longest time.Duration
	prev := time.Duration(-1)
	for _, a := range acks {
		if prev >= 0 && a >= began {
			longest = max(longest, a-prev)
		}
		if a > ended {
			break
		}
		prev = a
	}
	return longest
}

// partitionFor bounds how long a move's partition lasts.
const partitionFor = 8 * time.Second

// moveEnded reports whether move id ended (nil), as the admin listener at admin says.
func moveEnded(t *testing.T, admin, id string) error {
	code, got := getJSON(t, admin+"/v1/admin/cluster/root-moves?id="+id)
	list, _ := got["moves"].([]any)
	if code != http.StatusOK || len(list) != 1 {
		return fmt.Errorf("root moves: %d %v", code, got)
	}
	if m := list[0].(map[string]any); m["ended"] != true {
		return fmt.Errorf("at step %v", m["step"])
	}
	return nil
}
