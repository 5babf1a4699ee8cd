package client

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestFileURLEscapesEachComponent: fileURL escapes the agent, the workbench and each path
// component on its own and joins the components with "/", as splitting, escaping and
// joining them does.
func TestFileURLEscapesEachComponent(t *testing.T) {
	tr := newTransport("http://h:1/", nil)
	for _, c := range []struct{ agent, wb, path string }{
		{"a", "w", "input/bench/list/f-000042.txt"},
		{"a b", "w/x", "input/with space/ü?#%.txt"},
		{"a", "w", ""},
		{"a", "w", "/lead//double/"},
		{"", "", "x"},
	} {
		comps := strings.Split(c.path, "/")
		for i, comp := range comps {
			comps[i] = url.PathEscape(comp)
		}
		want := "http://h:1/v1/agents/" + url.PathEscape(c.agent) + "/workbenches/" + url.PathEscape(c.wb) + "/files/" + strings.Join(comps, "/")
		if got := tr.fileURL(c.agent, c.wb, c.path); got != want {
			t.Errorf("fileURL(%q, %q, %q) = %q, want %q", c.agent, c.wb, c.path, got, want)
		}
	}
}

// TestListURLIsTheURLListRequests: ListURL gives, for every option List takes, the URL
// List sends its GET to, escapes and all.
func TestListURLIsTheURLListRequests(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.RequestURI()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","entries":[],"entry_count":0,"next_cursor":null}`))
	}))
	defer srv.Close()
	c := New(srv.URL, nil)
	for _, tc := range []struct {
		agent, wb, dir string
		opts           ListOptions
	}{
		{"a", "w", "input/bench/list", ListOptions{Limit: 1000}},
		{"a b", "w", "", ListOptions{}},
		{"a", "w", "input/with space/ü?#%", ListOptions{Cursor: "c+/=?&", Limit: 2}},
		{"a", "w", "input", ListOptions{AtSnapshot: SnapshotName("s 1")}},
		{"a", "w", "input", ListOptions{AtSnapshot: SnapshotID(7), Cursor: "x"}},
	} {
		got = ""
		if _, err := c.List(t.Context(), tc.agent, tc.wb, tc.dir, tc.opts); err != nil {
			t.Fatalf("List(%q, %q, %q, %+v): %v", tc.agent, tc.wb, tc.dir, tc.opts, err)
		}
		u, err := ListURL(srv.URL, tc.agent, tc.wb, tc.dir, tc.opts)
		if err != nil || u != srv.URL+got {
			t.Errorf("ListURL(%q, %q, %q, %+v) = %q, %v; List requested %q", tc.agent, tc.wb, tc.dir, tc.opts, u, err, srv.URL+got)
		}
	}
}
