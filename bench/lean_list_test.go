package bench

import (
	"bytes"
	jsonv1 "encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairnstore/cairn/api/client"
)

// countingListings counts the listing GETs that pass through it.
type countingListings struct {
	base  http.RoundTripper
	lists atomic.Int64
}

func (c *countingListings) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/list") {
		c.lists.Add(1)
	}
	return c.base.RoundTrip(r)
}

// With Config.LeanHTTP the list scenario's listings succeed and go through the lean lane,
// none through the Go client (which carries the setup's requests).
func TestTheLeanListLaneListsTheScenariosDirectory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Server, cfg.Agent, cfg.Workbench, cfg.Scenario = newNode(t), "bench", "w-list", ScenarioList
	cfg.Concurrency, cfg.Duration, cfg.Files, cfg.LeanHTTP = 2, 300*time.Millisecond, 5, true
	counter := &countingListings{base: http.DefaultTransport}
	rep, err := Run(t.Context(), cfg, RunOptions{HTTPClient: &http.Client{Transport: counter}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Cairn; c == nil || c.OK == 0 || c.Errors != 0 {
		t.Fatalf("phase %+v: want successful listings and no errors", c)
	}
	if !rep.Params.LeanHTTP {
		t.Error("the report's parameters do not say the run used the lean client")
	}
	if n := counter.lists.Load(); n != 0 {
		t.Errorf("%d listings went through the Go client, want every one through the lean lane", n)
	}
}

// putListFiles writes n files into listDir of cfg's workbench (created).
func putListFiles(t *testing.T, cfg Config, n int) {
	t.Helper()
	c := client.New(cfg.Server, nil)
	if _, err := c.CreateWorkbench(t.Context(), cfg.Agent, cfg.Workbench); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.PutFile(t.Context(), cfg.Agent, cfg.Workbench, filePath(listDir, uint64(i)), bytes.NewReader([]byte("x")), client.PutOptions{Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// Against a node, the lane follows the cursor through pages smaller than the directory,
// and refuses a directory of another number of entries and a missing one.
func TestTheLeanListLaneFollowsEveryPageOfANode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Server, cfg.Agent, cfg.Workbench, cfg.Scenario = newNode(t), "bench", "w-pages", ScenarioList
	putListFiles(t, cfg, 10)
	for _, c := range []struct {
		files, limit int
		want         string // "" for success
	}{
		{10, 3, ""},
		{10, 10, ""},
		{10, 1000, ""},
		{11, 3, "entry_count 10, want the directory's 11"},
		{9, 1000, "entry_count 10, want the directory's 9"},
	} {
		cfg.Files = c.files
		l, err := newLeanList(cfg, 1, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		err = l.list(t.Context())
		l.close()
		if (c.want == "" && err != nil) || (c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want))) {
			t.Errorf("%d files in pages of %d: %v, want %q", c.files, c.limit, err, c.want)
		}
	}
	cfg.Workbench = "w-empty"
	putListFiles(t, cfg, 0)
	l, err := newLeanList(cfg, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.list(t.Context()); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("a missing directory: %v, want an error saying status 404", err)
	}
}

// listPageJSON is a listing page of n entries, entry_count count and next_cursor next
// ("" for null). Each entry repeats a member name, which the lane checks nothing of
// (leanListDecoding).
func listPageJSON(n, count int, next string) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf(`{"name":"%09d","kind":"file","name":"dup"}`, i)
	}
	cursor := "null"
	if next != "" {
		cursor = `"` + next + `"`
	}
	return fmt.Sprintf(`{"status":"success","entries":[%s],"entry_count":%d,"next_cursor":%s,"path":"%s","truncated":%v}`,
		strings.Join(entries, ","), count, cursor, listDir, next != "")
}

