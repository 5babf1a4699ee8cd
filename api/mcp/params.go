package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// paramKinds lists, per request method, the JSON kind of each params member the SDK
// decodes into a Go struct. The SDK's own answer to a wrong kind names that struct
// ("into Go struct field mcp.CallToolParamsRaw.name of type string"); checkParams
// answers first, naming the member as the wire does.
var paramKinds = map[string]map[string]string{
	"initialize":               {"protocolVersion": "string", "capabilities": "object", "clientInfo": "object", "_meta": "object"},
	"tools/call":               {"name": "string", "arguments": "object", "_meta": "object"},
	"tools/list":               {"cursor": "string", "_meta": "object"},
	"resources/list":           {"cursor": "string", "_meta": "object"},
	"resources/templates/list": {"cursor": "string", "_meta": "object"},
	"resources/read":           {"uri": "string", "_meta": "object"},
	"prompts/list":             {"cursor": "string", "_meta": "object"},
	"prompts/get":              {"name": "string", "arguments": "object", "_meta": "object"},
	"logging/setLevel":         {"level": "string", "_meta": "object"},
	"ping":                     {"_meta": "object"},
}

// nestedKinds lists members of objects inside params, by "member" path.
var nestedKinds = map[string]map[string]map[string]string{
	"initialize": {"clientInfo": {"name": "string", "version": "string", "title": "string"}},
}

// checkParams reports why a request's params do not have the shape its method needs
// ("" when they do, or when the method is not one the table knows); the reason names
// the member as the wire does ("params.name must be a string, not a number"). When
// several members are of the wrong kind it names the first in the message. members are
// params' members in body when the caller has them (inbound.go), else nil.
func checkParams(method string, params, body []byte, members []member) string {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return ""
	}
	if p[0] != '{' {
		return fmt.Sprintf("params must be an object, not %s", article(jsonKind(p)))
	}
	kinds, ok := paramKinds[method]
	if !ok {
		return ""
	}
	var buf [8]member
	if members == nil {
		body = p
		if members, ok = membersOf(body, span{0, len(body)}, buf[:0]); !ok {
			return "params must be an object"
		}
	}
	for _, mb := range members {
		name := mb.decodedName(body)
		want, ok := kinds[string(name)]
		if !ok {
			continue
		}
		got := jsonKind(mb.value.of(body))
		if got != want && got != "null" {
			return fmt.Sprintf("params.%s must be %s, not %s", string(name), article(want), article(got))
		}
		if nested, ok := nestedKinds[method][string(name)]; ok && got == "object" {
			var innerBuf [8]member
			inner, _ := membersOf(body, mb.value, innerBuf[:0])
			for _, in := range inner {
				innerName := in.decodedName(body)
				if w, ok := nested[string(innerName)]; ok {
					if got := jsonKind(in.value.of(body)); got != w && got != "null" {
						return fmt.Sprintf("params.%s.%s must be %s, not %s", string(name), string(innerName), article(w), article(got))
					}
				}
			}
		}
	}
	return ""
}

// jsonKind names the kind of a JSON value: object, array, string, number, boolean or
// null.
func jsonKind(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "null"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}
