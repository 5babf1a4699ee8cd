package openwop_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/internal/httpcall"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// ownerHeader names the owner a test request's principal is bound to ("tenant/workspace");
// absent: auth.Local; "unbound": a key for every root bound to no owner.
const ownerHeader = "Test-Owner"

func testOptions() openwop.Options {
	return openwop.Options{Enabled: true, MaxFileBytes: 64, MaxFiles: 4, MaxVersions: 20, RunTTLDays: 1,
		Tenant: "default", Workspace: "default"}
}

// newFacade serves the facade over a real node stack (Raft replica, blob directory,
// Workbench service), with a stand-in for the node's authentication middleware.
func newFacade(t *testing.T, opt openwop.Options) string {
	t.Helper()
	return newFacadeOn(t, opt, workbench.Config{InlineMaxBytes: 4096})
}

// newFacadeOn is newFacade over a service configured with cfg.
func newFacadeOn(t testing.TB, opt openwop.Options, cfg workbench.Config) string {
	t.Helper()
	url, _ := newFacadeNode(t, opt, cfg)
	return url
}

// newSeamFacade is newFacade with the test seams on (Options.TestSeams); seam posts one
// operation to the seam and answers its answer.
func newSeamFacade(t *testing.T) (base string, seam func(op map[string]any) answer) {
	t.Helper()
	opt := testOptions()
	opt.TestSeams = true
	base = newFacade(t, opt)
	return base, func(op map[string]any) answer {
		return call(t, http.MethodPost, base+"/v1/host/sample/workspace/op", op)
	}
}

// reviewHeader, set to "yes", gives a bound test principal the review scope too.
const reviewHeader = "Test-Review"

// writeOnlyHeader "yes" gives the Test-Owner principal workspace:write alone.
const writeOnlyHeader = "Test-Write-Only"

// newFacadeNode is newFacadeOn that also answers the node under the facade.
func newFacadeNode(t testing.TB, opt openwop.Options, cfg workbench.Config) (string, *workbenchtest.Node) {
	t.Helper()
	n := workbenchtest.New(t, cfg)
	return serveFacade(t, openwop.New(n.Service, opt, http.NotFoundHandler())), n
}

// serveFacade serves h on a test server (closed when the test ends) behind a stand-in for
// the node's authentication middleware, and answers its URL.
func serveFacade(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.Local
		switch o := r.Header.Get(ownerHeader); o {
		case "":
		case "unbound":
			p = auth.Principal{ID: "k0", AllAgents: true, Scopes: auth.Scopes}
		default:
			tenant, ws, _ := strings.Cut(o, "/")
			p = auth.Principal{ID: "k-" + tenant + "-" + ws, Tenant: tenant, Workspace: ws, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}}
			if r.Header.Get(reviewHeader) == "yes" {
				p.Scopes = append(p.Scopes, auth.ScopeReview)
			}
			if r.Header.Get(writeOnlyHeader) == "yes" {
				p.Scopes = []auth.Scope{auth.ScopeWrite}
			}
		}
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type answer struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func call(t testing.TB, method, url string, body any, headers ...string) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		enc, _ := json.Marshal(b)
		rd = bytes.NewReader(enc)
	}
	got := httpcall.Do(t, httpcall.New(t, method, url, rd), headers...)
	a := answer{status: got.Status, header: got.Header, body: got.Body}
	if len(a.body) > 0 {
		_ = json.Unmarshal(a.body, &a.json)
	}
	return a
}

// schemas compiles the published schemas in testdata.
type schemas struct{ file, create, envelope *jsonschema.Schema }

