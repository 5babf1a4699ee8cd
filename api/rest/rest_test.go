package rest_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/internal/httpcall"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// newServer starts a real node stack (Raft replica, local blob store, Workbench service)
// behind the REST handler.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, _ := newServers(t)
	return srv
}

// serveNode serves n's service behind the REST handler (ready with n's shard) until the
// test ends.
func serveNode(tb testing.TB, n *workbenchtest.Node) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready}))
	tb.Cleanup(srv.Close)
	return srv
}

// newServers is newServer with the node's admin listener (rest.Handler.Admin) beside it.
func newServers(t *testing.T) (tenant, admin *httptest.Server) {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	h := rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready, GC: n.Workers})
	tenant, admin = httptest.NewServer(h), httptest.NewServer(h.Admin())
	t.Cleanup(tenant.Close)
	t.Cleanup(admin.Close)
	return tenant, admin
}

type response struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// do sends one request with headers (name, value pairs) and returns the answer, with its
// body decoded when it is JSON.
func do(t *testing.T, method, url string, body io.Reader, headers ...string) response {
	t.Helper()
	r := roundTrip(t, method, url, body, headers...)
	if strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(r.body, &r.json); err != nil {
			t.Fatalf("%s %s: bad JSON %q", method, url, r.body)
		}
	}
	return r
}

// roundTrip sends one request with headers (name, value pairs) and returns the answer as
// it came.
func roundTrip(t *testing.T, method, url string, body io.Reader, headers ...string) response {
	t.Helper()
	a := httpcall.Do(t, httpcall.New(t, method, url, body), headers...)
	return response{status: a.Status, header: a.Header, body: a.Body}
}

func expect(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if code != "" && (r.json["code"] != code || r.json["status"] != "error") {
		t.Fatalf("code %v, want %s: %s", r.json["code"], code, r.body)
	}
}

func TestWorkbenchCreateIsIdempotent(t *testing.T) {
	srv := newServer(t)
	u := srv.URL + "/v1/agents/a1/workbenches/w1"
	expect(t, do(t, "PUT", u, nil), 201, "")
	r := do(t, "PUT", u, nil)
	expect(t, r, 200, "")
	if r.json["created"] != false || r.json["path"] != "/agents/a1/wb/w1" {
		t.Fatalf("%s", r.body)
	}
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a1/workbenches/nope", nil), 404, "NotFound")
	expect(t, do(t, "PUT", srv.URL+"/v1/agents/-bad/workbenches/w1", nil), 400, "InvalidArguments")
}

func TestFileWriteReadConditionsAndDelete(t *testing.T) {
	srv := newServer(t)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/input/notes.txt"
	r := do(t, "PUT", u, strings.NewReader("hello"), "Content-Type", "text/plain", "Cairn-Executable", "true")
	expect(t, r, 201, "")
	gen := fmt.Sprint(r.json["generation"])
	if r.header.Get("ETag") != `"`+gen+`"` || r.json["section"] != "input" || r.json["relative_path"] != "notes.txt" {
		t.Fatalf("%v %s", r.header, r.body)
	}
	sum := sha256.Sum256([]byte("hello"))
	if r.json["digest_uri"] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("digest %v", r.json["digest_uri"])
	}
	g := do(t, "GET", u, nil)
	if g.status != 200 || string(g.body) != "hello" || g.header.Get("Cairn-Executable") != "true" ||
		g.header.Get("Content-Type") != "text/plain" || g.header.Get("ETag") != `"`+gen+`"` || g.header.Get("Content-Length") != "5" {
		t.Fatalf("GET: %d %v %q", g.status, g.header, g.body)
	}
	h := do(t, "HEAD", u, nil)
	if h.status != 200 || len(h.body) != 0 || h.header.Get("Content-Length") != "5" {
		t.Fatalf("HEAD: %d %v", h.status, h.header)
	}
	expect(t, do(t, "GET", u, nil, "If-None-Match", `"`+gen+`"`), 304, "")
	// Preconditions answer 412 with the envelope.
	expect(t, do(t, "PUT", u, strings.NewReader("x"), "If-None-Match", "*"), 412, "AlreadyExists")
	stale := do(t, "PUT", u, strings.NewReader("x"), "If-Match", `"1"`)
	expect(t, stale, 412, "Conflict")
	if fmt.Sprint(stale.json["details"].(map[string]any)["current_generation"]) != gen {
		t.Fatalf("details %s", stale.body)
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/agents/a/workbenches/w/files/input/missing", strings.NewReader("x"), "If-Match", `"5"`), 412, "NotFound") // not retryable: a generation is never reused
	ok := do(t, "PUT", u, strings.NewReader("hello again"), "If-Match", `"`+gen+`"`)
	expect(t, ok, 200, "")
	gen2 := fmt.Sprint(ok.json["generation"])
	if gen2 == gen || ok.json["executable"] != false {
		t.Fatalf("replace: %s", ok.body)
	}
	// Delete honours If-Match.
	expect(t, do(t, "DELETE", u, nil, "If-Match", `"`+gen+`"`), 412, "Conflict")
	expect(t, do(t, "DELETE", u, nil, "If-Match", `"`+gen2+`"`), 200, "")
	expect(t, do(t, "GET", u, nil), 404, "NotFound")
	expect(t, do(t, "DELETE", u, nil), 404, "NotFound")
}

