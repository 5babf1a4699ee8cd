package workbench_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesHaveNoRaft checks docs/architecture.md#packages: the adapter depends on a small interface
// of the core and its error values (ErrCoreUnavailable, ErrOutcomeUnknown,
// ErrCoreStorageFull), not on the replication layer, so its dependency list (tests aside:
// workbenchtest builds a real shard) holds no Raft library, no Raft log store and no bbolt;
// nor do the lists of the surfaces built on it (REST, MCP). api/server, which assembles a
// node, is the one api package that depends on them.
func TestDependenciesHaveNoRaft(t *testing.T) {
	for _, pkg := range []string{"workbench", "api/rest", "api/mcp"} {
		t.Run(pkg, func(t *testing.T) {
			var raft []string
			for _, p := range goList(t, "-deps", "github.com/cairnstore/cairn/"+pkg) {
				if strings.HasPrefix(p, "github.com/hashicorp/raft") || strings.HasPrefix(p, "go.etcd.io/bbolt") ||
					p == "github.com/cairnstore/cairn/shard" {
					raft = append(raft, p)
				}
			}
			if len(raft) > 0 {
				t.Errorf("%s depends on the replication layer through %d packages: %s", pkg, len(raft), strings.Join(raft, ", "))
			}
		})
	}
}

// goList runs the go command of the toolchain running the test: go list args, one package
// path a line.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin := "go" // go test puts the go command of its own GOROOT first on PATH
	out, err := exec.Command(gobin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(string(out))
}
