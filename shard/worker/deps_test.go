package worker_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesStayBelowTheShard checks docs/architecture.md#packages: the workers know a shard only
// through Core and shard/outcome's errors, so their dependency list (tests aside: they
// open real replicas) holds neither package shard nor Raft, its log store or bbolt, and
// nothing of the surfaces above (api/...).
func TestDependenciesStayBelowTheShard(t *testing.T) {
	const module = "github.com/cairnstore/cairn/"
	gobin := "go" // go test puts the go command of its own GOROOT first on PATH
	out, err := exec.Command(gobin, "list", "-deps", module+"shard/worker").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		if p == module+"shard" || strings.HasPrefix(p, module+"api/") || strings.HasPrefix(p, "github.com/hashicorp/raft") ||
			strings.HasPrefix(p, "go.etcd.io/bbolt") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("shard/worker depends on %d packages it must not: %s", len(bad), strings.Join(bad, ", "))
	}
}
