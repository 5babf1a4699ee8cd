package mcp

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The one pass over an inbound HTTP message (checkInbound). Before it, a body was read
// about ten times before a tool ran: json.Valid, strictjson.Check, the nesting depth, two
// struct decodes and a map decode of params here, and four json.Decoder walks in the fast
// lane (issue 29). scanMessage reads it once and says whether it is clean: JSON
// (RFC 8259, the grammar json.Valid accepts), Unicode text as strictjson.Check requires
// (valid UTF-8, surrogate escapes in high+low pairs), no object naming a member twice
// (names compared as they decode) and objects and arrays nested at most maxNestingDepth
// deep. A clean message is exactly one that json.Valid, strictjson.Check and
// nestedDeeperThan all pass (FuzzInboundScanMatchesTheChecks); one that is not is
// answered by those checks, as before, so every refusal keeps its words. On the way it
// keeps the members of the message and of its params, so the JSON-RPC checks and the
// fast lane look values up instead of decoding them again.

// member is one member of a JSON object.
type member struct {
	// name is the member's name as it decodes: the bytes between its quotes when it has
	// no escape, else a decoded copy.
	name []byte
	// value is the value's JSON text, without the white space around it.
	value []byte
}

// message is what scanMessage learned of a clean message.
type message struct {
	scanned bool     // the message is clean and the fields below describe it
	object  bool     // its value is an object
	top     []member // the object's members, in order
	// params are the members of the object's "params" member, in order, when that is an
	// object (paramsObject).
	params       []member
	paramsObject bool

	topBuf, paramsBuf [8]member
}

// scanMessage reports whether body is clean (see above) and, if so, fills m.
func scanMessage(body []byte, m *message) bool {
	*m = message{}
	m.top, m.params = m.topBuf[:0], m.paramsBuf[:0]
	s := scanner{b: body, m: m}
	s.names = s.namesBuf[:0]
	s.space()
	m.object = s.i < len(body) && body[s.i] == '{'
	if !s.value(0, roleTop) {
		return false
	}
	s.space()
	if s.i != len(body) {
		return false
	}
	m.scanned = true
	return true
}

// membersOf returns the members of the object raw, a value of a clean message, appended
// to buf; ok is false when raw is not an object.
func membersOf(raw []byte, buf []member) (members []member, ok bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m message
	m.top = buf[:0]
	s := scanner{b: raw, m: &m}
	s.names = s.namesBuf[:0]
	if !s.value(0, roleTop) || s.i != len(raw) {
		return nil, false
	}
	return m.top, true
}

// roles of an object in the message: whose members the scanner keeps.
const (
	roleNone   = iota
	roleTop    // the message itself: m.top
	roleParams // the message's params: m.params
)

// largeObject is the number of members past which an object's names are kept in a map
// rather than compared one by one, so that a message of many members costs linear time.
const largeObject = 16

// scanner is the state of one pass.
type scanner struct {
	b []byte
	i int
	m *message
	// names holds the names of the open objects' members, the innermost object's last.
	names    [][]byte
	namesBuf [32][]byte
}

// space skips JSON white space.
func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value at s.i (after white space), inside depth open objects and arrays.
func (s *scanner) value(depth, role int) bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth+1, role)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// number scans a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. What follows it is
// the caller's to check.
func (s *scanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return false
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits skips decimal digits and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// str scans a string at s.i, reporting whether it has an escape: no control character,
// valid UTF-8, the escapes of RFC 8259, and a surrogate escape only as a high one followed
// at once by a low one.
func (s *scanner) str() (escaped, ok bool) {
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, true
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				r, ok := escapeAt(s.b, s.i)
				switch {
				case !ok:
					return false, false
				case r >= 0xd800 && r <= 0xdbff:
					lo, ok := escapeAt(s.b, s.i+6)
					if !ok || lo < 0xdc00 || lo > 0xdfff {
						return false, false
					}
					s.i += 12
				case r >= 0xdc00 && r <= 0xdfff:
					return false, false
				default:
					s.i += 6
				}
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				return false, false
			}
			s.i += n
		}
	}
	return false, false
}

// escapeAt returns the code unit of the \uXXXX escape at b[i:], if one is there.
func escapeAt(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func (s *scanner) array(depth int) bool {
	if depth > maxNestingDepth {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth, roleNone) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) object(depth, role int) bool {
	if depth > maxNestingDepth {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	first := len(s.names) // this object's names are s.names[first:]
	var large map[string]struct{}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		start := s.i
		escaped, ok := s.str()
		if !ok {
			return false
		}
		name := s.b[start+1 : s.i-1]
		if escaped {
			var decoded string
			if json.Unmarshal(s.b[start:s.i], &decoded) != nil {
				return false
			}
			name = []byte(decoded)
		}
		if large != nil {
			if _, dup := large[string(name)]; dup {
				return false
			}
			large[string(name)] = struct{}{}
		} else {
			for _, prev := range s.names[first:] {
				if bytes.Equal(prev, name) {
					return false
				}
			}
			s.names = append(s.names, name)
			if len(s.names)-first > largeObject {
				large = make(map[string]struct{}, 2*largeObject)
				for _, n := range s.names[first:] {
					large[string(n)] = struct{}{}
				}
				s.names = s.names[:first]
			}
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		valueStart := s.i
		inner := roleNone
		if role == roleTop && string(name) == "params" {
			inner = roleParams
			s.m.paramsObject = s.i < len(s.b) && s.b[s.i] == '{'
		}
		if !s.value(depth, inner) {
			return false
		}
		switch role {
		case roleTop:
			s.m.top = append(s.m.top, member{name, s.b[valueStart:s.i]})
		case roleParams:
			s.m.params = append(s.m.params, member{name, s.b[valueStart:s.i]})
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			s.names = s.names[:first]
			return true
		default:
			return false
		}
	}
}

// find returns the value of the member named name, if there is one.
func find(members []member, name string) ([]byte, bool) {
	for _, m := range members {
		if string(m.name) == name {
			return m.value, true
		}
	}
	return nil, false
}
