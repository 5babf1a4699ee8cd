package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// servedRoutes is every route and method the handler serves (handler.go route, file.go
// file). The document must describe exactly these operations.
var servedRoutes = []struct{ path, method string }{
	{"/healthz", "GET"},
	{"/readyz", "GET"},
	{"/metrics", "GET"},
	{"/v1/openapi.json", "GET"},
	{"/v1/openapi.json", "HEAD"},
	{"/mcp", "POST"},
	{"/mcp", "GET"},
	{"/mcp", "DELETE"},
	{"/v1/agents/{agent}/mcp", "POST"},
	{"/v1/agents/{agent}/mcp", "GET"},
	{"/v1/agents/{agent}/mcp", "DELETE"},
	{"/v1/agents/{agent}/workbenches/{id}", "PUT"},
	{"/v1/agents/{agent}/workbenches/{id}", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/list", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/list", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/diff", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/diff", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "PUT"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "DELETE"},
	{"/v1/admin/gc", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/commit", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/grep", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/snapshots", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/snapshots", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/snapshots", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/snapshots/renew", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/commits", "GET"}, // after the commit above
	{"/v1/agents/{agent}/workbenches/{id}/commits", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/restore", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/rewind", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/fork", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/merge", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/discard", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/snapshots/retire", "POST"},
	{"/v1/agents/{agent}/search", "POST"},
	{"/v1/agents/{agent}/aggregate", "POST"},
	{"/v1/agents/{agent}/catalog", "POST"},
	{"/v1/agents/{agent}/find", "POST"},
	{"/v1/agents/{agent}/restores/{operation_id}", "GET"},
	{"/v1/agents/{agent}/workbenches", "GET"},
	{"/v1/agents/{agent}/workbenches", "HEAD"},
	{"/v1/agents/{agent}/usage", "GET"},
	{"/v1/agents/{agent}/usage", "HEAD"},
	{"/v1/admin/quota", "GET"},
	{"/v1/admin/quota", "PUT"},
	{"/v1/admin/purge", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/history", "GET"},
	{"/v1/admin/retention", "GET"},
	{"/v1/admin/retention", "PUT"},
	{"/v1/admin/cluster/shards", "POST"},
	{"/v1/admin/cluster/root-moves", "GET"},
	{"/v1/admin/cluster/root-moves", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/proposals", "POST"}, // proposals.go: created before it is read and decided
	{"/v1/agents/{agent}/workbenches/{id}/proposals", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/proposals", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/proposals/{proposal_id}", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/proposals/{proposal_id}", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/proposals/{proposal_id}/decision", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/judgments", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/judgments", "HEAD"},
	{"/v1/agents/{agent}/events", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}", "DELETE"}, // after the file DELETE: it removes the workbench
}

// eventsPath is the change-feed stream: the route table test reads its status and
// headers, not its endless body.
const eventsPath = "/v1/agents/{agent}/events"

// toolBodies are valid request bodies for the JSON-body routes of servedRoutes, in the
// order the route table test sends them (the snapshot exists before it is renewed,
// restored from and retired).
var toolBodies = map[string]string{
	"/v1/agents/{agent}/workbenches/{id}/commit":                           `{"manifest":{"run":1},"content_digest_uri":"sha256:` + strings.Repeat("a", 64) + `"}`,
	"/v1/agents/{agent}/workbenches/{id}/grep":                             `{"pattern":"x","recursive":true}`,
	"/v1/agents/{agent}/workbenches/{id}/snapshots":                        `{"name":"s1"}`,
	"/v1/agents/{agent}/workbenches/{id}/snapshots/renew":                  `{"name":"s1","ttl_days":9}`,
	"/v1/agents/{agent}/workbenches/{id}/restore":                          `{"destination_id":"w2","at_snapshot":"s1"}`,
	"/v1/agents/{agent}/workbenches/{id}/rewind":                           `{"target":"snapshot:s1","dry_run":true}`,
	"/v1/agents/{agent}/workbenches/{id}/fork":                             `{"fork":"f1"}`,
	"/v1/agents/{agent}/workbenches/{id}/merge":                            `{"dry_run":true}`,
	"/v1/agents/{agent}/workbenches/{id}/snapshots/retire":                 `{"name":"s1"}`,
	"/v1/agents/{agent}/search":                                            `{"predicates":[{"field":"artifact.ext","op":"eq","value":"txt"}]}`,
	"/v1/agents/{agent}/aggregate":                                         `{"measures":[{"name":"n","op":"count"}]}`,
	"/v1/agents/{agent}/catalog":                                           `{}`,
	"/v1/agents/{agent}/find":                                              `{"committed":true}`,
	"/v1/admin/gc":                                                         `{"dry_run":true}`,
	"/v1/admin/quota":                                                      `{"agent":"a","max_files":1000}`,
	"/v1/admin/purge":                                                      `{"agent":"other"}`,
	"/v1/agents/{agent}/workbenches/{id}/proposals":                        `{"path":"input/proposed.txt","text":"p","request_id":"route-1"}`,
	"/v1/agents/{agent}/workbenches/{id}/proposals/{proposal_id}/decision": `{"disposition":"reject","submission_id":"route-s1"}`,
	"/v1/admin/retention":                                                  `{"agent":"a","versions":100}`,
	"/v1/admin/cluster/shards":                                             `{"add":1,"expect_shards":1}`,
}

// wireCodes are the stable error codes of docs/workbench.md#errors.
var wireCodes = []string{"InvalidArguments", "UnknownTool", "PayloadTooLarge", "NotFound", "NotArtifact",
	"NotDirectory", "AlreadyExists", "Conflict", "InvalidUtf8", "NoMatch", "AmbiguousEdit",
	"StructuredDecodeFailed", "ReadFenceChanged", "SnapshotNotFound", "SnapshotExpired",
	"ForkRetentionActive", "WorkbenchCommitConflict", "WorkbenchCommitProtocolMismatch", "RestoreProtocolMismatch",
	"InvalidState", "ObjectUnavailable",
	"ResourceExhausted", "RoutingUnavailable", "OutcomeUnknown", "DataCorrupted", "PermissionDenied", "Internal", "Unauthenticated", "FeedExpired"}

// notEnvelope lists the error responses whose body is deliberately not the envelope.
var notEnvelope = map[string]string{
	"GET /readyz 503": `the readiness probe answers {"status":"not ready"}`,
}

const errorRef = "#/components/schemas/Error"

var httpMethods = []string{"get", "head", "put", "post", "delete", "options", "patch", "trace"}

func rawDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(rest.OpenAPI))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if dec.More() {
		t.Fatal("openapi.json has trailing data")
	}
	return doc
}

func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(rest.OpenAPI)
	if err != nil {
		t.Fatalf("kin-openapi cannot load the document: %v", err)
	}
	return doc
}

