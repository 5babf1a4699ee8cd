package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/ops"
)

// cairn key mint and cairn fork --mint-key: a key mints a narrower one through the
// client listener, recorded as minted by it; a broader one is refused naming the field;
// a fork with --mint-key prints a key bound to the fork as its last line, which reads the
// fork and not its parent; --expires-at sets an exact expiry.
func TestKeyMintAndForkMintKey(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	expires := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	var owner struct{ ID, Secret, ExpiresAt string }
	created := cli(t, "admin", "key", "create", "--data-dir", data, "--name", "owner", "--agent", "a",
		"--scope", "workspace:read,workspace:write", "--expires-at", expires, "--json")
	if err := json.Unmarshal([]byte(created), &struct {
		ID        *string `json:"id"`
		Secret    *string `json:"secret"`
		ExpiresAt *string `json:"expires_at"`
	}{&owner.ID, &owner.Secret, &owner.ExpiresAt}); err != nil || owner.ExpiresAt != expires {
		t.Fatalf("the owner's key %s: %v; want it to expire at %s", created, err, expires)
	}
	if _, _, err := execCairn(t, "admin", "key", "create", "--data-dir", data, "--name", "x", "--agent", "a",
		"--scope", "workspace:read", "--expires-at", "tomorrow"); err == nil || !strings.Contains(err.Error(), "--expires-at") {
		t.Errorf("--expires-at tomorrow: %v", err)
	}
	n := startNodeWith(t, data, func(c *ops.Config) { c.Auth = ops.AuthRequired })
	as := func(key string, args ...string) (string, error) {
		out, _, err := execCairn(t, append([]string{"--server", n.url, "--api-key", key}, args...)...)
		return out, err
	}
	if _, err := as(owner.Secret, "put", "--agent", "a", "--workbench", "w", "input/x.txt", "-"); err != nil {
		// put reads stdin; an empty body is a file too.
		t.Fatal(err)
	}

	out, err := as(owner.Secret, "key", "mint", "--name", "reader", "--agent", "a", "--scope", "workspace:read",
		"--workbench", "w", "--prefix", "input/", "--expires", "1h")
	if err != nil || !strings.Contains(out, "minted by: "+owner.ID) || !strings.Contains(out, "prefixes: input") {
		t.Fatalf("key mint: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	reader := lines[len(lines)-1]
	if _, err := as(reader, "cat", "--agent", "a", "--workbench", "w", "input/x.txt"); err != nil {
		t.Errorf("the minted key reads below its prefix: %v", err)
	}
	if _, err := as(owner.Secret, "key", "mint", "--name", "broad", "--agent", "a", "--scope", "review", "--expires", "1h"); err == nil ||
		!strings.Contains(err.Error(), "PermissionDenied") || !strings.Contains(err.Error(), "scopes") {
		t.Errorf("a broader mint: %v", err)
	}

	out, err = as(owner.Secret, "fork", "w", "f", "--agent", "a", "--mint-key")
	if err != nil || !strings.Contains(out, "workbench: f") || !strings.Contains(out, "expires: "+expires) {
		t.Fatalf("fork --mint-key: %v\n%s", err, out)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	forkKey := lines[len(lines)-1]
	if _, err := as(forkKey, "cat", "--agent", "a", "--workbench", "f", "input/x.txt"); err != nil {
		t.Errorf("the fork's key reads the fork: %v", err)
	}
	if _, err := as(forkKey, "cat", "--agent", "a", "--workbench", "w", "input/x.txt"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("the fork's key reads the parent: %v", err)
	}
	if _, err := as(owner.Secret, "fork", "w", "g", "--agent", "a", "--mint-key", "--key-expires-at", "2099-01-01T00:00:00Z"); err == nil ||
		!strings.Contains(err.Error(), "key_expires_at") {
		t.Errorf("a fork key outliving its owner's: %v", err)
	}
}
