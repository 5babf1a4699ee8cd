package deploy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// composeNodes are the Cairn services of compose.yaml.
var composeNodes = []string{"cairn1", "cairn2", "cairn3"}

// genSecrets runs compose/gen-secrets.sh with args and SECRETS_DIR=dir (plus env), and
// returns its combined output.
func genSecrets(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	for _, tool := range []string{"bash", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("gen-secrets.sh needs %s: %v", tool, err)
		}
	}
	script, err := filepath.Abs(filepath.Join("compose", "gen-secrets.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", append([]string{script}, args...)...)
	cmd.Env = append(append(os.Environ(), "SECRETS_DIR="+dir), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// composeWithSecrets copies compose.yaml into a new directory, makes its secrets there
// with gen-secrets.sh, and returns the directory.
func composeWithSecrets(t *testing.T) string {
	t.Helper()
	dir := composeCopy(t)
	if out, err := genSecrets(t, filepath.Join(dir, "secrets"), nil); err != nil {
		t.Fatalf("gen-secrets.sh: %v\n%s", err, out)
	}
	return dir
}

// composeCopy copies compose.yaml alone into a new directory and returns the directory.
func composeCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("compose", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func loadCompose(t *testing.T, dir string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")},
		cli.WithWorkingDirectory(dir), cli.WithEnv([]string{}), cli.WithProfiles([]string{"tools"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(t.Context())
	if err != nil {
		t.Fatalf("compose.yaml does not load: %v", err)
	}
	return p
}

func TestComposeFileLoadsAndEveryNodeWouldStart(t *testing.T) {
	dir := composeWithSecrets(t)
	p := loadCompose(t, dir)

	var names []string
	for name := range p.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"cairn1", "cairn2", "cairn3", "cli", "etcd", "minio"}; !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}

	ids, peers := map[string]string{}, map[string]string{}
	for _, name := range composeNodes {
		s := p.Services[name]
		env := map[string]string{}
		for k, v := range s.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		cfg := loadNodeConfig(t, name, env)
		if !cfg.Cluster || cfg.NodeID != name || !cfg.TLS() || !cfg.PeerTLS() || !cfg.AuthRequired() {
			t.Errorf("%s: cluster %v, node id %q, TLS %v, peer TLS %v, keys required %v; want a TLS cluster node %s that requires keys",
				name, cfg.Cluster, cfg.NodeID, cfg.TLS(), cfg.PeerTLS(), cfg.AuthRequired(), name)
		}
		if env["AWS_ACCESS_KEY_ID"] == "" {
			t.Errorf("%s: no object store credentials from secrets/s3.env", name)
		}
		if other, dup := ids[cfg.NodeID]; dup {
			t.Errorf("%s and %s share node id %q", name, other, cfg.NodeID)
		}
		ids[cfg.NodeID] = name
		if other, dup := peers[cfg.AdvertisePeer]; dup || !strings.HasPrefix(cfg.AdvertisePeer, name+":") {
			t.Errorf("%s advertises peer address %q (shared with %q); want its own service name", name, cfg.AdvertisePeer, other)
		}
		peers[cfg.AdvertisePeer] = name

		// Every TLS file is a secret the service mounts, from a file gen-secrets.sh made.
		mounted := map[string]string{}
		for _, sec := range s.Secrets {
			target := sec.Target
			if target == "" {
				target = "/run/secrets/" + sec.Source
			}
			mounted[target] = p.Secrets[sec.Source].File
		}
		for setting, path := range tlsFiles(cfg) {
			file, ok := mounted[path]
			if !ok {
				t.Errorf("%s: %s %s is not a secret the service mounts", name, setting, path)
				continue
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: %s comes from %s: %v", name, setting, file, err)
			}
		}
		if _, err := tls.LoadX509KeyPair(mounted[cfg.TLSCert], mounted[cfg.TLSKey]); err != nil {
			t.Errorf("%s: client certificate and key: %v", name, err)
		}
		if _, err := tls.LoadX509KeyPair(mounted[cfg.PeerTLSCert], mounted[cfg.PeerTLSKey]); err != nil {
			t.Errorf("%s: peer certificate and key: %v", name, err)
		}
		// The HEALTHCHECK (cairn health) dials the node's own listener under a name its
		// certificate holds, trusting the CA the service mounts.
		if u := env["CAIRN_SERVER"]; u != "https://localhost:7070" {
			t.Errorf("%s: CAIRN_SERVER %q, want https://localhost:7070 for the healthcheck", name, u)
		}
		if _, ok := mounted[env["CAIRN_CA_FILE"]]; !ok {
			t.Errorf("%s: CAIRN_CA_FILE %q is not mounted", name, env["CAIRN_CA_FILE"])
		}
		verifyLeaf(t, mounted[cfg.TLSCert], mounted[env["CAIRN_CA_FILE"]], x509.ExtKeyUsageServerAuth, "localhost")

		for _, dep := range []string{"etcd", "minio"} {
			if d, ok := s.DependsOn[dep]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s: does not wait for %s to be healthy", name, dep)
			}
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %d on %q, want the host's loopback only", name, port.Target, port.HostIP)
			}
		}
		if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
			t.Errorf("%s: read-only %v, cap_drop %v; want a read-only root and no capabilities", name, s.ReadOnly, s.CapDrop)
		}
	}
	for _, name := range []string{"etcd", "minio"} {
		if s := p.Services[name]; s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			t.Errorf("%s has no healthcheck: the nodes wait for it", name)
		}
		if len(p.Services[name].Ports) != 0 {
			t.Errorf("%s publishes ports; it must stay on the compose network", name)
		}
	}
}

