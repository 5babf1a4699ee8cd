package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// systemRoot lays out a root directory for systemd-analyze --root: the host's unit
// directory (for the targets the unit's default dependencies name), the unit, and an
// executable at its ExecStart path.
func systemRoot(t *testing.T, unit []byte) (root, unitPath string) {
	t.Helper()
	root = t.TempDir()
	out, err := exec.Command("systemd-analyze", "unit-paths").Output()
	if err != nil {
		t.Fatalf("systemd-analyze unit-paths: %v", err)
	}
	copied := false
	for _, dir := range strings.Fields(string(out)) {
		if _, err := os.Stat(filepath.Join(dir, "sysinit.target")); err != nil || copied {
			continue
		}
		if err := os.CopyFS(filepath.Join(root, dir), os.DirFS(dir)); err != nil {
			t.Fatalf("copying %s: %v", dir, err)
		}
		copied = true
	}
	if !copied {
		t.Skip("no unit directory of this host holds sysinit.target")
	}
	exe := filepath.Join(root, "usr", "local", "bin", "cairn")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unitPath = filepath.Join(root, "etc", "systemd", "system", "cairn.service")
	if err := os.MkdirAll(filepath.Dir(unitPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unitPath, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	return root, unitPath
}

// analyze runs systemd-analyze verb on the unit in a root of its own and returns its
// output; a warning (an unknown or misspelt key) is a failure too.
func analyze(t *testing.T, unit []byte, args ...string) (string, error) {
	t.Helper()
	root, unitPath := systemRoot(t, unit)
	cmd := exec.Command("systemd-analyze", append(append(args[:1:1], "--root="+root), append(args[1:], unitPath)...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSystemdUnitVerifies(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skipf("systemd-analyze is not installed (%v): the unit is not verified here", err)
	}
	unit, err := os.ReadFile(filepath.Join("systemd", "cairn.service"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := analyze(t, unit, "verify"); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// The hardening holds: an overall exposure of at most 2.0 of 10.
	if out, err := analyze(t, unit, "security", "--offline=yes", "--threshold=20"); err != nil {
		t.Fatalf("systemd-analyze security: exposure above 2.0 (%v)\n%s", err, out)
	}

	// Neither check is lenient: a misspelt key and a unit without hardening fail.
	typo := strings.Replace(string(unit), "NoNewPrivileges=", "NoNewPrivilege=", 1)
	if out, err := analyze(t, []byte(typo), "verify"); err == nil && strings.TrimSpace(out) == "" {
		t.Error("verify accepted a misspelt key")
	}
	var bare strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(unit)))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "[") || strings.HasPrefix(line, "ExecStart=") || strings.HasPrefix(line, "Description=") {
			bare.WriteString(line + "\n")
		}
	}
	if _, err := analyze(t, []byte(bare.String()), "security", "--offline=yes", "--threshold=20"); err == nil {
		t.Error("security accepted a unit without hardening")
	}
}

func TestSystemdEnvironmentFileStartsANode(t *testing.T) {
	env, err := dotenv.Read(filepath.Join("systemd", "cairn.env"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadNodeConfig(t, "cairn.env", env)
	unit, err := os.ReadFile(filepath.Join("systemd", "cairn.service"))
	if err != nil {
		t.Fatal(err)
	}
	// Every TLS file is one LoadCredential= hands the service.
	for setting, file := range tlsFiles(cfg) {
		name, ok := strings.CutPrefix(file, "/run/credentials/cairn.service/")
		if !ok || !strings.Contains(string(unit), "\nLoadCredential="+name+":") {
			t.Errorf("%s %s is not a credential cairn.service loads", setting, file)
		}
	}
	if !cfg.Cluster || !cfg.TLS() || !cfg.PeerTLS() || !cfg.AuthRequired() {
		t.Errorf("cairn.env: cluster %v, TLS %v, peer TLS %v, keys required %v; want a TLS cluster node requiring keys", cfg.Cluster, cfg.TLS(), cfg.PeerTLS(), cfg.AuthRequired())
	}
}
