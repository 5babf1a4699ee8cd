package ops_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestOnlyTheAssemblyImportsOps: ops takes its defaults from the packages that own them
// (docs/architecture.md, "Packages"), so a package below the assembly importing ops would
// be a cycle in the making; only api/server, cmd/cairn, the integration framework that
// assembles nodes in tests, and ops's own subpackages may.
func TestOnlyTheAssemblyImportsOps(t *testing.T) {
	const mod = "github.com/cairnstore/cairn/"
	allowed := []string{mod + "api/server", mod + "cmd/cairn", mod + "integration/framework"}
	gobin := "go" // go test puts the go command of its own GOROOT first on PATH
	out, err := exec.Command(gobin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := f[0]
		if !slices.Contains(f[1:], mod+"ops") || slices.Contains(allowed, pkg) || strings.HasPrefix(pkg, mod+"ops/") {
			continue
		}
		t.Errorf("%s imports ops; only %s may", pkg, strings.Join(allowed, " and "))
	}
}
