package internal_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testSupport are the packages that exist for tests only: retry, etcd, free ports, test certificates, metrics, HTTP requests, a hand-moved clock, the
// blob conformance suite and damage, the Cores conformance suite, the services and sweeps of
// workbenchtest, MinIO, and the cluster fixture.
var testSupport = []string{
	"github.com/cairnstore/cairn/internal/retry",
	"github.com/cairnstore/cairn/internal/etcdtest",
	"github.com/cairnstore/cairn/internal/freeport",
	"github.com/cairnstore/cairn/internal/certtest",
	"github.com/cairnstore/cairn/internal/metricstest",
	"github.com/cairnstore/cairn/internal/httpcall",
	"github.com/cairnstore/cairn/internal/testclock",
	"github.com/cairnstore/cairn/internal/unprivileged",
	"github.com/cairnstore/cairn/blob/blobtest",
	"github.com/cairnstore/cairn/workbench/corestest",
	"github.com/cairnstore/cairn/workbench/workbenchtest",
	"github.com/cairnstore/cairn/workbench/auth/authtest",
	"github.com/cairnstore/cairn/blob/s3/s3test",
	"github.com/cairnstore/cairn/integration/framework",
}

// TestOnlyTestsImportTheTestSupportPackages: no package of the module outside the test
// support itself imports a test-support package from a non-test file (they start
// servers, fail tests and must never end up in a binary).
func TestOnlyTestsImportTheTestSupportPackages(t *testing.T) {
	gobin := "go" // go test puts the go command of its own GOROOT first on PATH
	out, err := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/cairnstore/cairn/...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if slices.Contains(testSupport, f[0]) {
			seen++
			continue
		}
		for _, imp := range f[1:] {
			if slices.Contains(testSupport, imp) {
				t.Errorf("%s imports the test-support package %s from a non-test file", f[0], imp)
			}
		}
	}
	if seen != len(testSupport) {
		t.Errorf("go list found %d of the %d test-support packages %v; update the list", seen, len(testSupport), testSupport)
	}
}