func loadSchemas(t *testing.T) schemas {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	compile := func(name string) *jsonschema.Schema {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(name, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return schemas{file: compile("workspace-file.schema.json"), create: compile("workspace-file-create.schema.json"),
		envelope: compile("error-envelope.schema.json")}
}

func validate(t *testing.T, s *jsonschema.Schema, what string, body []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: not JSON: %v: %s", what, err, body)
	}
	if err := s.Validate(doc); err != nil {
		t.Fatalf("%s: %s fails the published schema: %v", what, body, err)
	}
}

// wantError checks an error answer: status, code, and the closed published envelope.
func wantError(t *testing.T, sc schemas, what string, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.json["error"] != code {
		t.Fatalf("%s: %d %s, want %d %s", what, a.status, a.body, status, code)
	}
	validate(t, sc.envelope, what, a.body)
}

func TestEveryAnswerMatchesThePublishedSchemas(t *testing.T) {
	sc := loadSchemas(t)
	base := newFacade(t, testOptions())
	files := base + "/v1/host/workspace/files"
	put := call(t, http.MethodPut, files+"/behavior%2FCRUD.md", map[string]any{"content": "first body"})
	if put.status != http.StatusOK || put.json["version"] != float64(1) {
		t.Fatalf("create: %d %s", put.status, put.body)
	}
	validate(t, sc.file, "PUT", put.body)
	got := call(t, http.MethodGet, files+"/behavior/CRUD.md", nil)
	validate(t, sc.file, "GET", got.body)
	if got.json["content"] != "first body" || got.json["etag"] != put.json["etag"] {
		t.Fatalf("GET through a raw slash: %s", got.body)
	}
	list := call(t, http.MethodGet, files, nil)
	var rows struct{ Files []map[string]any }
	if err := json.Unmarshal(list.body, &rows); err != nil || len(rows.Files) != 1 {
		t.Fatalf("list: %s", list.body)
	}
	if _, ok := rows.Files[0]["content"]; ok {
		t.Fatalf("a list row carries content: %s", list.body)
	}
	rows.Files[0]["content"] = "" // a row is a WorkspaceFile without content
	row, _ := json.Marshal(rows.Files[0])
	validate(t, sc.file, "list row", row)

	errorsCases := []struct {
		name, method, url string
		body              any
		headers           []string
		status            int
		code              string
	}{
		{"a body that is not JSON", http.MethodPut, files + "/a.md", "{", nil, 400, openwop.CodeValidation},
		{"an unknown field", http.MethodPut, files + "/a.md", map[string]any{"content": "x", "path": "a.md"}, nil, 400, openwop.CodeValidation},
		{"content that is not a string", http.MethodPut, files + "/a.md", map[string]any{"content": 1}, nil, 400, openwop.CodeValidation},
		{"no content", http.MethodPut, files + "/a.md", map[string]any{"contentType": "text/plain"}, nil, 400, openwop.CodeValidation},
		{"a dot-dot segment", http.MethodPut, files + "/a%2F..%2Fb", map[string]any{"content": "x"}, nil, 400, openwop.CodeValidation},
		{"a missing file", http.MethodGet, files + "/missing.md", nil, nil, 404, openwop.CodeNotFound},
		{"a delete of a missing file", http.MethodDelete, files + "/missing.md", nil, nil, 404, openwop.CodeNotFound},
		{"a non-integer version", http.MethodGet, files + "/behavior%2FCRUD.md?version=1.5", nil, nil, 400, openwop.CodeValidation},
		{"a version never written", http.MethodGet, files + "/behavior%2FCRUD.md?version=7", nil, nil, 404, openwop.CodeNotFound},
		{"version 0", http.MethodGet, files + "/behavior%2FCRUD.md?version=0", nil, nil, 404, openwop.CodeNotFound},
		{"content one byte over maxFileBytes", http.MethodPut, files + "/big.md", map[string]any{"content": strings.Repeat("x", 65)}, nil, 413, openwop.CodeTooLarge},
		{"a body far over the limit", http.MethodPut, files + "/big.md", `{"content":"` + strings.Repeat("x", 1<<20) + `"}`, nil, 413, openwop.CodeTooLarge},
		{"a stale If-Match", http.MethodPut, files + "/behavior%2FCRUD.md", map[string]any{"content": "x"}, []string{"If-Match", `"definitely-stale"`}, 409, openwop.CodeConflict},
		{"an unknown run", http.MethodGet, base + "/v1/runs/run-nope", nil, nil, 404, openwop.CodeRunNotFound},
		{"a run id of another shape", http.MethodGet, base + "/v1/runs/x", nil, nil, 404, openwop.CodeRunNotFound},
		{"a run without workflowId", http.MethodPost, base + "/v1/runs", map[string]any{}, nil, 400, openwop.CodeValidation},
		{"a run with an unknown field", http.MethodPost, base + "/v1/runs", map[string]any{"workflowId": "w", "x": 1}, nil, 400, openwop.CodeValidation},
		{"the seam while seams are off", http.MethodPost, base + "/v1/host/sample/workspace/op", map[string]any{"op": "list"}, nil, 404, openwop.CodeNotFound},
		{"the major-2 alias while seams are off", http.MethodGet, base + "/conformance/seams/workspace/files", nil, nil, 404, openwop.CodeNotFound},
		{"a key bound to no owner", http.MethodGet, files, nil, []string{ownerHeader, "unbound"}, 403, openwop.CodeForbidden},
	}
	for _, tt := range errorsCases {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, sc, tt.name, call(t, tt.method, tt.url, tt.body, tt.headers...), tt.status, tt.code)
		})
	}
	stale := call(t, http.MethodPut, files+"/behavior%2FCRUD.md", map[string]any{"content": "x"}, "If-Match", `"definitely-stale"`)
	if d, _ := stale.json["details"].(map[string]any); d["currentVersion"] != float64(1) {
		t.Fatalf("conflict details: %s", stale.body)
	}
	absent := call(t, http.MethodPut, files+"/never.md", map[string]any{"content": "x"}, "If-Match", put.json["etag"].(string))
	if d, _ := absent.json["details"].(map[string]any); absent.status != 409 || d["currentVersion"] != float64(0) {
		t.Fatalf("If-Match on a missing file: %d %s, want 409 with currentVersion 0", absent.status, absent.body)
	}
}

