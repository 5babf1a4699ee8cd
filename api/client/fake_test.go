package client

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is an in-memory server that speaks the REST spec the client is written
// against. It exists only so the client can be unit-tested; the real server is tested
// against the client in integration/.

var sections = []string{"input", "scripts", "outputs", "logs", "metadata"}

type fakeFile struct {
	data        []byte
	gen         uint64
	contentType string
	exec        bool
	modified    time.Time
}

type fakeRequest struct {
	Method, EscapedPath, RawQuery string
	Header                        http.Header
	ContentLength                 int64
	TransferEncoding              []string
}

type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	gen      uint64
	wbs      map[string]map[string]bool // agent → workbench → exists
	files    map[string]*fakeFile       // agent + "\x00" + wb + "\x00" + path
	requests []fakeRequest
	// pageCap caps the list limit, so tests can force pagination.
	pageCap int
	// failPut, if set, is consulted before each file PUT; a non-nil status fails it.
	failPut func(path string) (status int, code string)
	// corrupt makes GET serve a Cairn-Digest that does not match the body.
	corrupt bool
	// fenceFailures is how many more cursor (non-first) list pages fail with
	// ReadFenceChanged, as a live listing does when the workbench changed.
	fenceFailures int
}

func newFakeServer(t *testing.T) (*fakeServer, *Client) {
	t.Helper()
	f := &fakeServer{t: t, wbs: map[string]map[string]bool{}, files: map[string]*fakeFile{}, pageCap: 1000}
	f.srv = httptest.NewServer(f)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		f.srv.Close()
	})
	return f, New(f.srv.URL+"/", hc)
}

func (f *fakeServer) key(agent, wb, p string) string { return agent + "\x00" + wb + "\x00" + p }

func (f *fakeServer) file(agent, wb, p string) *fakeFile {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[f.key(agent, wb, p)]
}

func (f *fakeServer) lastRequest() fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func (f *fakeServer) countRequests(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if r.Method == method {
			n++
		}
	}
	return n
}

func writeError(w http.ResponseWriter, status int, code, msg string, details map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "error", "code": code, "message": msg,
		"retryable": status == 503 || status == 429 || code == "ReadFenceChanged", "details": details,
	})
}

func writeJSON(w http.ResponseWriter, status int, v map[string]any) {
	v["status"] = "success"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// splitSection returns the section (nil outside) and the path relative to it.
func splitSection(p string) (any, string) {
	first, rest, _ := strings.Cut(p, "/")
	if slices.Contains(sections, first) {
		return first, rest
	}
	return nil, p
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, fakeRequest{
		Method: r.Method, EscapedPath: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), ContentLength: r.ContentLength, TransferEncoding: r.TransferEncoding,
	})

	// Route on the escaped path, validate the decoded components (docs/architecture.md#surfaces).
	raw := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	comps := make([]string, len(raw))
	for i, c := range raw {
		d, err := url.PathUnescape(c)
		if err != nil {
			writeError(w, 400, "InvalidArguments", "bad escape", nil)
			return
		}
		comps[i] = d
	}
	if len(comps) < 4 || comps[0] != "v1" || comps[1] != "agents" || comps[3] != "workbenches" || len(comps) < 5 {
		writeError(w, 404, "NotFound", "no route", nil)
		return
	}
	agent, wb := comps[2], comps[4]
	if agent == "busy" {
		w.Header().Set("Retry-After", "7")
		writeError(w, 503, "RoutingUnavailable", "shard moving", map[string]any{"shard": 3})
		return
	}
	if agent == "proxy" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(502)
		_, _ = io.WriteString(w, "<html>\n<body>Bad   gateway</body></html>")
		return
	}
	switch {
	case len(comps) == 5 && r.Method == http.MethodPut:
		f.createWorkbench(w, agent, wb)
	case len(comps) == 6 && comps[5] == "list" && r.Method == http.MethodGet:
		f.list(w, r, agent, wb)
	case len(comps) >= 7 && comps[5] == "files":
		p := strings.Join(comps[6:], "/")
		for _, c := range comps[6:] {
			if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "\\\x00") {
				writeError(w, 400, "InvalidArguments", fmt.Sprintf("bad path %q", p), nil)
				return
			}
		}
		f.fileOp(w, r, agent, wb, p)
	default:
		writeError(w, 404, "NotFound", "no route", nil)
	}
}

