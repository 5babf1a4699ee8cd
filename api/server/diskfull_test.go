package server

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cairnstore/cairn/internal/retry"
)

// smallDisk mounts a tmpfs of size bytes for the test (root only) and returns its path.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("mounting a tmpfs needs root (%v); the mapping is covered by workbench's unit test", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill writes a file of zeros into dir until at most leave bytes are free (leave 0: until
// the disk refuses).
func fill(t *testing.T, path string, leave int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		free := freeBytes(t, filepath.Dir(path))
		if free <= leave {
			return
		}
		n := int64(len(chunk))
		if leave > 0 && free-leave < n {
			n = free - leave
		}
		if _, err := f.Write(chunk[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// serveOnDisk serves a node whose data directory is disk, writes input/first ("hello") of
// workbench w of root a, and returns the node's URL, the URL of w's input section (ending
// in "/") and the path of a filler file on disk for fill.
func serveOnDisk(t *testing.T, disk string) (base, file, filler string) {
	t.Helper()
	cfg := testConfig(t)
	cfg.DataDir = disk
	_, base = serveNode(t, cfg)
	file = base + "/v1/agents/a/workbenches/w/files/input/"
	if code, b := httpDo(t.Context(), http.MethodPut, file+"first", []byte("hello")); code != http.StatusCreated {
		t.Fatalf("put on a disk with room: %d %s", code, b)
	}
	return base, file, filepath.Join(disk, "filler")
}

func wantDiskFull(code int, body []byte, resource string) error {
	var e struct {
		Code      string         `json:"code"`
		Retryable bool           `json:"retryable"`
		Details   map[string]any `json:"details"`
	}
	if code != http.StatusInsufficientStorage || json.Unmarshal(body, &e) != nil || e.Code != "ResourceExhausted" || !e.Retryable ||
		e.Details["resource"] != resource || e.Details["reason"] != "disk_full" {
		return fmt.Errorf("got %d %s, want 507 ResourceExhausted retryable, details.resource %q, reason disk_full", code, body, resource)
	}
	return nil
}

func TestAFullDiskAnswersATypedRetryableErrorNamingTheResource(t *testing.T) {
	disk := smallDisk(t, 96<<20)
	base, file, filler := serveOnDisk(t, disk)

	// Below the Raft log's reserve (64 MiB) a write is refused before the log.
	// (The shard's free-space figure may be up to 100 ms old.)
	fill(t, filler, 16<<20)
	retry.SucceedsSoon(t, "an inline write with 16 MiB free is refused", func() error {
		code, b := httpDo(t.Context(), http.MethodPut, file+"small", []byte("small"))
		return wantDiskFull(code, b, "raft log")
	})
	// With no room at all, the blob store is where a large body fails first.
	fill(t, filler, 0)
	code, b := httpDo(t.Context(), http.MethodPut, file+"large", bytes.Repeat([]byte("l"), 256<<10))
	if err := wantDiskFull(code, b, "blob store"); err != nil {
		t.Errorf("a blob write on a full disk: %v", err)
	}
	retry.SucceedsSoon(t, "/readyz reports the full disk", func() error {
		code, b := httpDo(t.Context(), http.MethodGet, base+"/readyz", nil)
		if code != http.StatusServiceUnavailable || !bytes.Contains(b, []byte("disk full")) {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	retry.SucceedsSoon(t, "writes succeed once space is freed", func() error {
		if code, b := httpDo(t.Context(), http.MethodPut, file+"after", bytes.Repeat([]byte("a"), 256<<10)); code != http.StatusCreated {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
	if code, b := httpDo(t.Context(), http.MethodGet, file+"first", nil); code != http.StatusOK || string(b) != "hello" {
		t.Fatalf("the file written before the disk filled: %d %q", code, b)
	}
}

// A body's segments stop where the Raft log's reserve begins: with room for the log but
// not for the body beside the reserve, the body is refused at the first segment that would
// reach into the reserve, and the small writes the log still has room for go on. (Before,
// the body's segments filled the disk below the reserve and the log then refused it.)
func TestABodyIsRefusedBeforeItTakesTheRaftLogsReserve(t *testing.T) {
	disk := smallDisk(t, 160<<20)
	_, file, filler := serveOnDisk(t, disk)
	fill(t, filler, 88<<20) // 24 MiB above the 64 MiB the log keeps
	before := freeBytes(t, disk)

	// Random bytes: zstd cannot shrink them below the reserve's reach.
	body := make([]byte, 40<<20)
	rand.Read(body)
	code, b := httpDo(t.Context(), http.MethodPut, file+"large", body)
	if err := wantDiskFull(code, b, "blob store"); err != nil {
		t.Fatalf("a 40 MiB body with 88 MiB free: %v", err)
	}
	after := freeBytes(t, disk)
	if after < 64<<20 {
		t.Fatalf("the refused body left %d bytes free, less than the log's 64 MiB reserve (%d before)", after, before)
	}
	if code, b := httpDo(t.Context(), http.MethodPut, file+"small", []byte("small")); code != http.StatusCreated {
		t.Fatalf("a small write after the refused body: %d %s", code, b)
	}
	// A body that fits beside the reserve is stored. (The refused body's segments that
	// landed before the refusal stay until garbage collection.)
	fits := min(4<<20, (after-64<<20)/2)
	if code, b := httpDo(t.Context(), http.MethodPut, file+"fits", body[:fits]); code != http.StatusCreated {
		t.Fatalf("a %d-byte body with %d bytes free: %d %s", fits, after, code, b)
	}
}
