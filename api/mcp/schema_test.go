package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// contractTools is docs/workbench.md §"The 18 tools: inputs", transcribed: property → shape, a
// trailing "*" on the name marks a required property. Shapes: types joined with "|";
// "section" is the string enum of the five sections ("section|null" adds null to type and
// enum); enum(a,b) a string enum; [min,max] numeric bounds; {min,max} string length;
// ~pattern; array<item>[,maxItems]; (≤n) maxProperties; anyOf(a / b).
var contractTools = map[string]map[string]string{
	"workbench_create": {"id*": "string"},
	"workbench_put_file": {"id*": "string", "section*": "section", "path*": "string", "text": "string",
		"base64": "string", "content_type": "string", "replace": "boolean", "expected_generation": "integer[1,]"},
	"workbench_append": {"id*": "string", "section*": "section", "path*": "string", "text": "string",
		"base64": "string", "content_type": "string"},
	"workbench_edit": {"id*": "string", "section*": "section", "path*": "string", "old_string*": "string",
		"new_string*": "string", "replace_all": "boolean"},
	"workbench_list": {"id*": "string", "section": "section|null", "path": "string|null",
		"at_snapshot": "anyOf(integer[0,] / string / null)", "cursor": "string|null", "limit": "integer[1,100]"},
	"workbench_stat": {"id*": "string", "section": "section|null", "path": "string|null",
		"at_snapshot": "anyOf(integer[0,] / string / null)"},
	"workbench_read": {"id*": "string", "section*": "section", "path*": "string",
		"at_snapshot": "anyOf(integer[0,] / string / null)", "format": "enum(structured,bytes)", "offset": "integer[0,]",
		"cursor": "string|null", "limit": "integer[1,300]", "if_none_match": "integer[0,]"},
	"workbench_grep": {"id*": "string", "pattern*": "string", "recursive*": "boolean",
		"patterns": "array<string>[,16]", "section": "section|null", "path": "string|null", "glob": "string|null",
		"cursor": "string|null", "limit": "integer[1,300]"},
	"workbench_search": {"id": "string|null", "section": "section|null", "path": "string|null",
		"predicates": "array<" + predicateShape + ">", "fields": "array<string>", "sort": "array<" + sortShape + ">",
		"facets": "array<string>", "cursor": "string|null", "limit": "integer[1,10]"},
	"workbench_aggregate": {"measures*": "array<{field:string|null, name*:string, op*:enum(count,sum,avg,min,max)}>",
		"id": "string|null", "section": "section|null", "path": "string|null", "predicates": "array<" + predicateShape + ">",
		"sort": "array<" + sortShape + ">", "group_by": "array<string>", "limit": "integer[1,100]"},
	"workbench_catalog": {"id": "string|null", "section": "section|null", "path": "string|null",
		"field_prefix": "string|null", "include_facets": "boolean"},
	"workbench_find": {"committed": "boolean|null", "manifest_pattern": "string|null", "include_manifest": "boolean",
		"cursor": "string|null", "limit": "integer[1,100]"},
	"workbench_commit": {"id*": "string", "manifest*": "object", "content_digest_uri*": "string~^sha256:[0-9a-f]{64}$",
		"replace": "boolean"},
	"workbench_snapshot": {"id*": "string", "name": "string|null", "ttl_days": "integer[1,90]",
		"reason": "string|null{1,256}", "metadata": "object|null(≤64)"},
	"workbench_snapshot_renew": {"id*": "string", "snapshot_id": "integer|null[0,]", "name": "string|null",
		"ttl_days": "integer[1,90]"},
	"workbench_snapshot_retire": {"id*": "string{1,}", "snapshot_id": "integer[0,]", "name": "string{1,}",
		"reason": "string|null{1,256}"},
	"workbench_snapshot_list": {"id*": "string"},
	"workbench_restore": {"id*": "string{1,}", "destination_id*": "string{1,}", "at_snapshot": "anyOf(string{1,} / integer[0,])",
		"at_commit": "string{64,64}"},
}

const (
	predicateShape = "{field*:string, op*:enum(eq,ne,in,prefix,suffix,contains,gt,gte,lt,lte,exists,not_exists), " +
		"value:anyOf(string / integer[0,] / number / boolean / array<string|integer|number|boolean> / null)}"
	sortShape = "{direction:enum(asc,desc), field*:string}"
)

