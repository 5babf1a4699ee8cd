package mcp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// suitePayloadCap keeps PayloadTooLarge cheap in the shared suite; the 16 MiB default is
// exercised over HTTP by TestHTTPPayloadOneByteAboveTheDefaultCapIsPayloadTooLarge.
const suitePayloadCap = 64 << 10

func TestToolsOverInMemoryTransport(t *testing.T) {
	svc := newService(t, suitePayloadCap)
	runToolSuite(t, connectInMemory(t, svc, "agent-mem"), "agent-mem")
}

func TestToolsOverStreamableHTTP(t *testing.T) {
	svc := newService(t, suitePayloadCap)
	ts := newHTTPServer(t, svc)
	runToolSuite(t, connectHTTP(t, ts.URL+"/v1/agents/agent-http/mcp"), "agent-http")
}

func digestURI(b []byte) string {
	d := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(d[:])
}

// runToolSuite drives the seven tools through the success and error paths docs/workbench.md names
// for them. Each subtest uses its own workbench.
func runToolSuite(t *testing.T, cs *sdk.ClientSession, agent string) {
	root := "/agents/" + agent + "/wb"

	t.Run("tools/list offers exactly the 18 contract tools with the checked-in schemas", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
			var got, want any
			b, _ := json.Marshal(tl.InputSchema)
			json.Unmarshal(b, &got)
			json.Unmarshal(mustSchema(tl.Name).raw, &want)
			if !reflect.DeepEqual(stripDescriptions(got), stripDescriptions(want)) {
				t.Errorf("%s: advertised schema differs from schemas/workbench.json", tl.Name)
			}
			if tl.Description == "" {
				t.Errorf("%s: no description", tl.Name)
			}
		}
		slices.Sort(names)
		var want []string
		for name := range contractTools {
			want = append(want, name)
		}
		slices.Sort(want)
		if len(want) != 18 {
			t.Fatalf("the contract table lists %d tools", len(want))
		}
		if !slices.Equal(names, want) {
			t.Errorf("tools = %v, want %v", names, want)
		}
	})

	t.Run("create returns the workbench and an exact retry returns the same result", func(t *testing.T) {
		r := ok(t, cs, "workbench_create", args{"id": "wb-create"})
		if r.str("workbench_id") != "wb-create" || r.str("path") != root+"/wb-create" {
			t.Errorf("create: %v", r)
		}
		if got := fmt.Sprint(r["sections"]); got != "[input scripts outputs logs metadata]" {
			t.Errorf("sections = %s", got)
		}
		again := ok(t, cs, "workbench_create", args{"id": "wb-create"})
		if !reflect.DeepEqual(r, again) {
			t.Errorf("retry: %v, first: %v", again, r)
		}
		invalid(t, cs, "workbench_create", args{"id": "-starts-with-dash"}, "id")
		invalid(t, cs, "workbench_create", args{"id": strings.Repeat("a", 129)}, "id")
	})

	t.Run("put_file creates only, replaces only, and checks its payload", func(t *testing.T) {
		const id = "wb-put"
		r := ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "docs/a.txt", "text": "hello"})
		gen := r.int(t, "generation")
		if r.str("workbench_id") != id || r.str("section") != "input" || r.str("relative_path") != "docs/a.txt" ||
			r.str("path") != root+"/"+id+"/input/docs/a.txt" || r.int(t, "size_bytes") != 5 || gen == 0 ||
			r.str("digest_uri") != digestURI([]byte("hello")) || r.str("content_type") != "text/plain; charset=utf-8" ||
			r["replace"] != false {
			t.Errorf("put_file: %v", r)
		}
		e := fails(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "docs/a.txt", "text": "again"}, "AlreadyExists")
		if e.details().int(t, "current_generation") != gen {
			t.Errorf("AlreadyExists details: %v", e.details())
		}
		r = ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "docs/a.txt", "text": "bye", "replace": true})
		if r.int(t, "generation") <= gen || r["replace"] != true || r.int(t, "size_bytes") != 3 {
			t.Errorf("replace: %v", r)
		}
		fails(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "docs/missing.txt", "text": "x", "replace": true}, "NotFound")

		bin := []byte{0, 1, 2, 0xff}
		r = ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "b.bin", "base64": base64.StdEncoding.EncodeToString(bin)})
		if r.str("content_type") != "application/octet-stream" || r.int(t, "size_bytes") != 4 || r.str("digest_uri") != digestURI(bin) {
			t.Errorf("base64 put: %v", r)
		}
		r = ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "c.md", "text": "# t", "content_type": "text/markdown"})
		if r.str("content_type") != "text/markdown" {
			t.Errorf("content_type override: %v", r)
		}

		invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "both", "text": "a", "base64": "YQ=="}, "text")
		invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "neither"}, "text")
		invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "bad", "base64": "!!not base64!!"}, "base64")

		big := strings.Repeat("x", suitePayloadCap+1)
		e = fails(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "big.txt", "text": big}, "PayloadTooLarge")
		if e.details().int(t, "actual_bytes") != suitePayloadCap+1 || e.details().int(t, "max_bytes") != suitePayloadCap {
			t.Errorf("PayloadTooLarge details: %v", e.details())
		}
		e = fails(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "big.bin",
			"base64": base64.StdEncoding.EncodeToString([]byte(big + "yz"))}, "PayloadTooLarge")
		if e.details().int(t, "actual_bytes") != suitePayloadCap+3 {
			t.Errorf("PayloadTooLarge (base64) details: %v", e.details())
		}
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "exact.txt", "text": big[:suitePayloadCap]})
	})

	t.Run("append creates then appends, with the digest of the appended bytes only", func(t *testing.T) {
		const id = "wb-append"
		r := ok(t, cs, "workbench_append", args{"id": id, "section": "logs", "path": "run.log", "text": "one\n"})
		if r["created"] != true || r.int(t, "appended_bytes") != 4 || r.int(t, "size_bytes") != 4 || r.str("digest") != digestURI([]byte("one\n")) {
			t.Errorf("first append: %v", r)
		}
		gen := r.int(t, "generation")
		r = ok(t, cs, "workbench_append", args{"id": id, "section": "logs", "path": "run.log", "base64": base64.StdEncoding.EncodeToString([]byte("two\n"))})
		if r["created"] != false || r.int(t, "appended_bytes") != 4 || r.int(t, "size_bytes") != 8 ||
			r.str("digest") != digestURI([]byte("two\n")) || r.int(t, "generation") <= gen || r.str("relative_path") != "run.log" {
			t.Errorf("second append: %v", r)
		}
		rd := ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "run.log", "format": "bytes"})
		if b, _ := base64.StdEncoding.DecodeString(rd.str("bytes")); string(b) != "one\ntwo\n" {
			t.Errorf("appended body %q", b)
		}
		invalid(t, cs, "workbench_append", args{"id": id, "section": "logs", "path": "run.log"}, "text")
	})

	t.Run("edit replaces exactly, and reports ambiguity, no match, binary files and no change", func(t *testing.T) {
		const id = "wb-edit"
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "scripts", "path": "s.py", "text": "foo bar foo\nend\n", "content_type": "text/x-python"})
		e := fails(t, cs, "workbench_edit", args{"id": id, "section": "scripts", "path": "s.py", "old_string": "foo", "new_string": "baz"}, "AmbiguousEdit")
		if e.details().int(t, "matches") != 2 {
			t.Errorf("AmbiguousEdit details: %v", e.details())
		}
		r := ok(t, cs, "workbench_edit", args{"id": id, "section": "scripts", "path": "s.py", "old_string": "end", "new_string": "fin"})
		if r.int(t, "replacements") != 1 || r["no_change"] != false || r.int(t, "size_bytes") != 16 {
			t.Errorf("edit: %v", r)
		}
		r = ok(t, cs, "workbench_edit", args{"id": id, "section": "scripts", "path": "s.py", "old_string": "foo", "new_string": "qux", "replace_all": true})
		if r.int(t, "replacements") != 2 || r["no_change"] != false {
			t.Errorf("replace_all: %v", r)
		}
		gen := r.int(t, "generation")
		fails(t, cs, "workbench_edit", args{"id": id, "section": "scripts", "path": "s.py", "old_string": "nowhere", "new_string": "x"}, "NoMatch")
		r = ok(t, cs, "workbench_edit", args{"id": id, "section": "scripts", "path": "s.py", "old_string": "qux", "new_string": "qux", "replace_all": true})
		if r["no_change"] != true || r.int(t, "generation") != gen {
			t.Errorf("no_change: %v (generation was %d)", r, gen)
		}
		st := ok(t, cs, "workbench_stat", args{"id": id, "section": "scripts", "path": "s.py"}).card()
		if st.str("content_type") != "text/x-python" || st.int(t, "generation") != gen {
			t.Errorf("after edits: %v", st)
		}
		rd := ok(t, cs, "workbench_read", args{"id": id, "section": "scripts", "path": "s.py"})
		if got := fmt.Sprint(rd["items"]); got != "[map[index:0 value:qux bar qux] map[index:1 value:fin]]" {
			t.Errorf("edited body: %s", got)
		}

		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "bin.dat", "base64": base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 'a'})})
		fails(t, cs, "workbench_edit", args{"id": id, "section": "input", "path": "bin.dat", "old_string": "a", "new_string": "b"}, "InvalidUtf8")
		fails(t, cs, "workbench_edit", args{"id": id, "section": "input", "path": "missing.txt", "old_string": "a", "new_string": "b"}, "NotFound")
		invalid(t, cs, "workbench_edit", args{"id": id, "section": "scripts", "path": "s.py", "old_string": "", "new_string": "b"}, "old_string")
		invalid(t, cs, "workbench_edit", args{"id": id, "section": "scripts", "path": "s.py", "old_string": "a"}, "new_string")
	})

	t.Run("list pages with a cursor bound to its arguments and fenced on writes", func(t *testing.T) {
		const id = "wb-list"
		for i := range 5 {
			ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": fmt.Sprintf("dir/f%d.txt", i), "text": "x"})
		}
		top := ok(t, cs, "workbench_list", args{"id": id})
		var topNames []string
		for _, e := range top.list(t, "entries") {
			topNames = append(topNames, e.str("name"))
		}
		if fmt.Sprint(topNames) != "[input logs metadata outputs scripts]" || top.str("workbench_path") != root+"/"+id {
			t.Errorf("top listing: %v", top)
		}

		p1 := ok(t, cs, "workbench_list", args{"id": id, "section": "outputs", "path": "dir", "limit": 2})
		ents := p1.list(t, "entries")
		if len(ents) != 2 || p1["truncated"] != true || p1.str("next_cursor") == "" || p1.int(t, "entry_count") != 5 {
			t.Fatalf("page 1: %v", p1)
		}
		e0 := ents[0]
		if e0.str("name") != "f0.txt" || e0.str("kind") != "file" || e0.str("section") != "outputs" ||
			e0.str("relative_path") != "dir/f0.txt" || e0.str("path") != root+"/"+id+"/outputs/dir/f0.txt" || e0.int(t, "size_bytes") != 1 {
			t.Errorf("entry: %v", e0)
		}
		// An integral limit written as 2.0 is an integer (JSON Schema).
		p2 := ok(t, cs, "workbench_list", args{"id": id, "section": "outputs", "path": "dir", "limit": 2.0, "cursor": p1.str("next_cursor")})
		if ents := p2.list(t, "entries"); len(ents) != 2 || ents[0].str("name") != "f2.txt" {
			t.Errorf("page 2: %v", p2)
		}
		invalid(t, cs, "workbench_list", args{"id": id, "section": "input", "cursor": p1.str("next_cursor")}, "cursor")
		invalid(t, cs, "workbench_list", args{"id": id, "section": "outputs", "path": "dir", "cursor": "forged.cursor"}, "cursor")

		ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "dir/late.txt", "text": "x"})
		e := fails(t, cs, "workbench_list", args{"id": id, "section": "outputs", "path": "dir", "cursor": p2.str("next_cursor")}, "ReadFenceChanged")
		if e["retryable"] != true {
			t.Errorf("ReadFenceChanged not retryable: %v", e)
		}

		fails(t, cs, "workbench_list", args{"id": id, "section": "outputs", "path": "dir/f0.txt"}, "NotDirectory")
		fails(t, cs, "workbench_list", args{"id": "wb-list-missing"}, "NotFound")
		invalid(t, cs, "workbench_list", args{"id": id, "limit": 101}, "limit")
		invalid(t, cs, "workbench_list", args{"id": id, "at_snapshot": -1}, "at_snapshot")
		invalid(t, cs, "workbench_list", args{"id": id, "at_snapshot": true}, "at_snapshot")
	})

	t.Run("stat describes the workbench, a section, a directory and a file", func(t *testing.T) {
		const id = "wb-stat"
		put := ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "d/r.json", "text": `{"a":1}`, "content_type": "application/json"})
		w := ok(t, cs, "workbench_stat", args{"id": id}).card()
		if w.str("kind") != "workbench" || w.str("path") != root+"/"+id || w.str("name") != id || w["section"] != nil {
			t.Errorf("workbench: %v", w)
		}
		s := ok(t, cs, "workbench_stat", args{"id": id, "section": "input", "path": nil}).card()
		if s.str("kind") != "directory" || s.str("path") != root+"/"+id+"/input" || s.str("section") != "input" {
			t.Errorf("section: %v", s)
		}
		d := ok(t, cs, "workbench_stat", args{"id": id, "section": "outputs", "path": "d"}).card()
		if d.str("kind") != "directory" || d.str("name") != "d" || d.int(t, "size_bytes") != 7 {
			t.Errorf("directory: %v", d)
		}
		f := ok(t, cs, "workbench_stat", args{"id": id, "section": "outputs", "path": "d/r.json"}).card()
		if f.str("kind") != "file" || f.str("name") != "r.json" || f.str("relative_path") != "d/r.json" ||
			f.int(t, "generation") != put.int(t, "generation") || f.str("content_type") != "application/json" ||
			f.str("digest_uri") != put.str("digest_uri") || f.int(t, "size_bytes") != 7 {
			t.Errorf("file: %v", f)
		}
		fails(t, cs, "workbench_stat", args{"id": id, "section": "outputs", "path": "nope"}, "NotFound")
		fails(t, cs, "workbench_stat", args{"id": id, "at_snapshot": "nightly"}, "SnapshotNotFound")
	})

	t.Run("read returns structured records, byte ranges and not_modified", func(t *testing.T) {
		const id = "wb-read"
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "conf.json", "text": `{"name":"x","n":[1,2]}`})
		r := ok(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "conf.json"})
		if r.str("record_type") != "json_object" || r.int(t, "record_count") != 1 || r.str("format") != "structured" || r["truncated"] != false {
			t.Errorf("json object: %v", r)
		}
		if got := fmt.Sprint(r.list(t, "items")[0]["value"]); got != "map[n:[1 2] name:x]" {
			t.Errorf("json object value: %s", got)
		}

		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "rows.json", "text": `[{"a":1},{"a":2},{"a":3}]`})
		r = ok(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "rows.json", "limit": 2})
		if r.str("record_type") != "json_array" || r.int(t, "record_count") != 3 || len(r.list(t, "items")) != 2 || r["truncated"] != true {
			t.Errorf("json array page 1: %v", r)
		}
		r = ok(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "rows.json", "limit": 2, "cursor": r.str("next_cursor")})
		if items := r.list(t, "items"); len(items) != 1 || items[0].int(t, "index") != 2 || r["next_cursor"] != nil {
			t.Errorf("json array page 2: %v", r)
		}

		ok(t, cs, "workbench_put_file", args{"id": id, "section": "metadata", "path": "cfg.yaml", "text": "name: x\nlimits:\n  cpu: 2\n"})
		r = ok(t, cs, "workbench_read", args{"id": id, "section": "metadata", "path": "cfg.yaml"})
		if r.str("record_type") != "yaml_mapping" || fmt.Sprint(r.list(t, "items")[0]["value"]) != "map[limits:map[cpu:2] name:x]" {
			t.Errorf("yaml: %v", r)
		}

		put := ok(t, cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "t.txt", "text": "l1\nl2\nl3\n"})
		r = ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "t.txt", "limit": 2})
		if r.str("record_type") != "text_lines" || r.int(t, "record_count") != 3 || fmt.Sprint(r["items"]) != "[map[index:0 value:l1] map[index:1 value:l2]]" ||
			r.int(t, "total_size_bytes") != 9 || r.int(t, "generation") != put.int(t, "generation") {
			t.Errorf("text page 1: %v", r)
		}
		r = ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "t.txt", "limit": 2, "cursor": r.str("next_cursor")})
		if fmt.Sprint(r["items"]) != "[map[index:2 value:l3]]" || r["truncated"] != false {
			t.Errorf("text page 2: %v", r)
		}
		invalid(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "t.txt", "format": "bytes", "cursor": r.str("next_cursor")}, "cursor")

		r = ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "t.txt", "format": "bytes", "offset": 3, "limit": 4})
		if b, _ := base64.StdEncoding.DecodeString(r.str("bytes")); string(b) != "l2\nl" || r.int(t, "offset") != 3 || r["truncated"] != true {
			t.Errorf("bytes: %v", r)
		}
		invalid(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "t.txt", "format": "bytes", "offset": 1, "cursor": r.str("next_cursor")}, "cursor")

		nm := ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "t.txt", "if_none_match": put.int(t, "generation")})
		if nm["not_modified"] != true || nm.int(t, "generation") != put.int(t, "generation") || nm["items"] != nil || nm["bytes"] != nil {
			t.Errorf("not_modified: %v", nm)
		}
		r = ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "t.txt", "if_none_match": put.int(t, "generation") + 100})
		if r["not_modified"] != nil || r.int(t, "record_count") != 3 {
			t.Errorf("if_none_match on another generation: %v", r)
		}

		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "inf.yaml", "text": "x: .inf\n"})
		fails(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "inf.yaml"}, "StructuredDecodeFailed")
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "broken.json", "text": "{"})
		fails(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "broken.json"}, "StructuredDecodeFailed")
		fails(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "missing.txt"}, "NotFound")
		invalid(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "conf.json", "format": "lines"}, "format")
		invalid(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "conf.json", "limit": 301}, "limit")
		invalid(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "conf.json", "offset": -1}, "offset")
	})

	t.Run("invalid paths, sections, properties and types are InvalidArguments naming the field", func(t *testing.T) {
		const id = "wb-invalid"
		for _, p := range []string{"../x", "a//b", "/abs", "a/./b", `a\b`, "dir/"} {
			invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": p, "text": "x"}, "path")
			invalid(t, cs, "workbench_read", args{"id": id, "section": "input", "path": p}, "path")
		}
		invalid(t, cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "logs/x", "text": "x"}, "path")
		invalid(t, cs, "workbench_append", args{"id": id, "section": "logs", "path": "logs/x", "text": "x"}, "path")
		invalid(t, cs, "workbench_list", args{"id": id, "section": "logs", "path": "logs/x"}, "path")
		invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "", "text": "x"}, "path")
		for _, tool := range []string{"workbench_put_file", "workbench_append"} {
			invalid(t, cs, tool, args{"id": id, "section": "metadata", "path": "run_manifest.json", "text": "{}"}, "path")
			invalid(t, cs, tool, args{"id": id, "section": "metadata", "path": "restore_manifest.json", "text": "{}"}, "path")
		}
		invalid(t, cs, "workbench_edit", args{"id": id, "section": "metadata", "path": "run_manifest.json", "old_string": "a", "new_string": "b"}, "path")

		e := invalid(t, cs, "workbench_put_file", args{"id": id, "section": "secrets", "path": "a", "text": "x"}, "section")
		if e.str("message") != "section: must be one of input, scripts, outputs, logs or metadata" || e.details()["rule"] != "enum" {
			t.Errorf("unknown section: %v", e)
		}
		invalid(t, cs, "workbench_list", args{"id": id, "section": "secrets"}, "section")
		e = invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "a", "text": "x", "overwrite": true}, "overwrite")
		if e.details()["rule"] != "additionalProperties" {
			t.Errorf("additional property: %v", e)
		}
		invalid(t, cs, "workbench_create", args{"id": id, "agent": "other"}, "agent")
		e = invalid(t, cs, "workbench_create", args{"id": 42}, "id")
		if e.str("message") != "id: must be a string, not an integer" {
			t.Errorf("wrong type message: %q", e.str("message"))
		}
		invalid(t, cs, "workbench_create", args{}, "id")
		invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "a", "text": 5}, "text")
		invalid(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "a", "text": "x", "replace": "yes"}, "replace")
		invalid(t, cs, "workbench_put_file", args{"id": id, "section": nil, "path": "a", "text": "x"}, "section")
		invalid(t, cs, "workbench_list", args{"id": id, "limit": "10"}, "limit")
		invalid(t, cs, "workbench_list", args{"id": id, "limit": 1.5}, "limit")
		invalid(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "a", "if_none_match": -3}, "if_none_match")
		invalid(t, cs, "workbench_read", args{"id": id, "section": "input", "path": "a", "offset": 1e30}, "offset")
		invalid(t, cs, "workbench_stat", args{"id": []string{"a"}}, "id")
	})

	t.Run("an unknown tool gets the UnknownTool envelope", func(t *testing.T) {
		for _, name := range []string{"workbench_frobnicate", "workbench_history", "Workbench_read"} {
			e := fails(t, cs, name, args{"id": "x"}, "UnknownTool")
			if e.details()["tool"] != name || e["retryable"] != false {
				t.Errorf("%q: %v", name, e)
			}
		}
	})
}

// stripDescriptions removes every "description" member at any depth (descriptions are
// ours to write; the contract fixes everything else).
func stripDescriptions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k != "description" {
				out[k] = stripDescriptions(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripDescriptions(e)
		}
		return out
	}
	return v
}
