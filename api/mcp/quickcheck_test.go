package mcp

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"pgregory.net/rapid"
)

// allToolSchemas are the tool schemas of both profiles, by tool name.
func allToolSchemas(t testing.TB) map[string]*toolSchema {
	t.Helper()
	out := map[string]*toolSchema{}
	for _, load := range []func() (map[string]*toolSchema, error){loadSchemas, loadCairnSchemas} {
		all, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for name, ts := range all {
			out[name] = ts
		}
	}
	return out
}

// TestQuickSchemaNeverAcceptsWhatTheSchemaRefuses holds quickSchema to its promise: any
// arguments it accepts, jsonschema-go accepts too, for every tool of both profiles; over
// arguments drawn from the tool's own member names, values of every JSON kind (enum
// strings, bounds and their neighbours, fractions) and names it does not know.
func TestQuickSchemaNeverAcceptsWhatTheSchemaRefuses(t *testing.T) {
	schemas := allToolSchemas(t)
	names := sortedKeys(schemas)
	var shortcuts int
	for _, n := range names {
		if schemas[n].quick != nil {
			shortcuts++
		}
	}
	t.Logf("%d of %d tools have a shortcut", shortcuts, len(names))
	accepted := map[string]int{}
	defer func() { t.Log("accepted by the shortcut:", accepted) }()
	rapid.Check(t, func(rt *rapid.T) {
		tool := rapid.SampledFrom(names).Draw(rt, "tool")
		ts := schemas[tool]
		var strs []string
		var nums []float64
		for _, p := range ts.schema.Properties {
			for _, e := range p.Enum {
				if s, ok := e.(string); ok {
					strs = append(strs, s)
				}
			}
			for _, b := range []*float64{p.Minimum, p.Maximum} {
				if b != nil {
					nums = append(nums, *b, *b-1, *b+1, *b-0.5, *b+0.5)
				}
			}
		}
		slices.Sort(strs)
		strs = append(slices.Compact(strs), "", "w", "x/y.txt", "é\u2028")
		nums = append(nums, 0, -1, 1, 1.5, 1e300, math.Copysign(0, -1), math.MaxFloat64, 1<<53+1)
		value := rapid.OneOf(
			rapid.Just[any](nil),
			rapid.Map(rapid.Bool(), func(b bool) any { return b }),
			rapid.Map(rapid.SampledFrom(nums), func(f float64) any { return f }),
			rapid.Map(rapid.Float64(), func(f float64) any { return f }),
			rapid.Map(rapid.SampledFrom(strs), func(s string) any { return s }),
			rapid.Map(rapid.String(), func(s string) any { return s }),
			rapid.Just[any]([]any{"a"}),
			rapid.Just[any](map[string]any{"field": "artifact.ext", "op": "eq"}),
		)
		// A value meant to be valid for member k: one of its enum, a number within its
		// bounds, a value of one of its types.
		fitting := func(k string) any {
			p := ts.schema.Properties[k]
			if p == nil {
				return value.Draw(rt, k)
			}
			if len(p.Enum) > 0 {
				return rapid.SampledFrom(p.Enum).Draw(rt, k)
			}
			types := append([]string{p.Type}, p.Types...)
			switch rapid.SampledFrom(types).Draw(rt, k+"-type") {
			case "integer", "number":
				lo, hi := -5.0, 500.0
				if p.Minimum != nil {
					lo = *p.Minimum
				}
				if p.Maximum != nil {
					hi = *p.Maximum
				}
				return float64(rapid.IntRange(int(lo), int(hi)).Draw(rt, k))
			case "boolean":
				return rapid.Bool().Draw(rt, k)
			case "null":
				return nil
			case "string":
				return rapid.SampledFrom(strs).Draw(rt, k)
			}
			return value.Draw(rt, k)
		}
		props := append(sortedKeys(ts.schema.Properties), "bogus", "ID")
		for range 50 {
			args := map[string]any{}
			// Mostly the required members, so that the shortcut has something to accept.
			if rapid.IntRange(0, 3).Draw(rt, "withRequired") > 0 {
				for _, r := range ts.schema.Required {
					args[r] = fitting(r)
				}
			}
			for _, k := range rapid.SliceOfN(rapid.SampledFrom(props), 0, 4).Draw(rt, "keys") {
				if rapid.Bool().Draw(rt, "fits") {
					args[k] = fitting(k)
				} else {
					args[k] = value.Draw(rt, k)
				}
			}
			var v any = args
			if rapid.IntRange(0, 20).Draw(rt, "notAnObject") == 0 {
				v = rapid.SampledFrom([]any{nil, "x", 1.0, []any{}}).Draw(rt, "v")
			}
			if ts.quick.accepts(v) {
				accepted[tool]++
				if err := ts.resolved.Validate(v); err != nil {
					rt.Fatalf("%s: the shortcut accepted %v, which jsonschema-go refuses: %v", tool, v, err)
				}
			}
		}
	})
}