// pointer resolves a local JSON pointer ("#/a/b") in doc.
func pointer(doc map[string]any, ref string) (any, bool) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = doc
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// deref follows a Reference Object ({"$ref": ...}) to its target.
func deref(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	for range 10 {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("not an object: %v", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		if v, ok = pointer(doc, ref); !ok {
			t.Fatalf("$ref %q does not resolve", ref)
		}
	}
	t.Fatal("$ref chain too long")
	return nil
}

func TestOpenAPIDocumentIsValid31(t *testing.T) {
	raw := rawDoc(t)
	if raw["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", raw["openapi"])
	}
	doc := loadDoc(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Fatal("kin-openapi does not see a 3.1 document")
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document does not validate as OpenAPI 3.1: %v", err)
	}
}

func TestOpenAPIRefsResolve(t *testing.T) {
	raw := rawDoc(t)
	n := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				n++
				if _, ok := pointer(raw, ref); !ok {
					t.Errorf("%s: $ref %q does not resolve (only local refs are allowed)", path, ref)
				}
			}
			for k, c := range v {
				walk(path+"/"+k, c)
			}
		case []any:
			for _, c := range v {
				walk(path+"[]", c)
			}
		}
	}
	walk("#", raw)
	if n == 0 {
		t.Fatal("no $ref found: the walk is broken")
	}
}

func TestOpenAPIDescribesEveryRouteAndMethod(t *testing.T) {
	raw := rawDoc(t)
	paths, _ := raw["paths"].(map[string]any)
	want := map[string]bool{}
	for _, r := range servedRoutes {
		want[r.method+" "+r.path] = true
	}
	got := map[string]bool{}
	ids := map[string]string{}
	for p, item := range paths {
		pi := deref(t, raw, item)
		for _, m := range httpMethods {
			o, ok := pi[m]
			if !ok {
				continue
			}
			key := strings.ToUpper(m) + " " + p
			got[key] = true
			op := o.(map[string]any)
			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s: no operationId", key)
			} else if other, dup := ids[id]; dup {
				t.Errorf("%s: operationId %q already used by %s", key, id, other)
			}
			ids[id] = key
			if s, _ := op["summary"].(string); s == "" {
				t.Errorf("%s: no summary", key)
			}
			resps, _ := op["responses"].(map[string]any)
			if len(resps) == 0 {
				t.Errorf("%s: no responses", key)
			}
			for code, r := range resps {
				if code != "default" && code[0] != '4' && code[0] != '5' {
					continue
				}
				where := key + " " + code
				if _, ok := notEnvelope[where]; ok {
					continue
				}
				checkEnvelope(t, raw, where, r)
			}
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("served but not documented: %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("documented but not served: %s", k)
		}
	}
	for where := range notEnvelope {
		method, rest, _ := strings.Cut(where, " ")
		p, code, _ := strings.Cut(rest, " ")
		op, _ := deref(t, raw, paths[p])[strings.ToLower(method)].(map[string]any)
		if op == nil || op["responses"].(map[string]any)[code] == nil {
			t.Errorf("stale exemption %q", where)
		}
	}
	// Every shared response is an error response: all of them carry the envelope.
	comps, _ := raw["components"].(map[string]any)
	for name, r := range comps["responses"].(map[string]any) {
		checkEnvelope(t, raw, "components/responses/"+name, r)
	}
}

func checkEnvelope(t *testing.T, raw map[string]any, where string, r any) {
	t.Helper()
	resp := deref(t, raw, r)
	content, _ := resp["content"].(map[string]any)
	mt, _ := content["application/json"].(map[string]any)
	schema, _ := mt["schema"].(map[string]any)
	if schema["$ref"] != errorRef {
		t.Errorf("%s: the application/json body is not the error envelope (%s)", where, errorRef)
	}
}

func TestOpenAPIErrorEnvelopeSchema(t *testing.T) {
	raw := rawDoc(t)
	env, ok := pointer(raw, errorRef)
	if !ok {
		t.Fatal("no Error schema")
	}
	e := env.(map[string]any)
	req := []string{}
	for _, r := range e["required"].([]any) {
		req = append(req, r.(string))
	}
	sort.Strings(req)
	if strings.Join(req, ",") != "code,details,message,retryable,status" {
		t.Fatalf("Error.required = %v", req)
	}
	props := e["properties"].(map[string]any)
	if props["status"].(map[string]any)["const"] != "error" {
		t.Fatalf("Error.status must be const \"error\"")
	}
	code := deref(t, raw, props["code"])
	var enum []string
	for _, c := range code["enum"].([]any) {
		enum = append(enum, c.(string))
	}
	if !slices.Equal(enum, wireCodes) {
		t.Fatalf("code enum\n got %v\nwant %v", enum, wireCodes)
	}
	for _, c := range []string{workbench.CodeInvalidArguments, workbench.CodeUnknownTool, workbench.CodePayloadTooLarge,
		workbench.CodeNotFound, workbench.CodeNotArtifact, workbench.CodeNotDirectory, workbench.CodeAlreadyExists,
		workbench.CodeConflict, workbench.CodeInvalidUTF8, workbench.CodeNoMatch, workbench.CodeAmbiguousEdit,
		workbench.CodeStructuredDecodeFailed, workbench.CodeReadFenceChanged, workbench.CodeSnapshotNotFound,
		workbench.CodeSnapshotExpired, workbench.CodeInvalidState, workbench.CodeObjectUnavailable,
		workbench.CodeResourceExhausted, workbench.CodeRoutingUnavailable, workbench.CodeOutcomeUnknown, workbench.CodeDataCorrupted, workbench.CodeInternal,
		workbench.CodeWorkbenchCommitProtocolMismatch, workbench.CodeRestoreProtocolMismatch, workbench.CodeUnauthenticated,
		workbench.CodeFeedExpired} {
		if !slices.Contains(enum, c) {
			t.Errorf("code %s of package workbench is not in the enum", c)
		}
	}
}