var sectionNames = []any{"input", "scripts", "outputs", "logs", "metadata"}

// shape renders a schema in contractTools' notation.
func shape(s *jsonschema.Schema) string {
	types := schemaTypes(s)
	var b strings.Builder
	if len(s.AnyOf) > 0 {
		var alts []string
		for _, a := range s.AnyOf {
			alts = append(alts, shape(a))
		}
		b.WriteString("anyOf(" + strings.Join(alts, " / ") + ")")
	}
	enum := ""
	switch {
	case len(s.Enum) == 0:
	case slices.Equal(s.Enum, sectionNames):
		enum = "section"
	case slices.Equal(s.Enum, append(slices.Clone(sectionNames), nil)):
		enum = "section"
	default:
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, fmt.Sprint(e))
		}
		enum = "enum(" + strings.Join(vals, ",") + ")"
	}
	var ts []string
	for _, t := range types {
		switch {
		case t == "string" && enum != "":
			ts = append(ts, enum)
		case t == "array" && s.Items != nil:
			ts = append(ts, "array<"+shape(s.Items)+">")
		case t == "object" && len(s.Properties) > 0:
			var props []string
			for _, k := range sortedKeys(s.Properties) {
				name := k
				if slices.Contains(s.Required, k) {
					name += "*"
				}
				props = append(props, name+":"+shape(s.Properties[k]))
			}
			ts = append(ts, "{"+strings.Join(props, ", ")+"}")
		default:
			ts = append(ts, t)
		}
	}
	b.WriteString(strings.Join(ts, "|"))
	if s.Minimum != nil || s.Maximum != nil {
		b.WriteString("[" + optNum(s.Minimum) + "," + optNum(s.Maximum) + "]")
	}
	if s.MinLength != nil || s.MaxLength != nil {
		b.WriteString("{" + optInt(s.MinLength) + "," + optInt(s.MaxLength) + "}")
	}
	if s.Pattern != "" {
		b.WriteString("~" + s.Pattern)
	}
	if s.MinItems != nil || s.MaxItems != nil {
		b.WriteString("[" + optInt(s.MinItems) + "," + optInt(s.MaxItems) + "]")
	}
	if s.MaxProperties != nil {
		b.WriteString(fmt.Sprintf("(≤%d)", *s.MaxProperties))
	}
	return b.String()
}

func optNum(f *float64) string {
	if f == nil {
		return ""
	}
	return num(*f)
}

func optInt(n *int) string {
	if n == nil {
		return ""
	}
	return fmt.Sprint(*n)
}

func TestSchemaFileMatchesTheContractTable(t *testing.T) {
	all, err := loadSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(contractTools) {
		t.Errorf("schemas/workbench.json has %d tools, the contract 18", len(all))
	}
	for tool, want := range contractTools {
		t.Run(tool, func(t *testing.T) {
			ts, ok := all[tool]
			if !ok {
				t.Fatalf("no schema for %s", tool)
			}
			s := ts.schema
			if s.Type != "object" {
				t.Errorf("type = %q, want object", s.Type)
			}
			if !isFalseSchema(s.AdditionalProperties) {
				t.Errorf("additionalProperties is not false")
			}
			var wantRequired []string
			for name := range want {
				if base, ok := strings.CutSuffix(name, "*"); ok {
					wantRequired = append(wantRequired, base)
				}
			}
			slices.Sort(wantRequired)
			gotRequired := slices.Sorted(slices.Values(s.Required))
			if !slices.Equal(gotRequired, wantRequired) {
				t.Errorf("required = %v, want %v", gotRequired, wantRequired)
			}
			if len(s.Properties) != len(want) {
				t.Errorf("properties = %v, want %d of them", sortedKeys(s.Properties), len(want))
			}
			for name, wantShape := range want {
				base := strings.TrimSuffix(name, "*")
				p, ok := s.Properties[base]
				if !ok {
					t.Errorf("property %s missing", base)
					continue
				}
				if got := shape(p); got != wantShape {
					t.Errorf("%s: shape %s, want %s", base, got, wantShape)
				}
				if p.Description == "" {
					t.Errorf("%s: no description", base)
				}
			}
			// Every nested object schema closes its properties too.
			var walk func(sub *jsonschema.Schema, at string)
			walk = func(sub *jsonschema.Schema, at string) {
				if sub == nil {
					return
				}
				if len(sub.Properties) > 0 && !isFalseSchema(sub.AdditionalProperties) {
					t.Errorf("%s: object schema allows additional properties", at)
				}
				for k, p := range sub.Properties {
					walk(p, at+"."+k)
				}
				walk(sub.Items, at+"[]")
			}
			walk(s, tool)
		})
	}
}

