package openwop_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// meeting is a Redactor that, once armed, holds every PUT at its redaction (after the
// facade's maxFiles check, before the write) until want of them are there, at most
// meetingWait: so each has passed its check before any of them writes.
type meeting struct {
	mu      sync.Mutex
	armed   bool
	want    int
	arrived int
	all     chan struct{}
	missed  bool // a PUT waited meetingWait and went on alone
}

const meetingWait = 20 * time.Second

func (m *meeting) arm(want int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.armed, m.want, m.arrived, m.all = true, want, 0, make(chan struct{})
}

func (m *meeting) Redact(_, content string) string {
	m.mu.Lock()
	if !m.armed {
		m.mu.Unlock()
		return content
	}
	m.arrived++
	all := m.all
	if m.arrived == m.want {
		close(all)
	}
	m.mu.Unlock()
	select {
	case <-all:
	case <-time.After(meetingWait):
		m.mu.Lock()
		m.missed = true
		m.mu.Unlock()
	}
	return content
}

// maxFiles holds across the nodes of a cluster: two facades, each over a Workbench service
// of its own (two nodes: each has its own create lock) on one shard, with a workspace one
// file short of the limit. A create through each node passes its node's check on the same
// count (the meeting holds both until both passed it), yet only one is stored: the store
// checks the count in the write itself (meta.Put.MaxWorkbenchFiles). The other is refused
// with exactly the answer of the facade's own check (413 workspace_too_large, the same
// body). Then creates fired at once through both nodes into another workspace leave it
// at maxFiles, never above.
func TestCreatesThroughTwoNodesStayWithinMaxFiles(t *testing.T) {
	sc := loadSchemas(t)
	opt := testOptions() // MaxFiles 4
	cfg := workbench.Config{InlineMaxBytes: 4096, CursorKey: workbenchtest.CursorKey}
	n := workbenchtest.New(t, cfg)
	second, err := workbench.New(n.Shard, n.Blobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	meet := &meeting{}
	opt.Redactor = meet
	nodes := []string{
		serveFacade(t, openwop.New(n.Service, opt, http.NotFoundHandler())) + "/v1/host/workspace/files/",
		serveFacade(t, openwop.New(second, opt, http.NotFoundHandler())) + "/v1/host/workspace/files/",
	}
	for i := range opt.MaxFiles - 1 {
		if a := call(t, http.MethodPut, nodes[i%2]+"f"+strconv.Itoa(i), map[string]any{"content": "x"}); a.status != http.StatusOK {
			t.Fatalf("setup: %d %s", a.status, a.body)
		}
	}
	meet.arm(2)
	answers := race(2, func(i int) (*http.Request, error) {
		return jsonPut(nodes[i]+"new"+strconv.Itoa(i), "")
	})
	meet.mu.Lock()
	meet.armed = false
	missed := meet.missed
	meet.mu.Unlock()
	if missed {
		t.Fatalf("the two creates did not both pass their node's check within %s", meetingWait)
	}
	full := call(t, http.MethodPut, nodes[0]+"refused-by-the-check", map[string]any{"content": "x"})
	wantError(t, sc, "a create into a full workspace", full, http.StatusRequestEntityTooLarge, openwop.CodeTooLarge)
	stored := 0
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("create through node %d: %v", i, a.err)
		case a.status == http.StatusOK:
			stored++
		case a.status != full.status || a.body != string(full.body):
			t.Fatalf("create through node %d: %d %s, want %d %s, the answer of the facade's own check", i, a.status, a.body, full.status, full.body)
		}
	}
	if files := listed(t, nodes[1]); stored != 1 || files != opt.MaxFiles {
		t.Fatalf("%d of 2 creates through two nodes stored, %d files listed, want 1 and %d", stored, files, opt.MaxFiles)
	}

	answers = race(16, func(i int) (*http.Request, error) {
		req, err := jsonPut(nodes[i%2]+"burst"+strconv.Itoa(i), "acme/burst")
		return req, err
	})
	stored = 0
	for i, a := range answers {
		if a.err != nil || a.status != http.StatusOK && (a.status != full.status || a.body != string(full.body)) {
			t.Fatalf("burst create %d: %d %s %v", i, a.status, a.body, a.err)
		}
		if a.status == http.StatusOK {
			stored++
		}
	}
	if files := listed(t, nodes[0], ownerHeader, "acme/burst"); stored != opt.MaxFiles || files != opt.MaxFiles {
		t.Fatalf("%d of 16 creates through two nodes stored, %d files listed, want %d and %d", stored, files, opt.MaxFiles, opt.MaxFiles)
	}
}

// jsonPut is a PUT of a small file's JSON body, as owner ("tenant/workspace"; "" the
// local principal's).
func jsonPut(url, owner string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(`{"content":"x"}`))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		if owner != "" {
			req.Header.Set(ownerHeader, owner)
		}
	}
	return req, err
}

// listed is the number of files the listing under files (a URL ending in "/") answers.
func listed(t *testing.T, files string, headers ...string) int {
	t.Helper()
	l := call(t, http.MethodGet, files[:len(files)-1], nil, headers...)
	var rows struct{ Files []json.RawMessage }
	if l.status != http.StatusOK || json.Unmarshal(l.body, &rows) != nil {
		t.Fatalf("listing: %d %s", l.status, l.body)
	}
	return len(rows.Files)
}