// concrete turns a documented path into a request path.
func concrete(p string) string {
	r := strings.NewReplacer("{agent}", "a", "{id}", "w", "{path}", "input/dir/x.txt", "{operation_id}", strings.Repeat("0", 64),
		"{proposal_id}", meta.ProposalID("a", "w", "input/proposed.txt", "route-1")) // toolBodies' proposal
	return r.Replace(p)
}

// TestOpenAPIRouteTableMatchesHandler checks the table against the handler: every entry is
// served, and every other method of a route with a fixed method set is 405 with an Allow
// header that lists exactly the documented methods.
func TestOpenAPIRouteTableMatchesHandler(t *testing.T) {
	srv, admin := newServers(t)
	// A second handler without a Workbench service: MCP (a stub), metrics, readiness.
	var (
		mu        sync.Mutex
		mcpAgents []string
	)
	ops := httptest.NewServer(rest.NewHandler(nil, rest.Options{
		MCP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			mcpAgents = append(mcpAgents, r.Method+" "+r.PathValue("agent"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}),
		Ready:    func() bool { return false },
		Registry: prometheus.NewRegistry(),
	}))
	t.Cleanup(ops.Close)

	expect(t, do(t, "PUT", srv.URL+concrete("/v1/agents/{agent}/workbenches/{id}/files/{path}"), strings.NewReader("x")), 201, "")
	wantStatus := map[string]int{"GET /readyz": 503, "POST /mcp": 204, "GET /mcp": 204, "DELETE /mcp": 204,
		"POST /v1/agents/{agent}/mcp": 204, "GET /v1/agents/{agent}/mcp": 204, "DELETE /v1/agents/{agent}/mcp": 204,
		"POST /v1/agents/{agent}/workbenches/{id}/snapshots": 201,
		"GET /v1/agents/{agent}/restores/{operation_id}":     404, // no such operation: the route answers with the envelope
		"GET /v1/agents/{agent}/workbenches/{id}/diff":       400, // no from: the route answers with the envelope
		"POST /v1/agents/{agent}/workbenches/{id}/merge":     400, // the table's workbench is no fork: the envelope names it
		"POST /v1/agents/{agent}/workbenches/{id}/discard":   400,
		"HEAD /v1/agents/{agent}/workbenches/{id}/diff":      400,
		"POST /v1/agents/{agent}/workbenches/{id}/proposals": 201,
		"POST /v1/admin/cluster/shards":                      409, // the embedded node has one shard: the envelope says so
		"POST /v1/admin/cluster/root-moves":                  409, // likewise
		"GET /v1/admin/cluster/root-moves":                   409,
	}
	ordered := slices.Clone(servedRoutes)
	slices.SortStableFunc(ordered, func(a, b struct{ path, method string }) int { // DELETE last
		return boolInt(a.method == "DELETE") - boolInt(b.method == "DELETE")
	})
	for _, r := range ordered {
		base := srv.URL
		switch {
		case strings.HasPrefix(r.path, "/v1/admin/"):
			base = admin.URL // the admin listener (rest.Handler.Admin)
		case !strings.HasPrefix(r.path, "/v1/agents/") || strings.HasSuffix(r.path, "/mcp"):
			base = ops.URL
		}
		u := base + concrete(r.path)
		if r.method == "POST" && strings.Contains(r.path, "/files/") {
			u += "?append"
		}
		body := "y"
		if b, ok := toolBodies[r.path]; ok && (r.method == "POST" || r.method == "PUT" && strings.HasPrefix(r.path, "/v1/admin/")) {
			body = b
		}
		if r.method != "PUT" && (r.path == "/v1/admin/quota" || r.path == "/v1/admin/retention") {
			u += "?agent=a"
		}
		if r.path == "/v1/agents/{agent}/workbenches/{id}/history" {
			u += "?path=" + concrete("{path}")
		}
		var resp response
		if r.path == eventsPath {
			resp = streamHead(t, u)
		} else {
			resp = send(t, r.method, u, strings.NewReader(body))
		}
		want := 200
		if s, ok := wantStatus[r.method+" "+r.path]; ok {
			want = s
		}
		if r.method == "PUT" && strings.HasSuffix(r.path, "{id}") {
			want = 200 // the file write created it
		}
		if resp.status != want {
			t.Errorf("%s %s: status %d, want %d: %s", r.method, u, resp.status, want, resp.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(mcpAgents)
	if got := strings.Join(mcpAgents, ","); got != "DELETE ,DELETE a,GET ,GET a,POST ,POST a" {
		t.Errorf("MCP calls (method agent): %s", got)
	}

	raw := rawDoc(t)
	doc := loadDoc(t)
	fixed := []string{"/v1/openapi.json", "/v1/agents/{agent}/workbenches/{id}",
		"/v1/agents/{agent}/workbenches/{id}/list", "/v1/agents/{agent}/workbenches/{id}/files/{path}",
		"/v1/agents/{agent}/restores/{operation_id}", "/v1/agents/{agent}/workbenches/{id}/history",
		"/v1/agents/{agent}/workbenches/{id}/commits", eventsPath}
	for p := range toolBodies {
		fixed = append(fixed, p)
	}
	for _, p := range fixed {
		item := deref(t, raw, raw["paths"].(map[string]any)[p])
		var documented []string
		for _, m := range httpMethods {
			if _, ok := item[m]; ok {
				documented = append(documented, strings.ToUpper(m))
			}
		}
		for _, m := range []string{"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"} {
			if slices.Contains(documented, m) {
				continue
			}
			u := srv.URL + concrete(p)
			if strings.HasPrefix(p, "/v1/admin/") {
				u = admin.URL + concrete(p)
			}
			resp := send(t, m, u, nil)
			if resp.status != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d, want 405", m, p, resp.status)
				continue
			}
			allow := strings.Split(resp.header.Get("Allow"), ", ")
			sort.Strings(allow)
			sorted := slices.Sorted(slices.Values(documented))
			if !slices.Equal(allow, sorted) {
				t.Errorf("%s %s: Allow %v, documented %v", m, p, allow, sorted)
			}
			if m == "HEAD" {
				continue
			}
			var body any
			if err := json.Unmarshal(resp.body, &body); err != nil {
				t.Fatalf("405 body: %v", err)
			}
			schema := doc.Components.Responses["MethodNotAllowed"].Value.Content.Get("application/json").Schema.Value
			if err := schema.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("%s %s: the 405 body does not match the document: %v", m, p, err)
			}
		}
	}
}

// send is do (rest_test.go) that also accepts bodiless HEAD answers with a JSON
// Content-Type.
func send(t *testing.T, method, url string, body io.Reader, headers ...string) response {
	t.Helper()
	if method != http.MethodHead {
		return do(t, method, url, body, headers...)
	}
	r := roundTrip(t, method, url, body, headers...)
	if len(r.body) != 0 {
		t.Fatalf("HEAD %s: %d body bytes", url, len(r.body))
	}
	return r
}

// streamHead opens a GET of an event stream and returns its status and headers, closing
// the stream unread.
func streamHead(t *testing.T, url string) response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 && resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: Content-Type %q", url, resp.Header.Get("Content-Type"))
	}
	return response{status: resp.StatusCode, header: resp.Header}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checker validates live requests and responses against the document.