// TestQuickSchemaTakesTheMixsCalls checks that the calls of `cairn bench`'s MCP mix take
// the shortcut (or it would save nothing), and that it leaves to jsonschema-go what it
// must: wrong types, enums, bounds, unknown and missing members.
func TestQuickSchemaTakesTheMixsCalls(t *testing.T) {
	schemas := allToolSchemas(t)
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		tool, args string
		want       bool
	}{
		{"workbench_read", `{"id":"w","section":"input","path":"bench/mcp/doc-000000007.txt","limit":50}`, true},
		{"workbench_stat", `{"id":"w","section":"input","path":"bench/mcp/doc-000000007.txt"}`, true},
		{"workbench_stat", `{"id":"w","section":null,"path":null,"at_snapshot":3}`, false}, // anyOf: left to jsonschema-go
		{"workbench_list", `{"id":"w","section":"input","path":"bench/mcp","limit":100}`, true},
		{"workbench_put_file", `{"id":"w","section":"outputs","path":"bench/p0/note.txt","text":"x"}`, true},
		{"workbench_append", `{"id":"w","section":"logs","path":"bench/p0/agent-1.log","text":"x\n"}`, true},
		{"workbench_grep", `{"id":"w","pattern":"error","recursive":true,"section":"input","path":"bench/mcp","limit":20}`, true},
		{"workbench_read", `{"id":"w","section":"input","path":"a","limit":301}`, false},
		{"workbench_read", `{"id":"w","section":"input","path":"a","limit":0}`, false},
		{"workbench_read", `{"id":"w","section":"input","path":"a","limit":1.5}`, false},
		{"workbench_read", `{"id":"w","section":"input","path":"a","limit":"50"}`, false},
		{"workbench_read", `{"id":"w","section":"secrets","path":"a"}`, false},
		{"workbench_read", `{"id":"w","section":"input"}`, false},
		{"workbench_read", `{"id":"w","section":"input","path":"a","bogus":1}`, false},
		{"workbench_read", `{"id":"w","section":"input","path":"a","ID":"x"}`, false},
		{"workbench_read", `{"id":7,"section":"input","path":"a"}`, false},
		{"workbench_read", `[]`, false},
		{"workbench_grep", `{"id":"w","pattern":"e","recursive":true,"patterns":["a"]}`, false}, // items: left to jsonschema-go
	} {
		v := decode(c.args)
		ts := schemas[c.tool]
		if got := ts.quick.accepts(v); got != c.want {
			t.Errorf("%s %s: shortcut %v, want %v", c.tool, c.args, got, c.want)
		}
		if c.want && ts.resolved.Validate(v) != nil {
			t.Errorf("%s %s: jsonschema-go refuses it", c.tool, c.args)
		}
	}
}

// TestQuickSchemaRefusesSchemasItDoesNotKnow checks that a schema with any keyword beyond
// the shortcut's, at the top or in a member, gets no shortcut for it.
func TestQuickSchemaRefusesSchemasItDoesNotKnow(t *testing.T) {
	member := func(extra string) string {
		return fmt.Sprintf(`{"type":"object","properties":{"a":{"type":"string"%s}},"additionalProperties":false}`, extra)
	}
	cases := map[string]struct {
		schema    string
		topLevel  bool // no shortcut at all, else none for member a
		shortcuts bool
	}{
		"simple":                              {member(`,"enum":["x",null],"description":"d","title":"t"`), false, true},
		"pattern":                             {member(`,"pattern":"^x$"`), false, false},
		"minLength":                           {member(`,"minLength":2`), false, false},
		"format":                              {member(`,"format":"date-time"`), false, false},
		"const":                               {member(`,"const":"x"`), false, false},
		"an unknown keyword":                  {member(`,"x-mcp-header":"A"`), false, false},
		"exclusiveMinimum":                    {member(`,"exclusiveMinimum":1`), false, false},
		"an enum of numbers":                  {member(`,"enum":[1,2]`), false, false},
		"type object":                         {`{"type":"object","properties":{"a":{"type":"object"}},"additionalProperties":false}`, false, false},
		"open additionalProperties":           {`{"type":"object","properties":{"a":{"type":"string"}}}`, true, false},
		"a top-level oneOf":                   {`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false,"oneOf":[{"required":["a"]}]}`, true, false},
		"maxProperties":                       {`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false,"maxProperties":1}`, true, false},
		"a $schema (judged by jsonschema-go)": {`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, true, false},
	}
	for name, c := range cases {
		s := new(jsonschema.Schema)
		if err := json.Unmarshal([]byte(c.schema), s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q := newQuickSchema(s)
		switch {
		case c.topLevel && q != nil:
			t.Errorf("%s: got a shortcut", name)
		case !c.topLevel && q == nil:
			t.Errorf("%s: got no shortcut at all", name)
		case !c.topLevel && (q.props["a"] != nil) != c.shortcuts:
			t.Errorf("%s: member a has a shortcut: %v, want %v", name, q.props["a"] != nil, c.shortcuts)
		}
	}
}
