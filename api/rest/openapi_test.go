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
	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/meta"
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
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "GET"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "HEAD"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "PUT"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "POST"},
	{"/v1/agents/{agent}/workbenches/{id}/files/{path}", "DELETE"},
}

// wireCodes are the stable error codes of WORKBENCH.md §Errors.
var wireCodes = []string{"InvalidArguments", "UnknownTool", "PayloadTooLarge", "NotFound", "NotArtifact",
	"NotDirectory", "AlreadyExists", "Conflict", "InvalidUtf8", "NoMatch", "AmbiguousEdit",
	"StructuredDecodeFailed", "ReadFenceChanged", "SnapshotNotFound", "SnapshotExpired",
	"ForkRetentionActive", "WorkbenchCommitConflict", "InvalidState", "ObjectUnavailable",
	"ResourceExhausted", "NotOwner", "Internal"}

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
		workbench.CodeResourceExhausted, workbench.CodeNotOwner, workbench.CodeInternal} {
		if !slices.Contains(enum, c) {
			t.Errorf("code %s of package workbench is not in the enum", c)
		}
	}
}

// concrete turns a documented path into a request path.
func concrete(p string) string {
	r := strings.NewReplacer("{agent}", "a", "{id}", "w", "{path}", "input/dir/x.txt")
	return r.Replace(p)
}

// TestOpenAPIRouteTableMatchesHandler checks the table against the handler: every entry is
// served, and every other method of a route with a fixed method set is 405 with an Allow
// header that lists exactly the documented methods.
func TestOpenAPIRouteTableMatchesHandler(t *testing.T) {
	srv := newServer(t)
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
		"POST /v1/agents/{agent}/mcp": 204, "GET /v1/agents/{agent}/mcp": 204, "DELETE /v1/agents/{agent}/mcp": 204}
	ordered := slices.Clone(servedRoutes)
	slices.SortStableFunc(ordered, func(a, b struct{ path, method string }) int { // DELETE last
		return boolInt(a.method == "DELETE") - boolInt(b.method == "DELETE")
	})
	for _, r := range ordered {
		base := srv.URL
		if !strings.Contains(r.path, "/workbenches/") {
			base = ops.URL
		}
		u := base + concrete(r.path)
		if r.method == "POST" && strings.Contains(r.path, "/files/") {
			u += "?append"
		}
		resp := send(t, r.method, u, strings.NewReader("y"))
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
	for _, p := range []string{"/v1/openapi.json", "/v1/agents/{agent}/workbenches/{id}",
		"/v1/agents/{agent}/workbenches/{id}/list", "/v1/agents/{agent}/workbenches/{id}/files/{path}"} {
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
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 0 {
		t.Fatalf("HEAD %s: %d body bytes", url, len(b))
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
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
	srv := newServer(t)
	c := &checker{t: t, doc: loadDoc(t), url: srv.URL}
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
