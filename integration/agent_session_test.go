package integration

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionAgent is the agent root of the scripted agent session.
const sessionAgent = "session-agent"

// sessionTools are the 18 tools of docs/workbench.md, all of which the session must use.
var sessionTools = []string{"workbench_create", "workbench_put_file", "workbench_append", "workbench_edit",
	"workbench_list", "workbench_stat", "workbench_read", "workbench_grep", "workbench_search", "workbench_aggregate",
	"workbench_catalog", "workbench_find", "workbench_commit", "workbench_snapshot", "workbench_snapshot_renew",
	"workbench_snapshot_retire", "workbench_snapshot_list", "workbench_restore"}

// agentSession is one scripted session: an MCP client session, the tools it used, and the
// agent's own record of the files it wrote (full path inside the workbench → bytes).
type agentSession struct {
	t     *testing.T
	cs    *sdk.ClientSession
	used  map[string]int
	files map[string][]byte
}

// call runs a tool and returns its result decoded from the text content, numbers as
// json.Number written exactly as the server wrote them ("0.40" stays "0.40"). The answer
// must be one text content holding a JSON object whose first key is "status" ("success"
// exactly when isError is false), and structuredContent must be the same JSON value (it is
// compared as decoded by encoding/json, since the client decodes it into float64 numbers).
func (s *agentSession) call(tool string, a map[string]any) (toolResult, bool) {
	s.t.Helper()
	s.used[tool]++
	res, text, r := callTool(s.t, s.cs, tool, a)
	var fromText, fromStructured any
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal([]byte(text), &fromText) != nil || json.Unmarshal(raw, &fromStructured) != nil || !reflect.DeepEqual(fromText, fromStructured) {
		s.t.Errorf("%s: structuredContent is not the text content's JSON value:\ntext:       %s\nstructured: %s", tool, text, raw)
	}
	return r, res.IsError
}

// step runs one phase of the session as a subtest named for the tool it exercises, so that
// a failure names the tool; the phases share the session. A phase that stopped (Fatal)
// stops the session, since the later phases build on what it left.
func (s *agentSession) step(t *testing.T, tool string, phase func(t *testing.T)) {
	t.Helper()
	finished := false
	t.Run(tool, func(t *testing.T) {
		outer := s.t
		s.t = t
		defer func() { s.t = outer }()
		phase(t)
		finished = true
	})
	if !finished {
		t.FailNow()
	}
}

func (s *agentSession) ok(tool string, a map[string]any) toolResult {
	s.t.Helper()
	r, isErr := s.call(tool, a)
	if isErr {
		s.t.Fatalf("%s %v: want success, got %v", tool, a, r)
	}
	return r
}

// fails requires the error envelope with code: message, retryable and a details object.
func (s *agentSession) fails(tool string, a map[string]any, code string) toolResult {
	s.t.Helper()
	r, isErr := s.call(tool, a)
	if !isErr || r.str("code") != code {
		s.t.Errorf("%s %v: want an error with code %s, got isError %v: %v", tool, a, code, isErr, r)
		return r
	}
	_, hasRetryable := r["retryable"].(bool)
	_, hasDetails := r["details"].(map[string]any)
	if !hasRetryable || !hasDetails || r.str("message") == "" {
		s.t.Errorf("%s: error envelope without message, retryable or details: %v", tool, r)
	}
	return r
}

// details returns an error envelope's details.
func sessionDetails(r toolResult) toolResult {
	d, _ := r["details"].(map[string]any)
	return d
}

// items returns an array of objects of a result.
func sessionItems(t *testing.T, r toolResult, key string) []toolResult {
	t.Helper()
	var out []toolResult
	for _, x := range r.list(t, key) {
		m, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("%s holds %T, want objects: %v", key, x, r)
		}
		out = append(out, m)
	}
	return out
}

// withAt adds at_snapshot to a when at is not nil.
func withAt(a map[string]any, at any) map[string]any {
	if at != nil {
		a["at_snapshot"] = at
	}
	return a
}

// bodyArgs are the arguments of workbench_put_file or workbench_append that write body at
// full ("section/relative path") of workbench id: as base64 when asBase64, as text
// otherwise.
func bodyArgs(id, full string, body []byte, asBase64 bool) (section, rel string, a map[string]any) {
	section, rel, _ = strings.Cut(full, "/")
	a = map[string]any{"id": id, "section": section, "path": rel}
	if asBase64 {
		a["base64"] = base64.StdEncoding.EncodeToString(body)
	} else {
		a["text"] = string(body)
	}
	return section, rel, a
}

// readBytes reads a whole file as format=bytes, page by page with next_cursor, and checks
// each page's offset and size against the total.
func (s *agentSession) readBytes(id, full string, at any) []byte {
	s.t.Helper()
	section, rel, _ := strings.Cut(full, "/")
	var data []byte
	cursor := ""
	for page := 0; page < 10000; page++ {
		a := withAt(map[string]any{"id": id, "section": section, "path": rel, "format": "bytes"}, at)
		if cursor != "" {
			a["cursor"] = cursor
		}
		r := s.ok("workbench_read", a)
		if r.num(s.t, "offset") != int64(len(data)) {
			s.t.Errorf("read %s/%s page %d: offset %v, want %d", id, full, page, r["offset"], len(data))
		}
		b, err := base64.StdEncoding.DecodeString(r.str("bytes"))
		if err != nil {
			s.t.Fatalf("read %s/%s: bytes are not base64: %v", id, full, err)
		}
		data = append(data, b...)
		if cursor = r.str("next_cursor"); cursor == "" {
			if r.num(s.t, "total_size_bytes") != int64(len(data)) || r["truncated"] != false {
				s.t.Errorf("read %s/%s: last page %v after %d bytes", id, full, r, len(data))
			}
			return data
		}
	}
	s.t.Fatalf("read %s/%s: no end", id, full)
	return nil
}

// walk lists every file of workbench id (live or at a snapshot) through workbench_list,
// recursively and page by page, and returns their full paths in listing order.
func (s *agentSession) walk(id string, at any) []string {
	s.t.Helper()
	var files []string
	var visit func(dir string)
	visit = func(dir string) {
		cursor := ""
		for {
			a := withAt(map[string]any{"id": id, "limit": 2}, at)
			if dir != "" {
				section, rel, _ := strings.Cut(dir, "/")
				a["section"] = section
				if rel != "" {
					a["path"] = rel
				}
			}
			if cursor != "" {
				a["cursor"] = cursor
			}
			r := s.ok("workbench_list", a)
			for _, e := range sessionItems(s.t, r, "entries") {
				full := e.str("name")
				if dir != "" {
					full = dir + "/" + full
				}
				if e.str("kind") == "directory" {
					visit(full)
				} else {
					files = append(files, full)
				}
			}
			if cursor = r.str("next_cursor"); cursor == "" {
				return
			}
		}
	}
	visit("")
	return files
}