func TestSnapshotRetireRequiresExactlyOneOfSnapshotIDOrName(t *testing.T) {
	s := mustSchema("workbench_snapshot_retire")
	got := func(args string) string {
		if e := s.validateArgs(json.RawMessage(args)); e != nil {
			return e.Message
		}
		return ""
	}
	if m := got(`{"id":"w","snapshot_id":3}`); m != "" {
		t.Errorf("snapshot_id alone: %s", m)
	}
	if m := got(`{"id":"w","name":"nightly"}`); m != "" {
		t.Errorf("name alone: %s", m)
	}
	for _, args := range []string{`{"id":"w"}`, `{"id":"w","snapshot_id":3,"name":"nightly"}`} {
		if m := got(args); m != "arguments: give exactly one of snapshot_id or name" {
			t.Errorf("%s: message %q", args, m)
		}
	}
}

// TestExplainAgreesWithTheValidator checks that the wording pass finds a specific rule for
// every input jsonschema-go rejects, and nothing for the inputs it accepts.
func TestExplainAgreesWithTheValidator(t *testing.T) {
	cases := []struct {
		tool, args       string
		field, keyword   string // "" = valid
		messageSubstring string
	}{
		{"workbench_create", `{"id":"a"}`, "", "", ""},
		{"workbench_create", `{}`, "id", "required", "id: is required"},
		{"workbench_create", `[]`, "arguments", "type", "arguments: must be an object, not an array"},
		{"workbench_create", `{"id":7}`, "id", "type", "id: must be a string, not an integer"},
		{"workbench_create", `{"id":"a","ID":"b"}`, "ID", "additionalProperties", "ID: is not an accepted property (accepted: id)"},
		{"workbench_list", `{"id":"a","section":null,"path":null,"cursor":null,"at_snapshot":null}`, "", "", ""},
		{"workbench_list", `{"id":"a","at_snapshot":"nightly"}`, "", "", ""},
		{"workbench_list", `{"id":"a","at_snapshot":-1}`, "at_snapshot", "minimum", "at_snapshot: must be at least 0"},
		{"workbench_list", `{"id":"a","at_snapshot":1.5}`, "at_snapshot", "anyOf", "at_snapshot: must be an integer >= 0, a string or null"},
		{"workbench_list", `{"id":"a","section":"secrets"}`, "section", "enum", "section: must be one of input, scripts, outputs, logs, metadata or null"},
		{"workbench_list", `{"id":"a","limit":101}`, "limit", "maximum", "limit: must be between 1 and 100"},
		{"workbench_list", `{"id":"a","limit":0}`, "limit", "minimum", "limit: must be between 1 and 100"},
		{"workbench_list", `{"id":"a","limit":2.0}`, "", "", ""},
		{"workbench_read", `{"id":"a","section":"input","path":"p","format":"lines"}`, "format", "enum", "format: must be one of structured or bytes"},
		{"workbench_read", `{"id":"a","section":null,"path":"p"}`, "section", "type", "section: must be a string, not null"},
		{"workbench_grep", `{"id":"a","pattern":"x","recursive":true,"patterns":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}`,
			"patterns", "maxItems", "patterns: must have at most 16 items, not 17"},
		{"workbench_grep", `{"id":"a","pattern":"x","recursive":true,"patterns":["ok",3]}`, "patterns[1]", "type", "patterns[1]: must be a string"},
		{"workbench_search", `{"predicates":[{"field":"artifact.ext","op":"eq","value":"md"}]}`, "", "", ""},
		{"workbench_search", `{"predicates":[{"field":"artifact.ext","op":"like"}]}`, "predicates[0].op", "enum", "predicates[0].op: must be one of eq"},
		{"workbench_search", `{"predicates":[{"field":"f","op":"eq","value":{"a":1}}]}`, "predicates[0].value", "anyOf", "predicates[0].value: must be a string"},
		{"workbench_search", `{"predicates":[{"op":"eq"}]}`, "predicates[0].field", "required", "predicates[0].field: is required"},
		{"workbench_search", `{"sort":[{"field":"f","direction":"up"}]}`, "sort[0].direction", "enum", "must be one of asc or desc"},
		{"workbench_search", `{"limit":11}`, "limit", "maximum", "limit: must be between 1 and 10"},
		{"workbench_aggregate", `{"measures":[{"name":"n","op":"count"}]}`, "", "", ""},
		{"workbench_aggregate", `{"measures":[{"name":"n","op":"median"}]}`, "measures[0].op", "enum", "count, sum, avg, min or max"},
		{"workbench_find", `{"committed":"yes"}`, "committed", "type", "committed: must be a boolean or null, not a string"},
		{"workbench_commit", `{"id":"a","manifest":{},"content_digest_uri":"sha256:abc"}`, "content_digest_uri", "pattern", "must match the pattern ^sha256:[0-9a-f]{64}$"},
		{"workbench_commit", `{"id":"a","manifest":[],"content_digest_uri":"sha256:` + strings.Repeat("0", 64) + `"}`, "manifest", "type", "manifest: must be an object, not an array"},
		{"workbench_snapshot", `{"id":"a","reason":""}`, "reason", "minLength", "reason: must be at least 1 character long"},
		{"workbench_snapshot", `{"id":"a","reason":"` + strings.Repeat("é", 257) + `"}`, "reason", "maxLength", "reason: must be at most 256 characters long, not 257"},
		{"workbench_snapshot", `{"id":"a","ttl_days":91}`, "ttl_days", "maximum", "ttl_days: must be between 1 and 90"},
		{"workbench_snapshot", `{"id":"a","metadata":{` + manyProps(65) + `}}`, "metadata", "maxProperties", "metadata: must have at most 64 properties, not 65"},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_commit":"abc"}`, "at_commit", "minLength", "at_commit: must be exactly 64 characters long, not 3"},
		{"workbench_restore", `{"id":"a","destination_id":"b","at_snapshot":""}`, "at_snapshot", "minLength", "at_snapshot: must be at least 1 character long"},
		{"workbench_restore", `{"id":"","destination_id":"b"}`, "id", "minLength", "id: must be at least 1 character long"},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args[:min(len(c.args), 60)], func(t *testing.T) {
			e := mustSchema(c.tool).validateArgs(json.RawMessage(c.args))
			if c.field == "" {
				if e != nil {
					t.Fatalf("rejected: %s", e.Message)
				}
				return
			}
			if e == nil {
				t.Fatalf("accepted, want %s on %s", c.keyword, c.field)
			}
			if e.Code != "InvalidArguments" || e.Details["field"] != c.field || e.Details["rule"] != c.keyword {
				t.Errorf("got %s field=%v rule=%v (%s), want field=%s rule=%s", e.Code, e.Details["field"], e.Details["rule"], e.Message, c.field, c.keyword)
			}
			if !strings.Contains(e.Message, c.messageSubstring) {
				t.Errorf("message %q does not contain %q", e.Message, c.messageSubstring)
			}
		})
	}
}

func manyProps(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf(`"k%d":%d`, i, i))
	}
	return strings.Join(parts, ",")
}

func TestDecodeArgsAcceptsIntegralNumbersWrittenAsFloats(t *testing.T) {
	type in struct {
		Limit  *int    `json:"limit"`
		Offset *int64  `json:"offset"`
		Gen    *uint64 `json:"if_none_match"`
	}
	got, e := decodeArgs[in](json.RawMessage(`{"limit":2.0,"offset":1e2,"if_none_match":3}`))
	if e != nil {
		t.Fatal(e.Message)
	}
	if *got.Limit != 2 || *got.Offset != 100 || *got.Gen != 3 {
		t.Errorf("decoded %d %d %d", *got.Limit, *got.Offset, *got.Gen)
	}
	_, e = decodeArgs[in](json.RawMessage(`{"offset":1e30}`))
	if e == nil || e.Details["field"] != "offset" {
		t.Errorf("offset 1e30: %v", e)
	}
}