func TestComposeFileFailsWithoutItsSecrets(t *testing.T) {
	// The loader is not lenient: without gen-secrets.sh's files it refuses the project.
	dir := composeCopy(t)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")}, cli.WithWorkingDirectory(dir), cli.WithEnv([]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opts.LoadProject(t.Context()); err == nil {
		t.Fatal("compose.yaml loaded without secrets/s3.env")
	}
}

func TestGenSecretsMakesCertificatesForTheNamesNodesDial(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	if out, err := genSecrets(t, dir, nil); err != nil {
		t.Fatalf("gen-secrets.sh: %v\n%s", err, out)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	for _, node := range composeNodes {
		// Peers dial each other by service name and verify both ways.
		verifyLeaf(t, f(node+"-peer.pem"), f("peer-ca.pem"), x509.ExtKeyUsageServerAuth, node)
		verifyLeaf(t, f(node+"-peer.pem"), f("peer-ca.pem"), x509.ExtKeyUsageClientAuth, node)
		for _, host := range []string{node, "localhost", "127.0.0.1"} {
			verifyLeaf(t, f(node+".pem"), f("ca.pem"), x509.ExtKeyUsageServerAuth, host)
		}
		if err := verify(f(node+".pem"), f("peer-ca.pem"), x509.ExtKeyUsageServerAuth, node); err == nil {
			t.Errorf("%s's client-listener certificate verifies as a peer: the two CAs must differ", node)
		}
	}
	verifyLeaf(t, f("client.pem"), f("ca.pem"), x509.ExtKeyUsageClientAuth, "")
	if err := verify(f("client.pem"), f("peer-ca.pem"), x509.ExtKeyUsageClientAuth, ""); err == nil {
		t.Error("the client certificate verifies against the peer CA: it would be accepted as a node")
	}
	for _, private := range []string{"ca.key", "peer-ca.key", "client.key", "s3.env", "minio.env"} {
		if fi, err := os.Stat(f(private)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", private, err, fi.Mode().Perm())
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want 0700", dir, fi.Mode().Perm())
	}
	s3, _ := os.ReadFile(f("s3.env"))
	minio, _ := os.ReadFile(f("minio.env"))
	if want := strings.NewReplacer("MINIO_ROOT_USER", "AWS_ACCESS_KEY_ID", "MINIO_ROOT_PASSWORD", "AWS_SECRET_ACCESS_KEY").Replace(string(minio)); want != string(s3) {
		t.Errorf("s3.env and minio.env hold different credentials:\n%s\n%s", s3, minio)
	}

	if out, err := genSecrets(t, dir, nil); err == nil {
		t.Errorf("a second run replaced the secrets:\n%s", out)
	}
}

// verifyLeaf fails t unless the certificate in certFile chains to the CA in caFile for
// usage and (when not "") host.
func verifyLeaf(t *testing.T, certFile, caFile string, usage x509.ExtKeyUsage, host string) {
	t.Helper()
	if err := verify(certFile, caFile, usage, host); err != nil {
		t.Errorf("%s for %q against %s: %v", filepath.Base(certFile), host, filepath.Base(caFile), err)
	}
}

func verify(certFile, caFile string, usage x509.ExtKeyUsage, host string) error {
	cert, err := readCert(certFile)
	if err != nil {
		return err
	}
	ca, err := readCert(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func readCert(file string) (*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, os.ErrInvalid
	}
	return x509.ParseCertificate(block.Bytes)
}
