package server

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/internal/retry"
)

func TestClusterFollowerUploadsTheBodyItReceivesAndForwardsOnlyTheCommand(t *testing.T) {
	nodes := startCluster(t, 3, oneShard)
	const shardID = 0
	ws := "/v1/agents/alice/workbenches/w1"
	mustSend(t, "create workbench", http.MethodPut, nodes[0].url+ws, nil)
	var leader, follower *testClusterNode
	retry.SucceedsSoon(t, "a ready leader and a follower that knows it", func() error {
		leader, follower = nil, nil
		for _, n := range nodes {
			r := n.replica(shardID)
			switch {
			case r == nil:
				return fmt.Errorf("%s hosts no replica yet", n.nodeID)
			case r.Ready():
				leader = n
			default:
				if id, _ := r.Leader(); id != "" {
					follower = n
				}
			}
		}
		if leader == nil || follower == nil {
			return fmt.Errorf("no ready leader and informed follower yet")
		}
		return nil
	})

	const size = 64 << 20
	body := make([]byte, size)
	rand.Read(body)
	putBytes := func(n *testClusterNode) float64 {
		return metricstest.Value(t, n.registry, "cairn_blob_put_bytes_total")
	}
	fwdIn := func(n *testClusterNode) float64 {
		return metricstest.Value(t, n.registry, "cairn_peer_bytes_total", "stream=fwd", "direction=received")
	}
	leaderPut, followerPut, leaderFwd := putBytes(leader), putBytes(follower), fwdIn(leader)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, follower.url+ws+"/files/input/big", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(ServedByHeader) != follower.nodeID {
		t.Fatalf("PUT 64 MiB through follower %s: %d %s served by %q", follower.nodeID, resp.StatusCode, b, resp.Header.Get(ServedByHeader))
	}
	if got := putBytes(follower) - followerPut; got < size {
		t.Fatalf("the follower uploaded %v bytes of a %d-byte body", got, size)
	}
	if got := putBytes(leader) - leaderPut; got != 0 {
		t.Fatalf("the leader uploaded %v bytes of a body the follower received", got)
	}
	// The leader received the command (segment keys, digests), not the body.
	if got := fwdIn(leader) - leaderFwd; got > size/64 {
		t.Fatalf("the leader received %v bytes on the fwd stream for a %d-byte PUT through a follower", got, size)
	}
	t.Logf("PUT %d bytes through a follower: the leader received %v bytes on its fwd stream", size, fwdIn(leader)-leaderFwd)

	// And the follower serves it back from the object store itself.
	resp, err = http.Get(follower.url + ws + "/files/input/big")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) || resp.Header.Get(ServedByHeader) != follower.nodeID {
		t.Fatalf("GET through the follower: %d, %d bytes (equal %v), served by %q", resp.StatusCode, len(got), bytes.Equal(got, body), resp.Header.Get(ServedByHeader))
	}
}
