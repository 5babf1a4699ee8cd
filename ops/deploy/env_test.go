package deploy

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/cairnstore/cairn/ops"
)

// clientVariables are the CAIRN_* variables of the client commands (cmd/cairn), which an
// asset may set for `cairn health` or the CLI; they are no server setting.
var clientVariables = map[string]bool{
	"CAIRN_SERVER": true, "CAIRN_ADMIN_SERVER": true, "CAIRN_AGENT": true, "CAIRN_CA_FILE": true,
	"CAIRN_CLIENT_CERT": true, "CAIRN_CLIENT_KEY": true, "CAIRN_API_KEY": true,
}

// serverFlags returns the flag set `cairn serve` binds.
func serverFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	ops.BindFlags(fs)
	return fs
}

// loadNodeConfig is nodeConfig that fails t on an error.
func loadNodeConfig(t *testing.T, what string, env map[string]string) ops.Config {
	t.Helper()
	cfg, err := nodeConfig(env)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return cfg
}

// nodeConfig checks that every CAIRN_* variable of env is a setting of `cairn serve` (or
// a client variable) and returns the configuration a node started with env would run
// with, or why it would not start.
func nodeConfig(env map[string]string) (ops.Config, error) {
	fs := serverFlags()
	var unknown []string
	for k := range env {
		name, ok := strings.CutPrefix(k, "CAIRN_")
		if !ok || clientVariables[k] || k == ops.ConfigEnv {
			continue
		}
		if fs.Lookup(strings.ReplaceAll(strings.ToLower(name), "_", "-")) == nil {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return ops.Config{}, fmt.Errorf("%s name no setting of cairn serve", strings.Join(unknown, ", "))
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := ops.LoadConfig(nil, getenv)
	if err != nil {
		return ops.Config{}, fmt.Errorf("the node would not start: %w", err)
	}
	if _, err := ops.LoadCredentials(getenv); err != nil {
		return ops.Config{}, err
	}
	return cfg, nil
}

// tlsFiles returns the TLS files cfg names, by setting.
func tlsFiles(cfg ops.Config) map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{"--tls-cert": cfg.TLSCert, "--tls-key": cfg.TLSKey, "--tls-client-ca": cfg.TLSClientCA,
		"--peer-tls-cert": cfg.PeerTLSCert, "--peer-tls-key": cfg.PeerTLSKey, "--peer-tls-ca": cfg.PeerTLSCA} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func TestNodeConfigRefusesWhatANodeWouldRefuse(t *testing.T) {
	// The check every asset test relies on must itself fail on a typo and a bad value.
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"a misspelt variable", map[string]string{"CAIRN_LISTN": "127.0.0.1:7070"}},
		{"a listener beyond loopback without TLS", map[string]string{"CAIRN_LISTEN": "0.0.0.0:7070"}},
		{"half of the object store's credentials", map[string]string{"AWS_ACCESS_KEY_ID": "k"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := nodeConfig(tt.env); err == nil {
				t.Errorf("nodeConfig accepted %v", tt.env)
			}
		})
	}
	if _, err := nodeConfig(map[string]string{"CAIRN_SERVER": "https://localhost:7070", "CAIRN_LISTEN": "127.0.0.1:7070"}); err != nil {
		t.Errorf("a client variable and a good setting: %v", err)
	}
}
