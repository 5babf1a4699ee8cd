package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestS3GatewayServesEveryKeyOnEveryNodeOfACluster runs three `cairn serve --cluster
// --s3-listen` processes over one shard with one replica, node 1's: nodes 2 and 3 hold
// none, so every S3 request they take crosses the peer port to node 1. Debian's aws CLI
// (botocore's signing, which signs content-length: 0 on an empty PUT) makes the bucket
// through node 2, syncs a real tree up through node 2 and down through node 3 byte-exact,
// and puts through each node a file that each other node reads back.
func TestS3GatewayServesEveryKeyOnEveryNodeOfACluster(t *testing.T) {
	aws := debianTool(t, "aws")
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 0, Shards: 1}, "--replication", "1")
	endpoints := make([]string, 3)
	add := func(i int) *framework.Process {
		addr := freeport.Addr(t)
		endpoints[i] = "http://" + addr
		return pc.AddNode("--s3-listen", addr)
	}
	first := add(0)
	var replica string // node 1's id, the only member of shard 0
	retry.Within(t, 60*time.Second, "node 1 hosts the only shard", func() error {
		st, err := getClusterStatus(first.AdminURL)
		if err != nil {
			return err
		}
		if len(st.ShardStatus) != 1 || len(st.ShardStatus[0].Members) != 1 || st.ShardStatus[0].Members[0].ID != st.Node {
			return fmt.Errorf("shard status %+v", st.ShardStatus)
		}
		replica = st.Node
		return nil
	})
	add(1)
	add(2)
	key := framework.CreateKey(t, cairnRaceBin, nil, "lake", "--etcd", pc.Stores.Etcd, "--agent", "lake",
		"--scope", "workspace:read,workspace:write", "--s3")
	for i, n := range pc.Nodes[1:] {
		st, err := getClusterStatus(n.AdminURL)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.ShardStatus[0].Members {
			if m.ID == st.Node || st.Node == replica {
				t.Fatalf("node %d holds a replica of the shard; the test needs nodes without one: %+v", i+2, st)
			}
		}
	}
	cli := func(node int, args ...string) string {
		t.Helper()
		return s3Tool(t, key, aws, append([]string{"--endpoint-url", endpoints[node]}, args...)...)
	}

	cli(1, "s3", "mb", "s3://lake") // the first write places the root; the CLI retries the 503 that answers it
	tree := goTree(t)
	cli(1, "s3", "sync", tree, "s3://lake/input/encoding")
	out := t.TempDir()
	cli(2, "s3", "sync", "s3://lake/input/encoding", out)
	sameTree(t, tree, out)

	dir := t.TempDir()
	for i := range endpoints {
		src := filepath.Join(dir, fmt.Sprintf("n%d", i))
		if err := os.WriteFile(src, bytes.Repeat([]byte(fmt.Sprintf("through node %d\n", i+1)), i*1000), 0o644); err != nil {
			t.Fatal(err)
		}
		cli(i, "s3", "cp", src, fmt.Sprintf("s3://lake/outputs/n%d", i)) // node 1's file is empty
	}
	for i := range endpoints {
		for j := range endpoints {
			got := filepath.Join(t.TempDir(), "got")
			cli(i, "s3", "cp", fmt.Sprintf("s3://lake/outputs/n%d", j), got)
			want, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("n%d", j)))
			if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, want) {
				t.Fatalf("node %d's file read through node %d: %d bytes (%v), want %d", j+1, i+1, len(b), err, len(want))
			}
		}
		ls := cli(i, "s3", "ls", "s3://lake/outputs/")
		for j := range endpoints {
			if !strings.Contains(ls, fmt.Sprintf(" n%d\n", j)) {
				t.Fatalf("aws s3 ls through node %d misses n%d:\n%s", i+1, j, ls)
			}
		}
	}
	if _, err := s3ToolRun(t, framework.Key{S3AccessKeyID: key.S3AccessKeyID, S3SecretAccessKey: strings.Repeat("x", 40)}, aws,
		"--endpoint-url", endpoints[2], "s3", "ls", "s3://lake/"); err == nil {
		t.Fatal("aws s3 ls through node 3 with a wrong secret succeeded")
	}
}
