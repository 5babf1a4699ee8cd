package mcp

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairnstore/cairn/internal/strictjson"
	"github.com/cairnstore/cairn/workbench"
)

// A tool's arguments are decoded into float64s for the schema check (callArgs), and a
// float64 can hide what a number's text says: 1e-400 reads as 0, and
// 90.0000000000000001 as 90, an integer, so a limit or a ttl_days so written would pass
// the check as another number and reach the tool as it (decodeArgs rewrites an integral
// float64 as an integer). hiddenNumber judges the numbers on their text instead, before
// the schema check: one that is not zero but nearer zero than any float64 is refused
// (rule "range", as one beyond ±math.MaxFloat64 is), and one that is not an integer but
// whose float64 is one is refused where the schema takes only integers there, with the
// words the schema check gives 1.5 (rule "type"). Numbers inside a member the schema
// leaves free (a run manifest, snapshot metadata) are data the tools keep as written,
// and are not judged.

// numberText is what a number's text says that its float64 hides.
type numberText int

const (
	numberPlain     numberText = iota // nothing: its float64 is its value, or a number's rounding of it
	numberUnderflow                   // not zero, yet nearer zero than the least float64: it reads as 0
	numberFraction                    // not an integer, yet its float64 is one
)

// judgeNumber judges a JSON number's text. A number in range without a fraction or an
// exponent is plain: its digits are an integer, and encoding/json refuses one beyond a
// float64's range.
func judgeNumber(lit string) numberText {
	if !strings.ContainsAny(lit, ".eE") {
		return numberPlain
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return numberPlain // out of range: encoding/json refuses it (undecodableArgs)
	}
	zero, integral := strictjson.Decimal(lit)
	switch {
	case zero:
		return numberPlain
	case f == 0:
		return numberUnderflow
	case !integral && f == math.Trunc(f):
		return numberFraction
	}
	return numberPlain
}

// hasFractionOrExponent reports whether a clean JSON text has a number written with a
// fraction or an exponent: the only ones judgeNumber can find fault with. It reads each
// byte once and skips strings with bytes.IndexByte, so the arguments of a call without
// such a number (a payload of megabytes) cost one fast pass.
func hasFractionOrExponent(raw []byte) bool {
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			i = stringEnd(raw, i)
		case c == '-' || c >= '0' && c <= '9':
			for i++; i < len(raw); i++ {
				c := raw[i]
				if c == '.' || c == 'e' || c == 'E' {
					return true
				}
				if !(c >= '0' && c <= '9' || c == '+' || c == '-') {
					break
				}
			}
		default:
			i++
		}
	}
	return false
}

// stringEnd returns the index after the string of a clean JSON text that opens at
// raw[open].
func stringEnd(raw []byte, open int) int {
	for from := open + 1; ; {
		k := bytes.IndexByte(raw[from:], '"')
		if k < 0 {
			return len(raw)
		}
		q := from + k
		escapes := 0
		for p := q - 1; p > open && raw[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
			return q + 1
		}
		from = q + 1
	}
}

// hiddenNumber is the answer to arguments (clean JSON that decodes) with a number whose
// float64 hides what its text says (see above), naming the first; nil when there is none.
func (ts *toolSchema) hiddenNumber(raw []byte) *workbench.Error {
	if !hasFractionOrExponent(raw) {
		return nil
	}
	var answer *workbench.Error
	walkNumbers(raw, func(path []pathStep, lit string) bool {
		kind := judgeNumber(lit)
		if kind == numberPlain {
			return false
		}
		at, open := schemasAt(ts.schema, path)
		if open || len(at) == 0 {
			return false // free data, or a member the schema check refuses
		}
		field := fieldPath(path)
		switch {
		case kind == numberUnderflow:
			answer = invalidArgs(field, "range", fmt.Sprintf("must be 0 or at least %g in magnitude; %s is not 0 but nearer 0 than that, and would read as 0",
				math.SmallestNonzeroFloat64, truncate(lit, 64)))
			return true
		case !slices.ContainsFunc(at, admitsFraction):
			vio := explain(at[0], 0.5, field) // a number that is not an integer: the words 1.5 gets
			if len(at) > 1 || vio == nil {
				vio = &violation{field: field, keyword: "type", rule: "must be an integer, not a number"}
			}
			answer = invalidArgs(vio.field, vio.keyword, fmt.Sprintf("%s (%s is not a whole number, though a float64 rounds it to one)", vio.rule, truncate(lit, 64)))
			return true
		}
		return false
	})
	return answer
}

// schemasAt returns the schemas under s that judge the value at path: through properties,
// additionalProperties and items, and into the branches of anyOf and oneOf on the way.
// open is true when a schema on the way admits the container but says nothing of the
// member or item (the value is free).
func schemasAt(s *jsonschema.Schema, path []pathStep) (at []*jsonschema.Schema, open bool) {
	at = []*jsonschema.Schema{s}
	for _, step := range path {
		var next []*jsonschema.Schema
		for _, x := range withBranches(at, nil) {
			kind := "object"
			if step.array {
				kind = "array"
			}
			if types := schemaTypes(x); len(types) > 0 && !slices.Contains(types, kind) {
				continue
			}
			var child *jsonschema.Schema
			if step.array {
				child = x.Items
			} else if child = x.Properties[step.key]; child == nil {
				child = x.AdditionalProperties
			}
			switch {
			case child == nil && len(x.AnyOf)+len(x.OneOf) == 0:
				return nil, true
			case child != nil && !isFalseSchema(child):
				next = append(next, child)
			}
		}
		at = next
	}
	return at, false
}

// withBranches appends to out the schemas of list and, recursively, their anyOf and
// oneOf branches.
func withBranches(list []*jsonschema.Schema, out []*jsonschema.Schema) []*jsonschema.Schema {
	for _, x := range list {
		out = append(out, x)
		out = withBranches(x.AnyOf, out)
		out = withBranches(x.OneOf, out)
	}
	return out
}

// admitsFraction reports whether a schema can take a number that is not an integer: its
// type, if it has one, includes "number", and so does a branch of its anyOf and of its
// oneOf, if it has them.
func admitsFraction(s *jsonschema.Schema) bool {
	if types := schemaTypes(s); len(types) > 0 && !slices.Contains(types, "number") {
		return false
	}
	if len(s.AnyOf) > 0 && !slices.ContainsFunc(s.AnyOf, admitsFraction) {
		return false
	}
	return len(s.OneOf) == 0 || slices.ContainsFunc(s.OneOf, admitsFraction)
}