type checker struct {
	t   *testing.T
	doc *openapi3.T
	url string
}

// newChecker starts a node behind the REST handler (newServer) and returns a checker of
// its requests and answers.
func newChecker(t *testing.T) *checker {
	t.Helper()
	return &checker{t: t, doc: loadDoc(t), url: newServer(t).URL}
}

// route finds the documented operation of an escaped request path and decodes its path
// parameters ({path} spans the remaining segments).
func (c *checker) route(method, escaped string) (*routers.Route, map[string]string) {
	c.t.Helper()
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	for tmpl, item := range c.doc.Paths.Map() {
		params, ok := matchTemplate(tmpl, segs)
		if !ok {
			continue
		}
		op := item.GetOperation(method)
		if op == nil {
			c.t.Fatalf("%s %s: not documented", method, tmpl)
		}
		return &routers.Route{Spec: c.doc, Path: tmpl, PathItem: item, Method: method, Operation: op}, params
	}
	c.t.Fatalf("%s %s: no documented path matches", method, escaped)
	return nil, nil
}

func matchTemplate(tmpl string, segs []string) (map[string]string, bool) {
	ts := strings.Split(strings.TrimPrefix(tmpl, "/"), "/")
	params := map[string]string{}
	for i, t := range ts {
		if i >= len(segs) {
			return nil, false
		}
		name, isParam := strings.CutPrefix(t, "{")
		if !isParam {
			if t != segs[i] {
				return nil, false
			}
			continue
		}
		name = strings.TrimSuffix(name, "}")
		last := i + 1
		if name == "path" && i == len(ts)-1 {
			last = len(segs) // {path} spans the remaining segments
		}
		parts := make([]string, 0, last-i)
		for _, s := range segs[i:last] {
			d, err := url.PathUnescape(s)
			if err != nil {
				return nil, false
			}
			parts = append(parts, d)
		}
		params[name] = strings.Join(parts, "/")
		if last == len(segs) && i == len(ts)-1 {
			return params, true
		}
	}
	return params, len(ts) == len(segs)
}

// call sends a request, checks (when validReq) that the document accepts it, and checks
// that the document describes the response: status, required headers, body schema.
// post is call for a POST of a JSON body.
func (c *checker) post(validReq bool, target, body string) response {
	c.t.Helper()
	return c.call(validReq, "POST", target, body, "Content-Type", "application/json")
}

func (c *checker) call(validReq bool, method, target, body string, headers ...string) response {
	c.t.Helper()
	u, err := url.Parse(c.url + target)
	if err != nil {
		c.t.Fatal(err)
	}
	route, params := c.route(method, u.EscapedPath())
	if validReq {
		req, _ := http.NewRequest(method, u.String(), strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{MultiError: true}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("%s %s: the document rejects the request: %v", method, target, err)
		}
	}
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	r := send(c.t, method, u.String(), rb, headers...)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: &http.Request{Method: method, URL: u, Header: http.Header{}}, PathParams: params, Route: route},
		Status: r.status, Header: r.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		c.t.Errorf("%s %s: %d response does not match the document: %v\n%s", method, target, r.status, err, r.body)
	}
	return r
}

