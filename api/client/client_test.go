package client

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func mustPut(t *testing.T, c *Client, agent, wb, p, body string, opts PutOptions) *WriteResult {
	t.Helper()
	res, err := c.PutFile(t.Context(), agent, wb, p, strings.NewReader(body), opts)
	if err != nil {
		t.Fatalf("PutFile(%q): %v", p, err)
	}
	return res
}

func readAll(t *testing.T, c *Client, agent, wb, p string, opts GetOptions) (string, *FileInfo) {
	t.Helper()
	body, info, err := c.GetFile(t.Context(), agent, wb, p, opts)
	if err != nil {
		t.Fatalf("GetFile(%q, %+v): %v", p, opts, err)
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), info
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want a *client.Error", err, err)
	}
	return e
}

func TestCreateWorkbenchReportsCreatedThenExisting(t *testing.T) {
	f, c := newFakeServer(t)
	wb, err := c.CreateWorkbench(t.Context(), "a", "w")
	if err != nil {
		t.Fatal(err)
	}
	if !wb.Created || wb.WorkbenchID != "w" || wb.Path != "/agents/a/wb/w" || !slices.Equal(wb.Sections, sections) {
		t.Fatalf("first create: %+v", wb)
	}
	if r := f.lastRequest(); r.Method != http.MethodPut || r.EscapedPath != "/v1/agents/a/workbenches/w" {
		t.Fatalf("request %s %s", r.Method, r.EscapedPath)
	}
	wb, err = c.CreateWorkbench(t.Context(), "a", "w")
	if err != nil || wb.Created {
		t.Fatalf("second create: %+v, %v", wb, err)
	}
}

func TestPutThenGetRoundTripsBodyAndAttributes(t *testing.T) {
	f, c := newFakeServer(t)
	res := mustPut(t, c, "a", "w", "scripts/run.sh", "#!/bin/sh\necho hi\n",
		PutOptions{ContentType: "text/x-shellscript", Executable: true, IdempotencyKey: "k1"})
	sum := sha256.Sum256([]byte("#!/bin/sh\necho hi\n"))
	want := WriteResult{
		WorkbenchID: "w", Section: "scripts", RelativePath: "run.sh", Path: "/agents/a/wb/w/scripts/run.sh",
		SizeBytes: 18, Generation: res.Generation, DigestURI: fmt.Sprintf("sha256:%x", sum),
		ContentType: "text/x-shellscript", Executable: true, Created: true,
	}
	if *res != want || res.Generation == 0 {
		t.Fatalf("got  %+v\nwant %+v", *res, want)
	}
	h := f.lastRequest().Header
	if h.Get("Idempotency-Key") != "k1" || h.Get("Cairn-Executable") != "true" || h.Get("Content-Type") != "text/x-shellscript" {
		t.Fatalf("request headers %v", h)
	}

	body, info := readAll(t, c, "a", "w", "scripts/run.sh", GetOptions{})
	if body != "#!/bin/sh\necho hi\n" {
		t.Fatalf("body %q", body)
	}
	if info.Generation != res.Generation || info.Size != 18 || info.Length != 18 || info.Offset != 0 ||
		info.Partial || !info.Executable || info.Digest != res.DigestURI || info.ContentType != "text/x-shellscript" ||
		info.LastModified.IsZero() || info.NotModified {
		t.Fatalf("info %+v", info)
	}
}

func TestPutOutsideSectionsHasEmptySection(t *testing.T) {
	_, c := newFakeServer(t)
	res := mustPut(t, c, "a", "w", "notes/x.txt", "x", PutOptions{})
	if res.Section != "" || res.RelativePath != "notes/x.txt" {
		t.Fatalf("got section %q relative %q", res.Section, res.RelativePath)
	}
}

