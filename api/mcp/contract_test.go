package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// The published Workbench contract (testdata/contract/README.md): the frozen input schemas
// and a result transcript. These tests hold Cairn to them through the real MCP server.

func loadContractFile(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "contract", name))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// schemaAnnotations are the keywords the published normalization drops.
var schemaAnnotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true, "$comment": true}

// schemaUnordered are the keywords whose array order the published normalization ignores.
var schemaUnordered = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "enum": true, "required": true, "type": true}

// normalizeSchema applies the published normalization to a decoded JSON Schema: annotations
// dropped, the unordered keywords' arrays sorted (by each element's normalized JSON), and
// the keys of "properties" treated as names (never as keywords). Everything else is kept
// as it is, so a missing, renamed or added keyword still differs.
func normalizeSchema(v any) any {
	switch s := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(s))
		for k, x := range s {
			switch {
			case schemaAnnotations[k]:
			case k == "properties":
				props, ok := x.(map[string]any)
				if !ok {
					out[k] = normalizeSchema(x)
					continue
				}
				np := make(map[string]any, len(props))
				for name, p := range props {
					np[name] = normalizeSchema(p)
				}
				out[k] = np
			case schemaUnordered[k]:
				arr, ok := x.([]any)
				if !ok {
					out[k] = normalizeSchema(x)
					continue
				}
				keyed := make([]string, len(arr))
				for i, e := range arr {
					b, _ := json.Marshal(normalizeSchema(e))
					keyed[i] = string(b)
				}
				sort.Strings(keyed)
				items := make([]any, len(keyed))
				for i, k := range keyed {
					items[i] = json.RawMessage(k)
				}
				// Re-decode so the result compares with reflect.DeepEqual.
				b, _ := json.Marshal(items)
				var back []any
				json.Unmarshal(b, &back)
				out[k] = back
			default:
				out[k] = normalizeSchema(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, x := range s {
			out[i] = normalizeSchema(x)
		}
		return out
	}
	return v
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNormalizeSchemaIgnoresAnnotationsAndOrderButNothingElse(t *testing.T) {
	base := `{"type":"object","additionalProperties":false,"required":["id","path"],
		"properties":{"id":{"type":"string"},"at":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"},{"type":"null"}]},
		"section":{"type":["string","null"],"enum":["input","logs",null]}}}`
	same := []struct{ name, schema string }{
		{"annotations dropped", `{"type":"object","additionalProperties":false,"required":["id","path"],"description":"x","title":"t",
		"properties":{"id":{"type":"string","description":"the id","default":"a","examples":["b"],"$comment":"c"},"at":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"},{"type":"null"}]},
		"section":{"type":["string","null"],"enum":["input","logs",null]}}}`},
		{"order of anyOf, enum, required and type ignored", `{"type":"object","additionalProperties":false,"required":["path","id"],
		"properties":{"id":{"type":"string"},"at":{"anyOf":[{"type":"null"},{"minimum":0,"type":"integer"},{"type":"string"}]},
		"section":{"type":["null","string"],"enum":[null,"logs","input"]}}}`},
		{"a property named like an annotation is a name", `{"type":"object","additionalProperties":false,"required":["id","path"],
		"properties":{"id":{"type":"string"},"at":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"},{"type":"null"}]},
		"section":{"type":["string","null"],"enum":["input","logs",null]}}}`},
	}
	differ := []struct{ name, schema string }{
		{"a missing field", `{"type":"object","additionalProperties":false,"required":["id","path"],
		"properties":{"id":{"type":"string"},"section":{"type":["string","null"],"enum":["input","logs",null]}}}`},
		{"a renamed field", `{"type":"object","additionalProperties":false,"required":["id","path"],
		"properties":{"id":{"type":"string"},"at_snapshot":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"},{"type":"null"}]},
		"section":{"type":["string","null"],"enum":["input","logs",null]}}}`},
		{"an added restriction", `{"type":"object","additionalProperties":false,"required":["id","path"],
		"properties":{"id":{"type":"string","maxLength":128},"at":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"},{"type":"null"}]},
		"section":{"type":["string","null"],"enum":["input","logs",null]}}}`},
		{"a type array with a sibling minimum instead of anyOf", `{"type":"object","additionalProperties":false,"required":["id","path"],
		"properties":{"id":{"type":"string"},"at":{"type":["integer","string","null"],"minimum":0},
		"section":{"type":["string","null"],"enum":["input","logs",null]}}}`},
		{"an enum value changed", `{"type":"object","additionalProperties":false,"required":["id","path"],
		"properties":{"id":{"type":"string"},"at":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"},{"type":"null"}]},
		"section":{"type":["string","null"],"enum":["input","outputs",null]}}}`},
	}
	want := normalizeSchema(decodeJSON(t, base))
	for _, c := range same {
		if got := normalizeSchema(decodeJSON(t, c.schema)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: normalized schemas differ", c.name)
		}
	}
	for _, c := range differ {
		if got := normalizeSchema(decodeJSON(t, c.schema)); reflect.DeepEqual(got, want) {
			t.Errorf("%s: normalized schemas are equal", c.name)
		}
	}
}

// valueKind names the JSON kind of a value decoded by encoding/json.
func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// dataKeyed are the transcript positions whose object keys are data (the fields a query
// projected or grouped by, the measures it named), not result keys: there the result must
// be an object whose values have the transcript's kind, whatever the keys.
var dataKeyed = map[string]bool{
	"success.workbench_search.matches[].values":   true,
	"success.workbench_aggregate.groups[].key":    true,
	"success.workbench_aggregate.groups[].values": true,
}

// shapeDiffs reports where got lacks a key of want or has another JSON kind, recursively
// (contract/README.md): a null in want accepts any kind; every element of a got array is
// checked against want's first element, and a non-empty want array needs a non-empty got
// array, so that the elements' keys are checked at all.
func shapeDiffs(at string, want, got any) []string {
	wk, gk := valueKind(want), valueKind(got)
	if wk == "null" {
		return nil
	}
	if wk != gk {
		return []string{fmt.Sprintf("%s: %s, want %s", at, gk, wk)}
	}
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		if dataKeyed[at] {
			if len(w) > 0 && len(g) == 0 {
				return []string{at + ": empty object, want entries"}
			}
			var kind string
			for _, x := range w {
				kind = valueKind(x)
			}
			for k, x := range g {
				if valueKind(x) != kind {
					out = append(out, fmt.Sprintf("%s.%s: %s, want %s", at, k, valueKind(x), kind))
				}
			}
			return out
		}
		for _, k := range slices.Sorted(mapKeys(w)) {
			x, ok := g[k]
			if !ok {
				out = append(out, at+"."+k+": missing")
				continue
			}
			out = append(out, shapeDiffs(at+"."+k, w[k], x)...)
		}
	case []any:
		g := got.([]any)
		if len(w) == 0 {
			return nil
		}
		if len(g) == 0 {
			return []string{at + ": empty array, want elements to compare"}
		}
		for _, x := range g {
			out = append(out, shapeDiffs(at+"[]", w[0], x)...)
		}
	}
	return out
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestShapeDiffsFindsMissingAndRetypedKeysAtEveryDepth(t *testing.T) {
	want := decodeJSON(t, `{"a":1,"b":{"c":"x","d":null},"e":[{"f":true}],"g":[]}`)
	cases := []struct {
		name, got string
		diffs     int
	}{
		{"the same shape with other values and extra keys", `{"a":2,"b":{"c":"y","d":{"z":1},"extra":1},"e":[{"f":false},{"f":true}],"g":[1],"h":0}`, 0},
		{"a key missing at the top", `{"b":{"c":"x","d":null},"e":[{"f":true}],"g":[]}`, 1},
		{"a key missing in a nested object", `{"a":1,"b":{"d":null},"e":[{"f":true}],"g":[]}`, 1},
		{"a key missing in an array element", `{"a":1,"b":{"c":"x","d":null},"e":[{"f":true},{}],"g":[]}`, 1},
		{"a number given as a string", `{"a":"1","b":{"c":"x","d":null},"e":[{"f":true}],"g":[]}`, 1},
		{"an object given as a string", `{"a":1,"b":"x","e":[{"f":true}],"g":[]}`, 1},
		{"an empty array where elements are expected", `{"a":1,"b":{"c":"x","d":null},"e":[],"g":[]}`, 1},
		{"null where a value is expected", `{"a":null,"b":{"c":"x","d":null},"e":[{"f":true}],"g":[]}`, 1},
	}
	for _, c := range cases {
		if d := shapeDiffs("r", want, decodeJSON(t, c.got)); len(d) != c.diffs {
			t.Errorf("%s: %d differences %v, want %d", c.name, len(d), d, c.diffs)
		}
	}
}

// faultCore passes every call to the real core, except that a test can take over the next
// proposal once: fail it without proposing, or alter the real core's answer.
type faultCore struct {
	workbench.Core
	next atomic.Pointer[func(propose func() (meta.Result, error)) (meta.Result, error)]
}

func (c *faultCore) Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	propose := func() (meta.Result, error) { return c.Core.Propose(ctx, h, b) }
	if f := c.next.Swap(nil); f != nil {
		return (*f)(propose)
	}
	return propose()
}

func (c *faultCore) once(f func(propose func() (meta.Result, error)) (meta.Result, error)) {
	c.next.Store(&f)
}

// contractSession runs one session that produces every entry of the transcript, keyed as
// the transcript is ("success.workbench_stat", "replays.workbench_commit",
// "errors.snapshot_expired"), with numbers decoded as float64 like the transcript's.
func contractSession(t *testing.T, cs *sdk.ClientSession, fc *faultCore) map[string]any {
	out := map[string]any{}
	run := func(key, tool string, a args, wantErr bool) obj {
		t.Helper()
		r, isErr := call(t, cs, tool, a)
		if isErr != wantErr {
			t.Errorf("%s (%s %v): error %v: %v", key, tool, a, isErr, r)
		}
		b, _ := json.Marshal(r)
		out[key] = decodeJSON(t, string(b))
		return r
	}
	const wb = "wb-main"
	run("success.workbench_create", "workbench_create", args{"id": wb}, false)
	run("replays.workbench_create", "workbench_create", args{"id": wb}, false)
	run("success.workbench_put_file", "workbench_put_file", args{"id": wb, "section": "outputs", "path": "report.txt", "text": "Hello world\nsecond\n"}, false)
	run("success.workbench_append", "workbench_append", args{"id": wb, "section": "outputs", "path": "report.txt", "text": "third\n"}, false)
	run("success.workbench_edit", "workbench_edit", args{"id": wb, "section": "outputs", "path": "report.txt", "old_string": "second", "new_string": "Second"}, false)
	ok(t, cs, "workbench_put_file", args{"id": wb, "section": "outputs", "path": "summary.txt", "text": "hello again\n"})

	manifest := map[string]any{"model": "viking", "task": "ptycho"}
	digest := "sha256:" + strings.Repeat("01", 32)
	commit := args{"id": wb, "manifest": manifest, "content_digest_uri": digest}
	run("success.workbench_commit", "workbench_commit", commit, false)
	run("replays.workbench_commit", "workbench_commit", commit, false)
	run("errors.workbench_commit_conflict", "workbench_commit", args{"id": wb, "manifest": map[string]any{"model": "other"}, "content_digest_uri": digest}, true)
	ok(t, cs, "workbench_put_file", args{"id": "wb-second", "section": "outputs", "path": "x.txt", "text": "x"})
	ok(t, cs, "workbench_commit", args{"id": "wb-second", "manifest": manifest, "content_digest_uri": digest})

	snap := run("success.workbench_snapshot", "workbench_snapshot", args{"id": wb, "name": "frozen", "ttl_days": 3, "reason": "test", "metadata": map[string]any{"suite": "facade"}}, false)
	snapID := snap.int(t, "snapshot_id")
	run("success.workbench_list", "workbench_list", args{"id": wb, "section": "outputs", "at_snapshot": snapID}, false)
	run("success.workbench_stat", "workbench_stat", args{"id": wb, "section": "outputs", "path": "report.txt", "at_snapshot": "frozen"}, false)
	run("success.workbench_read", "workbench_read", args{"id": wb, "section": "outputs", "path": "report.txt", "at_snapshot": snapID}, false)
	run("success.workbench_grep", "workbench_grep", args{"id": wb, "section": "outputs", "pattern": "HELLO", "recursive": true}, false)
	run("success.workbench_search", "workbench_search", args{"id": wb, "section": "outputs", "fields": []string{"artifact.name"},
		"facets": []string{"artifact.section"}, "limit": 1}, false)
	run("success.workbench_aggregate", "workbench_aggregate", args{"id": wb, "section": "outputs",
		"measures": []any{map[string]any{"name": "artifacts", "op": "count"}}, "group_by": []string{"artifact.section"}}, false)
	run("success.workbench_catalog", "workbench_catalog", args{}, false)
	run("success.workbench_find", "workbench_find", args{"committed": true, "include_manifest": true, "limit": 1}, false)
	run("success.workbench_snapshot_renew", "workbench_snapshot_renew", args{"id": wb, "name": "frozen", "ttl_days": 5}, false)
	run("success.workbench_restore", "workbench_restore", args{"id": wb, "destination_id": "wb-restored", "at_snapshot": snapID}, false)
	run("success.workbench_snapshot_retire", "workbench_snapshot_retire", args{"id": wb, "name": "frozen", "reason": "done"}, false)
	run("success.workbench_snapshot_list", "workbench_snapshot_list", args{"id": wb}, false)

	run("errors.invalid_arguments", "workbench_put_file", args{"id": wb, "section": "outputs", "path": "y.txt", "text": "a", "base64": "YQ=="}, true)
	run("errors.snapshot_expired", "workbench_read", args{"id": wb, "section": "outputs", "path": "report.txt", "at_snapshot": snapID}, true)
	// A replica that lost the root's shard answers the contract's RoutingUnavailable.
	fc.once(func(func() (meta.Result, error)) (meta.Result, error) { return meta.Result{}, shard.ErrNotLeader })
	run("errors.routing_unavailable", "workbench_put_file", args{"id": wb, "section": "outputs", "path": "z.txt", "text": "z"}, true)
	// A core that answers a restore begin with another operation than the one asked for
	// fails closed with RestoreProtocolMismatch.
	ok(t, cs, "workbench_snapshot", args{"id": wb, "name": "second"})
	fc.once(func(propose func() (meta.Result, error)) (meta.Result, error) {
		res, err := propose()
		if res.Restore != nil {
			op := *res.Restore
			op.SnapshotID++
			res.Restore = &op
		}
		return res, err
	})
	run("errors.restore_protocol_mismatch", "workbench_restore", args{"id": wb, "destination_id": "wb-mismatch", "at_snapshot": "second"}, true)
	// The same for a commit: WorkbenchCommitProtocolMismatch (named by the contract's error
	// list, absent from its transcript).
	fc.once(func(propose func() (meta.Result, error)) (meta.Result, error) {
		res, err := propose()
		if res.Commit != nil {
			c := *res.Commit
			c.Identity = strings.Repeat("0", 64)
			res.Commit = &c
		}
		return res, err
	})
	e := fails(t, cs, "workbench_commit", args{"id": "wb-third", "manifest": manifest, "content_digest_uri": digest}, "WorkbenchCommitProtocolMismatch")
	if e["retryable"] != true || e.details()["actual_commit_id"] != strings.Repeat("0", 64) || len(e.details().str("expected_commit_id")) != 64 {
		t.Errorf("commit protocol mismatch: %v", e)
	}
	return out
}

// contractService is a real service over a single-voter Raft replica whose core a test
// can fault.
func contractService(t *testing.T) (*workbench.Service, *faultCore) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	fc := &faultCore{Core: n.Shard}
	svc, err := workbench.New(fc, n.Blobs, workbench.Config{InlineMaxBytes: 4096, CursorKey: workbenchtest.CursorKey})
	if err != nil {
		t.Fatal(err)
	}
	return svc, fc
}