// The request object is closed exactly as the published schema closes it: a body the
// schema accepts is never refused as invalid, one it refuses always is.
func TestPutAcceptsExactlyWhatTheCreateSchemaAccepts(t *testing.T) {
	sc := loadSchemas(t)
	files := newFacade(t, testOptions()) + "/v1/host/workspace/files/body.md"
	for _, body := range []string{
		`{"content":"x"}`, `{"content":""}`, `{"content":"x","contentType":"text/plain"}`, `{"content":"x","contentType":1}`,
		`{"content":null}`, `{}`, `{"content":"x","etag":"e"}`, `{"content":"x","version":2}`, `[]`, `"x"`, `{"content":["x"]}`,
	} {
		doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(body))
		valid := sc.create.Validate(doc) == nil
		a := call(t, http.MethodPut, files, body)
		if refused := a.status == 400; valid == refused {
			t.Errorf("%s: schema-valid %v, answer %d %s", body, valid, a.status, a.body)
		}
	}
}

// The 413 trap: exactly maxFileBytes bytes of content is accepted, one more is the
// envelope with workspace_too_large, multi-byte characters count in UTF-8 bytes.
func TestTheSizeLimitCountsUTF8Bytes(t *testing.T) {
	sc := loadSchemas(t)
	files := newFacade(t, testOptions()) + "/v1/host/workspace/files/"
	if a := call(t, http.MethodPut, files+"exact.md", map[string]any{"content": strings.Repeat("x", 64)}); a.status != 200 {
		t.Fatalf("exactly maxFileBytes: %d %s", a.status, a.body)
	}
	wantError(t, sc, "maxFileBytes+1", call(t, http.MethodPut, files+"over.md", map[string]any{"content": strings.Repeat("x", 65)}), 413, openwop.CodeTooLarge)
	wantError(t, sc, "33 two-byte characters", call(t, http.MethodPut, files+"utf8.md", map[string]any{"content": strings.Repeat("é", 33)}), 413, openwop.CodeTooLarge)
	if a := call(t, http.MethodPut, files+"utf8.md", map[string]any{"content": strings.Repeat("é", 32)}); a.status != 200 {
		t.Fatalf("32 two-byte characters: %d %s", a.status, a.body)
	}
}

