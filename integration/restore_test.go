package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// Shape of the large restore.
const (
	restoreFiles         = 100_000
	restoreFilesShort    = 5_000
	restoreDistinctFiles = 100 // distinct bodies: the object store holds this many blobs
	restoreBatch         = 64  // --restore-batch: many bounded commands, a wide window to crash in
	restoreAgent         = "rst"
	restoreWriters       = 32
)

// countObjects counts the blobs of a dir-backend data directory.
func countObjects(t *testing.T, dataDir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(dataDir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func jsonBody(t *testing.T, r httpResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, not JSON: %q", r.status, r.body)
	}
	return m
}

// TestRestoreOfALargeWorkbenchCopiesNoBodiesAndSurvivesKill9 restores a workbench of
// 100,000 files from a snapshot: the object store receives exactly the two manifests; a
// kill -9 while the operation record shows it copying, then a restart and a retry, end in
// one complete destination under the same operation id.
func TestRestoreOfALargeWorkbenchCopiesNoBodiesAndSurvivesKill9(t *testing.T) {
	files := restoreFiles
	if testing.Short() {
		files = restoreFilesShort
	}
	dataDir := t.TempDir()
	srv := framework.StartProcess(t, cairnBin, dataDir, "--inline-max-bytes", "0", "--restore-batch", fmt.Sprint(restoreBatch))
	base := srv.URL + "/v1/agents/" + restoreAgent + "/workbenches/"

	// Populate: many files, few distinct bodies.
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: restoreWriters}}
	start := time.Now()
	framework.Populate(t, hc, restoreWriters, files, func(i int) *http.Request {
		u := fmt.Sprintf("%ssrc/files/input/d%03d/f%06d.txt", base, i%1000, i)
		req, _ := http.NewRequest("PUT", u, strings.NewReader(fmt.Sprintf("body %d\n", i%restoreDistinctFiles)))
		return req
	})
	t.Logf("THROUGHPUT populate: %d files in %v (%.0f files/s)", files, time.Since(start).Round(time.Millisecond), float64(files)/time.Since(start).Seconds())

	snap := doHTTP(t, "POST", base+"src/snapshots", strings.NewReader(`{"name":"big"}`))
	if snap.status != http.StatusCreated {
		t.Fatalf("snapshot: %d %s", snap.status, snap.body)
	}
	// The live workbench moves on; the restore must follow the snapshot.
	if r := doHTTP(t, "PUT", base+"src/files/input/d000/f000000.txt", strings.NewReader("changed after the snapshot")); r.status != http.StatusOK {
		t.Fatalf("overwrite: %d %s", r.status, r.body)
	}
	objectsBefore := countObjects(t, dataDir)

	// Start the restore; find its operation id from a concurrent retry (a retryable
	// Conflict naming it) and kill the server once the record shows it mid-copy.
	restoreBody := `{"destination_id":"dst","at_snapshot":"big"}`
	go func() {
		req, _ := http.NewRequest("POST", base+"src/restore", strings.NewReader(restoreBody))
		if resp, err := hc.Do(req); err == nil { // the kill cuts it off
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	// Let the first request begin the operation (a retry that came first would run it).
	time.Sleep(300 * time.Millisecond)
	var opID string
	var copied float64
	retry.Within(t, 2*time.Minute, "the restore is observed copying", func() error {
		r := doHTTP(t, "POST", base+"src/restore", strings.NewReader(restoreBody))
		m := jsonBody(t, r)
		if r.status == http.StatusOK {
			t.Fatalf("the restore completed before it could be observed mid-copy (%d files); raise the file count", files)
		}
		if r.status != http.StatusConflict || m["code"] != "Conflict" || m["retryable"] != true {
			return fmt.Errorf("retry: %d %s", r.status, r.body)
		}
		opID, _ = m["details"].(map[string]any)["operation_id"].(string)
		st := jsonBody(t, doHTTP(t, "GET", srv.URL+"/v1/agents/"+restoreAgent+"/restores/"+opID, nil))
		copied, _ = st["copied_files"].(float64)
		if st["state"] != "copying" || copied == 0 {
			return fmt.Errorf("operation %s: %v", opID, st)
		}
		return nil
	})
	srv.Kill()
	t.Logf("killed the server with the restore at %.0f of %d files", copied, files)
	if copied >= float64(files) {
		t.Fatalf("the operation had copied everything (%v) before the kill", copied)
	}

	srv.Restart()
	base = srv.URL + "/v1/agents/" + restoreAgent + "/workbenches/"
	// Staging stays invisible until the restore completes.
	if r := doHTTP(t, "GET", base+"dst", nil); r.status != http.StatusNotFound && r.status != http.StatusOK {
		t.Fatalf("destination while restoring: %d %s", r.status, r.body)
	}
	var result map[string]any
	retry.Within(t, 5*time.Minute, "the retried restore converges", func() error {
		r := doHTTP(t, "POST", base+"src/restore", strings.NewReader(restoreBody))
		m := jsonBody(t, r)
		if r.status != http.StatusOK {
			if r.status == http.StatusConflict && m["retryable"] == true {
				return fmt.Errorf("still running: %s", r.body)
			}
			t.Fatalf("retry after the restart: %d %s", r.status, r.body)
		}
		result = m
		return nil
	})
	if result["operation_id"] != opID || result["state"] != "complete" {
		t.Fatalf("result %v, want operation %s complete", result, opID)
	}
	st := jsonBody(t, doHTTP(t, "GET", base+"dst", nil))
	if st["file_count"] != float64(files+2) {
		t.Fatalf("destination holds %v files, want %d and the two manifests", st["file_count"], files)
	}
	if got := countObjects(t, dataDir) - objectsBefore; got != 2 {
		t.Fatalf("the object store gained %d objects, want exactly the two manifests", got)
	}
	for _, i := range []int{0, 1, files / 2, files - 1} {
		r := doHTTP(t, "GET", fmt.Sprintf("%sdst/files/input/d%03d/f%06d.txt", base, i%1000, i), nil)
		if want := fmt.Sprintf("body %d\n", i%restoreDistinctFiles); r.status != http.StatusOK || string(r.body) != want {
			t.Fatalf("restored file %d: %d %q, want %q", i, r.status, r.body, want)
		}
	}
	// Exactly one destination exists and a further retry replays.
	again := jsonBody(t, doHTTP(t, "POST", base+"src/restore", strings.NewReader(restoreBody)))
	if again["operation_id"] != opID || again["idempotent_replay"] != true {
		t.Fatalf("a further retry: %v", again)
	}
	find := jsonBody(t, doHTTP(t, "POST", srv.URL+"/v1/agents/"+restoreAgent+"/find", strings.NewReader(`{}`)))
	if matches, _ := find["matches"].([]any); find["match_count"] != float64(2) || len(matches) != 2 {
		t.Fatalf("workbenches after the restore: %v", find)
	}
}