func TestPathComponentsAreEscapedOneByOne(t *testing.T) {
	tests := []struct {
		name, path, escaped string
	}{
		{"spaces are percent-encoded", "input/a b.txt", "input/a%20b.txt"},
		{"a question mark does not start a query", "input/what?.txt", "input/what%3F.txt"},
		{"a hash does not start a fragment", "input/#1", "input/%231"},
		{"a percent sign is itself escaped", "input/50%.csv", "input/50%25.csv"},
		{"non-ASCII names are UTF-8 percent-encoded", "input/ü/naïve", "input/%C3%BC/na%C3%AFve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeServer(t)
			res := mustPut(t, c, "agent-1", "w_2", tt.path, "x", PutOptions{})
			if got := f.lastRequest().EscapedPath; got != "/v1/agents/agent-1/workbenches/w_2/files/"+tt.escaped {
				t.Fatalf("escaped path %q", got)
			}
			if res.Section+"/"+res.RelativePath != tt.path {
				t.Fatalf("server decoded %q/%q", res.Section, res.RelativePath)
			}
			if body, _ := readAll(t, c, "agent-1", "w_2", tt.path, GetOptions{}); body != "x" {
				t.Fatalf("read back %q", body)
			}
		})
	}
}

// TestAnIDWithASlashFailsBeforeAnyRequest: an agent or workbench id holding a '/' is
// refused unsent, with the server's code and field and the id as the caller gave it (sent,
// the server would speak of the escape %2F); any other name, '%' in it or not, is sent.
func TestAnIDWithASlashFailsBeforeAnyRequest(t *testing.T) {
	f, c := newFakeServer(t)
	for _, tc := range []struct {
		agent, wb, field, msg string
		call                  func(agent, wb string) error
	}{
		{"a", "../w", "id", `workbench id "../w": must not contain '/'`, func(agent, wb string) error {
			_, err := c.PutFile(t.Context(), agent, wb, "input/x", strings.NewReader("x"), PutOptions{})
			return err
		}},
		{"../a", "w", "agent", `agent id "../a": must not contain '/'`, func(agent, wb string) error {
			_, err := c.CreateWorkbench(t.Context(), agent, wb)
			return err
		}},
		{"a/b", "", "agent", `agent id "a/b": must not contain '/'`, func(agent, _ string) error {
			_, err := c.ListWorkbenches(t.Context(), agent, "", 0)
			return err
		}},
	} {
		e := asError(t, tc.call(tc.agent, tc.wb))
		if e.Code != "InvalidArguments" || e.HTTPStatus != http.StatusBadRequest || e.Message != tc.msg || e.Details["field"] != tc.field {
			t.Errorf("agent %q, workbench %q: %+v; want InvalidArguments %q, field %s", tc.agent, tc.wb, e, tc.msg, tc.field)
		}
	}
	f.mu.Lock()
	sent := len(f.requests)
	f.mu.Unlock()
	if sent != 0 {
		t.Fatalf("%d requests sent; want none", sent)
	}
	_, _ = c.CreateWorkbench(t.Context(), "a", "w%2Fx")
	if got := f.lastRequest().EscapedPath; got != "/v1/agents/a/workbenches/w%252Fx" {
		t.Fatalf("a workbench id with a '%%' in it was sent as %q", got)
	}
	// Under a base URL with a path of its own too.
	u, _ := url.Parse("http://h:1/base/v1/agents/a/workbenches/..%2Fw/files/input/x")
	if err := newTransport("http://h:1/base/", nil).escapedSlash(u); err == nil || !strings.Contains(err.Error(), `workbench id "../w"`) {
		t.Fatalf("under a base path: %v", err)
	}
}

func TestDotDotIsSentVerbatimForTheServerToReject(t *testing.T) {
	f, c := newFakeServer(t)
	_, err := c.PutFile(t.Context(), "a", "w", "input/../x", strings.NewReader("x"), PutOptions{})
	if e := asError(t, err); e.Code != "InvalidArguments" || e.HTTPStatus != 400 {
		t.Fatalf("got %+v", e)
	}
	if got := f.lastRequest().EscapedPath; got != "/v1/agents/a/workbenches/w/files/input/../x" {
		t.Fatalf("client rewrote the path to %q", got)
	}
}

