package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/workbench"
)

// callArgs are a tool call's arguments, decoded once for the audit line and the schema
// check (issue 29: they were decoded once for each, then again into the tool's input
// struct). value and err are what json.Unmarshal of raw into an `any` gives, so
// validation sees exactly what it saw when it decoded them itself.
type callArgs struct {
	raw   json.RawMessage
	value any
	err   error
}

// decodeCallArgs decodes a tool call's arguments (never empty: handler passes "{}" for
// none).
func decodeCallArgs(raw json.RawMessage) callArgs {
	a := callArgs{raw: raw}
	a.err = json.Unmarshal(raw, &a.value)
	return a
}

// auditNames are the arguments auditTarget reads, in its order: id, section, path.
var auditNames = [3]string{"id", "section", "path"}

// auditTarget is auditTarget(a.raw), read from the decoded value. That function decodes
// into a struct, which matches names case-insensitively (encoding/json: bytes.EqualFold)
// and lets the last of the matching members win. The decoded map has lost the members'
// order, so when two of its names match one field (`{"id":…,"ID":…}`) which one wins is
// not known here, and the arguments are decoded the old way; likewise when the decode
// into `any` failed, which need not fail the struct's (a number out of range in a member
// the struct skips).
func (a callArgs) auditTarget() (id, path string) {
	if a.err != nil {
		return auditTarget(a.raw)
	}
	obj, ok := a.value.(map[string]any)
	if !ok {
		return "", "" // not an object: the struct decode fails
	}
	var vals [3]any
	var found [3]bool
	for k, v := range obj {
		for i, name := range auditNames {
			if k == name || strings.EqualFold(k, name) {
				if found[i] {
					return auditTarget(a.raw)
				}
				vals[i], found[i] = v, true
			}
		}
	}
	id, _ = vals[0].(string)
	path, _ = vals[2].(string)
	if sec, ok := vals[1].(string); ok && sec != "" {
		path = strings.TrimSuffix(sec+"/"+path, "/")
	}
	return id, path
}

// undecodableArgs is the answer to arguments that do not decode into an `any`. Arguments
// that reach a tool are clean JSON (the inbound checks), so that is a number beyond a
// float64's range (1e400, a 400-digit integer), which encoding/json refuses: the answer
// names its member. Anything else is not a JSON object.
func undecodableArgs(raw json.RawMessage) *workbench.Error {
	if at, ok := numberOutOfRange(raw); ok {
		return invalidArgs(at, "range", fmt.Sprintf("must be a number within ±%g; this one is out of range", math.MaxFloat64))
	}
	return invalidArgs("arguments", "json", "must be a JSON object")
}

// numberOutOfRange returns the path (as explain names fields: "ttl_days",
// "predicates[0].value", "arguments" for the whole value) of the first number in a JSON
// text that strconv.ParseFloat, as encoding/json, reads as out of range.
func numberOutOfRange(raw []byte) (string, bool) {
	var at string
	found := walkNumbers(raw, func(path []pathStep, lit string) bool {
		if _, err := strconv.ParseFloat(lit, 64); err != nil {
			at = fieldPath(path)
			return true
		}
		return false
	})
	return at, found
}

// pathStep is one step of the path to a value in a JSON text: into an object's member key,
// or an array's item index.
type pathStep struct {
	array   bool
	key     string
	index   int
	wantKey bool // in an object, between members
}

// fieldPath names a path as explain names fields: "ttl_days", "predicates[0].value",
// "arguments" for the whole value.
func fieldPath(path []pathStep) string {
	var b strings.Builder
	for _, f := range path {
		if f.array {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	if b.Len() == 0 {
		return "arguments"
	}
	return truncate(b.String(), 256)
}

// walkNumbers calls visit with the path and the text of each number of a JSON text, in
// order, until visit returns true, and reports whether it did.
func walkNumbers(raw []byte, visit func(path []pathStep, lit string) bool) bool {
	var stack []pathStep
	next := func() { // a value of the innermost container ended
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
			if key, ok := tok.(string); ok {
				stack[n-1].key, stack[n-1].wantKey = key, false
				continue
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, pathStep{wantKey: true})
				continue
			case '[':
				stack = append(stack, pathStep{array: true})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case json.Number:
			if visit(stack, string(t)) {
				return true
			}
		}
		next()
	}
}