func TestRangeReads(t *testing.T) {
	srv := newServer(t)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/outputs/r.bin"
	expect(t, do(t, "PUT", u, strings.NewReader("0123456789")), 201, "")
	for _, c := range []struct {
		rng, want, cr string
	}{
		{"bytes=2-4", "234", "bytes 2-4/10"},
		{"bytes=7-", "789", "bytes 7-9/10"},
		{"bytes=-3", "789", "bytes 7-9/10"},
		{"bytes=8-100", "89", "bytes 8-9/10"},
	} {
		r := do(t, "GET", u, nil, "Range", c.rng)
		if r.status != 206 || string(r.body) != c.want || r.header.Get("Content-Range") != c.cr {
			t.Fatalf("%s: %d %q %q", c.rng, r.status, r.body, r.header.Get("Content-Range"))
		}
	}
	r := do(t, "GET", u, nil, "Range", "bytes=10-")
	expect(t, r, 416, "InvalidArguments")
	if r.header.Get("Content-Range") != "bytes */10" {
		t.Fatalf("%v", r.header)
	}
	if r := do(t, "GET", u, nil, "Range", "bytes=2-4", "If-Range", `"999"`); r.status != 200 || string(r.body) != "0123456789" {
		t.Fatalf("If-Range mismatch must serve the whole body: %d %q", r.status, r.body)
	}
}

func TestAppendCreatesThenAppendsAndHonoursIfMatch(t *testing.T) {
	srv := newServer(t)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/logs/run.log?append"
	r := do(t, "POST", u, strings.NewReader("one\n"))
	expect(t, r, 201, "")
	r = do(t, "POST", u, strings.NewReader("two\n"))
	expect(t, r, 200, "")
	sum := sha256.Sum256([]byte("two\n"))
	if r.json["digest"] != "sha256:"+hex.EncodeToString(sum[:]) || r.json["size_bytes"] != float64(8) || r.json["appended_bytes"] != float64(4) {
		t.Fatalf("%s", r.body)
	}
	whole := sha256.Sum256([]byte("one\ntwo\n"))
	if r.json["digest_uri"] != "sha256:"+hex.EncodeToString(whole[:]) {
		t.Fatalf("whole digest %s", r.body)
	}
	expect(t, do(t, "POST", u, strings.NewReader("x"), "If-Match", `"1"`), 412, "Conflict")
	g := do(t, "GET", srv.URL+"/v1/agents/a/workbenches/w/files/logs/run.log", nil)
	if string(g.body) != "one\ntwo\n" {
		t.Fatalf("%q", g.body)
	}
	expect(t, do(t, "POST", srv.URL+"/v1/agents/a/workbenches/w/files/logs/run.log?bogus", strings.NewReader("x")), 400, "InvalidArguments")
}

func TestPathsAreValidatedNeverCleaned(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/files/"
	for _, p := range []string{"input/../x", "input//x", "input/%2e%2e/x", "input/a%2Fb", "input/x/", "input/./x", "%2e%2e"} {
		r := do(t, "PUT", base+p, strings.NewReader("x"))
		expect(t, r, 400, "InvalidArguments")
	}
	// Nothing was written anywhere.
	l := do(t, "GET", srv.URL+"/v1/agents/a/workbenches/w/list", nil)
	expect(t, l, 404, "NotFound")
	// Escaped characters that are legal in names round-trip.
	expect(t, do(t, "PUT", base+"input/sp%20ace%3F.txt", strings.NewReader("x")), 201, "")
	g := do(t, "GET", srv.URL+"/v1/agents/a/workbenches/w/list?path=input", nil)
	ents := g.json["entries"].([]any)
	if len(ents) != 1 || ents[0].(map[string]any)["name"] != "sp ace?.txt" {
		t.Fatalf("%s", g.body)
	}
}

