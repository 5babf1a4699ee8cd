package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterRebalancesAHotShardWhenSwitchedOn: three nodes, two shards, four roots (two
// a shard) and one root of the first shard holding far more bytes than the others. With
// the switch on (POST /v1/admin/cluster/rebalance), the elected controller moves the hot
// shard's other root to the cold shard — never the heavy root, whose move would only make
// the cold shard the hot one; the moved root's files read back through every node.
func TestClusterRebalancesAHotShardWhenSwitchedOn(t *testing.T) {
	cb := startClusterBackends(t)
	interval, rebalance := controllerInterval, rebalanceInterval
	controllerInterval, rebalanceInterval = 300*time.Millisecond, time.Second
	t.Cleanup(func() { controllerInterval, rebalanceInterval = interval, rebalance })
	var nodes []*testClusterNode
	for range 3 {
		nodes = append(nodes, startClusterNode(t, cb.config(t)))
	}
	file := func(root string) string { return "/v1/agents/" + root + "/workbenches/w/files/input/f.txt" }
	byShard := map[int][]string{}
	for i := range 4 {
		root := fmt.Sprintf("r%d", i)
		mustSend(t, "put "+root, http.MethodPut, nodes[i%3].url+file(root), []byte("small "+root))
		sh, err := nodes[0].host.Placement().Resolve(t.Context(), root)
		if err != nil {
			t.Fatal(err)
		}
		byShard[sh] = append(byShard[sh], root)
	}
	if len(byShard[0]) != 2 || len(byShard[1]) != 2 {
		t.Fatalf("placement of four roots on two shards: %v", byShard)
	}
	heavy := byShard[0][0]
	light := byShard[0][1]
	mustSend(t, "a large file in "+heavy, http.MethodPut, nodes[0].url+"/v1/agents/"+heavy+"/workbenches/w/files/input/large.bin",
		bytes.Repeat([]byte("0123456789abcdef"), 1<<16))

	if code, b := request(t, http.MethodGet, nodes[1].adminURL+RebalancePath, nil); code != http.StatusOK || !bytes.Contains(b, []byte(`"enabled":false`)) ||
		!bytes.Contains(b, []byte(`"since":null`)) {
		t.Fatalf("the switch before it was set: %d %s", code, b)
	}
	if code, b := request(t, http.MethodPost, nodes[1].adminURL+RebalancePath, []byte(`{"enabled":true}`)); code != http.StatusOK ||
		!bytes.Contains(b, []byte(`"enabled":true`)) {
		t.Fatalf("switch on: %d %s", code, b)
	}
	if code, b := request(t, http.MethodPost, nodes[1].adminURL+RebalancePath, []byte(`{}`)); code != http.StatusBadRequest ||
		!bytes.Contains(b, []byte(`"field":"enabled"`)) {
		t.Fatalf("a switch without enabled: %d %s", code, b)
	}
	type move struct {
		Root   string `json:"root"`
		Source int    `json:"source"`
		Target int    `json:"target"`
		Step   string `json:"step"`
	}
	moves := func() ([]move, error) {
		code, b := request(t, http.MethodGet, nodes[2].adminURL+"/v1/admin/cluster/root-moves", nil)
		var out struct {
			Moves []move `json:"moves"`
		}
		if code != http.StatusOK {
			return nil, fmt.Errorf("root moves: %d %s", code, b)
		}
		return out.Moves, json.Unmarshal(b, &out)
	}
	retry.Within(t, 90*time.Second, "the rebalancer moved a root", func() error {
		ms, err := moves()
		if err != nil {
			return err
		}
		if len(ms) == 0 || ms[0].Step != "done" {
			return fmt.Errorf("moves %+v", ms)
		}
		return nil
	})
	ms, err := moves()
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Root != light || ms[0].Source != 0 || ms[0].Target != 1 {
		t.Fatalf("the first move %+v, want %s from shard 0 to 1", ms[0], light)
	}
	for _, m := range ms {
		if m.Root == heavy {
			t.Fatalf("the heavy root moved: %+v", ms)
		}
	}
	if sh, err := nodes[0].host.Placement().Refresh(t.Context(), light); err != nil || sh != 1 {
		t.Fatalf("%s's placement after its move: shard %d, %v", light, sh, err)
	}
	for _, n := range nodes {
		if code, b := request(t, http.MethodGet, n.url+file(light), nil); code != http.StatusOK || string(b) != "small "+light {
			t.Fatalf("%s after its move, through %s: %d %q", light, n.url, code, b)
		}
	}
}
