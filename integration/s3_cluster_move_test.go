package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/freeport"
)

// TestS3MultipartUploadSurvivesARootMove: three `cairn serve --cluster --s3-listen`
// processes over two shards. Debian's aws CLI starts a multipart upload and uploads its
// first part through node 1; `cairn admin root move` then moves the key's agent root to
// the other shard (which renumbers its workbench incarnations); the upload is still
// listed, its second part uploads through node 3, Complete publishes both parts through
// node 2, and the object reads back byte for byte.
func TestS3MultipartUploadSurvivesARootMove(t *testing.T) {
	aws := debianTool(t, "aws")
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 0, Shards: 2})
	endpoints := make([]string, 3)
	for i := range endpoints {
		addr := freeport.Addr(t)
		endpoints[i] = "http://" + addr
		pc.AddNode("--s3-listen", addr)
	}
	const root = "mpmove"
	key := framework.CreateKey(t, cairnRaceBin, nil, root, "--etcd", pc.Stores.Etcd, "--agent", root,
		"--scope", "workspace:read,workspace:write", "--s3")
	api := func(node int, args ...string) map[string]any {
		t.Helper()
		out := s3Tool(t, key, aws, append([]string{"--endpoint-url", endpoints[node], "--output", "json", "s3api"}, args...)...)
		var m map[string]any
		if strings.TrimSpace(out) != "" {
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("s3api %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		return m
	}
	dir := t.TempDir()
	parts := [][]byte{bytes.Repeat([]byte("first part of the upload\n"), (5<<20)/25+1), []byte("the last part\n")}
	for i, p := range parts {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part%d", i+1)), p, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Two other roots with one and three workbenches, made first: whichever shards they
	// land on, the two shards then hold different numbers of workbenches, so the move
	// gives the bucket another incarnation number than it had.
	for i, n := range []int{1, 3} {
		for w := range n {
			u := fmt.Sprintf("%s/v1/agents/pad%d/workbenches/w%d", pc.Nodes[0].URL, i, w)
			if code, b := clusterDo(http.MethodPut, u, nil, time.Minute); code/100 != 2 {
				t.Fatalf("create %s: %d %s", u, code, b)
			}
		}
	}
	api(0, "create-bucket", "--bucket", "mp") // the first write places the root; the CLI retries the 503 that answers it
	id, _ := api(0, "create-multipart-upload", "--bucket", "mp", "--key", "outputs/big.bin")["UploadId"].(string)
	if id == "" {
		t.Fatal("create-multipart-upload answered no UploadId")
	}
	etags := make([]string, len(parts))
	upload := func(node, n int) {
		t.Helper()
		etags[n-1], _ = api(node, "upload-part", "--bucket", "mp", "--key", "outputs/big.bin", "--upload-id", id,
			"--part-number", fmt.Sprint(n), "--body", filepath.Join(dir, fmt.Sprintf("part%d", n)))["ETag"].(string)
	}
	upload(0, 1)

	// The move: the root is on one of the two shards; a move to its own shard is refused.
	r := runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", root, "--to", "1", "--admin-server", pc.Nodes[1].AdminURL)
	if r.code != 0 && strings.Contains(r.stderr, "on shard 1 already") {
		r = runCLI(t, cliOptions{timeout: 3 * time.Minute}, "admin", "root", "move", root, "--to", "0", "--admin-server", pc.Nodes[1].AdminURL)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "step 8 of 8: done") {
		t.Fatalf("admin root move:\n%s", r)
	}

	listed := api(2, "list-multipart-uploads", "--bucket", "mp")
	if ups, _ := listed["Uploads"].([]any); len(ups) != 1 || ups[0].(map[string]any)["UploadId"] != id {
		t.Fatalf("the uploads after the move: %v, want upload %s", listed, id)
	}
	upload(2, 2)
	spec, _ := json.Marshal(map[string]any{"Parts": []map[string]any{
		{"PartNumber": 1, "ETag": etags[0]}, {"PartNumber": 2, "ETag": etags[1]}}})
	specFile := filepath.Join(dir, "parts.json")
	if err := os.WriteFile(specFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	api(1, "complete-multipart-upload", "--bucket", "mp", "--key", "outputs/big.bin", "--upload-id", id,
		"--multipart-upload", "file://"+specFile)
	got := filepath.Join(dir, "got")
	api(1, "get-object", "--bucket", "mp", "--key", "outputs/big.bin", got)
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte{}, parts[0]...), parts[1]...); !bytes.Equal(b, want) {
		t.Fatalf("the object: %d bytes, want %d", len(b), len(want))
	}
}