func TestPutSetsContentLengthOnlyWhenKnown(t *testing.T) {
	f, c := newFakeServer(t)
	// A reader whose length net/http cannot see: the length comes from Size or nowhere.
	opaque := func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) }

	if _, err := c.PutFile(t.Context(), "a", "w", "input/known", opaque("12345"), PutOptions{Size: 5}); err != nil {
		t.Fatal(err)
	}
	if r := f.lastRequest(); r.ContentLength != 5 || len(r.TransferEncoding) != 0 {
		t.Fatalf("known size: content length %d, transfer encoding %v", r.ContentLength, r.TransferEncoding)
	}
	if _, err := c.PutFile(t.Context(), "a", "w", "input/unknown", opaque("12345"), PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	if r := f.lastRequest(); r.ContentLength != -1 || !slices.Equal(r.TransferEncoding, []string{"chunked"}) {
		t.Fatalf("unknown size: content length %d, transfer encoding %v", r.ContentLength, r.TransferEncoding)
	}
	if body, _ := readAll(t, c, "a", "w", "input/unknown", GetOptions{}); body != "12345" {
		t.Fatalf("streamed body %q", body)
	}
}

func TestPutSendsExecutableFalseExplicitly(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/x", "x", PutOptions{})
	if got := f.lastRequest().Header.Values("Cairn-Executable"); !slices.Equal(got, []string{"false"}) {
		t.Fatalf("Cairn-Executable %v", got)
	}
}

func TestConditionalPuts(t *testing.T) {
	_, c := newFakeServer(t)
	first := mustPut(t, c, "a", "w", "input/x", "v1", PutOptions{IfNoneMatch: true})

	_, err := c.PutFile(t.Context(), "a", "w", "input/x", strings.NewReader("v2"), PutOptions{IfNoneMatch: true})
	if e := asError(t, err); e.HTTPStatus != 412 || e.Code != "AlreadyExists" {
		t.Fatalf("create-only on an existing path: %+v", e)
	}

	_, err = c.PutFile(t.Context(), "a", "w", "input/x", strings.NewReader("v2"), PutOptions{IfMatch: first.Generation + 100})
	e := asError(t, err)
	if e.HTTPStatus != 412 || e.Code != "Conflict" || e.Retryable {
		t.Fatalf("stale If-Match: %+v", e)
	}
	if got, ok := e.Details["current_generation"].(float64); !ok || uint64(got) != first.Generation {
		t.Fatalf("details %v, want current_generation %d", e.Details, first.Generation)
	}

	second := mustPut(t, c, "a", "w", "input/x", "v2", PutOptions{IfMatch: first.Generation})
	if second.Created || second.Generation <= first.Generation {
		t.Fatalf("replace: %+v", second)
	}
}

func TestAppendCreatesThenExtends(t *testing.T) {
	f, c := newFakeServer(t)
	r1, err := c.Append(t.Context(), "a", "w", "logs/run.log", strings.NewReader("one\n"), AppendOptions{ContentType: "text/plain", IdempotencyKey: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	req := f.lastRequest()
	if req.Method != http.MethodPost || req.RawQuery != "append" || req.Header.Get("Idempotency-Key") != "a1" {
		t.Fatalf("request %+v", req)
	}
	r2, err := c.Append(t.Context(), "a", "w", "logs/run.log", strings.NewReader("two\n"), AppendOptions{IfMatch: r1.Generation})
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Created || r2.Created || r2.AppendedBytes != 4 || r2.SizeBytes != 8 || r2.Generation <= r1.Generation {
		t.Fatalf("r1 %+v r2 %+v", r1, r2)
	}
	if want := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("two\n"))); r2.Digest != want {
		t.Fatalf("digest %q, want the digest of the appended bytes %q", r2.Digest, want)
	}
	if r2.Section != "logs" || r2.RelativePath != "run.log" {
		t.Fatalf("r2 %+v", r2)
	}
	_, err = c.Append(t.Context(), "a", "w", "logs/run.log", strings.NewReader("x"), AppendOptions{IfMatch: r1.Generation})
	if e := asError(t, err); e.Code != "Conflict" {
		t.Fatalf("stale append: %+v", e)
	}
	if body, _ := readAll(t, c, "a", "w", "logs/run.log", GetOptions{}); body != "one\ntwo\n" {
		t.Fatalf("body %q", body)
	}
}

