package auth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/etcdtest"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
)

type fileBacking struct{ path string }

func (b fileBacking) Open(t *testing.T) auth.Store {
	s, err := auth.OpenFileStore(b.path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileStoreConformance(t *testing.T) {
	authtest.Suite{NewBacking: func(t *testing.T) authtest.Backing {
		return fileBacking{filepath.Join(t.TempDir(), auth.KeysFile)}
	}}.Run(t)
}

type etcdBacking struct {
	endpoints []string
	prefix    string
}

func (b etcdBacking) Open(t *testing.T) auth.Store {
	cli, err := clientv3.New(clientv3.Config{Endpoints: b.endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	s, err := auth.OpenEtcdStore(t.Context(), cli, b.prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEtcdStoreConformance(t *testing.T) {
	etcd := etcdtest.Start(t)
	authtest.Suite{Concurrent: true, NewBacking: func(t *testing.T) authtest.Backing {
		return etcdBacking{endpoints: etcd.Endpoints(), prefix: "/test/" + strings.ReplaceAll(t.Name(), "/", "_")}
	}}.Run(t)
}

func TestFileStoreWritesMode0600AndNoSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), auth.KeysFile)
	s, err := auth.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	k, token, err := auth.NewKey(auth.KeySpec{Name: "n", AllAgents: true, Scopes: []auth.Scope{auth.ScopeAdmin}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	secret := token[len(auth.TokenPrefix)+auth.KeyIDLen+1:]
	if strings.Contains(string(b), secret) {
		t.Fatal("the key file holds the secret")
	}
	if !strings.Contains(string(b), auth.Digest(token)) {
		t.Fatal("the key file does not hold the digest")
	}
}

func TestOpenFileStoreRefusesADamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), auth.KeysFile)
	for name, body := range map[string]string{
		"not JSON":             "{",
		"another version":      `{"version":9,"keys":[]}`,
		"a key with no digest": `{"version":1,"keys":[{"id":"0123456789abcdef","name":"x","scopes":["admin"]}]}`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := auth.OpenFileStore(path); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

// TestAKeyFileWrittenBeforeScopedKeysStillLoads: a key file of a binary without
// workbench and prefix bindings (no such fields) loads, and its keys reach what they did.
func TestAKeyFileWrittenBeforeScopedKeysStillLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), auth.KeysFile)
	token := auth.TokenPrefix + "0123456789abcdef_" + strings.Repeat("A", 43)
	old := `{"version":1,"keys":[{"id":"0123456789abcdef","name":"old","agents":["a"],"scopes":["workspace:read"],` +
		`"tenant":"t","workspace":"w","digest":"` + auth.Digest(token) + `","created_at":"2025-01-01T00:00:00Z"}]}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := auth.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.Authenticate(s, token, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Workbench != "" || p.Prefixes != nil || !p.ReachIn("a").RootWide() || p.ReachIn("t").Workbench != "w" {
		t.Fatalf("an old key: %+v", p)
	}
}
