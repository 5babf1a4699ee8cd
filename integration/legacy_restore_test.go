package integration

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/integration/framework"
)

// testdata/legacy-v1-restore.tar.gz is the data directory of an embedded node written by
// the binary of commit dfd0209, before restores wrote restore manifest v2: agent "legacy",
// workbench "src" (outputs/report.txt, input/params.json, committed with manifest
// {"model":"m1","task":"legacy"}), and two restores of it, "from-snap" (snapshot 1) and
// "from-commit" (the commit), each with a metadata/restore_manifest.json of schema
// nokv.workbench.restore_manifest.v1.
const (
	legacyAgent  = "legacy"
	legacyCommit = "c1587eb221af29cee64f32dff4c58e9997e72d8a3bddbc93f4b4030e89f379e7"
)

// extractTarGz unpacks a .tar.gz of regular files and directories into dir.
func extractTarGz(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			t.Fatalf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			out, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			if err := out.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDataDirectoryWithV1RestoreManifestsKeepsWorking: a node opens a data directory the
// previous release wrote; its v1 restore manifests are served, found and read as they
// are, a retry of the old restore replays it, and a new restore writes v2.
func TestDataDirectoryWithV1RestoreManifestsKeepsWorking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	extractTarGz(t, filepath.Join("testdata", "legacy-v1-restore.tar.gz"), dir)
	srv := framework.StartProcess(t, cairnBin, filepath.Join(dir, "data"))

	// REST serves the stored v1 envelope byte for byte.
	r := doHTTP(t, "GET", fileURL(srv.URL, legacyAgent, "from-commit", "metadata/restore_manifest.json"), nil)
	var v1 map[string]any
	if err := json.Unmarshal(r.body, &v1); r.status != 200 || err != nil || v1["schema"] != "nokv.workbench.restore_manifest.v1" || v1["commit_id"] != legacyCommit {
		t.Fatalf("GET the v1 restore manifest: %d %s (%v)", r.status, r.body, err)
	}

	c := mcpCaller{t: t, cs: framework.MCP(t, srv.URL, legacyAgent, "")}

	// find matches the old manifests by their schema and summarizes them.
	found := c.ok("workbench_find", map[string]any{"manifest_pattern": "restore_manifest.v1", "include_manifest": true})
	var names []string
	for _, m := range found.list(t, "matches") {
		match := m.(map[string]any)
		names = append(names, match["workbench_id"].(string))
		if match["commit_identity_verified"] != true {
			t.Errorf("find: %s: commit_identity_verified %v", match["workbench_id"], match["commit_identity_verified"])
		}
		if keys := match["manifest_summary"].(map[string]any)["manifest_keys"]; !strings.Contains(toJSON(t, keys), `"schema"`) {
			t.Errorf("find: %s: manifest_keys %v", match["workbench_id"], keys)
		}
	}
	if strings.Join(names, ",") != "from-commit,from-snap" {
		t.Errorf("find restore_manifest.v1: %v, want from-commit and from-snap", names)
	}

	// A structured read shapes the v1 envelope as the JSON object it is.
	rd := c.ok("workbench_read", map[string]any{"id": "from-snap", "section": "metadata", "path": "restore_manifest.json"})
	items := rd.list(t, "items")
	if rd.str("record_type") != "json_object" || len(items) != 1 ||
		items[0].(map[string]any)["value"].(map[string]any)["schema"] != "nokv.workbench.restore_manifest.v1" {
		t.Errorf("structured read of the v1 manifest: %v", rd)
	}

	// The old restore, retried, replays: same operation, the manifest left as it was.
	again := c.ok("workbench_restore", map[string]any{"id": "src", "destination_id": "from-commit", "at_commit": legacyCommit})
	if again["idempotent_replay"] != true || again.str("commit_id") != legacyCommit || again["snapshot_id"] != nil ||
		again.str("restore_manifest") != "/agents/legacy/wb/from-commit/metadata/restore_manifest.json" || again["cleanup_pending"] != false {
		t.Errorf("replayed v1 restore: %v", again)
	}
	if r2 := doHTTP(t, "GET", fileURL(srv.URL, legacyAgent, "from-commit", "metadata/restore_manifest.json"), nil); string(r2.body) != string(r.body) {
		t.Errorf("the replay rewrote the v1 manifest: %s", r2.body)
	}

	// A new restore of the same commit writes v2 with its source named.
	fresh := c.ok("workbench_restore", map[string]any{"id": "src", "destination_id": "from-commit-v2", "at_commit": legacyCommit})
	if fresh["idempotent_replay"] != false {
		t.Errorf("new restore: %v", fresh)
	}
	r3 := doHTTP(t, "GET", fileURL(srv.URL, legacyAgent, "from-commit-v2", "metadata/restore_manifest.json"), nil)
	var v2 struct {
		Schema       string `json:"schema"`
		RestoredFrom struct {
			WorkbenchID string            `json:"workbench_id"`
			Source      map[string]string `json:"source"`
		} `json:"restored_from"`
	}
	if err := json.Unmarshal(r3.body, &v2); err != nil || v2.Schema != "nokv.workbench.restore_manifest.v2" ||
		v2.RestoredFrom.WorkbenchID != "src" || v2.RestoredFrom.Source["kind"] != "commit" || v2.RestoredFrom.Source["commit_id"] != legacyCommit {
		t.Errorf("new restore manifest: %s (%v)", r3.body, err)
	}
	if got := doHTTP(t, "GET", fileURL(srv.URL, legacyAgent, "from-commit-v2", "outputs/report.txt"), nil); string(got.body) != "hello legacy\n" {
		t.Errorf("restored report.txt: %d %q", got.status, got.body)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
