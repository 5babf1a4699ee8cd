package mcp

import (
	"encoding/json"
	"strings"
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
