package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
)

// The facade's PUT is redacted (WSR-1) on a node with no secrets file: a secret-shaped
// token is stored as its kind's marker, an ordinary identifier unchanged; the same bytes
// read back through REST.
func TestOpenWOPPutIsRedactedBeforeItIsStored(t *testing.T) {
	n := openReady(t, testConfig(t), testCreds)
	h := n.Handler()
	key := "sk-proj-" + strings.Repeat("Ab3x", 10)
	body := `{"content":"token ` + key + ` id WCT1-BLACKBOX-SECRET-7f0c1c1e-2b7e-4f0e-9a51-0c9d5a3b6e21"}`
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPut, "/v1/host/workspace/files/notes%2Fkeys.md", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	var file struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	want := "token [REDACTED:openai_api_key] id WCT1-BLACKBOX-SECRET-7f0c1c1e-2b7e-4f0e-9a51-0c9d5a3b6e21"
	if file.Content != want {
		t.Fatalf("stored content %q, want %q", file.Content, want)
	}
	code, b := do(t, h, http.MethodGet, "/v1/agents/default/workbenches/default/files/notes/keys.md", nil)
	if code != http.StatusOK || string(b) != want || strings.Contains(string(b), key) {
		t.Fatalf("REST read of the same file: %d %q", code, b)
	}
}

// OpenWOP's scope names are accepted when a key is made (issue 25 finding 20):
// manifest:read is workspace:read and proposals:apply is review, stored under Cairn's
// names; a key made with them proposes, applies and reads the pack back. Cairn's names keep
// working, and a scope held under both names is refused.
func TestOpenWOPScopeNamesAreAliasesOfCairnScopes(t *testing.T) {
	cfg := testConfig(t)
	cfg.Auth = ops.AuthRequired
	adminToken := createKeys(t, cfg.DataDir, auth.KeySpec{Name: "operator", AllAgents: true, Scopes: auth.Scopes})[0]
	n, base := serveNode(t, cfg)
	adminURL := "http://" + n.AdminAddr().String() + KeysPath
	operator := map[string]string{"Authorization": "Bearer " + adminToken}
	makeKey := func(scopes string) (int, map[string]any) {
		t.Helper()
		code, _, b := send(t, http.MethodPost, adminURL, operator,
			`{"name":"openwop host","tenant":"acme","workspace":"main","scopes":`+scopes+`}`)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return code, out
	}

	code, k := makeKey(`["manifest:read","workspace:write","proposals:apply"]`)
	if want := []any{"workspace:read", "workspace:write", "review"}; code != http.StatusCreated || !reflect.DeepEqual(k["scopes"], want) {
		t.Fatalf("a key made with OpenWOP's scope names: %d %v, want 201 with scopes %v", code, k, want)
	}
	host := map[string]string{"Authorization": "Bearer " + k["secret"].(string)}
	pack := `{"kind":"node","name":"private.acme.helper","version":"1.0.0","engines":{"openwop":">=2.0.0 <3.0.0"},` +
		`"runtime":{"language":"remote","entry":"https://agents.example.com/helper"},` +
		`"agents":[{"agentId":"private.acme.helper.main","persona":"Helper","modelClass":"general","systemPrompt":"be helpful"}]}`
	code, _, b := send(t, http.MethodPost, base+"/proposals", host, `{"kind":"agent-pack","artifact":`+pack+`}`)
	var p struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal(b, &p) != nil {
		t.Fatalf("propose: %d %s", code, b)
	}
	if code, _, b := send(t, http.MethodPost, base+"/proposals/"+p.ID+":apply", host, ""); code != http.StatusOK {
		t.Fatalf("apply with proposals:apply: %d %s", code, b)
	}
	if code, _, b := send(t, http.MethodGet, base+"/installed-packs/private.acme.helper", host, ""); code != http.StatusOK || string(b) != pack {
		t.Fatalf("readback with manifest:read: %d %s", code, b)
	}

	if code, k := makeKey(`["workspace:read","review"]`); code != http.StatusCreated || !reflect.DeepEqual(k["scopes"], []any{"workspace:read", "review"}) {
		t.Fatalf("a key made with Cairn's names: %d %v", code, k)
	}
	if code, k := makeKey(`["workspace:read","manifest:read"]`); code != http.StatusBadRequest || !strings.Contains(k["message"].(string), "twice") {
		t.Fatalf("one scope under both names: %d %v, want 400", code, k)
	}
}