func TestGetFileRanges(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/abc", "abcdefghij", PutOptions{})
	tests := []struct {
		name         string
		opts         GetOptions
		header, body string
		offset       int64
	}{
		{"an offset and a length read that slice", GetOptions{Offset: 2, Length: 3}, "bytes=2-4", "cde", 2},
		{"an offset alone reads to the end", GetOptions{Offset: 7}, "bytes=7-", "hij", 7},
		{"a length alone reads from the start", GetOptions{Length: 2}, "bytes=0-1", "ab", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, info := readAll(t, c, "a", "w", "input/abc", tt.opts)
			if got := f.lastRequest().Header.Get("Range"); got != tt.header {
				t.Fatalf("Range %q, want %q", got, tt.header)
			}
			if body != tt.body || !info.Partial || info.Offset != tt.offset || info.Size != 10 || info.Length != int64(len(tt.body)) {
				t.Fatalf("body %q info %+v", body, info)
			}
		})
	}
	_, _, err := c.GetFile(t.Context(), "a", "w", "input/abc", GetOptions{Offset: 50})
	if e := asError(t, err); e.HTTPStatus != 416 {
		t.Fatalf("unsatisfiable range: %+v", e)
	}
	if _, _, err := c.GetFile(t.Context(), "a", "w", "input/abc", GetOptions{Offset: -1}); err == nil {
		t.Fatal("negative offset accepted")
	}
}

func TestGetFileIfNoneMatch(t *testing.T) {
	f, c := newFakeServer(t)
	res := mustPut(t, c, "a", "w", "input/x", "hello", PutOptions{})

	body, info, err := c.GetFile(t.Context(), "a", "w", "input/x", GetOptions{IfNoneMatch: res.Generation})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(body)
	_ = body.Close()
	if !info.NotModified || info.Generation != res.Generation || len(data) != 0 {
		t.Fatalf("matching generation: info %+v body %q", info, data)
	}
	if got := f.lastRequest().Header.Get("If-None-Match"); got != fmt.Sprintf(`"%d"`, res.Generation) {
		t.Fatalf("If-None-Match %q", got)
	}

	text, info := readAll(t, c, "a", "w", "input/x", GetOptions{IfNoneMatch: res.Generation - 1})
	if info.NotModified || text != "hello" {
		t.Fatalf("stale generation: info %+v body %q", info, text)
	}
}

func TestStat(t *testing.T) {
	f, c := newFakeServer(t)
	res := mustPut(t, c, "a", "w", "outputs/r.json", `{"ok":true}`, PutOptions{ContentType: "application/json"})
	info, err := c.Stat(t.Context(), "a", "w", "outputs/r.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.lastRequest().Method != http.MethodHead {
		t.Fatalf("method %s", f.lastRequest().Method)
	}
	if info.Generation != res.Generation || info.Size != 11 || info.ContentType != "application/json" || info.Digest != res.DigestURI {
		t.Fatalf("info %+v", info)
	}
	_, err = c.Stat(t.Context(), "a", "w", "outputs/missing")
	if e := asError(t, err); e.HTTPStatus != 404 || e.Code != "NotFound" || e.Message == "" {
		t.Fatalf("missing: %+v", e)
	}
}

func TestDelete(t *testing.T) {
	_, c := newFakeServer(t)
	res := mustPut(t, c, "a", "w", "input/x", "x", PutOptions{})
	_, err := c.Delete(t.Context(), "a", "w", "input/x", DeleteOptions{IfMatch: res.Generation + 1})
	if e := asError(t, err); e.HTTPStatus != 412 {
		t.Fatalf("stale delete: %+v", e)
	}
	del, err := c.Delete(t.Context(), "a", "w", "input/x", DeleteOptions{IfMatch: res.Generation})
	if err != nil {
		t.Fatal(err)
	}
	if del.Generation <= res.Generation || del.RelativePath != "x" || del.WorkbenchID != "w" {
		t.Fatalf("delete result %+v", del)
	}
	if _, err := c.Stat(t.Context(), "a", "w", "input/x"); ErrorCode(err) != "NotFound" {
		t.Fatalf("after delete: %v", err)
	}
}