// checkContract compares tools/list with the frozen schemas and a whole session with the
// transcript.
func checkContract(t *testing.T, cs *sdk.ClientSession, fc *faultCore) {
	schemas := loadContractFile(t, "workbench_contract_schema.json")["inputSchemas"].(map[string]any)
	transcript := loadContractFile(t, "workbench_result_transcript.json")

	t.Run("tools/list equals the frozen input schemas", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, tl := range res.Tools {
			seen[tl.Name] = true
			want, ok := schemas[tl.Name]
			if !ok {
				t.Errorf("%s: not a contract tool", tl.Name)
				continue
			}
			b, _ := json.Marshal(tl.InputSchema)
			if got := normalizeSchema(decodeJSON(t, string(b))); !reflect.DeepEqual(got, normalizeSchema(want)) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(normalizeSchema(want))
				t.Errorf("%s: input schema differs from the published one\n got %s\nwant %s", tl.Name, g, w)
			}
		}
		for name := range schemas {
			if !seen[name] {
				t.Errorf("%s: missing from tools/list", name)
			}
		}
	})

	t.Run("every result carries the transcript's keys and kinds", func(t *testing.T) {
		got := contractSession(t, cs, fc)
		for _, group := range []string{"success", "replays", "errors"} {
			entries := transcript[group].(map[string]any)
			for _, name := range slices.Sorted(mapKeys(entries)) {
				key := group + "." + name
				r, ok := got[key]
				if !ok {
					t.Errorf("%s: the session did not produce it", key)
					continue
				}
				for _, d := range shapeDiffs(key, entries[name], r) {
					t.Errorf("%s", d)
				}
				if group == "errors" {
					want, have := entries[name].(map[string]any), r.(map[string]any)
					if have["code"] != want["code"] || have["retryable"] != want["retryable"] {
						t.Errorf("%s: code %v retryable %v, want %v %v", key, have["code"], have["retryable"], want["code"], want["retryable"])
					}
				}
			}
		}
	})
}

func TestContractOverStreamableHTTP(t *testing.T) {
	svc, fc := contractService(t)
	ts := newHTTPServer(t, svc)
	checkContract(t, connectHTTP(t, ts.URL+"/v1/agents/test/mcp"), fc)
}

func TestContractOverStdio(t *testing.T) {
	svc, fc := contractService(t)
	cs, _ := stdioPipes(t, func(in io.Reader, out io.Writer) error {
		return ServeStdio(t.Context(), svc, "test", in, out)
	})
	t.Cleanup(func() { cs.Close() })
	checkContract(t, cs, fc)
}