// TestOpenAPIDescribesLiveResponses drives a real node through every documented status it
// can produce and validates requests and responses against the document.
func TestOpenAPIDescribesLiveResponses(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	f := wb + "/files/input/notes.txt"

	expect(t, c.call(true, "GET", "/healthz", ""), 200, "")
	expect(t, c.call(true, "GET", "/readyz", ""), 200, "")
	expect(t, c.call(true, "GET", "/metrics", ""), 404, "NotFound") // no registry
	expect(t, c.call(true, "POST", "/mcp", `{}`, "Content-Type", "application/json"), 404, "NotFound")
	expect(t, c.call(true, "GET", "/v1/agents/a1/mcp", ""), 404, "NotFound")
	expect(t, c.call(false, "GET", "/v1/agents/-x/mcp", ""), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", "/v1/openapi.json", ""), 200, "")

	expect(t, c.call(true, "GET", wb, ""), 404, "NotFound")
	expect(t, c.call(true, "PUT", wb, "", "Idempotency-Key", "create-1"), 201, "")
	expect(t, c.call(true, "PUT", wb, ""), 200, "")
	expect(t, c.call(true, "GET", wb, ""), 200, "")
	expect(t, c.call(false, "PUT", "/v1/agents/a1/workbenches/bad.id", ""), 400, "InvalidArguments")

	w := c.call(true, "PUT", f, "hello", "Content-Type", "text/plain", "Cairn-Executable", "TRUE", "Idempotency-Key", "k1")
	expect(t, w, 201, "")
	etag := w.header.Get("ETag")
	r := c.call(true, "PUT", f, "hello", "Content-Type", "text/plain", "Cairn-Executable", "TRUE", "Idempotency-Key", "k1")
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %v", r.status, r.header)
	}
	expect(t, c.call(true, "PUT", f, "other", "Idempotency-Key", "k1"), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", f, ""), 200, "")
	expect(t, c.call(true, "HEAD", f, ""), 200, "")
	expect(t, c.call(true, "GET", f, "", "Range", "bytes=1-3"), 206, "")
	expect(t, c.call(true, "GET", f, "", "Range", "bytes=1-3", "If-Range", `"999"`), 200, "")
	expect(t, c.call(true, "GET", f, "", "If-None-Match", etag), 304, "")
	expect(t, c.call(true, "GET", f, "", "Range", "bytes=99-"), 416, "InvalidArguments")
	expect(t, c.call(false, "GET", f+"?x=1", ""), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", wb+"/files/input", ""), 409, "NotArtifact")
	expect(t, c.call(true, "GET", wb+"/files/input/none", ""), 404, "NotFound")

	expect(t, c.call(true, "PUT", f, "x", "If-None-Match", "*"), 412, "AlreadyExists")
	expect(t, c.call(true, "PUT", f, "x", "If-Match", `"1"`), 412, "Conflict")
	expect(t, c.call(true, "PUT", wb+"/files/input/none", "x", "If-Match", "*"), 412, "NotFound")
	expect(t, c.call(false, "PUT", f, "x", "If-Match", "W/\"1\""), 400, "InvalidArguments")
	expect(t, c.call(true, "PUT", f+"/below", "x"), 409, "NotDirectory")
	expect(t, c.call(true, "PUT", wb+"/files/input", "x"), 400, "InvalidArguments") // a section is never a file
	expect(t, c.call(true, "PUT", wb+"/files/input/dir/x", "x"), 201, "")
	expect(t, c.call(true, "PUT", wb+"/files/input/dir", "x"), 409, "AlreadyExists")
	expect(t, c.call(true, "PUT", wb+"/files/metadata/run_manifest.json", "x"), 400, "InvalidArguments")
	rep := c.call(true, "PUT", f, "hello again", "If-Match", etag)
	expect(t, rep, 200, "")
	expect(t, c.call(true, "GET", wb+"/history?path=input/notes.txt&limit=1", ""), 200, "")
	expect(t, c.call(true, "GET", wb+"/history?path=input/none", ""), 404, "NotFound")
	expect(t, c.call(true, "GET", f+"?generation="+strings.Trim(etag, `"`), ""), 200, "")
	expect(t, c.call(true, "HEAD", f+"?generation="+strings.Trim(etag, `"`), ""), 200, "")
	expect(t, c.call(true, "GET", f+"?generation=99999", ""), 404, "NotFound")
	expect(t, c.call(true, "PUT", wb+"/files/extra/sp%20ace%3F.txt", "x"), 201, "") // outside the sections
	for _, bad := range []string{"input/../x", "input//x", "input/%2e%2e/x", "input/a%2Fb", "input/x/"} {
		expect(t, c.call(false, "PUT", wb+"/files/"+bad, "x"), 400, "InvalidArguments")
	}

	log := wb + "/files/logs/run.log"
	expect(t, c.call(true, "POST", log+"?append", "one\n", "Content-Type", "text/plain"), 201, "")
	a := c.call(true, "POST", log+"?append=", "two\n", "Idempotency-Key", "app-1")
	expect(t, a, 200, "")
	expect(t, c.call(true, "POST", log+"?append", "x", "If-Match", `"1"`), 412, "Conflict")
	expect(t, c.call(false, "POST", log+"?bogus", "x"), 400, "InvalidArguments")
	expect(t, c.call(true, "POST", wb+"/files/input/dir-to-be?append", "x"), 201, "")

	expect(t, c.call(true, "GET", wb+"/list", ""), 200, "")
	expect(t, c.call(true, "HEAD", wb+"/list", ""), 200, "")
	p1 := c.call(true, "GET", wb+"/list?path=input&limit=1", "")
	expect(t, p1, 200, "")
	cur, _ := p1.json["next_cursor"].(string)
	if cur == "" {
		t.Fatalf("no cursor: %s", p1.body)
	}
	expect(t, c.call(true, "GET", wb+"/list?path=input&limit=1&cursor="+url.QueryEscape(cur), ""), 200, "")
	expect(t, c.call(true, "GET", wb+"/list?path=extra", ""), 200, "")
	expect(t, c.call(true, "GET", wb+"/list?path=input/notes.txt", ""), 409, "NotDirectory")
	expect(t, c.call(true, "GET", wb+"/list?path=nope", ""), 404, "NotFound")
	expect(t, c.call(false, "GET", wb+"/list?limit=0", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", wb+"/list?bogus=1", ""), 400, "InvalidArguments")
	expect(t, c.call(true, "PUT", wb+"/files/input/zz", "x"), 201, "")
	expect(t, c.call(true, "GET", wb+"/list?path=input&limit=1&cursor="+url.QueryEscape(cur), ""), 409, "ReadFenceChanged")

	expect(t, c.call(true, "DELETE", f, "", "If-Match", etag), 412, "Conflict")
	expect(t, c.call(false, "DELETE", f, "", "If-Match", "*"), 400, "InvalidArguments")
	expect(t, c.call(true, "DELETE", wb+"/files/input", ""), 409, "NotArtifact")
	expect(t, c.call(true, "DELETE", f, "", "If-Match", rep.header.Get("ETag"), "Idempotency-Key", "del-1"), 200, "")
	expect(t, c.call(true, "DELETE", f, ""), 404, "NotFound")
	expect(t, c.call(true, "DELETE", wb+"/files/extra/sp%20ace%3F.txt", ""), 200, "")

	expect(t, c.call(true, "GET", "/v1/agents/nobody/events", ""), 404, "NotFound")
	expect(t, c.call(false, "GET", "/v1/agents/a1/events?after=x", ""), 400, "InvalidArguments")
}

// TestOpenAPIOperationalResponses validates /metrics, /readyz (not ready) and the MCP
// endpoints' own errors on a handler with a metrics registry.
func TestOpenAPIOperationalResponses(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(rest.NewHandler(nil, rest.Options{Ready: func() bool { return false }, Registry: reg}))
	t.Cleanup(srv.Close)
	c := &checker{t: t, doc: loadDoc(t), url: srv.URL}
	expect(t, c.call(true, "GET", "/readyz", ""), 503, "")
	m := c.call(true, "GET", "/metrics", "")
	if m.status != 200 || !bytes.Contains(m.body, []byte("cairn_http_requests_total")) {
		t.Fatalf("metrics: %d %s", m.status, m.body)
	}
	// The served document is the embedded one.
	d := do(t, "GET", srv.URL+"/v1/openapi.json", nil)
	if !bytes.Equal(d.body, rest.OpenAPI) {
		t.Fatal("/v1/openapi.json does not serve the embedded document")
	}
}

// TestOpenAPIPatternsMatchValidation checks the documented patterns of agent, id and the
// decoded file path against the validation the handler runs (meta.ValidateName,
// meta.ValidatePath; the byte and component limits are stated in the descriptions).
func TestOpenAPIPatternsMatchValidation(t *testing.T) {
	doc := loadDoc(t)
	schema := func(name string) *openapi3.Schema { return doc.Components.Parameters[name].Value.Schema.Value }
	visit := func(s *openapi3.Schema, v string) bool { return s.VisitJSON(v, openapi3.EnableJSONSchema2020()) == nil }
	for _, name := range []string{"Agent", "WorkbenchID"} {
		s := schema(name)
		for _, v := range []string{"a", "A1", "0", "a_b-c", "-a", "_a", "a.b", "a b", "", "é", strings.Repeat("x", 128), strings.Repeat("x", 129)} {
			if got, want := visit(s, v), meta.ValidateName("id", v) == nil; got != want {
				t.Errorf("%s %q: schema accepts %v, handler %v", name, v, got, want)
			}
		}
	}
	s := schema("FilePath")
	for _, v := range []string{"input/x", "input/a/b.txt", "x", ".x", "..x", "...", "a.", "a/.b", "sp ace?.txt", "ünï/cödé",
		"", "/x", "x/", "a//b", ".", "..", "a/./b", "a/../b", "a\\b", "a\x00b"} {
		if got, want := visit(s, v), meta.ValidatePath("path", v) == nil; got != want {
			t.Errorf("FilePath %q: schema accepts %v, handler %v", v, got, want)
		}
	}
}

// TestOpenAPIDescribesLiveToolResponses drives the snapshot, commit, restore and query
// endpoints, ?at_snapshot= reads and Cairn-Field-* writes through the statuses they can
// produce, and validates requests and responses against the document.
func TestOpenAPIDescribesLiveToolResponses(t *testing.T) {
	c := newChecker(t)
	root := "/v1/agents/a1"
	wb := root + "/workbenches/w1"
	post := c.post
	nextCursor := func(r response) string {
		t.Helper()
		cur, _ := r.json["next_cursor"].(string)
		if cur == "" {
			t.Fatalf("no next_cursor: %s", r.body)
		}
		return cur
	}

	// Files with attached fields to query.
	expect(t, c.call(true, "PUT", wb+"/files/outputs/model.bin", "weights v1", "Cairn-Field-Accuracy", "0.93", "Cairn-Field-Owner", `"alice"`, "Cairn-Field-Epochs", "12"), 201, "")
	expect(t, c.call(true, "PUT", wb+"/files/outputs/draft.bin", "d", "Cairn-Field-Accuracy", "0.41", "Cairn-Field-Owner", "bob", "Cairn-Field-Final", "false"), 201, "")
	expect(t, c.call(true, "PUT", wb+"/files/logs/run.log", "epoch 1 loss 0.5\nepoch 2 loss 0.3\n"), 201, "")
	for _, bad := range []string{"null", "[1]", `{"a":1}`} {
		expect(t, c.call(true, "PUT", wb+"/files/outputs/x", "x", "Cairn-Field-Bad", bad), 400, "InvalidArguments")
	}

	// search, aggregate, catalog.
	expect(t, post(true, root+"/search", `{"predicates":[{"field":"accuracy","op":"gt","value":0.5}],"fields":["owner","accuracy","epochs","missing"],"facets":["owner"]}`), 200, "")
	expect(t, post(true, root+"/search", ""), 200, "") // an empty body is {}
	page := `{"id":"w1","section":"outputs","sort":[{"field":"accuracy","direction":"desc"}],"limit":1`
	p1 := post(true, root+"/search", page+"}")
	expect(t, p1, 200, "")
	cur := nextCursor(p1)
	expect(t, post(true, root+"/search", page+`,"cursor":"`+cur+`"}`), 200, "")
	expect(t, post(true, root+"/search", `{"predicates":[{"field":"owner","op":"in","value":["alice","carol"]},{"field":"final","op":"not_exists"}]}`), 200, "")
	expect(t, post(true, root+"/search", `{"id":"nope"}`), 404, "NotFound")
	expect(t, post(false, root+"/search", `{"bogus":1}`), 400, "InvalidArguments")
	expect(t, post(false, root+"/search", `{"limit":11}`), 400, "InvalidArguments")
	expect(t, post(false, root+"/search", `{"predicates":[{"field":"x","op":"between"}]}`), 400, "InvalidArguments")
	expect(t, post(false, root+"/search", `{} {}`), 400, "InvalidArguments")
	expect(t, post(false, root+"/search", `{"limit":1}`+strings.Repeat(" ", 8<<20)), 413, "PayloadTooLarge")
	expect(t, c.call(false, "POST", root+"/search?limit=1", `{}`, "Content-Type", "application/json"), 400, "InvalidArguments")
	expect(t, post(true, root+"/aggregate", `{"measures":[{"name":"n","op":"count"},{"name":"best","op":"max","field":"accuracy"}],"group_by":["artifact.section"],"sort":[{"field":"n","direction":"desc"}]}`), 200, "")
	expect(t, post(true, root+"/aggregate", `{"id":"w1","measures":[{"name":"total","op":"sum","field":"artifact.size_bytes"}]}`), 200, "")
	expect(t, post(false, root+"/aggregate", `{"measures":[]}`), 400, "InvalidArguments")
	expect(t, post(true, root+"/catalog", `{"field_prefix":"acc","include_facets":true}`), 200, "")
	expect(t, post(true, root+"/catalog", ""), 200, "")
	expect(t, post(true, root+"/catalog", `{"id":"nope"}`), 404, "NotFound")

	// grep, with a cursor.
	expect(t, post(true, wb+"/grep", `{"pattern":"LOSS","recursive":true}`), 200, "")
	g1 := post(true, wb+"/grep", `{"pattern":"epoch|weights","recursive":true,"section":"logs","glob":"*.log","limit":1}`)
	expect(t, g1, 200, "")
	expect(t, post(true, wb+"/grep", `{"pattern":"epoch|weights","recursive":true,"section":"logs","glob":"*.log","limit":5,"cursor":"`+nextCursor(g1)+`"}`), 200, "")
	expect(t, post(true, wb+"/grep", `{"pattern":"x","patterns":["a|b"],"recursive":false,"section":"outputs","path":"model.bin"}`), 200, "")
	expect(t, post(false, wb+"/grep", `{"pattern":"","recursive":true}`), 400, "InvalidArguments")
	expect(t, post(true, root+"/workbenches/nope/grep", `{"pattern":"x","recursive":true}`), 404, "NotFound")

	// A search cursor whose scope changed since the first page.
	expect(t, c.call(true, "PUT", wb+"/files/outputs/late.bin", "l", "Cairn-Field-Accuracy", "0.5"), 201, "")
	expect(t, post(true, root+"/search", page+`,"cursor":"`+cur+`"}`), 409, "ReadFenceChanged")

	// Snapshots: mint, read at them, renew, list.
	expect(t, c.call(true, "GET", wb+"/snapshots", ""), 200, "")
	expect(t, post(true, wb+"/snapshots", `{"name":"v1","ttl_days":2,"reason":"baseline","metadata":{"run":7,"tags":["a"]}}`), 201, "")
	expect(t, post(true, wb+"/snapshots", ""), 201, "")
	expect(t, post(true, root+"/workbenches/nope/snapshots", `{}`), 404, "NotFound")
	expect(t, post(false, wb+"/snapshots", `{"ttl_days":91}`), 400, "InvalidArguments")
	expect(t, post(false, wb+"/snapshots", `{"name":""}`), 400, "InvalidArguments")
	expect(t, c.call(true, "PUT", wb+"/files/outputs/model.bin", "weights v2"), 200, "")
	f := wb + "/files/outputs/model.bin"
	for _, at := range []string{"1", "v1"} {
		r := c.call(true, "GET", f+"?at_snapshot="+at, "")
		expect(t, r, 200, "")
		if string(r.body) != "weights v1" {
			t.Fatalf("at_snapshot=%s: %q", at, r.body)
		}
		expect(t, c.call(true, "HEAD", f+"?at_snapshot="+at, ""), 200, "")
		expect(t, c.call(true, "GET", wb+"/list?path=outputs&at_snapshot="+at, ""), 200, "")
		expect(t, c.call(true, "HEAD", wb+"/list?at_snapshot="+at, ""), 200, "")
		expect(t, c.call(true, "GET", wb+"?at_snapshot="+at, ""), 200, "")
		expect(t, c.call(true, "HEAD", wb+"?at_snapshot="+at, ""), 200, "")
	}
	expect(t, c.call(true, "PUT", wb+"/files/outputs/after.bin", "a"), 201, "")
	expect(t, c.call(true, "GET", wb+"/files/outputs/after.bin?at_snapshot=v1", ""), 404, "NotFound")
	expect(t, c.call(true, "GET", f+"?at_snapshot=99", ""), 404, "SnapshotNotFound")
	expect(t, c.call(true, "GET", f+"?at_snapshot=nope", ""), 404, "SnapshotNotFound")
	expect(t, c.call(true, "HEAD", f+"?at_snapshot=99", ""), 404, "")
	expect(t, c.call(true, "GET", wb+"/list?at_snapshot=99", ""), 404, "SnapshotNotFound")
	expect(t, c.call(true, "GET", wb+"?at_snapshot=99", ""), 404, "SnapshotNotFound")
	expect(t, c.call(false, "GET", f+"?at_snapshot=", ""), 400, "InvalidArguments")
	expect(t, post(true, wb+"/snapshots/renew", `{"name":"v1","ttl_days":5}`), 200, "")
	expect(t, post(true, wb+"/snapshots/renew", `{"snapshot_id":2,"ttl_days":1}`), 200, "") // never shortens: a no-op
	expect(t, post(true, wb+"/snapshots/renew", `{"snapshot_id":99}`), 404, "SnapshotNotFound")
	expect(t, post(true, wb+"/snapshots/renew", `{}`), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", wb+"/snapshots", ""), 200, "")
	expect(t, c.call(true, "HEAD", wb+"/snapshots", ""), 200, "")
	expect(t, c.call(false, "GET", wb+"/snapshots?x=1", ""), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", root+"/workbenches/nope/snapshots", ""), 404, "NotFound")

	// Commit: new, replay, another identity, replace.
	digest := `"content_digest_uri":"sha256:` + strings.Repeat("1", 64) + `"`
	cm := post(true, wb+"/commit", `{"manifest":{"run":1,"b":[1.50,"<&>"]},`+digest+`}`)
	expect(t, cm, 200, "")
	identity, _ := cm.json["commit_identity"].(string)
	expect(t, post(true, wb+"/commit", `{"manifest":{"run":1,"b":[1.50,"<&>"]},`+digest+`}`), 200, "")
	expect(t, post(true, wb+"/commit", `{"manifest":{"run":2},`+digest+`}`), 409, "WorkbenchCommitConflict")
	expect(t, post(true, wb+"/commit", `{"manifest":{"run":2},`+digest+`,"replace":true}`), 200, "")
	expect(t, post(true, root+"/workbenches/fresh/commit", `{"manifest":{},`+digest+`}`), 200, "") // creates the workbench
	expect(t, post(false, wb+"/commit", `{"manifest":[],`+digest+`}`), 400, "InvalidArguments")
	expect(t, post(false, wb+"/commit", `{"manifest":{},"content_digest_uri":"sha256:XY"}`), 400, "InvalidArguments")

	// Restore from a snapshot and from a commit; status; replays and conflicts.
	rs := post(true, wb+"/restore", `{"destination_id":"w2","at_snapshot":"v1"}`)
	expect(t, rs, 200, "")
	op, _ := rs.json["operation_id"].(string)
	expect(t, post(true, wb+"/restore", `{"destination_id":"w2","at_snapshot":"v1"}`), 200, "")
	expect(t, post(true, wb+"/restore", `{"destination_id":"w3","at_commit":"`+identity+`"}`), 200, "")
	expect(t, post(true, wb+"/restore", `{"destination_id":"w4","at_snapshot":2}`), 200, "")
	expect(t, post(true, wb+"/restore", `{"destination_id":"fresh","at_snapshot":"v1"}`), 409, "AlreadyExists")
	expect(t, post(true, wb+"/restore", `{"destination_id":"w5","at_snapshot":"nope"}`), 404, "SnapshotNotFound")
	expect(t, post(true, wb+"/restore", `{"destination_id":"w5","at_commit":"`+strings.Repeat("0", 64)+`"}`), 404, "NotFound")
	expect(t, post(true, root+"/workbenches/nope/restore", `{"destination_id":"w5","at_snapshot":1}`), 404, "NotFound")
	expect(t, post(false, wb+"/restore", `{"destination_id":"w5"}`), 400, "InvalidArguments")
	expect(t, post(false, wb+"/restore", `{"destination_id":"w5","at_snapshot":1,"at_commit":"`+identity+`"}`), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", root+"/restores/"+op, ""), 200, "")
	expect(t, c.call(true, "GET", root+"/restores/"+strings.Repeat("0", 64), ""), 404, "NotFound")
	expect(t, c.call(true, "GET", wb[:len(wb)-2]+"w2/files/outputs/model.bin", ""), 200, "")

	// find, with the manifest and a cursor.
	expect(t, post(true, root+"/find", `{"committed":true,"include_manifest":true}`), 200, "")
	expect(t, post(true, root+"/find", `{"committed":false}`), 200, "")
	f1 := post(true, root+"/find", `{"manifest_pattern":"RUN","limit":1}`)
	expect(t, f1, 200, "")
	expect(t, post(true, root+"/find", `{"manifest_pattern":"RUN","limit":1,"cursor":"`+nextCursor(f1)+`"}`), 200, "")
	expect(t, post(true, root+"/find", ""), 200, "")
	expect(t, post(false, root+"/find", `{"limit":0}`), 400, "InvalidArguments")

	// Retire: then reads at the snapshot are gone (410).
	expect(t, post(true, wb+"/snapshots/retire", `{"name":"v1","reason":"done"}`), 200, "")
	expect(t, post(true, wb+"/snapshots/retire", `{"snapshot_id":1,"reason":"again"}`), 200, "")
	expect(t, post(true, wb+"/snapshots/retire", `{"snapshot_id":99}`), 404, "SnapshotNotFound")
	expect(t, post(false, wb+"/snapshots/retire", `{}`), 400, "InvalidArguments")
	expect(t, post(false, wb+"/snapshots/retire", `{"snapshot_id":1,"name":"v1"}`), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", wb+"/snapshots", ""), 200, "")
	expect(t, c.call(true, "GET", f+"?at_snapshot=v1", ""), 410, "SnapshotExpired")
	expect(t, c.call(true, "HEAD", f+"?at_snapshot=1", ""), 410, "")
	expect(t, c.call(true, "GET", wb+"/list?at_snapshot=v1", ""), 410, "SnapshotExpired")
	expect(t, c.call(true, "HEAD", wb+"/list?at_snapshot=v1", ""), 410, "")
	expect(t, c.call(true, "GET", wb+"?at_snapshot=v1", ""), 410, "SnapshotExpired")
	expect(t, c.call(true, "HEAD", wb+"?at_snapshot=v1", ""), 410, "")
	expect(t, post(true, wb+"/snapshots/renew", `{"name":"v1"}`), 410, "SnapshotExpired")
	expect(t, post(true, wb+"/restore", `{"destination_id":"w6","at_snapshot":"v1"}`), 410, "SnapshotExpired")
}