func TestErrorResponses(t *testing.T) {
	_, c := newFakeServer(t)

	_, err := c.PutFile(t.Context(), "busy", "w", "input/x", strings.NewReader("x"), PutOptions{})
	e := asError(t, err)
	if e.HTTPStatus != 503 || e.Code != "RoutingUnavailable" || !e.Retryable || e.RetryAfter != 7*time.Second || e.Details["shard"] != float64(3) {
		t.Fatalf("503 envelope: %+v", e)
	}
	if e.Error() != "RoutingUnavailable: shard moving" {
		t.Fatalf("Error() = %q", e.Error())
	}

	_, err = c.Stat(t.Context(), "busy", "w", "input/x")
	if e := asError(t, err); e.Code != "ObjectUnavailable" || !e.Retryable || e.RetryAfter != 7*time.Second {
		t.Fatalf("HEAD 503: %+v", e)
	}

	_, err = c.CreateWorkbench(t.Context(), "proxy", "w")
	e = asError(t, err)
	if e.HTTPStatus != 502 || e.Code != "ObjectUnavailable" || e.Message != "<html> <body>Bad gateway</body></html>" {
		t.Fatalf("non-envelope body: %+v", e)
	}

	_, err = c.List(t.Context(), "a", "missing", "", ListOptions{})
	if ErrorCode(err) != "NotFound" {
		t.Fatalf("list of a missing workbench: %v", err)
	}
	if ErrorCode(fmt.Errorf("wrapped: %w", err)) != "NotFound" {
		t.Fatal("ErrorCode does not see through wrapping")
	}
	if ErrorCode(io.EOF) != "" {
		t.Fatal("ErrorCode of a non-API error should be empty")
	}
}