// The lane checks every page as the directory's: a wrong status or Content-Type, a page
// that is not a listing, more entries than asked for or than the directory holds, another
// entry_count, a page of no entries with a cursor and a last page (no cursor) before the
// directory's entries are all listed are failed listings naming what was wrong. Its
// requests are client.ListURL's, the cursor of the previous page included.
func TestTheLeanListLaneRefusesAWrongAnswer(t *testing.T) {
	type answer struct {
		status      int
		contentType string
		body        string
	}
	ok := func(body string) answer { return answer{200, "application/json", body} }
	var pages atomic.Pointer[map[string]answer] // by the cursor asked for
	var badURL atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cursor := r.URL.Query().Get("cursor")
		want, _ := client.ListURL("http://"+r.Host, "bench", "w", listDir, client.ListOptions{Cursor: cursor, Limit: 3})
		if got := "http://" + r.Host + r.URL.RequestURI(); got != want {
			badURL.Store(got)
		}
		a, found := (*pages.Load())[cursor]
		if !found {
			http.Error(w, "no such page", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Server, cfg.Agent, cfg.Workbench, cfg.Scenario, cfg.Files = srv.URL, "bench", "w", ScenarioList, 5
	l, err := newLeanList(cfg, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	for _, c := range []struct {
		name  string
		pages map[string]answer
		want  string // "" for success
	}{
		{"two pages", map[string]answer{"": ok(listPageJSON(3, 5, "c+1/=")), "c+1/=": ok(listPageJSON(2, 5, ""))}, ""},
		{"a Content-Type with a parameter", map[string]answer{"": {200, "Application/JSON; charset=utf-8", listPageJSON(3, 5, "a")}, "a": ok(listPageJSON(2, 5, ""))}, ""},
		{"a short page with a cursor", map[string]answer{"": ok(listPageJSON(1, 5, "a")), "a": ok(listPageJSON(3, 5, "b")), "b": ok(listPageJSON(1, 5, ""))}, ""},
		{"an error status", map[string]answer{"": {500, "application/json", `{"status":"error","code":"Internal"}`}}, "status 500, want 200"},
		{"a Content-Type other than JSON", map[string]answer{"": {200, "text/plain", listPageJSON(3, 5, "x")}}, `Content-Type "text/plain"`},
		{"not JSON", map[string]answer{"": ok("<html>")}, "not a listing"},
		{"no entries", map[string]answer{"": ok(`{"entry_count":5,"next_cursor":null}`)}, "no entries array"},
		{"null entries", map[string]answer{"": ok(`{"entries":null,"entry_count":5,"next_cursor":null}`)}, "want an array"},
		{"an entry that is not an object", map[string]answer{"": ok(`{"entries":[{},"x"],"entry_count":5,"next_cursor":"a"}`)}, "entry 1 is a JSON string"},
		{"no entry_count", map[string]answer{"": ok(`{"entries":[],"next_cursor":null}`)}, "entry_count missing"},
		{"another entry_count", map[string]answer{"": ok(listPageJSON(3, 5, "a")), "a": ok(listPageJSON(2, 6, ""))}, "entry_count 6, want the directory's 5"},
		{"more entries than asked for", map[string]answer{"": ok(listPageJSON(4, 5, "a"))}, "a page of 4 entries, more than the 3 asked for"},
		{"more entries than the directory's", map[string]answer{"": ok(listPageJSON(3, 5, "a")), "a": ok(listPageJSON(3, 5, ""))}, "6 entries so far, more than the directory's 5"},
		{"a cursor on a page of no entries", map[string]answer{"": ok(listPageJSON(0, 5, "a"))}, "a page of no entries with a next_cursor"},
		{"no cursor while more pages exist", map[string]answer{"": ok(listPageJSON(3, 5, ""))}, "no next_cursor after 3 of the directory's 5 entries"},
		{"an empty cursor while more pages exist", map[string]answer{"": ok(listPageJSON(3, 5, "a")), "a": ok(strings.Replace(listPageJSON(1, 5, ""), "null", `""`, 1))}, "no next_cursor after 4 of the directory's 5 entries"},
	} {
		pages.Store(&c.pages)
		err := l.list(t.Context())
		if (c.want == "" && err != nil) || (c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want))) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if u := badURL.Load(); u != nil {
		t.Errorf("the lane requested %s, not a URL of client.ListURL", u)
	}
}

// serverListPage is a page of n file entries as the server writes them (api/rest
// listing.go), the list scenario's names and sizes.
func serverListPage(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"content_type":"application/octet-stream","entry_count":0,"executable":false,"generation":%d,"kind":"file","name":"%09d","path":"/agents/bench/wb/w-list/%[3]s","relative_path":"bench/list/%09[2]d","section":"input","size_bytes":1024}`,
			10+i, i, filePath(listDir, uint64(i)))
	}
	fmt.Fprintf(&b, `],"entry_count":%d,"next_cursor":null,"path":"%s","truncated":false,"workbench_id":"w-list","workbench_path":"/agents/bench/wb/w-list"}`+"\n", n, listDir)
	return []byte(b.String())
}

// BenchmarkLeanListPage measures readings of a page of the list scenario's 100 entries
// that give the number of entries, entry_count and next_cursor: the lane's (counted),
// counted with jsontext's default check of repeated member names, and the entries as
// []struct{} (encoding/json, go-json-experiment) or as raw values (each).
func BenchmarkLeanListPage(b *testing.B) {
	body := serverListPage(100)
	type skipped struct {
		Entries    []struct{} `json:"entries"`
		EntryCount *int64     `json:"entry_count"`
		NextCursor *string    `json:"next_cursor"`
	}
	type rawV1 struct {
		Entries    []jsonv1.RawMessage `json:"entries"`
		EntryCount *int64              `json:"entry_count"`
		NextCursor *string             `json:"next_cursor"`
	}
	type rawV2 struct {
		Entries    []jsontext.Value `json:"entries"`
		EntryCount *int64           `json:"entry_count"`
		NextCursor *string          `json:"next_cursor"`
	}
	for _, c := range []struct {
		name   string
		decode func() (int, error)
	}{
		{"counted", func() (int, error) {
			var p leanListPage
			err := jsonv2.Unmarshal(body, &p, leanListDecoding)
			return p.Entries.n, err
		}},
		{"counted-names-checked", func() (int, error) {
			var p leanListPage
			err := jsonv2.Unmarshal(body, &p)
			return p.Entries.n, err
		}},
		{"struct-encoding-json", func() (int, error) {
			var p skipped
			err := jsonv1.Unmarshal(body, &p)
			return len(p.Entries), err
		}},
		{"struct-go-json-experiment", func() (int, error) {
			var p skipped
			err := jsonv2.Unmarshal(body, &p)
			return len(p.Entries), err
		}},
		{"raw-encoding-json", func() (int, error) {
			var p rawV1
			err := jsonv1.Unmarshal(body, &p)
			return len(p.Entries), err
		}},
		{"raw-go-json-experiment", func() (int, error) {
			var p rawV2
			err := jsonv2.Unmarshal(body, &p)
			return len(p.Entries), err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if n, err := c.decode(); err != nil || n != 100 {
					b.Fatalf("%d entries, %v", n, err)
				}
			}
		})
	}
}