func TestVersionsRestartAfterADeleteAndOldEtagsNeverMatch(t *testing.T) {
	sc := loadSchemas(t)
	f := newFacade(t, testOptions()) + "/v1/host/workspace/files/behavior%2FV.md"
	var etags []string
	for i, want := range []float64{1, 2} {
		a := call(t, http.MethodPut, f, map[string]any{"content": "v"})
		if a.status != 200 || a.json["version"] != want {
			t.Fatalf("put %d: %d %s", i+1, a.status, a.body)
		}
		etags = append(etags, a.json["etag"].(string))
	}
	if a := call(t, http.MethodDelete, f, nil); a.status != http.StatusNoContent || len(a.body) != 0 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	wantError(t, sc, "GET after DELETE", call(t, http.MethodGet, f, nil), 404, openwop.CodeNotFound)
	again := call(t, http.MethodPut, f, map[string]any{"content": "v"})
	if again.json["version"] != float64(1) || again.json["etag"] == etags[0] || again.json["etag"] == etags[1] {
		t.Fatalf("put after delete: %s (earlier etags %v)", again.body, etags)
	}
	for _, old := range etags {
		a := call(t, http.MethodPut, f, map[string]any{"content": "w"}, "If-Match", old)
		wantError(t, sc, "an etag from before the delete", a, 409, openwop.CodeConflict)
		if d, _ := a.json["details"].(map[string]any); d["currentVersion"] != float64(1) {
			t.Fatalf("currentVersion: %s", a.body)
		}
	}
	if a := call(t, http.MethodPut, f, map[string]any{"content": "w"}, "If-Match", again.json["etag"].(string)); a.status != 200 || a.json["version"] != float64(2) {
		t.Fatalf("a matching If-Match: %d %s", a.status, a.body)
	}
}

func TestMaxFilesCountsLiveFiles(t *testing.T) {
	sc := loadSchemas(t)
	files := newFacade(t, testOptions()) + "/v1/host/workspace/files/"
	for i := range 4 {
		if a := call(t, http.MethodPut, files+"f"+string(rune('0'+i)), map[string]any{"content": "x"}); a.status != 200 {
			t.Fatalf("file %d: %d %s", i, a.status, a.body)
		}
	}
	wantError(t, sc, "a fifth file", call(t, http.MethodPut, files+"f4", map[string]any{"content": "x"}), 413, openwop.CodeTooLarge)
	if a := call(t, http.MethodPut, files+"f0", map[string]any{"content": "y"}); a.status != 200 {
		t.Fatalf("a replace at the limit: %d %s", a.status, a.body)
	}
	call(t, http.MethodDelete, files+"f0", nil)
	if a := call(t, http.MethodPut, files+"f4", map[string]any{"content": "x"}); a.status != 200 {
		t.Fatalf("a new file after a delete: %d %s", a.status, a.body)
	}
}

func TestOwnersAreIsolated(t *testing.T) {
	sc := loadSchemas(t)
	files := newFacade(t, testOptions()) + "/v1/host/workspace/files"
	a, sameTenant, otherTenant := []string{ownerHeader, "ta/wa"}, []string{ownerHeader, "ta/wb"}, []string{ownerHeader, "tb/wa"}
	if r := call(t, http.MethodPut, files+"/S.md", map[string]any{"content": "A-only"}, a...); r.status != 200 {
		t.Fatalf("owner put: %d %s", r.status, r.body)
	}
	for name, h := range map[string][]string{"another workspace": sameTenant, "another tenant": otherTenant, "the node default": nil} {
		r := call(t, http.MethodGet, files+"/S.md", nil, h...)
		wantError(t, sc, name, r, 404, openwop.CodeNotFound)
		if l := call(t, http.MethodGet, files, nil, h...); l.status != 200 || strings.Contains(string(l.body), "S.md") {
			t.Fatalf("%s lists %d %s", name, l.status, l.body)
		}
		wantError(t, sc, name+" deleting", call(t, http.MethodDelete, files+"/S.md", nil, h...), 404, openwop.CodeNotFound)
	}
	if r := call(t, http.MethodGet, files+"/S.md", nil, a...); r.json["content"] != "A-only" {
		t.Fatalf("the owner reads %s", r.body)
	}
}