func TestStatusErrorMapsEveryStatusOfTheTable(t *testing.T) {
	tests := []struct {
		status    int
		code      string
		retryable bool
	}{
		{400, "InvalidArguments", false},
		{404, "NotFound", false},
		{409, "Conflict", false},
		{410, "SnapshotExpired", false},
		{412, "Conflict", false},
		{413, "PayloadTooLarge", false},
		{429, "ResourceExhausted", true},
		{500, "Internal", false},
		{503, "ObjectUnavailable", true},
		{418, "InvalidArguments", false},
		{507, "Internal", false},
	}
	for _, tt := range tests {
		e := statusError(tt.status, "")
		if e.Code != tt.code || e.Retryable != tt.retryable || e.HTTPStatus != tt.status || e.Message == "" {
			t.Errorf("status %d: got %+v, want code %s retryable %v", tt.status, e, tt.code, tt.retryable)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"12", 12 * time.Second},
		{"-3", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		in           string
		first, total int64
		ok           bool
	}{
		{"bytes 0-99/1000", 0, 1000, true},
		{"bytes 5-9/*", 5, -1, true},
		{"bytes */1000", 0, 0, false},
		{"items 0-1/2", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		first, total, ok := parseContentRange(tt.in)
		if first != tt.first || total != tt.total || ok != tt.ok {
			t.Errorf("parseContentRange(%q) = %d, %d, %v", tt.in, first, total, ok)
		}
	}
}

func TestEntryFullPath(t *testing.T) {
	tests := []struct {
		name  string
		entry Entry
		want  string
	}{
		{"a file in a section joins section and relative path", Entry{Section: "input", RelativePath: "a/b.txt"}, "input/a/b.txt"},
		{"a section directory reported with its section is the section", Entry{Section: "logs", RelativePath: ""}, "logs"},
		{"a section directory reported without a section is its relative path", Entry{RelativePath: "logs"}, "logs"},
		{"an entry outside the sections is its relative path", Entry{RelativePath: "notes/x"}, "notes/x"},
	}
	for _, tt := range tests {
		if got := tt.entry.FullPath(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestListPagesThroughCursors(t *testing.T) {
	f, c := newFakeServer(t)
	for _, name := range []string{"c", "a", "b", "d", "e"} {
		mustPut(t, c, "a", "w", "input/dir/"+name, name, PutOptions{})
	}
	page, err := c.List(t.Context(), "a", "w", "input/dir", ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if q := f.lastRequest().RawQuery; q != "limit=2&path=input%2Fdir" {
		t.Fatalf("query %q", q)
	}
	var names []string
	for {
		for _, e := range page.Entries {
			names = append(names, e.Name)
			if e.Kind != KindFile || e.Section != "input" || e.RelativePath != "dir/"+e.Name || e.SizeBytes != 1 || e.Generation == 0 {
				t.Fatalf("entry %+v", e)
			}
		}
		if page.NextCursor == "" {
			if page.Truncated {
				t.Fatal("last page says truncated")
			}
			break
		}
		if !page.Truncated || page.EntryCount != 2 {
			t.Fatalf("page %+v", page)
		}
		if page, err = c.List(t.Context(), "a", "w", "input/dir", ListOptions{Limit: 2, Cursor: page.NextCursor}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(names, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("names %v", names)
	}
}

func TestListTopLevelShowsSections(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/x", "x", PutOptions{})
	page, err := c.List(t.Context(), "a", "w", "", ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := f.lastRequest().RawQuery; q != "" {
		t.Fatalf("query %q for the top level and default limit", q)
	}
	var got []string
	for _, e := range page.Entries {
		if !e.IsDir() {
			t.Fatalf("entry %+v", e)
		}
		got = append(got, e.FullPath())
	}
	want := slices.Clone(sections)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestWalkVisitsEveryEntryAcrossPages(t *testing.T) {
	f, c := newFakeServer(t)
	f.pageCap = 2 // force several pages per directory
	paths := []string{"input/a", "input/b/c", "input/b/d/e", "input/b/f", "input/g", "logs/l", "top.txt"}
	for _, p := range paths {
		mustPut(t, c, "a", "w", p, p, PutOptions{})
	}
	var files, dirs []string
	err := c.Walk(t.Context(), "a", "w", "", func(e Entry) error {
		if e.IsDir() {
			dirs = append(dirs, e.FullPath())
		} else {
			files = append(files, e.FullPath())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	if !slices.Equal(files, paths) {
		t.Fatalf("files %v, want %v", files, paths)
	}
	slices.Sort(dirs)
	if want := []string{"input", "input/b", "input/b/d", "logs", "metadata", "outputs", "scripts"}; !slices.Equal(dirs, want) {
		t.Fatalf("dirs %v, want %v", dirs, want)
	}
}

func TestWalkSkipDirAndSkipAll(t *testing.T) {
	_, c := newFakeServer(t)
	for _, p := range []string{"input/a/x", "input/b/y", "input/c"} {
		mustPut(t, c, "a", "w", p, p, PutOptions{})
	}
	var seen []string
	err := c.Walk(t.Context(), "a", "w", "input", func(e Entry) error {
		seen = append(seen, e.FullPath())
		if e.FullPath() == "input/a" {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(seen, "input/a/x") || !slices.Contains(seen, "input/b/y") {
		t.Fatalf("SkipDir: seen %v", seen)
	}

	seen = nil
	err = c.Walk(t.Context(), "a", "w", "input", func(e Entry) error {
		seen = append(seen, e.FullPath())
		return fs.SkipAll
	})
	if err != nil || len(seen) != 1 {
		t.Fatalf("SkipAll: err %v, seen %v", err, seen)
	}

	boom := errors.New("boom")
	if err := c.Walk(t.Context(), "a", "w", "input", func(Entry) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("callback error: %v", err)
	}
}

// listingServer answers every list request with the given entries and no cursor.
func listingServer(t *testing.T, entries string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","entries":%s,"next_cursor":null,"truncated":false}`, entries)
	}))
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() { hc.CloseIdleConnections(); srv.Close() })
	return New(srv.URL, hc)
}

func TestWalkRejectsEntriesThatAreNotDirectChildren(t *testing.T) {
	tests := []struct {
		name, entries string
	}{
		{"an entry naming the listed directory itself would loop forever",
			`[{"name":"input","section":"input","relative_path":"","kind":"directory"}]`},
		{"a dot-dot name would escape",
			`[{"name":"..","section":"input","relative_path":"..","kind":"directory"}]`},
		{"a path that disagrees with its name is refused",
			`[{"name":"a","section":"input","relative_path":"elsewhere/a","kind":"file"}]`},
		{"a name with a slash is refused",
			`[{"name":"a/b","section":"input","relative_path":"a/b","kind":"file"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := listingServer(t, tt.entries)
			calls := 0
			err := c.Walk(t.Context(), "a", "w", "input", func(Entry) error { calls++; return nil })
			if !errors.Is(err, ErrUnsafePath) || calls != 0 {
				t.Fatalf("err %v after %d calls, want ErrUnsafePath before any call", err, calls)
			}
		})
	}
}

func TestNewWithNilHTTPClientUsesDefault(t *testing.T) {
	c := New("http://example.invalid///", nil)
	if c.tr.hc != http.DefaultClient || c.tr.base != "http://example.invalid" {
		t.Fatalf("got %+v", c)
	}
}

func TestPutStreamsWithoutBuffering(t *testing.T) {
	// The server sees the first bytes before the client has produced the rest.
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 5)
		_, _ = io.ReadFull(r.Body, buf)
		got <- buf
		rest, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","size_bytes":%d,"generation":1,"created":true}`, 5+len(rest))
	}))
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() { hc.CloseIdleConnections(); srv.Close() })
	c := New(srv.URL, hc)

	pr, pw := io.Pipe()
	// Runs before the server's Close: a failure below never leaves the handler waiting on
	// a body nobody will finish.
	t.Cleanup(func() { pw.CloseWithError(errors.New("the test ended")) })
	done := make(chan error, 1)
	go func() {
		res, err := c.PutFile(t.Context(), "a", "w", "input/stream", pr, PutOptions{Size: -1})
		if err == nil && res.SizeBytes != 10 {
			err = fmt.Errorf("size %d", res.SizeBytes)
		}
		pr.CloseWithError(errors.New("the upload ended")) // a write below fails instead of blocking
		done <- err
	}()
	_, _ = pw.Write([]byte("first"))
	select {
	case first := <-got:
		if !bytes.Equal(first, []byte("first")) {
			t.Fatalf("server read %q", first)
		}
	case err := <-done:
		t.Fatalf("the upload ended before the server read its first bytes: %v", err)
	}
	_, _ = pw.Write([]byte("later"))
	_ = pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestPutLeavesTheBodyOpen(t *testing.T) {
	_, c := newFakeServer(t)
	body := &closeTracker{Reader: strings.NewReader("abc")}
	if _, err := c.PutFile(t.Context(), "a", "w", "input/x", body, PutOptions{Size: 3}); err != nil {
		t.Fatal(err)
	}
	if body.closed {
		t.Fatal("PutFile closed the caller's body")
	}
}

// TestResultBodiesAreReadToTheirBound: a success body is read into a buffer of its declared
// length, and one declared past maxResultBytes is refused before a byte of it is read; a
// body that ends before its declared length is an error, as is one sent without a length
// that runs past the bound.
func TestResultBodiesAreReadToTheirBound(t *testing.T) {
	page := `{"status":"success","entries":[{"name":"a","kind":"file"}],"next_cursor":null,"truncated":false}`
	tests := []struct {
		name  string
		write func(w http.ResponseWriter)
		want  string // "" for a page of one entry
	}{
		{"declared", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			io.WriteString(w, page)
		}, ""},
		{"chunked", func(w http.ResponseWriter) {
			io.WriteString(w, page)
			w.(http.Flusher).Flush()
		}, ""},
		{"declared past the bound", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(maxResultBytes+1))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}, "larger than"},
		{"shorter than declared", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(len(page)+10))
			io.WriteString(w, page)
		}, "reading response"},
		{"chunked past the bound", func(w http.ResponseWriter) {
			chunk := strings.Repeat(" ", 1<<20)
			for range maxResultBytes>>20 + 1 {
				io.WriteString(w, chunk)
			}
		}, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				tt.write(w)
			}))
			hc := &http.Client{Transport: &http.Transport{}}
			t.Cleanup(func() { hc.CloseIdleConnections(); srv.Close() })
			p, err := New(srv.URL, hc).List(t.Context(), "a", "w", "", ListOptions{})
			switch {
			case tt.want == "" && (err != nil || len(p.Entries) != 1 || p.Entries[0].Name != "a"):
				t.Fatalf("List: %+v, %v", p, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("List: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
