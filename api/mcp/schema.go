package mcp

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairnstore/cairn/workbench"
)

// schemaFile holds the hand-written input schemas of the 18 Workbench tools, keyed by tool
// name (docs/workbench.md#the-18-tools-inputs). It is written by hand, not generated from the Go input
// structs, because unions, oneOf and nullable types do not come out right otherwise.
//
//go:embed schemas/workbench.json
var schemaFile []byte

// toolSchema is one tool's input schema: the bytes sent in tools/list and the resolved form
// arguments are validated against.
type toolSchema struct {
	raw      json.RawMessage
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	quick    *quickSchema // nil: every call is judged by resolved
}

// loadSchemas parses and resolves schemaFile once per process.
var loadSchemas = sync.OnceValues(func() (map[string]*toolSchema, error) {
	return parseSchemas("schemas/workbench.json", schemaFile)
})

// parseSchemas parses and resolves a file of input schemas keyed by tool name.
func parseSchemas(file string, data []byte) (map[string]*toolSchema, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("mcp: %s: %w", file, err)
	}
	out := make(map[string]*toolSchema, len(raw))
	for name, r := range raw {
		var buf bytes.Buffer
		if err := json.Compact(&buf, r); err != nil {
			return nil, fmt.Errorf("mcp: schema of %s: %w", name, err)
		}
		s := new(jsonschema.Schema)
		if err := json.Unmarshal(buf.Bytes(), s); err != nil {
			return nil, fmt.Errorf("mcp: schema of %s: %w", name, err)
		}
		if s.Type != "object" {
			return nil, fmt.Errorf("mcp: schema of %s: type must be \"object\"", name)
		}
		res, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("mcp: schema of %s: %w", name, err)
		}
		out[name] = &toolSchema{raw: buf.Bytes(), schema: s, resolved: res, quick: newQuickSchema(s)}
	}
	return out, nil
}

// mustSchema returns the input schema of a tool. The schemas are embedded and checked by the
// package's tests, so a failure here is a build defect, not bad input.
func mustSchema(tool string) *toolSchema {
	return mustSchemaIn("schemas/workbench.json", loadSchemas, tool)
}

// mustSchemaIn returns the input schema of tool from the embedded file that load parses.
func mustSchemaIn(file string, load func() (map[string]*toolSchema, error), tool string) *toolSchema {
	all, err := load()
	if err != nil {
		panic(err)
	}
	s, ok := all[tool]
	if !ok {
		panic(fmt.Sprintf("mcp: no input schema for %s in %s", tool, file))
	}
	return s
}

// validateArgs checks raw tool arguments against the tool's schema. The verdict is
// jsonschema-go's; the message is ours (docs/workbench.md: "the SDK's own validation text is not
// the contract"): InvalidArguments naming the field and the rule it broke, with
// details.field and details.rule (the JSON Schema keyword).
func (ts *toolSchema) validateArgs(args json.RawMessage) *workbench.Error {
	return ts.validate(decodeCallArgs(args))
}

// validate is validateArgs of arguments decoded once (decodeCallArgs).
func (ts *toolSchema) validate(a callArgs) *workbench.Error {
	if a.err != nil {
		return undecodableArgs(a.raw)
	}
	if werr := ts.hiddenNumber(a.raw); werr != nil {
		return werr
	}
	v := a.value
	if ts.quick.accepts(v) || ts.resolved.Validate(v) == nil {
		return nil
	}
	if vio := explain(ts.schema, v, ""); vio != nil {
		return invalidArgs(vio.field, vio.keyword, vio.rule)
	}
	return invalidArgs("arguments", "schema", "do not match the tool's input schema")
}

func invalidArgs(field, keyword, rule string) *workbench.Error {
	return &workbench.Error{
		Code:    workbench.CodeInvalidArguments,
		Message: field + ": " + rule,
		Details: map[string]any{"field": field, "rule": keyword},
	}
}

// violation is the first rule an argument breaks.
type violation struct {
	field   string // "limit", "predicates[0].op"; "arguments" for the whole object
	keyword string // the JSON Schema keyword: "type", "required", "maximum", …
	rule    string // what the value must be, for people
}