func TestFileAndDirectoryRules(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/files/"
	expect(t, do(t, "PUT", base+"input/a/b", strings.NewReader("x")), 201, "")
	expect(t, do(t, "PUT", base+"input/a/b/c", strings.NewReader("x")), 409, "NotDirectory")
	r := do(t, "PUT", base+"input/a", strings.NewReader("x"))
	expect(t, r, 409, "AlreadyExists")
	if r.json["details"].(map[string]any)["kind"] != "directory" {
		t.Fatalf("%s", r.body)
	}
	expect(t, do(t, "GET", base+"input/a", nil), 409, "NotArtifact")
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a/workbenches/w/list?path=input/a/b", nil), 409, "NotDirectory")
}

func TestIdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	srv := newServer(t)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/input/f"
	first := do(t, "PUT", u, strings.NewReader("v1"), "Idempotency-Key", "req-1")
	expect(t, first, 201, "")
	again := do(t, "PUT", u, strings.NewReader("v1"), "Idempotency-Key", "req-1")
	expect(t, again, 201, "")
	if again.json["generation"] != first.json["generation"] || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %s vs %s", again.body, first.body)
	}
	expect(t, do(t, "PUT", u, strings.NewReader("v2"), "Idempotency-Key", "req-1"), 400, "InvalidArguments")
	a1 := do(t, "POST", u+"?append", strings.NewReader("+"), "Idempotency-Key", "app-1")
	a2 := do(t, "POST", u+"?append", strings.NewReader("+"), "Idempotency-Key", "app-1")
	if a1.json["generation"] != a2.json["generation"] || a2.json["size_bytes"] != float64(3) {
		t.Fatalf("append replay %s %s", a1.body, a2.body)
	}
	if g := do(t, "GET", u, nil); string(g.body) != "v1+" {
		t.Fatalf("after replayed append: %q", g.body)
	}
}

func TestLargeBodiesStreamAcrossSegments(t *testing.T) {
	srv := newServer(t)
	data := make([]byte, 20<<20+12345)
	rand.Read(data)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/outputs/big.bin"
	expect(t, do(t, "PUT", u, bytes.NewReader(data)), 201, "")
	g := do(t, "GET", u, nil)
	if !bytes.Equal(g.body, data) {
		t.Fatalf("body differs (%d bytes back)", len(g.body))
	}
	r := do(t, "GET", u, nil, "Range", "bytes=8388000-12000000")
	if r.status != 206 || !bytes.Equal(r.body, data[8388000:12000001]) {
		t.Fatalf("range across segments: %d, %d bytes", r.status, len(r.body))
	}
	// Append to a large file streams only the delta.
	expect(t, do(t, "POST", u+"?append", strings.NewReader("tail")), 200, "")
	h := do(t, "HEAD", u, nil)
	sum := sha256.Sum256(append(bytes.Clone(data), "tail"...))
	if h.header.Get("Cairn-Digest") != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("digest after append: %s", h.header.Get("Cairn-Digest"))
	}
}

