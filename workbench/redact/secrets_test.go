package redact

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secretValue = "s3cr3t-value-never-shown"

func TestParseReadsYAMLAndJSON(t *testing.T) {
	yamlDoc := "tenants:\n  agent-a:\n    - id: db\n      value: " + secretValue + "\n    - {id: key, value: \"other-secret-1\"}\n  b: []\nallSurfaces: [agent-a]\n"
	jsonDoc := `{"tenants": {"agent-a": [{"id": "db", "value": "` + secretValue + `"}, {"id": "key", "value": "other-secret-1"}], "b": []}, "allSurfaces": ["agent-a"]}`
	for name, doc := range map[string]string{"YAML": yamlDoc, "JSON": jsonDoc} {
		cfg, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []Secret{{"db", secretValue}, {"key", "other-secret-1"}}
		if got := cfg.Secrets["agent-a"]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("%s: secrets %v", name, got)
		}
		if len(cfg.AllSurfaces) != 1 || cfg.AllSurfaces[0] != "agent-a" {
			t.Fatalf("%s: allSurfaces %v", name, cfg.AllSurfaces)
		}
		r, err := New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := r.Redact("agent-a", "x "+secretValue); got != "x [REDACTED:db]" || !r.AllSurfaces("agent-a") || r.AllSurfaces("b") {
			t.Fatalf("%s: Redact = %q", name, got)
		}
	}
	if cfg, err := Parse(nil); err != nil || len(cfg.Secrets) != 0 {
		t.Fatalf("an empty file: %v, %v", cfg, err)
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.yaml")
	if err := os.WriteFile(path, []byte("tenants: {a: [{id: db, value: "+secretValue+"}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadFile(path)
	if err != nil || len(cfg.Secrets["a"]) != 1 {
		t.Fatalf("LoadFile: %v, %v", cfg, err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
}

func TestBadSecretsAreRefusedWithoutTheirValue(t *testing.T) {
	file := func(entries string) string { return "tenants:\n  a:\n" + entries }
	cases := []struct {
		name, doc string
		wantID    string
		wantField string
		wantLine  int
	}{
		{"a value under 8 characters", file("    - {id: short, value: abc1234}\n"), "short", "value", 0},
		{"a value in brackets", file("    - {id: br, value: \"[" + secretValue + "]\"}\n"), "br", "value", 0},
		{"a value inside a kind's marker", file("    - {id: mk, value: openai_api_key}\n"), "mk", "value", 0},
		{"a value inside its own marker", file("    - {id: my-password-id, value: password}\n"), "my-password-id", "value", 0},
		{"a value twice", file("    - {id: one, value: " + secretValue + "}\n    - {id: two, value: " + secretValue + "}\n"), "two", "value", 0},
		{"an id twice", file("    - {id: one, value: " + secretValue + "}\n    - {id: one, value: other-secret-1}\n"), "one", "id", 0},
		{"an id that is a kind", file("    - {id: jwt, value: " + secretValue + "}\n"), "jwt", "id", 0},
		{"a malformed id", file("    - {id: \"a b\", value: " + secretValue + "}\n"), "a b", "id", 0},
		{"a missing id", file("    - {value: " + secretValue + "}\n"), "", "id", 3},
		{"a missing value", file("    - {id: nov}\n"), "nov", "value", 3},
		{"a value that is not a string", file("    - id: list\n      value: [" + secretValue + "]\n"), "list", "value", 4},
		{"an unknown key", file("    - {id: k, value: " + secretValue + ", note: x}\n"), "k", "note", 3},
		{"an unknown top-level key", "tenants: {}\nsecrets: " + secretValue + "\n", "", "secrets", 2},
		{"not YAML at all", "tenants: [" + secretValue + "\n", "", "", 0},
		{"a tenant that is not an agent id", "tenants:\n  \"../x\": [{id: k, value: " + secretValue + "}]\n", "", "tenants", 0},
	}
	for _, c := range cases {
		cfg, err := Parse([]byte(c.doc))
		if err == nil {
			_, err = New(cfg)
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want a *ConfigError", c.name, err)
			continue
		}
		if strings.Contains(err.Error(), secretValue) || strings.Contains(err.Error(), "password\"") {
			t.Errorf("%s: the error shows the value: %v", c.name, err)
		}
		if ce.ID != c.wantID || ce.Field != c.wantField || (c.wantLine != 0 && ce.Line != c.wantLine) {
			t.Errorf("%s: error %v names id %q field %q line %d, want %q %q %d", c.name, err, ce.ID, ce.Field, ce.Line, c.wantID, c.wantField, c.wantLine)
		}
	}
}

func TestASecretPrintsItsIDOnly(t *testing.T) {
	s := Secret{ID: "db", Value: secretValue}
	cfg := Config{Secrets: map[string][]Secret{"a": {s}}}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("loaded", "secret", s, "config", cfg)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, s, s), logged.String()} {
		if strings.Contains(out, secretValue) {
			t.Fatalf("printed the value: %s", out)
		}
	}
}