func TestARunSeesTheWorkspaceAsItWasAtItsStart(t *testing.T) {
	sc := loadSchemas(t)
	base := newFacade(t, testOptions())
	f := base + "/v1/host/workspace/files/behavior%2FSNAPSHOT.md"
	call(t, http.MethodPut, f, map[string]any{"content": "snapshot body"})
	start := func() string {
		r := call(t, http.MethodPost, base+"/v1/runs", map[string]any{"workflowId": "conformance-noop", "inputs": map[string]any{"k": 1}})
		if r.status != http.StatusCreated || r.json["status"] != "pending" || r.json["eventsUrl"] == nil {
			t.Fatalf("POST /v1/runs: %d %s", r.status, r.body)
		}
		return r.json["runId"].(string)
	}
	first := start()
	call(t, http.MethodPut, f, map[string]any{"content": "later body"})
	call(t, http.MethodPut, base+"/v1/host/workspace/files/NEW.md", map[string]any{"content": "new"})
	run := call(t, http.MethodGet, base+"/v1/runs/"+first, nil)
	if run.status != 200 || string(mustJSON(t, run.json["workspace"])) != `[{"path":"behavior/SNAPSHOT.md","version":1}]` {
		t.Fatalf("run: %d %s", run.status, run.body)
	}
	read := call(t, http.MethodGet, base+"/v1/runs/"+first+"/workspace/files/behavior%2FSNAPSHOT.md", nil)
	validate(t, sc.file, "run read", read.body)
	if read.json["content"] != "snapshot body" || read.json["version"] != float64(1) {
		t.Fatalf("the run reads %s", read.body)
	}
	wantError(t, sc, "a file written after the run started", call(t, http.MethodGet, base+"/v1/runs/"+first+"/workspace/files/NEW.md", nil), 404, openwop.CodeNotFound)
	second := start()
	if r := call(t, http.MethodGet, base+"/v1/runs/"+second+"/workspace/files/behavior%2FSNAPSHOT.md", nil); r.json["content"] != "later body" {
		t.Fatalf("the next run reads %s", r.body)
	}
	list := call(t, http.MethodGet, base+"/v1/runs", nil)
	if !strings.Contains(string(list.body), first) || !strings.Contains(string(list.body), second) {
		t.Fatalf("runs: %s", list.body)
	}
	wantError(t, sc, "another tenant's run", call(t, http.MethodGet, base+"/v1/runs/"+first, nil, ownerHeader, "tb/wa"), 404, openwop.CodeRunNotFound)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestADisabledFacadeAnswers501AndAdvertisesNoWorkspace(t *testing.T) {
	sc := loadSchemas(t)
	opt := testOptions()
	opt.Enabled = false
	base := newFacade(t, opt)
	d := call(t, http.MethodGet, base+"/.well-known/openwop", nil)
	if ws, _ := d.json["workspace"].(map[string]any); d.status != 200 || ws["supported"] != false {
		t.Fatalf("discovery: %d %s", d.status, d.body)
	}
	for _, c := range []struct{ method, url string }{
		{http.MethodGet, base + "/v1/host/workspace/files"}, {http.MethodGet, base + "/v1/host/workspace/files/a.md"},
		{http.MethodPut, base + "/v1/host/workspace/files/a.md"}, {http.MethodDelete, base + "/v1/host/workspace/files/a.md"},
		{http.MethodPost, base + "/v1/runs"},
	} {
		wantError(t, sc, c.method+" "+c.url, call(t, c.method, c.url, `{"content":"x"}`), 501, openwop.CodeCapabilityNotProvided)
	}
	// The v2 registry's operations are unadvertised: 404 not_found (the pack readback
	// design, errors.md §Unadvertised operations), not 501.
	if _, ok := d.json["agents"]; ok {
		t.Fatalf("discovery of a disabled facade advertises agents: %s", d.body)
	}
	for _, c := range []struct{ method, url string }{
		{http.MethodGet, base + "/installed-packs/private.x"}, {http.MethodGet, base + "/proposals"},
		{http.MethodGet, base + "/agents"}, {http.MethodPost, base + "/proposals"},
	} {
		wantError(t, sc, c.method+" "+c.url, call(t, c.method, c.url, `{}`), 404, openwop.CodeNotFound)
	}
}

func TestDiscoveryAdvertisesTheConfiguredWorkspaceAtTheRootAndUnderCapabilities(t *testing.T) {
	d := call(t, http.MethodGet, newFacade(t, testOptions())+"/.well-known/openwop", nil)
	want := map[string]any{"supported": true, "versioned": true, "maxFileBytes": 64.0, "maxFiles": 4.0, "maxVersions": 20.0}
	caps, _ := d.json["capabilities"].(map[string]any)
	if !reflect.DeepEqual(d.json["workspace"], want) || !reflect.DeepEqual(caps["workspace"], want) {
		t.Fatalf("discovery: %s", d.body)
	}
	for _, k := range []string{"protocolVersion", "supportedEnvelopes", "schemaVersions", "limits"} {
		if _, ok := d.json[k]; !ok {
			t.Errorf("discovery lacks %s (capabilities.schema.json requires it)", k)
		}
	}
	if _, ok := d.json["multiAgent"]; ok {
		t.Errorf("discovery advertises multiAgent: %s", d.body)
	}
}

func TestTheSeamNamesOwnersOnlyWhenEnabled(t *testing.T) {
	sc := loadSchemas(t)
	base, seam := newSeamFacade(t)
	if r := seam(map[string]any{"tenant": "wct1-tenant-a", "workspace": "ws-a", "op": "put", "path": "WCT1-SECRET.md", "content": "A-only secret body"}); r.status != 200 {
		t.Fatalf("seam put: %d %s", r.status, r.body)
	}
	for _, o := range [][2]string{{"wct1-tenant-a", "ws-b"}, {"wct1-tenant-b", "ws-a"}} {
		r := seam(map[string]any{"tenant": o[0], "workspace": o[1], "op": "get", "path": "WCT1-SECRET.md"})
		wantError(t, sc, "cross-owner get", r, 404, openwop.CodeNotFound)
		if l := seam(map[string]any{"tenant": o[0], "workspace": o[1], "op": "list"}); strings.Contains(string(l.body), "WCT1-SECRET.md") {
			t.Fatalf("cross-owner list: %s", l.body)
		}
	}
	if r := seam(map[string]any{"tenant": "wct1-tenant-a", "workspace": "ws-a", "op": "get", "path": "WCT1-SECRET.md"}); r.json["content"] != "A-only secret body" {
		t.Fatalf("owner get: %s", r.body)
	}
	wantError(t, sc, "an unknown op", seam(map[string]any{"op": "chmod", "path": "a"}), 400, openwop.CodeValidation)
	// The major-2 alias of the files endpoints is the same store.
	if r := call(t, http.MethodPut, base+"/conformance/seams/workspace/files/v2.md", map[string]any{"content": "x"}); r.status != 200 {
		t.Fatalf("v2 alias put: %d %s", r.status, r.body)
	}
	if r := call(t, http.MethodGet, base+"/v1/host/workspace/files/v2.md", nil); r.json["content"] != "x" {
		t.Fatalf("v1 read of the v2 write: %s", r.body)
	}
	if r := call(t, http.MethodPost, base+"/conformance/seams/sample/workspace/op", map[string]any{"op": "get", "path": "v2.md"}); r.json["content"] != "x" {
		t.Fatalf("v2 seam alias: %s", r.body)
	}
}

// What a redactor returns is what is stored and served.
func TestPutStoresWhatTheRedactorReturns(t *testing.T) {
	opt := testOptions()
	opt.Redactor = redactFunc(func(tenant, s string) string { return strings.ReplaceAll(s, "sk-secret", "[REDACTED:"+tenant+"]") })
	f := newFacade(t, opt) + "/v1/host/workspace/files/r.md"
	put := call(t, http.MethodPut, f, map[string]any{"content": "key sk-secret"})
	if put.json["content"] != "key [REDACTED:default]" {
		t.Fatalf("put: %s", put.body)
	}
	if got := call(t, http.MethodGet, f, nil); got.json["content"] != "key [REDACTED:default]" {
		t.Fatalf("get: %s", got.body)
	}
}

type redactFunc func(tenant, s string) string

func (f redactFunc) Redact(tenant, s string) string { return f(tenant, s) }

// The OpenAPI document is served, and names every route the facade answers.
func TestTheOpenAPIDocumentCoversTheRoutes(t *testing.T) {
	r := call(t, http.MethodGet, newFacade(t, testOptions())+openwop.OpenAPIPath, nil)
	paths, _ := r.json["paths"].(map[string]any)
	if r.status != 200 || r.json["openapi"] == nil {
		t.Fatalf("openapi: %d %.200s", r.status, r.body)
	}
	for _, p := range []string{"/.well-known/openwop", "/v1/host/workspace/files", "/v1/host/workspace/files/{path}", "/v1/runs",
		"/v1/runs/{runId}", "/v1/runs/{runId}/workspace/files", "/v1/runs/{runId}/workspace/files/{path}",
		"/v1/host/sample/workspace/op", "/conformance/seams/workspace/files", "/conformance/seams/workspace/files/{path}",
		"/conformance/seams/sample/workspace/op", "/proposals", "/proposals/{proposalId}", "/proposals/{proposalId}:apply",
		"/proposals/{proposalId}:reject", "/installed-packs/{packName}", "/agents", "/agents/{agentId}"} {
		if paths[p] == nil {
			t.Errorf("openapi.json lacks %s", p)
		}
		if concrete := strings.NewReplacer("{path}", "a.md", "{runId}", "run-x", "{proposalId}", "p1", "{packName}", "private.a.b", "{agentId}", "a1").Replace(p); !openwop.Owns(concrete) {
			t.Errorf("the facade does not own %s", concrete)
		}
	}
	for p := range paths {
		if !openwop.Owns(strings.NewReplacer("{path}", "a.md", "{runId}", "run-x", "{proposalId}", "p1", "{packName}", "private.a.b", "{agentId}", "a1").Replace(p)) {
			t.Errorf("openapi.json names %s, which the facade does not serve", p)
		}
	}
}

// ?version=N serves an older version of the current life while the store retains it (a
// run's snapshot holds it here), and never one beyond the newest maxVersions.
func TestAnOlderVersionIsServedWhileRetainedAndWithinMaxVersions(t *testing.T) {
	sc := loadSchemas(t)
	for _, maxVersions := range []int{20, 1} {
		opt := testOptions()
		opt.MaxVersions = maxVersions
		base := newFacade(t, opt)
		f := base + "/v1/host/workspace/files/h.md"
		call(t, http.MethodPut, f, map[string]any{"content": "one"})
		if r := call(t, http.MethodPost, base+"/v1/runs", map[string]any{"workflowId": "hold"}); r.status != 201 {
			t.Fatalf("run: %d %s", r.status, r.body)
		}
		call(t, http.MethodPut, f, map[string]any{"content": "two"})
		old := call(t, http.MethodGet, f+"?version=1", nil)
		if maxVersions == 1 {
			wantError(t, sc, "a version beyond maxVersions", old, 404, openwop.CodeNotFound)
			continue
		}
		validate(t, sc.file, "version 1", old.body)
		if old.json["content"] != "one" || old.json["version"] != float64(1) {
			t.Fatalf("?version=1: %s", old.body)
		}
		if cur := call(t, http.MethodGet, f+"?version=2", nil); cur.json["content"] != "two" {
			t.Fatalf("?version=2: %s", cur.body)
		}
	}
}

// The principal's request rate holds on this surface too: beyond it, 429 rate_limited with
// details.retryAfter and Retry-After; discovery is not counted.
func TestThePrincipalRequestRateHolds(t *testing.T) {
	sc := loadSchemas(t)
	base := newFacadeOn(t, testOptions(), workbench.Config{InlineMaxBytes: 4096,
		Limits: workbench.PrincipalLimits{RequestsPerSecond: 0.001, RequestBurst: 2}})
	for range 3 {
		if d := call(t, http.MethodGet, base+"/.well-known/openwop", nil); d.status != 200 {
			t.Fatalf("discovery: %d %s", d.status, d.body)
		}
	}
	for i := range 2 {
		if r := call(t, http.MethodGet, base+"/v1/host/workspace/files", nil); r.status != 200 {
			t.Fatalf("request %d within the burst: %d %s", i+1, r.status, r.body)
		}
	}
	r := call(t, http.MethodGet, base+"/v1/host/workspace/files", nil)
	wantError(t, sc, "beyond the rate", r, 429, openwop.CodeRateLimited)
	if d, _ := r.json["details"].(map[string]any); d["retryAfter"] == nil {
		t.Fatalf("no retryAfter: %s", r.body)
	}
}

// TestOwnerIsTheCredentialsTenantOnly: Owner answers the owner a key is bound to, the
// configured one for the Local principal, and nothing for a key of whole agent roots or a
// request without a credential (the facade refuses them).
func TestOwnerIsTheCredentialsTenantOnly(t *testing.T) {
	opt := testOptions()
	opt.Tenant, opt.Workspace = "node-tenant", "node-ws"
	h := openwop.New(nil, opt, http.NotFoundHandler())
	for _, c := range []struct {
		name          string
		p             *auth.Principal
		tenant, space string
		ok            bool
	}{
		{"a key bound to a tenant", &auth.Principal{ID: "k1", Tenant: "acme", Workspace: "main", Agents: []string{"acme"}}, "acme", "main", true},
		{"the Local principal", &auth.Local, "node-tenant", "node-ws", true},
		{"a key of whole agent roots", &auth.Principal{ID: "k2", Agents: []string{"acme"}, Scopes: auth.Scopes}, "", "", false},
		{"a key of every root", &auth.Principal{ID: "k3", AllAgents: true, Scopes: auth.Scopes}, "", "", false},
		{"no credential", nil, "", "", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/proposals", nil)
		if c.p != nil {
			r = r.WithContext(auth.WithPrincipal(r.Context(), *c.p))
		}
		tenant, space, ok := h.Owner(r)
		if ok != c.ok || ok && (tenant != c.tenant || space != c.space) {
			t.Errorf("%s: Owner = %q, %q, %v; want %q, %q, %v", c.name, tenant, space, ok, c.tenant, c.space, c.ok)
		}
	}
}

// A redaction marker can be longer than the secret it replaces. A PUT whose content fits
// maxFileBytes only before redaction is refused 413 workspace_too_large and stores nothing:
// stored, the file could never be read back (a GET answers at most maxFileBytes), so the
// write would be acknowledged and then unreadable.
func TestAPutThatRedactionGrowsPastMaxFileBytesStoresNothing(t *testing.T) {
	sc := loadSchemas(t)
	opt := testOptions()
	opt.Redactor = redactFunc(func(tenant, s string) string { return strings.ReplaceAll(s, "sk-secret", "[REDACTED:"+tenant+"]") })
	f := newFacade(t, opt) + "/v1/host/workspace/files/r.md"
	content := strings.Repeat("sk-secret ", 6) // 60 bytes, 114 once redacted; the limit is 64
	wantError(t, sc, "a PUT redaction grows past maxFileBytes", call(t, http.MethodPut, f, map[string]any{"content": content}),
		http.StatusRequestEntityTooLarge, openwop.CodeTooLarge)
	if got := call(t, http.MethodGet, f, nil); got.status != http.StatusNotFound {
		t.Fatalf("the refused PUT stored a file: %d %s", got.status, got.body)
	}
	if put := call(t, http.MethodPut, f, map[string]any{"content": strings.Repeat("sk-secret ", 3)}); put.status != 200 {
		t.Fatalf("a PUT that fits once redacted: %d %s", put.status, put.body)
	}
}