func TestListingPagesWithCursorsAndFences(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/"
	for i := 0; i < 7; i++ {
		expect(t, do(t, "PUT", fmt.Sprintf("%sfiles/input/f%d", base, i), strings.NewReader("x")), 201, "")
	}
	top := do(t, "GET", base+"list", nil)
	var names []string
	for _, e := range top.json["entries"].([]any) {
		names = append(names, e.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "input,logs,metadata,outputs,scripts" {
		t.Fatalf("top: %v", names)
	}
	var got []string
	cursor := ""
	for {
		u := base + "list?path=input&limit=3"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		r := do(t, "GET", u, nil)
		expect(t, r, 200, "")
		for _, e := range r.json["entries"].([]any) {
			got = append(got, e.(map[string]any)["name"].(string))
		}
		if r.json["next_cursor"] == nil {
			break
		}
		cursor = r.json["next_cursor"].(string)
	}
	if strings.Join(got, ",") != "f0,f1,f2,f3,f4,f5,f6" {
		t.Fatalf("pages: %v", got)
	}
	first := do(t, "GET", base+"list?path=input&limit=3", nil)
	c := first.json["next_cursor"].(string)
	expect(t, do(t, "GET", base+"list?path=outputs&limit=3&cursor="+c, nil), 400, "InvalidArguments")
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a/workbenches/other/list?path=input&cursor="+c, nil), 400, "InvalidArguments")
	expect(t, do(t, "GET", base+"list?path=input&cursor=forged."+c[len(c)-5:], nil), 400, "InvalidArguments")
	expect(t, do(t, "PUT", base+"files/input/zz", strings.NewReader("x")), 201, "")
	expect(t, do(t, "GET", base+"list?path=input&limit=3&cursor="+c, nil), 409, "ReadFenceChanged")
	expect(t, do(t, "GET", base+"list?path=logs", nil), 200, "")
}

func TestOperationalEndpoints(t *testing.T) {
	srv := newServer(t)
	expect(t, do(t, "GET", srv.URL+"/healthz", nil), 200, "")
	expect(t, do(t, "GET", srv.URL+"/readyz", nil), 200, "")
	r := do(t, "GET", srv.URL+"/v1/openapi.json", nil)
	if r.status != 200 || r.json["openapi"] != "3.1.0" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	expect(t, do(t, "GET", srv.URL+"/nope", nil), 404, "NotFound")
	expect(t, do(t, "PATCH", srv.URL+"/v1/agents/a/workbenches/w/files/input/x", nil), 405, "InvalidArguments")
}

func TestJSONBodiesStartWithStatus(t *testing.T) {
	srv := newServer(t)
	for _, c := range []struct{ method, url string }{
		{"PUT", srv.URL + "/v1/agents/a/workbenches/w/files/input/x"},
		{"PUT", srv.URL + "/v1/agents/a/workbenches/w"},
		{"GET", srv.URL + "/v1/agents/a/workbenches/w/files/input/missing"},
		{"GET", srv.URL + "/healthz"},
		{"GET", srv.URL + "/v1/agents/a/workbenches/w/list"},
	} {
		r := do(t, c.method, c.url, strings.NewReader("x"))
		if !bytes.HasPrefix(r.body, []byte(`{"status":"`)) || r.json == nil {
			t.Fatalf("%s %s: body %q", c.method, c.url, r.body)
		}
	}
}

func TestWritesKeepSectionsDirectoriesAndContentTypesSane(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/files/"
	expect(t, do(t, "PUT", base+"outputs", strings.NewReader("x")), 400, "InvalidArguments")
	expect(t, do(t, "POST", base+"logs?append", strings.NewReader("x")), 400, "InvalidArguments")
	expect(t, do(t, "PUT", base+"logs/logs/x", strings.NewReader("x")), 400, "InvalidArguments")
	expect(t, do(t, "PUT", base+"extra/extra/x", strings.NewReader("x")), 201, "") // outside the sections
	for _, ct := range []string{"not a type", "text/plain; charset", "\u00e9/x"} {
		expect(t, do(t, "PUT", base+"input/ct", strings.NewReader("x"), "Content-Type", ct), 400, "InvalidArguments")
	}
	expect(t, do(t, "PUT", base+"input/ct", strings.NewReader("x"), "Content-Type", "text/csv; charset=utf-8"), 201, "")
	// The section still lists as a directory.
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a/workbenches/w/list?path=outputs", nil), 200, "")
}

func TestUnsupportedPreconditionsAreRejectedNotIgnored(t *testing.T) {
	srv := newServer(t)
	u := srv.URL + "/v1/agents/a/workbenches/w/files/input/f"
	r := do(t, "PUT", u, strings.NewReader("keep"))
	expect(t, r, 201, "")
	gen := fmt.Sprint(r.json["generation"])
	for _, c := range []struct{ method, header, value string }{
		{"PUT", "If-Unmodified-Since", "Sat, 01 Jan 2000 00:00:00 GMT"},
		{"PUT", "Content-Range", "bytes 0-0/10"},
		{"DELETE", "If-None-Match", "*"},
		{"POST", "If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT"},
	} {
		url := u
		if c.method == "POST" {
			url += "?append"
		}
		expect(t, do(t, c.method, url, strings.NewReader("x"), c.header, c.value), 400, "InvalidArguments")
	}
	if g := do(t, "GET", u, nil); string(g.body) != "keep" {
		t.Fatalf("a rejected request changed the file: %q", g.body)
	}
	expect(t, do(t, "GET", u, nil, "If-Match", `"1"`), 412, "Conflict")
	if g := do(t, "GET", u, nil, "If-Match", `"`+gen+`"`); g.status != 200 || string(g.body) != "keep" {
		t.Fatalf("matching If-Match: %d %q", g.status, g.body)
	}
	// Malformed ranges are ignored; huge ones are clamped.
	for _, rg := range []string{"bytes=a-b", "bytes=", "bytes=3-1"} {
		if g := do(t, "GET", u, nil, "Range", rg); g.status != 200 || string(g.body) != "keep" {
			t.Fatalf("%s: %d %q", rg, g.status, g.body)
		}
	}
	if g := do(t, "GET", u, nil, "Range", "bytes=1-99999999999999999999999"); g.status != 206 || string(g.body) != "eep" {
		t.Fatalf("huge range end: %d %q", g.status, g.body)
	}
}