// explain walks a schema over a decoded JSON value (as encoding/json decodes into any) and
// reports the first rule the value breaks, or nil. It covers the keywords the Workbench
// schemas use: type, enum, minimum, maximum, minLength, maxLength, pattern, required,
// properties, additionalProperties, maxProperties, items, minItems, maxItems, oneOf and
// anyOf. It only words the failure: whether arguments are valid is jsonschema-go's verdict.
func explain(s *jsonschema.Schema, v any, at string) *violation {
	name := at
	if name == "" {
		name = "arguments"
	}
	fail := func(keyword, format string, args ...any) *violation {
		return &violation{field: name, keyword: keyword, rule: fmt.Sprintf(format, args...)}
	}
	if s == nil {
		return nil
	}
	got := jsonTypeOf(v)
	if types := schemaTypes(s); len(types) > 0 && !typeAllowed(types, got) {
		return fail("type", "must be %s, not %s", describeTypes(types), article(got))
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		return fail("enum", "must be one of %s", describeEnum(s.Enum))
	}
	switch x := v.(type) {
	case float64:
		switch {
		case s.Minimum != nil && s.Maximum != nil && (x < *s.Minimum || x > *s.Maximum):
			kw := "minimum"
			if x > *s.Maximum {
				kw = "maximum"
			}
			return fail(kw, "must be between %s and %s", num(*s.Minimum), num(*s.Maximum))
		case s.Minimum != nil && x < *s.Minimum:
			return fail("minimum", "must be at least %s", num(*s.Minimum))
		case s.Maximum != nil && x > *s.Maximum:
			return fail("maximum", "must be at most %s", num(*s.Maximum))
		}
	case string:
		if vio := explainString(s, x, fail); vio != nil {
			return vio
		}
	case map[string]any:
		if vio := explainObject(s, x, at, fail); vio != nil {
			return vio
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			return fail("minItems", "must have at least %d %s", *s.MinItems, plural(*s.MinItems, "item"))
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			return fail("maxItems", "must have at most %d %s, not %d", *s.MaxItems, plural(*s.MaxItems, "item"), len(x))
		}
		if s.Items != nil {
			for i, item := range x {
				if vio := explain(s.Items, item, fmt.Sprintf("%s[%d]", name, i)); vio != nil {
					return vio
				}
			}
		}
	}
	if len(s.AnyOf) > 0 && !slices.ContainsFunc(s.AnyOf, func(b *jsonschema.Schema) bool { return explain(b, v, at) == nil }) {
		// When exactly one alternative takes the value's type (an integer for
		// {integer, minimum: 0} / string / null), its own rule is the one broken: -1 "must be
		// at least 0" says more than the list of alternatives.
		var typed []*jsonschema.Schema
		for _, b := range s.AnyOf {
			if types := schemaTypes(b); len(types) > 0 && typeAllowed(types, got) {
				typed = append(typed, b)
			}
		}
		if len(typed) == 1 {
			return explain(typed[0], v, at)
		}
		var alts []string
		for _, b := range s.AnyOf {
			alts = append(alts, describeBranch(b))
		}
		return fail("anyOf", "must be %s", joinOr(alts))
	}
	if len(s.OneOf) > 0 {
		matched := 0
		for _, b := range s.OneOf {
			if explain(b, v, at) == nil {
				matched++
			}
		}
		if matched != 1 {
			if keys, ok := requiredAlternatives(s.OneOf); ok {
				return &violation{field: name, keyword: "oneOf", rule: "give exactly one of " + joinOr(keys)}
			}
			return fail("oneOf", "must match exactly one of %d alternatives, matches %d", len(s.OneOf), matched)
		}
	}
	return nil
}

// explainString names the first string keyword of s that x breaks (length, then pattern),
// or returns nil.
func explainString(s *jsonschema.Schema, x string, fail func(keyword, format string, args ...any) *violation) *violation {
	n := len([]rune(x))
	switch {
	case s.MinLength != nil && s.MaxLength != nil && *s.MinLength == *s.MaxLength && n != *s.MinLength:
		kw := "minLength"
		if n > *s.MaxLength {
			kw = "maxLength"
		}
		return fail(kw, "must be exactly %d characters long, not %d", *s.MinLength, n)
	case s.MinLength != nil && n < *s.MinLength:
		return fail("minLength", "must be at least %d %s long", *s.MinLength, plural(*s.MinLength, "character"))
	case s.MaxLength != nil && n > *s.MaxLength:
		return fail("maxLength", "must be at most %d %s long, not %d", *s.MaxLength, plural(*s.MaxLength, "character"), n)
	}
	if s.Pattern != "" {
		// The pattern compiled when the schema resolved; the verdict below only
		// decides whether this keyword is the one to report.
		if ok, err := patternMatches(s.Pattern, x); err == nil && !ok {
			return fail("pattern", "must match the pattern %s", s.Pattern)
		}
	}
	return nil
}

