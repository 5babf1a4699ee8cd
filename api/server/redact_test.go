package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/redact"
)

// The node redacts the writes of the agents the secrets file and the flag opt in, with
// the file's registered values, on the REST surface; other agents' writes are stored as
// sent.
func TestNodeRedactsOptedInAgentsFromFlagsAndFile(t *testing.T) {
	cfg := testConfig(t)
	cfg.RedactSecretsFile = filepath.Join(t.TempDir(), "secrets.yaml")
	file := "tenants:\n  a: [{id: db, value: hunter2-correct-horse}]\n  b: [{id: db, value: hunter2-correct-horse}]\nallSurfaces: [a]\n"
	if err := os.WriteFile(cfg.RedactSecretsFile, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.RedactAllSurfacesTenants = "c"
	n, base := serveNode(t, cfg)

	body := "pw=hunter2-correct-horse key=AKIAIOSFODNN7EXAMPLE"
	for agent, want := range map[string]string{
		"a": "pw=[REDACTED:db] key=[REDACTED:aws_access_key_id]",
		"b": body,
		"c": "pw=hunter2-correct-horse key=[REDACTED:aws_access_key_id]",
	} {
		u := base + "/v1/agents/" + agent + "/workbenches/w/files/input/env.txt"
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", u, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("agent %s: PUT %d", agent, resp.StatusCode)
		}
		resp, err = http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != want {
			t.Errorf("agent %s: stored %q, want %q", agent, got, want)
		}
	}
	if got := n.Redactor().Redact("b", body); got != "pw=[REDACTED:db] key=[REDACTED:aws_access_key_id]" {
		t.Fatalf("the node's redactor (the OpenWOP facade's) gives %q for b", got)
	}
}

func TestABadSecretsFileFailsTheStartWithoutItsValue(t *testing.T) {
	cfg := testConfig(t)
	cfg.RedactSecretsFile = filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(cfg.RedactSecretsFile, []byte(`{"tenants": {"a": [{"id": "tiny", "value": "pw12345"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), cfg, ops.Credentials{}, nil)
	var ce *redact.ConfigError
	if !errors.As(err, &ce) || ce.ID != "tiny" || strings.Contains(err.Error(), "pw12345") {
		t.Fatalf("Open: %v, want a redaction ConfigError naming id tiny and not its value", err)
	}
}
