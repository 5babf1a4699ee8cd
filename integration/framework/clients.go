package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/api/client"
)

// Key is an API key as `cairn admin key create --json` answers it.
type Key struct {
	ID     string `json:"id"`
	Secret string `json:"secret"` // cairn_<id>_<secret>
	// The key's S3 credential, when it was made with --s3.
	S3AccessKeyID     string `json:"s3_access_key_id"`
	S3SecretAccessKey string `json:"s3_secret_access_key"`
}

// keyCreateTimeout bounds one `cairn admin key create`.
const keyCreateTimeout = 2 * time.Minute

// CreateKey runs `bin admin key create --name name args... --json` and returns the key
// it made; anything else fails the test. args say where the key is kept and what it may
// do: "--data-dir", D (offline, on a stopped embedded node's data directory), "--etcd", E
// (a cluster's first key) or "--admin-server", URL (a running node; env then carries
// CAIRN_API_KEY=<an admin key>), and its scopes and agents or tenant (docs/runbook.md).
func CreateKey(t testing.TB, bin string, env []string, name string, args ...string) Key {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), keyCreateTimeout)
	defer cancel()
	argv := append(append([]string{"admin", "key", "create", "--name", name}, args...), "--json")
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env = ChildEnv(env...)
	cmd.SysProcAttr = ChildSysProcAttr()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var k Key
	if err != nil || json.Unmarshal(stdout.Bytes(), &k) != nil || k.ID == "" || !strings.HasPrefix(k.Secret, "cairn_"+k.ID+"_") {
		t.Fatalf("cairn %s: %v, key %+v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), err, k, &stdout, &stderr)
	}
	if strings.Contains(stderr.String(), DataRaceMarker) {
		t.Errorf("the race detector reported a data race in cairn %s:\n%s", strings.Join(argv, " "), &stderr)
	}
	return k
}

// Bearer is the request header that presents key, as name-value pair for a request
// helper: Authorization: Bearer <key>.
func Bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// REST returns an api/client Client for the node at base ("http://127.0.0.1:PORT") that
// presents key on every request, or none when key is "".
func REST(base, key string) *client.Client {
	c := client.New(base, &http.Client{})
	if key != "" {
		c = c.WithAPIKey(key)
	}
	return c
}

// mcpConnectTimeout bounds the connection of an MCP session.
const mcpConnectTimeout = 2 * time.Minute

// MCP connects an MCP client session over streamable HTTP to agent's endpoint
// (/v1/agents/{agent}/mcp, profile workbench) of the node at base, presenting key unless
// it is ""; the session is closed when t ends (closing it before is fine).
func MCP(t testing.TB, base, agent, key string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), mcpConnectTimeout)
	defer cancel()
	tr := &sdk.StreamableClientTransport{Endpoint: base + "/v1/agents/" + agent + "/mcp"}
	if key != "" {
		tr.HTTPClient = &http.Client{Transport: bearerTransport{key: key}}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cairn-integration", Version: "v0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect to the MCP endpoint of %s at %s: %v", agent, base, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// bearerTransport presents key on every request (the session talks to one node only).
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}