func (f *fakeServer) createWorkbench(w http.ResponseWriter, agent, wb string) {
	created := !f.wbs[agent][wb]
	if f.wbs[agent] == nil {
		f.wbs[agent] = map[string]bool{}
	}
	f.wbs[agent][wb] = true
	status := 200
	if created {
		status = 201
	}
	writeJSON(w, status, map[string]any{
		"workbench_id": wb, "path": "/agents/" + agent + "/wb/" + wb,
		"sections": sections, "created": created,
	})
}

func etagGen(v string) (uint64, bool) {
	n, err := strconv.ParseUint(strings.Trim(v, `"`), 10, 64)
	return n, err == nil && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`)
}

func (f *fakeServer) fileOp(w http.ResponseWriter, r *http.Request, agent, wb, p string) {
	k := f.key(agent, wb, p)
	cur := f.files[k]
	section, rel := splitSection(p)
	present := "/agents/" + agent + "/wb/" + wb + "/" + p

	if im := r.Header.Get("If-Match"); im != "" {
		g, ok := etagGen(im)
		if !ok || cur == nil || cur.gen != g {
			var curGen any
			if cur != nil {
				curGen = cur.gen
			}
			writeError(w, 412, "Conflict", "generation mismatch", map[string]any{"current_generation": curGen})
			return
		}
	}

	switch r.Method {
	case http.MethodPut:
		if r.Header.Get("If-None-Match") == "*" && cur != nil {
			writeError(w, 412, "AlreadyExists", "exists", map[string]any{"current_generation": cur.gen})
			return
		}
		if f.failPut != nil {
			if status, code := f.failPut(p); status != 0 {
				writeError(w, status, code, "injected failure", nil)
				return
			}
		}
		data, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, 400, "InvalidArguments", err.Error(), nil)
			return
		}
		ct := r.Header.Get("Content-Type")
		if ct == "" {
			ct = "application/octet-stream"
		}
		f.gen++
		nf := &fakeFile{data: data, gen: f.gen, contentType: ct, exec: r.Header.Get("Cairn-Executable") == "true", modified: time.Now()}
		f.files[k] = nf
		if f.wbs[agent] == nil {
			f.wbs[agent] = map[string]bool{}
		}
		f.wbs[agent][wb] = true
		status := 200
		if cur == nil {
			status = 201
		}
		w.Header().Set("ETag", fmt.Sprintf(`"%d"`, nf.gen))
		writeJSON(w, status, map[string]any{
			"workbench_id": wb, "section": section, "relative_path": rel, "path": present,
			"size_bytes": len(data), "generation": nf.gen,
			"digest_uri":   fmt.Sprintf("sha256:%x", sha256.Sum256(data)),
			"content_type": ct, "executable": nf.exec, "created": cur == nil,
		})
	case http.MethodPost:
		if _, ok := r.URL.Query()["append"]; !ok {
			writeError(w, 400, "InvalidArguments", "POST needs ?append", nil)
			return
		}
		data, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, 400, "InvalidArguments", err.Error(), nil)
			return
		}
		f.gen++
		created := cur == nil
		if created {
			ct := r.Header.Get("Content-Type")
			if ct == "" {
				ct = "application/octet-stream"
			}
			cur = &fakeFile{contentType: ct}
			f.files[k] = cur
		}
		cur.data = append(cur.data, data...)
		cur.gen = f.gen
		cur.modified = time.Now()
		writeJSON(w, 200, map[string]any{
			"workbench_id": wb, "section": section, "relative_path": rel, "path": present,
			"appended_bytes": len(data), "size_bytes": len(cur.data), "generation": cur.gen,
			"created": created, "digest": fmt.Sprintf("sha256:%x", sha256.Sum256(data)),
		})
	case http.MethodGet, http.MethodHead:
		if cur == nil {
			if r.Method == http.MethodHead {
				w.WriteHeader(404)
				return
			}
			writeError(w, 404, "NotFound", fmt.Sprintf("%s not found", p), map[string]any{"path": p})
			return
		}
		h := w.Header()
		h.Set("ETag", fmt.Sprintf(`"%d"`, cur.gen))
		h.Set("Content-Type", cur.contentType)
		digest := fmt.Sprintf("sha256:%x", sha256.Sum256(cur.data))
		if f.corrupt {
			digest = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("something else")))
		}
		h.Set("Cairn-Digest", digest)
		h.Set("Cairn-Executable", strconv.FormatBool(cur.exec))
		h.Set("Cairn-Generation", strconv.FormatUint(cur.gen, 10))
		h.Set("Last-Modified", cur.modified.UTC().Format(http.TimeFormat))
		h.Set("Accept-Ranges", "bytes")
		if inm := r.Header.Get("If-None-Match"); inm != "" {
			if g, ok := etagGen(inm); ok && g == cur.gen {
				w.WriteHeader(304)
				return
			}
		}
		body, status := cur.data, 200
		if rg := r.Header.Get("Range"); rg != "" {
			first, last, ok := parseRange(rg, int64(len(cur.data)))
			if !ok {
				h.Set("Content-Range", fmt.Sprintf("bytes */%d", len(cur.data)))
				writeError(w, 416, "InvalidArguments", "range not satisfiable", nil)
				return
			}
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(cur.data)))
			body, status = cur.data[first:last+1], 206
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	case http.MethodDelete:
		if cur == nil {
			writeError(w, 404, "NotFound", "not found", nil)
			return
		}
		delete(f.files, k)
		f.gen++
		writeJSON(w, 200, map[string]any{"workbench_id": wb, "path": present, "relative_path": rel, "generation": f.gen})
	default:
		writeError(w, 400, "InvalidArguments", "method", nil)
	}
}

func parseRange(v string, size int64) (first, last int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false
	}
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil || first >= size {
		return 0, 0, false
	}
	last = size - 1
	if b != "" {
		if last, err = strconv.ParseInt(b, 10, 64); err != nil || last < first {
			return 0, 0, false
		}
		last = min(last, size-1)
	}
	return first, last, true
}

type fakeChild struct {
	name string
	dir  bool
	file *fakeFile
}

func (f *fakeServer) list(w http.ResponseWriter, r *http.Request, agent, wb string) {
	if !f.wbs[agent][wb] {
		writeError(w, 404, "NotFound", "no workbench", nil)
		return
	}
	q := r.URL.Query()
	dir := q.Get("path")
	if f.files[f.key(agent, wb, dir)] != nil {
		writeError(w, 400, "NotDirectory", "a file", nil)
		return
	}
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, 400, "InvalidArguments", "limit", nil)
			return
		}
		limit = n
	}
	limit = min(limit, f.pageCap)
	start := 0
	if c := q.Get("cursor"); c != "" && f.fenceFailures > 0 {
		f.fenceFailures--
		writeError(w, 409, "ReadFenceChanged", "workbench changed since the first page", nil)
		return
	}
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "c"))
		if err != nil {
			writeError(w, 400, "InvalidArguments", "cursor", nil)
			return
		}
		start = n
	}

	children := map[string]*fakeChild{}
	if dir == "" {
		for _, s := range sections {
			children[s] = &fakeChild{name: s, dir: true}
		}
	}
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	kp := f.key(agent, wb, "")
	for k, file := range f.files {
		p, ok := strings.CutPrefix(k, kp)
		if !ok {
			continue
		}
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		name, below, isDir := strings.Cut(rest, "/")
		_ = below
		if isDir {
			children[name] = &fakeChild{name: name, dir: true}
		} else {
			children[name] = &fakeChild{name: name, file: file}
		}
	}
	names := make([]string, 0, len(children))
	for n := range children {
		names = append(names, n)
	}
	slices.Sort(names)

	var entries []map[string]any
	end := min(start+limit, len(names))
	for _, n := range names[start:end] {
		c := children[n]
		full := prefix + n
		section, rel := splitSection(full)
		e := map[string]any{"name": n, "path": "/agents/" + agent + "/wb/" + wb + "/" + full,
			"section": section, "relative_path": rel}
		if c.dir {
			e["kind"] = "directory"
			e["size_bytes"] = 0
			e["entry_count"] = 1
		} else {
			e["kind"] = "file"
			e["size_bytes"] = len(c.file.data)
			e["generation"] = c.file.gen
			e["executable"] = c.file.exec
		}
		entries = append(entries, e)
	}
	var next any
	if end < len(names) {
		next = fmt.Sprintf("c%d", end)
	}
	writeJSON(w, 200, map[string]any{
		"workbench_id": wb, "workbench_path": "/agents/" + agent + "/wb/" + wb,
		"path": "/agents/" + agent + "/wb/" + wb + "/" + dir, "entry_count": len(entries),
		"entries": entries, "next_cursor": next, "truncated": next != nil,
	})
}
