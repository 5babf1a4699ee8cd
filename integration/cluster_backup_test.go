package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/etcdtest"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterBackupRestoresAfterEveryDataDirectoryAndEtcdAreLost: a 3-node cluster with
// roots on both shards, a snapshot, a commit and an API key is backed up with `cairn
// admin backup`; then every node and its data directory and the etcd are gone (only the
// object store and the backup remain). `cairn admin restore --etcd` seeds a new cluster
// on one fresh data directory and a fresh etcd; started with two more empty nodes, it
// serves every file (live and at the snapshot), the commit's manifest and the key, byte
// for byte, and grows back to three voters per shard.
func TestClusterBackupRestoresAfterEveryDataDirectoryAndEtcdAreLost(t *testing.T) {
	const shards = 2
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: shards})
	node := pc.Nodes[0]
	agents := []string{"b1", "b2", "b3", "b4", "b5", "b6"}
	want := map[string][]byte{} // file URL path → bytes
	put := func(a, path string, body []byte) {
		t.Helper()
		u := fileURL(node.URL, a, "w", path)
		if code, b := clusterDo(http.MethodPut, u, body, 60*time.Second); code/100 != 2 {
			t.Fatalf("put %s: %d %s", u, code, b)
		}
		want[strings.TrimPrefix(u, node.URL)] = body
	}
	for i, a := range agents {
		put(a, "input/small.txt", []byte(a+" small"))
		put(a, "outputs/big.bin", bytes.Repeat([]byte{byte(i), 0x5a}, 40_000)) // past the inline bound: a blob
	}
	// A snapshot of b1 at "v1", then a new body and a commit.
	put("b1", "input/doc.md", []byte("v1"))
	if code, b := clusterDo(http.MethodPost, node.URL+"/v1/agents/b1/workbenches/w/snapshots", []byte(`{"name":"before"}`), 30*time.Second); code != http.StatusCreated {
		t.Fatalf("snapshot: %d %s", code, b)
	}
	put("b1", "input/doc.md", []byte("v2"))
	if code, b := clusterDo(http.MethodPost, node.URL+"/v1/agents/b1/workbenches/w/commit",
		[]byte(`{"manifest":{"run":"dr"},"content_digest_uri":"sha256:`+strings.Repeat("0", 64)+`"}`), 30*time.Second); code != http.StatusOK {
		t.Fatalf("commit: %d %s", code, b)
	}
	manifestPath := "/v1/agents/b1/workbenches/w/files/metadata/run_manifest.json"
	code, manifest := clusterDo(http.MethodGet, node.URL+manifestPath, nil, 30*time.Second)
	if code != http.StatusOK {
		t.Fatalf("commit manifest: %d %s", code, manifest)
	}
	want[manifestPath] = manifest
	key := mustCLI(t, cliOptions{}, "admin", "key", "create", "--name", "restored", "--agent", "b2", "--scope", "workspace:read",
		"--admin-server", node.AdminURL)
	secret := regexp.MustCompile(`cairn_[A-Za-z0-9_]+`).FindString(key.stdout)
	if secret == "" {
		t.Fatalf("no key secret in:\n%s", key)
	}

	// Every shard replicated on the answering node (a cluster backup needs a replica of
	// each), then the backup.
	for _, s := range pc.Nodes {
		caughtUp(t, pc.Nodes, s, shards)
	}
	dest := t.TempDir()
	bk := mustCLI(t, cliOptions{timeout: 2 * time.Minute}, "admin", "backup", "--to", dest, "--id", "dr", "--admin-server", node.AdminURL)
	t.Logf("BACKUP %s", strings.TrimSpace(bk.stdout))

	// Disaster: every node and data directory and the etcd are gone.
	for _, s := range pc.Nodes {
		s.Stop()
	}
	etcd := etcdtest.Start(t).Endpoint()
	seedDir := filepath.Join(t.TempDir(), "seed")
	r := mustCLI(t, cliOptions{}, "admin", "restore", "--from", dest, "--data-dir", seedDir, "--etcd", etcd)
	if !strings.Contains(r.stdout, "restored backup dr of cluster") {
		t.Fatalf("restore printed:\n%s", r)
	}
	again := framework.Stores{ObjectStore: pc.Stores.ObjectStore, Etcd: etcd} // the blobs outlived the disaster
	args := append(again.ClusterArgs(shards), "--peer-listen", "127.0.0.1:0")
	restored := []*framework.Process{framework.StartProcess(t, cairnBin, seedDir, args...)}
	for i := range 2 {
		restored = append(restored, framework.StartProcess(t, cairnBin, filepath.Join(t.TempDir(), fmt.Sprintf("new%d", i)), args...))
	}

	get := func(s *framework.Process, path string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		var code int
		var body []byte
		retry.Within(t, 60*time.Second, "GET "+path, func() error {
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			code, body = resp.StatusCode, buf.Bytes()
			if code == http.StatusServiceUnavailable {
				return fmt.Errorf("%d %s", code, body)
			}
			return nil
		})
		return code, body
	}
	check := func(s *framework.Process) {
		t.Helper()
		for path, body := range want {
			if code, got := get(s, path); code != http.StatusOK || !bytes.Equal(got, body) {
				t.Fatalf("restored %s through %s: %d, %d bytes (want %d bytes)", path, s.URL, code, len(got), len(body))
			}
		}
		if code, got := get(s, "/v1/agents/b1/workbenches/w/files/input/doc.md?at_snapshot=before"); code != http.StatusOK || string(got) != "v1" {
			t.Fatalf("restored read at snapshot through %s: %d %q, want v1", s.URL, code, got)
		}
	}
	check(restored[0])
	// The API key is back in the cluster's key store (etcd), with its id, name and scope.
	keyID := strings.SplitN(strings.TrimPrefix(secret, "cairn_"), "_", 2)[0]
	if l := mustCLI(t, cliOptions{}, "admin", "key", "list", "--etcd", etcd); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(keyID) + `\s+restored\s.*workspace:read`).MatchString(l.stdout) {
		t.Fatalf("the restored etcd lacks key %s (restored, workspace:read):\n%s", keyID, l)
	}
	// The new nodes join: three voters per shard again, and every node serves it all.
	retry.Within(t, 3*time.Minute, "three voters per shard on the restored cluster", func() error {
		st, err := getClusterStatus(restored[0].AdminURL)
		if err != nil {
			return err
		}
		for _, s := range st.ShardStatus {
			voters := 0
			for _, m := range s.Members {
				if m.Voter {
					voters++
				}
			}
			if s.Error != "" || voters != 3 {
				return fmt.Errorf("shard %d: %d voters (%s)", s.Shard, voters, s.Error)
			}
		}
		return nil
	})
	for _, s := range restored[1:] {
		check(s)
	}
	// And it takes writes.
	if code, b := clusterDo(http.MethodPut, fileURL(restored[2].URL, "b3", "w", "input/after.txt"), []byte("after"), 60*time.Second); code/100 != 2 {
		t.Fatalf("write after restore: %d %s", code, b)
	}
}