// sessionTreeDigest is tree_digest_uri as docs/workbench.md, workbench_commit defines it, computed by the
// client: SHA-256 over the members in byte order of their paths, each written as 8-byte
// big-endian length + path + 8-byte length + digest_uri.
func sessionTreeDigest(files map[string][]byte, exclude ...string) string {
	paths := slices.Sorted(maps.Keys(files))
	h := sha256.New()
	for _, p := range paths {
		if slices.Contains(exclude, p) {
			continue
		}
		for _, s := range []string{p, sha256URI(files[p])} {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// sessionCommitIdentity is commit_identity as docs/workbench.md, workbench_commit defines it.
func sessionCommitIdentity(id, contentDigest, manifestDigest string) string {
	h := sha256.New()
	h.Write([]byte("nokv.workbench.commit_identity.v1\x00"))
	for _, s := range []string{id, contentDigest, manifestDigest} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestAgentSessionOverStdioUsesAllEighteenTools is a realistic agent run over real stdio:
// `cairn mcp --agent A` driven by the official go-sdk client. The agent creates a workbench,
// stages inputs and scripts, streams logs, drafts and edits outputs, explores what it wrote
// (list, stat, read, grep, search, aggregate, catalog), commits, snapshots, keeps working,
// reads the frozen snapshot back, restores it (and the commit) into new workbenches that
// must equal it file for file, manages the snapshot's lease and finds its workbenches. Every
// step checks the result's fields against what the agent itself knows it wrote.
func TestAgentSessionOverStdioUsesAllEighteenTools(t *testing.T) {
	cs, closeSession := connectStdio(t, "mcp", "--agent", sessionAgent, "--data-dir", t.TempDir())
	defer closeSession()
	s := &agentSession{t: t, cs: cs, used: map[string]int{}, files: map[string][]byte{}}
	const wb = "run-1"
	root := "/agents/" + sessionAgent + "/wb"
	wbPath := root + "/" + wb

	// The profile offers exactly the 18 contract tools.
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var offered []string
	for _, tool := range list.Tools {
		offered = append(offered, tool.Name)
	}
	slices.Sort(offered)
	if want := slices.Sorted(slices.Values(sessionTools)); !slices.Equal(offered, want) {
		t.Fatalf("tools/list: %v, want exactly %v", offered, want)
	}

	// Each phase of the session is a subtest named for the tool it exercises; they share
	// the session and the agent's record of its files, and run in order.
	var (
		capture           []byte              // input/raw/capture.bin
		bySection         map[string][]string // full paths per section
		content, identity string              // of the commit
		commitArgs        map[string]any
		committed, env    toolResult // the commit's result and its run manifest envelope
		snap, scratch     toolResult // the named and the unnamed snapshot
		snapID            int64
		frozen            map[string][]byte // the files at the named snapshot
	)

	s.step(t, "workbench_create", func(t *testing.T) {
		// create, and its exact retry.
		created := s.ok("workbench_create", map[string]any{"id": wb})
		if created.str("workbench_id") != wb || created.str("path") != wbPath || fmt.Sprint(created["sections"]) != "[input scripts outputs logs metadata]" {
			t.Errorf("create: %v", created)
		}
		if again := s.ok("workbench_create", map[string]any{"id": wb}); fmt.Sprint(again) != fmt.Sprint(created) {
			t.Errorf("create retried: %v, first %v", again, created)
		}
	})

	// Inputs: text with a content type, JSON, YAML and binary (base64, with NUL bytes).
	put := func(full string, body []byte, binary bool, contentType string) toolResult {
		t := s.t
		t.Helper()
		section, rel, a := bodyArgs(wb, full, body, binary)
		if contentType != "" {
			a["content_type"] = contentType
		}
		r := s.ok("workbench_put_file", a)
		wantCT := contentType
		if wantCT == "" {
			wantCT = map[bool]string{false: "text/plain; charset=utf-8", true: "application/octet-stream"}[binary]
		}
		if r.str("workbench_id") != wb || r.str("section") != section || r.str("relative_path") != rel || r.str("path") != wbPath+"/"+full ||
			r.num(t, "size_bytes") != int64(len(body)) || r.str("digest_uri") != sha256URI(body) || r.str("content_type") != wantCT ||
			r["replace"] != false || r.num(t, "generation") < 1 {
			t.Errorf("put_file %s: %v", full, r)
		}
		s.files[full] = body
		return r
	}

	s.step(t, "workbench_put_file", func(t *testing.T) {
		put("input/task.md", []byte("# Task\nSummarize the error rate of the nightly job.\n"), false, "text/markdown")
		samples := `[{"id":1,"status":"ok"},{"id":2,"status":"error"},{"id":3,"status":"ok"},{"id":4,"status":"warn"},{"id":5,"status":"error"}]`
		put("input/samples.json", []byte(samples), false, "")
		put("input/config.yaml", []byte("job: nightly\nthresholds:\n  error: 0.2\n  warn: 0.5\n"), false, "")
		capture = make([]byte, 700)
		for i := range capture {
			capture[i] = byte(i * 31 % 251) // holds NUL bytes
		}
		put("input/raw/capture.bin", capture, true, "")
		put("scripts/analyze.py", []byte("import json\nrows = json.load(open('samples.json'))\nprint(sum(r['status'] == 'error' for r in rows))\n"), false, "text/x-python")
		put("scripts/run.sh", []byte("#!/bin/sh\npython3 analyze.py > ../outputs/report.md\n"), false, "text/x-shellscript")
	})

	// Logs are appended line by line; the digest covers each appended chunk only.
	appendLog := func(full string, chunk []byte, asBase64 bool) toolResult {
		t := s.t
		t.Helper()
		section, rel, a := bodyArgs(wb, full, chunk, asBase64)
		_, existed := s.files[full]
		r := s.ok("workbench_append", a)
		s.files[full] = append(s.files[full], chunk...)
		if r["created"] != !existed || r.num(t, "appended_bytes") != int64(len(chunk)) || r.num(t, "size_bytes") != int64(len(s.files[full])) ||
			r.str("digest") != sha256URI(chunk) || r.str("relative_path") != rel || r.str("section") != section {
			t.Errorf("append to %s (%d bytes so far): %v", full, len(s.files[full]), r)
		}
		return r
	}

	s.step(t, "workbench_append", func(t *testing.T) {
		var lastGen int64
		for i := range 12 {
			line := fmt.Sprintf("step %02d: ok\n", i)
			switch i {
			case 4:
				line = "step 04: WARN slow sample 4\n"
			case 7, 10:
				line = fmt.Sprintf("step %02d: ERROR sample failed\n", i)
			}
			r := appendLog("logs/run.log", []byte(line), i == 5)
			if g := r.num(t, "generation"); g <= lastGen {
				t.Errorf("append %d: generation %d after %d", i, g, lastGen)
			} else {
				lastGen = g
			}
		}
		appendLog("logs/metrics/rates.csv", []byte("metric,value\n"), true)
		appendLog("logs/metrics/rates.csv", []byte("error_rate,0.40\n"), false)
	})

	// Outputs: a draft, edited in place.
	edit := func(full, old, repl string, all bool) toolResult {
		t := s.t
		t.Helper()
		section, rel, _ := strings.Cut(full, "/")
		before := string(s.files[full])
		beforeGen := s.ok("workbench_stat", map[string]any{"id": wb, "section": section, "path": rel}).obj(t, "card").num(t, "generation")
		r := s.ok("workbench_edit", map[string]any{"id": wb, "section": section, "path": rel, "old_string": old, "new_string": repl, "replace_all": all})
		n := strings.Count(before, old)
		after := strings.Replace(before, old, repl, map[bool]int{false: 1, true: -1}[all])
		s.files[full] = []byte(after)
		wantRepl := int64(1)
		if all {
			wantRepl = int64(n)
		}
		if r.num(t, "replacements") != wantRepl || r.num(t, "size_bytes") != int64(len(after)) || r["no_change"] != (after == before) ||
			(after != before && r.num(t, "generation") <= beforeGen) || (after == before && r.num(t, "generation") != beforeGen) {
			t.Errorf("edit %s %q → %q: %v (generation before %d)", full, old, repl, r, beforeGen)
		}
		return r
	}

	s.step(t, "workbench_edit", func(t *testing.T) {
		put("outputs/report.md", []byte("# Report\nstatus: draft\nerrors: TBD\nwarnings: TBD\n"), false, "")
		edit("outputs/report.md", "draft", "final", false)
		amb := s.fails("workbench_edit", map[string]any{"id": wb, "section": "outputs", "path": "report.md", "old_string": "TBD", "new_string": "2"}, "AmbiguousEdit")
		if fmt.Sprint(sessionDetails(amb)["matches"]) != "2" || amb["retryable"] != false {
			t.Errorf("AmbiguousEdit: %v, want details.matches 2", amb)
		}
		s.fails("workbench_edit", map[string]any{"id": wb, "section": "outputs", "path": "report.md", "old_string": "draft", "new_string": "x"}, "NoMatch")
		edit("outputs/report.md", "errors: TBD", "errors: 2", false)
		edit("outputs/report.md", "warnings: TBD", "warnings: 1", false)
		put("outputs/summary.txt", []byte("rate rate rate\n"), false, "")
		edit("outputs/summary.txt", "rate", "error rate", true)
		edit("outputs/summary.txt", "error", "error", true) // identical result: no_change
		if st := s.ok("workbench_stat", map[string]any{"id": wb, "section": "outputs", "path": "report.md"}); st.obj(t, "card").str("content_type") != "text/plain; charset=utf-8" {
			t.Errorf("edit changed the content type: %v", st)
		}
	})

	s.step(t, "workbench_list", func(t *testing.T) {
		// Explore: list, stat, read.
		top := s.ok("workbench_list", map[string]any{"id": wb})
		var topNames []string
		for _, e := range sessionItems(t, top, "entries") {
			topNames = append(topNames, e.str("name"))
			if e.str("kind") != "directory" {
				t.Errorf("top entry %v is not a directory", e)
			}
		}
		if fmt.Sprint(topNames) != "[input logs metadata outputs scripts]" || top.str("workbench_path") != wbPath || top.num(t, "entry_count") != 5 {
			t.Errorf("top listing: %v", top)
		}
		walked := s.walk(wb, nil)
		if want := slices.Sorted(maps.Keys(s.files)); !slices.Equal(slices.Sorted(slices.Values(walked)), want) {
			t.Errorf("recursive listing: %v, want %v", walked, want)
		}
		in := s.ok("workbench_list", map[string]any{"id": wb, "section": "input"})
		if ents := sessionItems(t, in, "entries"); len(ents) != 4 || ents[1].str("name") != "raw" || ents[1].str("kind") != "directory" ||
			ents[1].num(t, "entry_count") != 1 || ents[1].num(t, "size_bytes") != int64(len(capture)) {
			t.Errorf("input listing: %v", in)
		}
	})

	s.step(t, "workbench_stat", func(t *testing.T) {
		var total int64
		for _, b := range s.files {
			total += int64(len(b))
		}
		if w := s.ok("workbench_stat", map[string]any{"id": wb}).obj(t, "card"); w.str("kind") != "workbench" || w.num(t, "size_bytes") != total || w.num(t, "file_count") != int64(len(s.files)) {
			t.Errorf("stat of the workbench: %v, want %d files, %d bytes", w, len(s.files), total)
		}
		if d := s.ok("workbench_stat", map[string]any{"id": wb, "section": "logs", "path": "metrics"}).obj(t, "card"); d.str("kind") != "directory" ||
			d.num(t, "size_bytes") != int64(len(s.files["logs/metrics/rates.csv"])) {
			t.Errorf("stat of a directory: %v", d)
		}
		for full, body := range s.files {
			section, rel, _ := strings.Cut(full, "/")
			st := s.ok("workbench_stat", map[string]any{"id": wb, "section": section, "path": rel})
			if c := st.obj(t, "card"); c.str("kind") != "file" || c.str("digest_uri") != sha256URI(body) || c.num(t, "size_bytes") != int64(len(body)) || c["entry_count"] != nil {
				t.Errorf("stat %s: %v", full, st)
			}
		}
	})

	s.step(t, "workbench_read", func(t *testing.T) {
		// JSON array records, two per page.
		var statuses []string
		cursor := ""
		for {
			a := map[string]any{"id": wb, "section": "input", "path": "samples.json", "limit": 2}
			if cursor != "" {
				a["cursor"] = cursor
			}
			r := s.ok("workbench_read", a)
			if r.str("record_type") != "json_array" || r.num(t, "record_count") != 5 || r.str("format") != "structured" {
				t.Errorf("read samples.json: %v", r)
			}
			for _, it := range sessionItems(t, r, "items") {
				statuses = append(statuses, fmt.Sprint(it.obj(t, "value")["status"]))
			}
			if cursor = r.str("next_cursor"); cursor == "" {
				break
			}
		}
		if fmt.Sprint(statuses) != "[ok error ok warn error]" {
			t.Errorf("samples.json records: %v", statuses)
		}
		cfg := s.ok("workbench_read", map[string]any{"id": wb, "section": "input", "path": "config.yaml"})
		if items := sessionItems(t, cfg, "items"); cfg.str("record_type") != "yaml_mapping" || len(items) != 1 ||
			fmt.Sprint(items[0].obj(t, "value")["thresholds"]) != "map[error:0.2 warn:0.5]" {
			t.Errorf("read config.yaml: %v", cfg)
		}
		var logLines []string
		cursor = ""
		for {
			a := map[string]any{"id": wb, "section": "logs", "path": "run.log", "limit": 5}
			if cursor != "" {
				a["cursor"] = cursor
			}
			r := s.ok("workbench_read", a)
			for _, it := range sessionItems(t, r, "items") {
				logLines = append(logLines, it.str("value"))
			}
			if cursor = r.str("next_cursor"); cursor == "" {
				break
			}
		}
		if want := strings.Split(strings.TrimSuffix(string(s.files["logs/run.log"]), "\n"), "\n"); !slices.Equal(logLines, want) {
			t.Errorf("run.log lines: %v, want %v", logLines, want)
		}
		if got := s.readBytes(wb, "input/raw/capture.bin", nil); string(got) != string(capture) {
			t.Errorf("capture.bin read back in pages differs (%d bytes)", len(got))
		}
		part := s.ok("workbench_read", map[string]any{"id": wb, "section": "input", "path": "raw/capture.bin", "format": "bytes", "offset": 650, "limit": 100})
		if b, _ := base64.StdEncoding.DecodeString(part.str("bytes")); string(b) != string(capture[650:]) || part["truncated"] != false {
			t.Errorf("bytes from offset 650: %v", part)
		}
		logGen := s.ok("workbench_stat", map[string]any{"id": wb, "section": "logs", "path": "run.log"}).obj(t, "card").num(t, "generation")
		if nm := s.ok("workbench_read", map[string]any{"id": wb, "section": "logs", "path": "run.log", "if_none_match": logGen}); nm["not_modified"] != true || nm["items"] != nil {
			t.Errorf("if_none_match of the current generation: %v", nm)
		}
	})

	s.step(t, "workbench_grep", func(t *testing.T) {
		// grep: OR of literal patterns, case-insensitive; a glob; paging.
		g := s.ok("workbench_grep", map[string]any{"id": wb, "section": "logs", "pattern": "error|warn", "recursive": true})
		var hits []string
		for _, m := range sessionItems(t, g, "matches") {
			hits = append(hits, fmt.Sprintf("%s:%v:%s", m.str("relative_path"), m["line_number"], m.str("snippet")))
			if m.str("section") != "logs" || m.str("path") != wbPath+"/logs/"+m.str("relative_path") {
				t.Errorf("grep match %v", m)
			}
		}
		wantHits := []string{"metrics/rates.csv:2:error_rate,0.40", "run.log:5:step 04: WARN slow sample 4",
			"run.log:8:step 07: ERROR sample failed", "run.log:11:step 10: ERROR sample failed"}
		if !slices.Equal(hits, wantHits) || g["truncated"] != false {
			t.Errorf("grep error|warn: %v, want %v", hits, wantHits)
		}
		var paged []string
		cursor := ""
		for {
			a := map[string]any{"id": wb, "section": "logs", "pattern": "ERROR|Warn", "recursive": true, "limit": 1}
			if cursor != "" {
				a["cursor"] = cursor
			}
			r := s.ok("workbench_grep", a)
			for _, m := range sessionItems(t, r, "matches") {
				paged = append(paged, fmt.Sprintf("%s:%v:%s", m.str("relative_path"), m["line_number"], m.str("snippet")))
			}
			if cursor = r.str("next_cursor"); cursor == "" {
				break
			}
		}
		if !slices.Equal(paged, wantHits) {
			t.Errorf("grep one match per page: %v, want %v", paged, wantHits)
		}
		if gj := s.ok("workbench_grep", map[string]any{"id": wb, "pattern": "\"error\"", "recursive": true, "glob": "*.json"}); len(gj.list(t, "matches")) != 1 {
			t.Errorf("grep with glob *.json: %v", gj)
		}
		if gp := s.ok("workbench_grep", map[string]any{"id": wb, "pattern": "python3", "patterns": []string{"|"}, "recursive": true, "section": "scripts"}); len(gp.list(t, "matches")) != 1 {
			t.Errorf("grep with a literal | in patterns: %v", gp)
		}
	})

	s.step(t, "workbench_search", func(t *testing.T) {
		// search, aggregate and catalog over the built-in fields.
		bySection = map[string][]string{}
		for full := range s.files {
			section, _, _ := strings.Cut(full, "/")
			bySection[section] = append(bySection[section], full)
		}
		logs := s.ok("workbench_search", map[string]any{"id": wb, "predicates": []any{map[string]any{"field": "artifact.section", "op": "eq", "value": "logs"}},
			"fields": []string{"artifact.size_bytes", "artifact.digest"}})
		if logs.num(t, "match_count") != int64(len(bySection["logs"])) {
			t.Errorf("search section=logs: %v", logs)
		}
		for _, h := range sessionItems(t, logs, "matches") {
			full := h.str("section") + "/" + h.str("relative_path")
			f := h.obj(t, "values")
			if f.num(t, "artifact.size_bytes") != int64(len(s.files[full])) || f.str("artifact.digest") != sha256URI(s.files[full]) {
				t.Errorf("search match %s: values %v", full, f)
			}
		}
		structured := s.ok("workbench_search", map[string]any{"id": wb, "predicates": []any{map[string]any{"field": "artifact.ext", "op": "in", "value": []string{"json", "yaml"}}}})
		var structuredHits []string
		for _, h := range sessionItems(t, structured, "matches") {
			structuredHits = append(structuredHits, h.str("relative_path"))
		}
		if fmt.Sprint(structuredHits) != "[config.yaml samples.json]" {
			t.Errorf("search ext in [json yaml]: %v", structuredHits)
		}
		bySize := slices.SortedFunc(maps.Keys(s.files), func(a, b string) int { return len(s.files[b]) - len(s.files[a]) })
		largest := s.ok("workbench_search", map[string]any{"id": wb, "sort": []any{map[string]any{"field": "artifact.size_bytes", "direction": "desc"}},
			"limit": 2, "facets": []string{"artifact.section"}})
		if hs := sessionItems(t, largest, "matches"); len(hs) != 2 || hs[0].str("section")+"/"+hs[0].str("relative_path") != bySize[0] ||
			hs[1].str("section")+"/"+hs[1].str("relative_path") != bySize[1] || largest["truncated"] != true {
			t.Errorf("two largest files: %v, want %v", largest, bySize[:2])
		}
		for _, fc := range sessionItems(t, largest, "facets") {
			for _, v := range fc.list(t, "values") {
				fv := toolResult(v.(map[string]any))
				if fv.num(t, "count") != int64(len(bySection[fv.str("value")])) {
					t.Errorf("facet %v: want %d files", fv, len(bySection[fv.str("value")]))
				}
			}
		}
		rootWide := s.ok("workbench_search", map[string]any{"predicates": []any{map[string]any{"field": "artifact.name", "op": "eq", "value": "task.md"}}})
		if hs := sessionItems(t, rootWide, "matches"); len(hs) != 1 || hs[0].str("workbench_id") != wb {
			t.Errorf("root-wide search for task.md: %v", rootWide)
		}
	})

	s.step(t, "workbench_aggregate", func(t *testing.T) {
		agg := s.ok("workbench_aggregate", map[string]any{"id": wb, "group_by": []string{"artifact.section"},
			"measures": []any{map[string]any{"name": "files", "op": "count"}, map[string]any{"name": "bytes", "op": "sum", "field": "artifact.size_bytes"},
				map[string]any{"name": "largest", "op": "max", "field": "artifact.size_bytes"}}})
		if agg.num(t, "input_match_count") != int64(len(s.files)) || agg.num(t, "group_count") != int64(len(bySection)) ||
			agg.num(t, "row_count") != int64(len(agg.list(t, "groups"))) {
			t.Errorf("aggregate: %v", agg)
		}
		for _, grp := range sessionItems(t, agg, "groups") {
			section := fmt.Sprint(grp.obj(t, "key")["artifact.section"])
			var sum, largest int64
			for _, full := range bySection[section] {
				sum += int64(len(s.files[full]))
				largest = max(largest, int64(len(s.files[full])))
			}
			m := grp.obj(t, "values")
			if m.num(t, "files") != int64(len(bySection[section])) || m.num(t, "bytes") != sum || m.num(t, "largest") != largest {
				t.Errorf("aggregate group %s: %v, want %d files, %d bytes, largest %d", section, grp, len(bySection[section]), sum, largest)
			}
		}
	})

	s.step(t, "workbench_catalog", func(t *testing.T) {
		cat := s.ok("workbench_catalog", map[string]any{"id": wb})
		var builtins []string
		for _, f := range sessionItems(t, cat.obj(t, "catalog"), "fields") {
			if f["builtin"] == true {
				builtins = append(builtins, f.str("field"))
			}
			if f.str("field") == "artifact.name" && (f.num(t, "file_count") != int64(len(s.files)) || !slices.Contains(f.list(t, "operators"), any("prefix"))) {
				t.Errorf("catalog artifact.name: %v", f)
			}
		}
		wantBuiltins := []string{"artifact.content_type", "artifact.digest", "artifact.ext", "artifact.generation", "artifact.name",
			"artifact.producer", "artifact.producer_principal", "artifact.producer_surface",
			"artifact.section", "artifact.size_bytes", "artifact.updated_at"}
		if slices.Sort(builtins); !slices.Equal(builtins, wantBuiltins) || cat.num(t, "file_count") != int64(len(s.files)) {
			t.Errorf("catalog built-ins %v, want %v: %v", builtins, wantBuiltins, cat)
		}
		facets := s.ok("workbench_catalog", map[string]any{"id": wb, "field_prefix": "artifact.sec", "include_facets": true})
		if fs, fcs := sessionItems(t, facets.obj(t, "catalog"), "fields"), sessionItems(t, facets.obj(t, "catalog"), "facets"); len(fs) != 1 || len(fcs) != 1 ||
			fcs[0].str("field") != fs[0].str("field") || len(fcs[0].list(t, "values")) != len(bySection) {
			t.Errorf("catalog artifact.sec* with facets: %v", facets)
		}
	})

	s.step(t, "workbench_commit", func(t *testing.T) {
		// commit: the agent computes the digests and the identity itself.
		manifest := json.RawMessage(`{"run": "nightly-42", "tags": ["b", "a"], "notes": "<ok> & done",
		"metrics": {"samples": 5, "error_rate": 0.40}}`)
		canonical := `{"metrics":{"error_rate":0.40,"samples":5},"notes":"<ok> & done","run":"nightly-42","tags":["b","a"]}`
		content = sessionTreeDigest(s.files)
		manifestDigest := sha256URI([]byte(canonical))
		identity = sessionCommitIdentity(wb, content, manifestDigest)
		commitArgs = map[string]any{"id": wb, "manifest": manifest, "content_digest_uri": content}
		committed = s.ok("workbench_commit", commitArgs)
		if committed.str("path") != wbPath+"/metadata/run_manifest.json" || committed.str("content_digest_uri") != content ||
			committed.str("manifest_digest_uri") != manifestDigest || committed.str("commit_identity") != identity ||
			committed.str("tree_digest_uri") != sessionTreeDigest(s.files) || committed["idempotent_replay"] != false || committed["replace"] != false {
			t.Errorf("commit: %v\nwant manifest_digest_uri %s, commit_identity %s, tree_digest_uri %s", committed, manifestDigest, identity, content)
		}
		envelope := s.readBytes(wb, "metadata/run_manifest.json", nil)
		if sha256URI(envelope) != committed.str("envelope_digest_uri") || int64(len(envelope)) != committed.num(t, "size_bytes") {
			t.Errorf("run_manifest.json: %d bytes, digest %s; commit said %v bytes, %s", len(envelope), sha256URI(envelope), committed["size_bytes"], committed["envelope_digest_uri"])
		}
		var err error
		env, err = decodeJSON(envelope)
		if err != nil {
			t.Fatalf("run_manifest.json is not JSON: %v", err)
		}
		if env.str("schema") != "nokv.workbench.run_manifest.v1" || env.str("workbench_id") != wb || env.str("workbench_path") != wbPath ||
			env.str("content_digest_uri") != content || env.str("manifest_digest_uri") != manifestDigest || env.str("commit_identity") != identity ||
			env.num(t, "committed_at_unix_seconds") != committed.num(t, "committed_at_unix_seconds") || !strings.Contains(string(envelope), `"manifest":`+canonical) {
			t.Errorf("run_manifest.json envelope: %s", envelope)
		}
		s.files["metadata/run_manifest.json"] = envelope
		replay := s.ok("workbench_commit", commitArgs)
		for _, k := range []string{"commit_identity", "manifest_digest_uri", "envelope_digest_uri", "tree_digest_uri", "generation", "committed_at_unix_seconds"} {
			if fmt.Sprint(replay[k]) != fmt.Sprint(committed[k]) {
				t.Errorf("commit replay: %s = %v, first commit %v", k, replay[k], committed[k])
			}
		}
		if replay["idempotent_replay"] != true {
			t.Errorf("commit replay: %v", replay)
		}
		s.fails("workbench_commit", map[string]any{"id": wb, "manifest": map[string]any{"run": "nightly-43"}, "content_digest_uri": content}, "WorkbenchCommitConflict")
	})

	s.step(t, "workbench_snapshot", func(t *testing.T) {
		// snapshot, named and annotated, then a second one that only holds a lease.
		before := time.Now()
		snap = s.ok("workbench_snapshot", map[string]any{"id": wb, "name": "before-edits", "reason": "checkpoint before the second pass",
			"metadata": map[string]any{"ticket": "OPS-7", "pass": 1}})
		snapID = snap.num(t, "snapshot_id")
		lease := time.UnixMilli(snap.num(t, "lease_expires_at"))
		ann := snap.obj(t, "annotation")
		if snapID < 1 || snap.str("name") != "before-edits" || snap.str("state") != "alive" || snap.num(t, "ttl_days") != 7 ||
			snap.str("workbench_id") != wb || snap.str("path") != wbPath || snap.num(t, "read_version") < committed.num(t, "generation") ||
			ann.str("reason") != "checkpoint before the second pass" || fmt.Sprint(ann["metadata"]) != "map[pass:1 ticket:OPS-7]" ||
			snap.num(t, "lease_expires_at") != snap.num(t, "lease_expires_unix_ms") || snap["retire_annotation"] != nil ||
			lease.Before(before.Add(7*24*time.Hour-time.Hour)) || lease.After(time.Now().Add(7*24*time.Hour+time.Hour)) {
			t.Errorf("snapshot: %v", snap)
		}
		frozen = maps.Clone(s.files)
		scratch = s.ok("workbench_snapshot", map[string]any{"id": wb, "ttl_days": 1})
		if scratch["name"] != nil || scratch.num(t, "snapshot_id") <= snapID || scratch.num(t, "ttl_days") != 1 {
			t.Errorf("unnamed snapshot: %v", scratch)
		}

		// Keep working after the snapshot.
		edit("outputs/report.md", "status: final", "status: final (revised)", false)
		appendLog("logs/run.log", []byte("step 12: ok\nstep 13: ok\n"), false)
		put("outputs/extra.txt", []byte("late output\n"), false, "")
		replaced := []byte("# Task\nSummarize error and warning rates of the nightly job.\n")
		if r := s.ok("workbench_put_file", map[string]any{"id": wb, "section": "input", "path": "task.md", "text": string(replaced), "replace": true}); r["replace"] != true ||
			r.str("content_type") != "text/plain; charset=utf-8" {
			t.Errorf("replace task.md: %v", r)
		}
		s.files["input/task.md"] = replaced
		// The commit's identity covers what the caller claims, not the tree: repeated after the
		// edits with the same arguments it is a replay that seals nothing new.
		if r := s.ok("workbench_commit", commitArgs); r["idempotent_replay"] != true || r.num(t, "generation") != committed.num(t, "generation") ||
			r.str("tree_digest_uri") != committed.str("tree_digest_uri") {
			t.Errorf("commit replay after edits: %v", r)
		}

		// The snapshot stays frozen: by id and by name it shows the files as they were.
		for _, at := range []any{snapID, "before-edits"} {
			if got, want := s.walk(wb, at), slices.Sorted(maps.Keys(frozen)); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
				t.Errorf("files at snapshot %v: %v, want %v", at, got, want)
			}
			l := s.ok("workbench_list", map[string]any{"id": wb, "section": "outputs", "at_snapshot": at})
			if fmt.Sprint(l["at_snapshot"]) != fmt.Sprint(at) || len(l.list(t, "entries")) != 2 {
				t.Errorf("outputs at snapshot %v: %v, want report.md and summary.txt", at, l)
			}
			st := s.ok("workbench_stat", map[string]any{"id": wb, "section": "outputs", "path": "report.md", "at_snapshot": at})
			if st.obj(t, "card").str("digest_uri") != sha256URI(frozen["outputs/report.md"]) || fmt.Sprint(st["at_snapshot"]) != fmt.Sprint(at) {
				t.Errorf("report.md at snapshot %v: %v", at, st)
			}
			if got := s.readBytes(wb, "input/task.md", at); string(got) != string(frozen["input/task.md"]) {
				t.Errorf("task.md at snapshot %v: %q", at, got)
			}
			r := s.ok("workbench_read", map[string]any{"id": wb, "section": "logs", "path": "run.log", "at_snapshot": at, "limit": 300})
			if r.num(t, "record_count") != 12 {
				t.Errorf("run.log at snapshot %v: %d lines, want 12", at, r.num(t, "record_count"))
			}
		}
		if live := s.walk(wb, nil); len(live) != len(frozen)+1 || !slices.Contains(live, "outputs/extra.txt") {
			t.Errorf("live files %v: want the snapshot's and outputs/extra.txt", live)
		}
		if st := s.ok("workbench_stat", map[string]any{"id": wb, "section": "outputs", "path": "report.md"}).obj(t, "card"); st.str("digest_uri") != sha256URI(s.files["outputs/report.md"]) ||
			st.str("digest_uri") == sha256URI(frozen["outputs/report.md"]) {
			t.Errorf("live report.md still has the snapshot's digest: %v", st)
		}
	})

	s.step(t, "workbench_snapshot_renew", func(t *testing.T) {
		// Renew: longer leases extend, a shorter one is a no-op that returns the record.
		renewed := s.ok("workbench_snapshot_renew", map[string]any{"id": wb, "name": "before-edits", "ttl_days": 30})
		if renewed.num(t, "snapshot_id") != snapID || renewed.num(t, "lease_expires_unix_ms") <= snap.num(t, "lease_expires_unix_ms") ||
			renewed.num(t, "ttl_days") != 30 || renewed.str("state") != "alive" || renewed["renewed"] != true ||
			renewed.num(t, "lease_expires_at") != renewed.num(t, "lease_expires_unix_ms") {
			t.Errorf("renew to 30 days: %v (was %v)", renewed, snap["lease_expires_unix_ms"])
		}
		if r := s.ok("workbench_snapshot_renew", map[string]any{"id": wb, "snapshot_id": snapID, "ttl_days": 2}); r.num(t, "lease_expires_unix_ms") != renewed.num(t, "lease_expires_unix_ms") || r["renewed"] != false {
			t.Errorf("renew to 2 days shortened the lease: %v", r)
		}
	})

	s.step(t, "workbench_restore", func(t *testing.T) {
		// Restore the snapshot into a new workbench; it must equal the snapshot file for file.
		restoreArgs := map[string]any{"id": wb, "destination_id": "run-1-restored", "at_snapshot": "before-edits"}
		restored := s.ok("workbench_restore", restoreArgs)
		opID := restored.str("operation_id")
		commitID, hasCommitID := restored["commit_id"]
		if restored.str("state") != "complete" || len(opID) != 64 || restored.str("source_workbench_id") != wb ||
			restored.str("destination_workbench_id") != "run-1-restored" || restored.num(t, "snapshot_id") != snapID ||
			!hasCommitID || commitID != nil || restored["cleanup_pending"] != false ||
			restored.num(t, "read_version") != snap.num(t, "read_version") || restored.num(t, "destination_generation") < 1 || restored["idempotent_replay"] != false ||
			restored.str("restore_manifest") != root+"/run-1-restored/metadata/restore_manifest.json" {
			t.Errorf("restore: %v", restored)
		}
		// The restore manifest the destination holds (schema v2) names the operation, both
		// workbenches and, under restored_from.source, the snapshot restored; nothing else.
		rm := mustDecode(t, s.readBytes("run-1-restored", "metadata/restore_manifest.json", nil))
		checkRestoreManifest(t, rm, opID, wb, wbPath, "run-1-restored", root+"/run-1-restored", map[string]any{"kind": "snapshot", "snapshot_id": json.Number(fmt.Sprint(snapID))})
		if again := s.ok("workbench_restore", restoreArgs); again["idempotent_replay"] != true || again.str("operation_id") != opID ||
			again.num(t, "destination_generation") != restored.num(t, "destination_generation") {
			t.Errorf("restore retried: %v", again)
		}
		s.fails("workbench_restore", map[string]any{"id": wb, "destination_id": "run-1-restored", "at_snapshot": snapID + 1}, "AlreadyExists")
		reserved := []string{"metadata/run_manifest.json", "metadata/restore_manifest.json"}
		checkRestored := func(dst string, want map[string][]byte) {
			t.Helper()
			got := s.walk(dst, nil)
			var wantPaths []string
			for p := range want {
				if !slices.Contains(reserved, p) {
					wantPaths = append(wantPaths, p)
				}
			}
			wantPaths = append(wantPaths, reserved...)
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(wantPaths))) {
				t.Errorf("files of %s: %v, want %v", dst, got, wantPaths)
			}
			for _, full := range wantPaths {
				if slices.Contains(reserved, full) {
					continue
				}
				section, rel, _ := strings.Cut(full, "/")
				st := s.ok("workbench_stat", map[string]any{"id": dst, "section": section, "path": rel}).obj(t, "card")
				src := s.ok("workbench_stat", map[string]any{"id": wb, "section": section, "path": rel, "at_snapshot": snapID}).obj(t, "card")
				if st.str("digest_uri") != src.str("digest_uri") || st.str("digest_uri") != sha256URI(want[full]) || st.str("content_type") != src.str("content_type") {
					t.Errorf("%s/%s: %v; at the snapshot: %v", dst, full, st, src)
				}
				if b := s.readBytes(dst, full, nil); string(b) != string(want[full]) {
					t.Errorf("%s/%s: %d bytes read back differ from the snapshot's %d", dst, full, len(b), len(want[full]))
				}
			}
			// The destination is committed by the restore: manifest = restore manifest, content
			// digest = tree digest of the restored members.
			rmBytes := s.readBytes(dst, "metadata/restore_manifest.json", nil)
			f := s.ok("workbench_find", map[string]any{"committed": true, "manifest_pattern": dst, "include_manifest": true})
			var found toolResult
			for _, w := range sessionItems(t, f, "matches") {
				if w.str("workbench_id") == dst {
					found = w
				}
			}
			if found == nil {
				t.Fatalf("find does not report %s as committed: %v", dst, f)
			}
			fm := found.obj(t, "manifest")
			if fm.str("content_digest_uri") != sessionTreeDigest(want, reserved...) || fm.str("manifest_digest_uri") != sha256URI(rmBytes) ||
				fmt.Sprint(fm.obj(t, "manifest")) != fmt.Sprint(mustDecode(t, rmBytes)) {
				t.Errorf("commit of %s: %v; restore manifest %s", dst, fm, rmBytes)
			}
		}
		checkRestored("run-1-restored", frozen)
		if again := mustDecode(t, s.readBytes("run-1-restored", "metadata/restore_manifest.json", nil)); !reflect.DeepEqual(again, rm) {
			t.Errorf("restore_manifest.json changed after the retried restore: %v, first %v", again, rm)
		}
		// The source is unchanged by the restore.
		if st := s.ok("workbench_stat", map[string]any{"id": wb, "section": "outputs", "path": "report.md"}).obj(t, "card"); st.str("digest_uri") != sha256URI(s.files["outputs/report.md"]) {
			t.Errorf("source report.md after the restore: %v", st)
		}
		// The commit was sealed right before the snapshot: restoring it gives the same files.
		atCommit := s.ok("workbench_restore", map[string]any{"id": wb, "destination_id": "run-1-at-commit", "at_commit": identity})
		snapshotID, hasSnapshotID := atCommit["snapshot_id"]
		if atCommit.str("commit_id") != identity || atCommit.str("state") != "complete" || !hasSnapshotID || snapshotID != nil ||
			atCommit["cleanup_pending"] != false || atCommit.str("restore_manifest") != root+"/run-1-at-commit/metadata/restore_manifest.json" {
			t.Errorf("restore at_commit: %v", atCommit)
		}
		checkRestoreManifest(t, mustDecode(t, s.readBytes("run-1-at-commit", "metadata/restore_manifest.json", nil)), atCommit.str("operation_id"),
			wb, wbPath, "run-1-at-commit", root+"/run-1-at-commit", map[string]any{"kind": "commit", "commit_id": identity})
		checkRestored("run-1-at-commit", frozen)
	})

	s.step(t, "workbench_snapshot_retire", func(t *testing.T) {
		// Retire: first true, an exact retry false with the original reason; reads then fail.
		retired := s.ok("workbench_snapshot_retire", map[string]any{"id": wb, "name": "before-edits", "reason": "restored; no longer needed"})
		if retired["retired"] != true || retired.str("state") != "retired" || retired.str("reason") != "restored; no longer needed" || retired.num(t, "snapshot_id") != snapID ||
			fmt.Sprint(retired["retire_annotation"]) != "map[metadata:<nil> reason:restored; no longer needed]" {
			t.Errorf("retire: %v", retired)
		}
		if again := s.ok("workbench_snapshot_retire", map[string]any{"id": wb, "snapshot_id": snapID, "reason": "another reason"}); again["retired"] != false ||
			again.str("reason") != "restored; no longer needed" {
			t.Errorf("retire retried: %v", again)
		}
		if e := s.fails("workbench_read", map[string]any{"id": wb, "section": "input", "path": "task.md", "at_snapshot": "before-edits"}, "SnapshotExpired"); sessionDetails(e).str("state") != "retired" {
			t.Errorf("read at a retired snapshot: %v", e)
		}
		s.fails("workbench_snapshot_renew", map[string]any{"id": wb, "name": "before-edits"}, "SnapshotExpired")
	})

	s.step(t, "workbench_snapshot_list", func(t *testing.T) {
		snaps := s.ok("workbench_snapshot_list", map[string]any{"id": wb})
		entries := sessionItems(t, snaps, "snapshots")
		if snaps.num(t, "snapshot_count") != 2 || len(entries) != 2 {
			t.Fatalf("snapshot_list: %v", snaps)
		}
		if e := entries[0]; e.num(t, "snapshot_id") != snapID || e.str("state") != "retired" || fmt.Sprint(e["aliases"]) != "[before-edits]" ||
			e.str("retire_reason") != "restored; no longer needed" || e.obj(t, "retire_annotation").str("reason") != "restored; no longer needed" ||
			e.obj(t, "annotation").str("reason") != "checkpoint before the second pass" || e.num(t, "lease_expires_at") != e.num(t, "lease_expires_unix_ms") ||
			e.num(t, "ttl_days") != 30 || fmt.Sprint(e["consumers"]) != "0" {
			t.Errorf("snapshot_list: retired snapshot %v", e)
		}
		if e := entries[1]; e.num(t, "snapshot_id") != scratch.num(t, "snapshot_id") || e.str("state") != "alive" || fmt.Sprint(e["aliases"]) != "[]" ||
			e.num(t, "lease_expires_unix_ms") != scratch.num(t, "lease_expires_unix_ms") {
			t.Errorf("snapshot_list: alive snapshot %v", e)
		}
	})

	s.step(t, "workbench_find", func(t *testing.T) {
		// find: by committed state and by a case-insensitive literal over the run manifest.
		s.ok("workbench_create", map[string]any{"id": "scratchpad"})
		findIDs := func(a map[string]any) []string {
			t.Helper()
			var ids []string
			cursor := ""
			for {
				if cursor != "" {
					a["cursor"] = cursor
				}
				r := s.ok("workbench_find", a)
				if r.num(t, "match_count") != int64(len(r.list(t, "matches"))) {
					t.Errorf("find %v: match_count differs from the matches returned: %v", a, r)
				}
				for _, w := range sessionItems(t, r, "matches") {
					ids = append(ids, w.str("workbench_id"))
				}
				if cursor = r.str("next_cursor"); cursor == "" {
					return ids
				}
			}
		}
		if got := findIDs(map[string]any{"committed": true, "limit": 1}); fmt.Sprint(got) != "[run-1 run-1-at-commit run-1-restored]" {
			t.Errorf("find committed: %v", got)
		}
		if got := findIDs(map[string]any{"committed": false}); fmt.Sprint(got) != "[scratchpad]" {
			t.Errorf("find uncommitted: %v", got)
		}
		if got := findIDs(map[string]any{}); fmt.Sprint(got) != "[run-1 run-1-at-commit run-1-restored scratchpad]" {
			t.Errorf("find all: %v", got)
		}
		nightly := s.ok("workbench_find", map[string]any{"manifest_pattern": "NIGHTLY-42", "include_manifest": true})
		if ws := sessionItems(t, nightly, "matches"); len(ws) != 1 || ws[0].str("workbench_id") != wb || ws[0].str("commit_identity") != identity ||
			ws[0]["committed"] != true || fmt.Sprint(ws[0].obj(t, "manifest")) != fmt.Sprint(env) {
			t.Errorf("find manifest_pattern NIGHTLY-42: %v", nightly)
		}
		if got := findIDs(map[string]any{"manifest_pattern": "restore_manifest.v2"}); fmt.Sprint(got) != "[run-1-at-commit run-1-restored]" {
			t.Errorf("find restored workbenches by their manifest: %v", got)
		}
	})

	for _, tool := range sessionTools {
		if s.used[tool] == 0 {
			t.Errorf("the session never used %s", tool)
		}
	}
	t.Logf("tool calls: %v", s.used)
}

// checkRestoreManifest checks a metadata/restore_manifest.json body against schema
// nokv.workbench.restore_manifest.v2: exactly its keys (no read_version, no
// *_workbench_path), the operation, the source and destination workbenches with their
// presentation paths, and restored_from naming the source and the snapshot or commit read.
func checkRestoreManifest(t *testing.T, rm toolResult, opID, src, srcPath, dst, dstPath string, source map[string]any) {
	t.Helper()
	wantKeys := []string{"destination_path", "destination_workbench_id", "operation_id", "restored_from", "schema", "source_path", "source_workbench_id"}
	from := rm.obj(t, "restored_from")
	if got := slices.Sorted(maps.Keys(rm)); !slices.Equal(got, wantKeys) ||
		rm.str("schema") != "nokv.workbench.restore_manifest.v2" || rm.str("operation_id") != opID || len(opID) != 64 ||
		rm.str("source_workbench_id") != src || rm.str("source_path") != srcPath ||
		rm.str("destination_workbench_id") != dst || rm.str("destination_path") != dstPath ||
		len(from) != 3 || from.str("workbench_id") != src || from.str("path") != srcPath || !reflect.DeepEqual(map[string]any(from.obj(t, "source")), source) {
		t.Errorf("restore manifest of %s: %v, want keys %v, operation %s, from %s (%s), source %v", dst, rm, wantKeys, opID, src, srcPath, source)
	}
}

func mustDecode(t *testing.T, b []byte) toolResult {
	t.Helper()
	m, err := decodeJSON(b)
	if err != nil {
		t.Fatalf("not a JSON object (%v): %s", err, b)
	}
	return m
}
