package mcp

import (
	"math"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// quickSchema is a shortcut past jsonschema-go for the common shape of a tool's
// arguments: an object of known members, each a string, number, boolean or null under a
// schema of only type, enum (of strings and null), minimum and maximum. When it accepts
// arguments, jsonschema-go accepts them too (the same type, enum, bound, required and
// additionalProperties checks, on the same decoded values); anything else, including any
// member whose schema has another keyword, is left to jsonschema-go, whose verdict stays
// the contract's (TestQuickSchemaNeverAcceptsWhatTheSchemaRefuses). A valid call used to
// spend about 5% of the node's CPU in jsonschema-go's reflection (BENCHMARKS.md).
type quickSchema struct {
	props    map[string]*quickProp // nil: a member whose schema is not simple
	required []string
}

// quickProp is a simple member schema.
type quickProp struct {
	types    []string // the allowed JSON types ("string", "integer", "number", "boolean", "null"); none: any
	enum     []any    // strings and nil
	hasEnum  bool
	min, max *float64
}

// newQuickSchema returns the shortcut of s, or nil when s is not an object schema of
// known members (additionalProperties false) with no keyword beyond type, properties,
// required, additionalProperties and the annotations title, description and $comment.
func newQuickSchema(s *jsonschema.Schema) *quickSchema {
	if s == nil || s.Type != "object" || !refusesAll(s.AdditionalProperties) {
		return nil
	}
	rest := *s
	rest.Type, rest.Properties, rest.Required, rest.AdditionalProperties = "", nil, nil, nil
	if !onlyAnnotations(rest) {
		return nil
	}
	q := &quickSchema{props: make(map[string]*quickProp, len(s.Properties)), required: slices.Clone(s.Required)}
	for name, ps := range s.Properties {
		q.props[name] = newQuickProp(ps)
	}
	return q
}

// newQuickProp returns a member schema of only type, enum, minimum and maximum
// (annotations aside), or nil.
func newQuickProp(s *jsonschema.Schema) *quickProp {
	if s == nil {
		return nil
	}
	p := &quickProp{types: slices.Clone(s.Types), enum: slices.Clone(s.Enum), hasEnum: s.Enum != nil, min: s.Minimum, max: s.Maximum}
	if s.Type != "" {
		p.types = []string{s.Type}
	}
	for _, t := range p.types {
		if !slices.Contains([]string{"string", "integer", "number", "boolean", "null"}, t) {
			return nil
		}
	}
	for _, e := range p.enum {
		if _, ok := e.(string); !ok && e != nil {
			return nil
		}
	}
	rest := *s
	rest.Type, rest.Types, rest.Enum, rest.Minimum, rest.Maximum = "", nil, nil, nil, nil
	if !onlyAnnotations(rest) {
		return nil
	}
	return p
}

// onlyAnnotations reports whether s, once the keywords its caller handles are cleared,
// holds nothing but a title, a description, a $comment and the members' order.
func onlyAnnotations(s jsonschema.Schema) bool {
	s.Title, s.Description, s.Comment, s.PropertyOrder = "", "", "", nil
	return reflect.ValueOf(s).IsZero()
}

// refusesAll reports whether s is the schema false ({"not": {}}), tested as
// jsonschema-go tells an additionalProperties that refuses every other member.
func refusesAll(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

// accepts reports whether v (arguments as encoding/json decodes them into an `any`) is
// valid by the shortcut; false means only that jsonschema-go must judge it.
func (q *quickSchema) accepts(v any) bool {
	m, ok := v.(map[string]any)
	if q == nil || !ok {
		return false
	}
	for k, val := range m {
		p, known := q.props[k]
		if !known || p == nil || !p.accepts(val) {
			return false
		}
	}
	for _, r := range q.required {
		if _, ok := m[r]; !ok {
			return false
		}
	}
	return true
}

// accepts judges one member's value as jsonschema-go does for these keywords: a float64
// with no fraction is an "integer", which "number" also allows; bounds compare numbers.
func (p *quickProp) accepts(v any) bool {
	var got string
	switch x := v.(type) {
	case string:
		got = "string"
	case bool:
		got = "boolean"
	case nil:
		got = "null"
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		got = "number"
		if _, frac := math.Modf(x); frac == 0 {
			got = "integer"
		}
		if (p.min != nil && x < *p.min) || (p.max != nil && x > *p.max) {
			return false
		}
	default:
		return false
	}
	if len(p.types) > 0 && !slices.Contains(p.types, got) && !(got == "integer" && slices.Contains(p.types, "number")) {
		return false
	}
	if p.hasEnum && !slices.Contains(p.enum, v) {
		return false
	}
	return true
}