// explainObject checks the object keywords: unknown properties first (usually a typo of a
// required one), then missing required properties, then each property's value, in name order.
func explainObject(s *jsonschema.Schema, obj map[string]any, at string, fail func(string, string, ...any) *violation) *violation {
	child := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	if s.AdditionalProperties != nil && isFalseSchema(s.AdditionalProperties) {
		for _, k := range sortedKeys(obj) {
			if _, ok := s.Properties[k]; !ok {
				return &violation{field: child(truncate(k, 64)), keyword: "additionalProperties",
					rule: "is not an accepted property (accepted: " + strings.Join(sortedKeys(s.Properties), ", ") + ")"}
			}
		}
	}
	for _, k := range s.Required {
		if _, ok := obj[k]; !ok {
			return &violation{field: child(k), keyword: "required", rule: "is required"}
		}
	}
	if s.MaxProperties != nil && len(obj) > *s.MaxProperties {
		return fail("maxProperties", "must have at most %d properties, not %d", *s.MaxProperties, len(obj))
	}
	for _, k := range sortedKeys(obj) {
		if ps, ok := s.Properties[k]; ok {
			if vio := explain(ps, obj[k], child(k)); vio != nil {
				return vio
			}
		}
	}
	return nil
}

// isFalseSchema reports whether s is the schema `false` (jsonschema-go decodes it as
// {"not": {}}).
func isFalseSchema(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && string(b) == "false"
}

// requiredAlternatives returns the property names when every branch is {"required":[name]}.
func requiredAlternatives(branches []*jsonschema.Schema) ([]string, bool) {
	var keys []string
	for _, b := range branches {
		if len(b.Required) != 1 {
			return nil, false
		}
		keys = append(keys, b.Required[0])
	}
	return keys, true
}

func schemaTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func typeAllowed(types []string, got string) bool {
	return slices.Contains(types, got) || got == "integer" && slices.Contains(types, "number")
}

// jsonTypeOf names a decoded JSON value's type as JSON Schema does (an integral number is
// an "integer").
func jsonTypeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(x); f == 0 && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func article(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

func describeTypes(types []string) string {
	var parts []string
	for _, t := range types {
		parts = append(parts, article(t))
	}
	return joinOr(parts)
}

func describeEnum(values []any) string {
	var parts []string
	for _, e := range values {
		if e == nil {
			parts = append(parts, "null")
			continue
		}
		parts = append(parts, fmt.Sprint(e))
	}
	return joinOr(parts)
}

// describeBranch words one anyOf alternative: its type and bounds.
func describeBranch(b *jsonschema.Schema) string {
	d := describeTypes(schemaTypes(b))
	if d == "" {
		d = "a value"
	}
	if b.Minimum != nil {
		d += " >= " + num(*b.Minimum)
	}
	if b.Items != nil && len(schemaTypes(b.Items)) > 0 {
		d += " of " + strings.Join(schemaTypes(b.Items), "/") + " items"
	}
	return d
}

func joinOr(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jsonEqual compares two decoded JSON scalars (enum members are scalars here).
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case int:
		y, ok := b.(float64)
		return ok && float64(x) == y
	}
	return false
}

// patternMatches reports whether s matches a schema pattern (RE2 syntax, unanchored, as
// JSON Schema specifies).
func patternMatches(pattern, s string) (bool, error) {
	return regexp.MatchString(pattern, s)
}

// truncate bounds how much of a caller-supplied name is echoed in a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// decodeArgs decodes validated arguments into a tool's input struct. JSON Schema counts 1.0
// and 1e2 as integers but encoding/json does not decode them into Go integers, so integral
// numbers at the top level are rewritten as plain integers first when the direct decode fails.
// A number that still does not fit its Go field (e.g. offset 1e30) is InvalidArguments.
func decodeArgs[In any](args json.RawMessage) (In, *workbench.Error) {
	var in In
	err := json.Unmarshal(args, &in)
	if err == nil {
		return in, nil
	}
	if fixed, ok := integralNumbers(args); ok {
		var again In
		if err2 := json.Unmarshal(fixed, &again); err2 == nil {
			return again, nil
		} else {
			err = err2
		}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return in, invalidArgs(te.Field, "type", "is out of range for this parameter")
	}
	return in, invalidArgs("arguments", "type", "could not be decoded")
}

// maxExactInteger is 2^53: float64 holds every integer up to it exactly.
const maxExactInteger = 1 << 53

// integralNumbers rewrites top-level numbers with an integral value written with a fraction
// or exponent ("1.0", "1e2") as plain integers; ok is false when there is nothing to rewrite.
func integralNumbers(args json.RawMessage) (json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return nil, false
	}
	changed := false
	for k, v := range obj {
		t := strings.TrimSpace(string(v))
		if t == "" || !(t[0] == '-' || t[0] >= '0' && t[0] <= '9') || !strings.ContainsAny(t, ".eE") || len(t) > 64 {
			continue
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExactInteger {
			continue
		}
		obj[k] = json.RawMessage(strconv.FormatInt(int64(f), 10))
		changed = true
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(obj)
	return out, err == nil
}
