package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterGCAfterARootMoveDeletesNothingTheRootHolds: three nodes, two shards, a short
// GC grace. A root holds files in the object store, some overwritten (their old versions
// kept in history), and a deleted workbench whose file is garbage; it moves to the other
// shard. Sweeps on every node (each sweeps the shards it leads) then collect the deleted
// workbench's blob — on the shard the root moved to, from the reference records that moved
// with it — and nothing else: a scrub of every shard finds no referenced blob missing or
// corrupt, and every file and every kept version reads back byte for byte.
func TestClusterGCAfterARootMoveDeletesNothingTheRootHolds(t *testing.T) {
	const (
		agent = "gcmove"
		grace = 3 * time.Second
	)
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 2}, "--gc-grace", grace.String())
	nodes := pc.Nodes
	body := func(name string, v int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("%s version %d; ", name, v)), 8<<10) // ~150 KiB: stored in the object store
	}
	put := func(wb, path string, b []byte) {
		t.Helper()
		if code, resp := putIdempotent(fileURL(nodes[0].URL, agent, wb, path), string(b), "", time.Minute); code/100 != 2 {
			t.Fatalf("put %s/%s: %d %s", wb, path, code, resp)
		}
	}
	want := map[string][][]byte{} // path → every version, oldest first
	for i := range 4 {
		path := fmt.Sprintf("input/f%d.bin", i)
		for v := range 1 + i%2 {
			b := body(path, v)
			put("w", path, b)
			want[path] = append(want[path], b)
		}
	}
	put("junk", "input/garbage.bin", body("garbage", 0))
	if code, b := clusterDo(http.MethodDelete, nodes[1].URL+"/v1/agents/"+agent+"/workbenches/junk", nil, time.Minute); code/100 != 2 {
		t.Fatalf("delete the junk workbench: %d %s", code, b)
	}

	to := "1"
	r := runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", agent, "--to", to, "--admin-server", nodes[1].AdminURL)
	if r.code != 0 && strings.Contains(r.stderr, "on shard 1 already") {
		to = "0"
		r = runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", agent, "--to", to, "--admin-server", nodes[2].AdminURL)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "step 8 of 8: done") {
		t.Fatalf("admin root move:\n%s", r)
	}

	// Sweeps on every node until one collected the garbage blob (its count reached zero
	// before the move; the grace runs from then).
	deleted := 0.0
	retry.Within(t, 90*time.Second, "a sweep collects the deleted workbench's blob", func() error {
		for _, n := range nodes {
			code, rep := postJSON(t, n.AdminURL+"/v1/admin/gc", `{}`, 2*time.Second)
			if code == http.StatusServiceUnavailable {
				continue // this node leads no shard now
			}
			if code != http.StatusOK {
				return fmt.Errorf("%w: gc on %s: %d %v", retry.ErrStop, n.AdminURL, code, rep)
			}
			d, _ := rep["deleted"].(float64)
			deleted += d
		}
		if deleted < 1 {
			return fmt.Errorf("%v blobs deleted", deleted)
		}
		return nil
	})
	if deleted != 1 {
		t.Fatalf("sweeps deleted %v blobs, want the one of the deleted workbench", deleted)
	}

	// A scrub of every shard: every referenced blob present and intact.
	scrubbed := 0.0
	for _, n := range nodes {
		for after := ""; ; {
			code, rep := postJSON(t, n.AdminURL+"/v1/admin/scrub", `{"after":"`+after+`"}`, 2*time.Second)
			if code == http.StatusServiceUnavailable {
				break
			}
			if code != http.StatusOK || rep["missing"] != 0.0 || rep["corrupt"] != 0.0 {
				t.Fatalf("scrub on %s: %d %v", n.AdminURL, code, rep)
			}
			b, _ := rep["blobs"].(float64)
			scrubbed += b
			if rep["done"] == true {
				break
			}
			after, _ = rep["next"].(string)
		}
	}
	if scrubbed < float64(len(want)) {
		t.Fatalf("the scrubs checked %v blobs; the root holds more", scrubbed)
	}

	// Every file and every kept version, through every node.
	for path, versions := range want {
		for _, n := range nodes {
			code, b := clusterDo(http.MethodGet, fileURL(n.URL, agent, "w", path), nil, 30*time.Second)
			if code != http.StatusOK || !bytes.Equal(b, versions[len(versions)-1]) {
				t.Fatalf("%s through %s: %d, %d bytes", path, n.URL, code, len(b))
			}
		}
		code, h := getJSON(t, nodes[2].URL+"/v1/agents/"+agent+"/workbenches/w/history?path="+path)
		hist, _ := h["versions"].([]any)
		if code != http.StatusOK || len(hist) != len(versions) {
			t.Fatalf("%s: history %d with %d versions, want %d: %v", path, code, len(hist), len(versions), h)
		}
		seen := map[string]bool{}
		for i, e := range hist {
			gen := fmt.Sprint(e.(map[string]any)["generation"])
			code, b := clusterDo(http.MethodGet, fileURL(nodes[i%3].URL, agent, "w", path)+"?generation="+gen, nil, 30*time.Second)
			if code != http.StatusOK || !containsVersion(versions, b) {
				t.Fatalf("%s at generation %s: %d, %d bytes", path, gen, code, len(b))
			}
			seen[string(b)] = true
		}
		if len(seen) != len(versions) {
			t.Fatalf("%s: %d distinct versions read back, want %d", path, len(seen), len(versions))
		}
	}
}

// containsVersion reports whether b is one of versions.
func containsVersion(versions [][]byte, b []byte) bool {
	for _, v := range versions {
		if bytes.Equal(v, b) {
			return true
		}
	}
	return false
}
