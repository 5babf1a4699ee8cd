package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/shard"
)

// TestImportsNoStorageOrReplicationPackage checks docs/architecture.md#packages ("cmd/cairn: wiring, no
// logic"): the command's own files import no blob store and no replication package; it
// classifies the errors of a node's start through api/server's error values. (Its
// dependency list still holds them: api/server assembles the node from them.)
func TestImportsNoStorageOrReplicationPackage(t *testing.T) {
	gobin := "go" // go test puts the go command of its own GOROOT first on PATH
	out, err := exec.Command(gobin, "list", "-f", `{{join .Imports "\n"}}`, "github.com/cairnstore/cairn/cmd/cairn").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		for _, below := range []string{"github.com/cairnstore/cairn/blob", "github.com/cairnstore/cairn/shard"} {
			if p == below || strings.HasPrefix(p, below+"/") {
				bad = append(bad, p)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("cmd/cairn imports %s; classify through api instead", strings.Join(bad, ", "))
	}
}

// TestStartErrorsAreClassifiedThroughTheServerPackage: the errors of a node's start that
// the parts below return, wrapped as api/server returns them, still print their codes now
// that the command knows only api/server's names for them.
func TestStartErrorsAreClassifiedThroughTheServerPackage(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"a damaged Raft log", fmt.Errorf("open shard 0: %w", &shard.DamagedError{What: "Raft log", File: "raft.db", Cause: errors.New("checksum mismatch")}), "DataCorrupted"},
		{"a missing bucket", fmt.Errorf("blob store s3://b at http://127.0.0.1:9000: bucket %q does not exist: %w", "b", s3.ErrBucketMissing), "NotFound"},
		{"an unreachable object store", fmt.Errorf("blob store s3://b at http://127.0.0.1:9000: %w", &s3.ObjectUnavailableError{Op: "open", Reason: "connection refused"}), "ObjectUnavailable"},
		{"a blob store call past its deadline", fmt.Errorf("blob store: %w", &blob.TimeoutError{}), "ObjectUnavailable"},
		{"a locked data directory", fmt.Errorf("/data: %w", server.ErrDataDirLocked), "DataDirLocked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _ := describeError(tt.err); code != tt.want {
				t.Errorf("describeError(%v) code = %s, want %s", tt.err, code, tt.want)
			}
		})
	}
}
