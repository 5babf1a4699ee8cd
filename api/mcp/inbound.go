package mcp

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/cairnstore/cairn/internal/strictjson"
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

// span is where a JSON text lies in a message: b[start:end]. The scanner keeps offsets,
// not slices, so that it stores no pointer and its state stays on the stack.
type span struct{ start, end int }

func (s span) of(b []byte) []byte { return b[s.start:s.end] }

// member is one member of a JSON object.
type member struct {
	name    span // between the name's quotes
	escaped bool // the name has an escape: it decodes to other bytes than name's
	value   span // the value's JSON text, without the white space around it
}

// decodedName is the name of mb, a member in b, as it decodes.
func (mb member) decodedName(b []byte) []byte {
	if !mb.escaped {
		return mb.name.of(b)
	}
	var s string
	// A copy, so that b does not escape (json.Unmarshal keeps its argument from the
	// compiler's view) and the scanner's state stays on the stack.
	_ = json.Unmarshal(bytes.Clone(b[mb.name.start-1:mb.name.end+1]), &s) // clean: it decodes
	return []byte(s)
}

// message is what scanMessage learned of a clean message.
type message struct {
	body    []byte
	scanned bool // the message is clean and the fields below describe it
	object  bool // its value is an object
	// The object's members, when it has at most len(topBuf) (topMembers), and those of its
	// "params" member when that is an object (paramsObject, at paramsAt) of at most
	// len(paramsBuf) (paramsMembers). Counts, not slices of the arrays, so that a message
	// can live on its reader's stack.
	nTop, nParams     int
	topBuf, paramsBuf [8]member
	paramsObject      bool
	paramsAt          span
}

// topMembers returns the members of the message, in order, when it is an object and the
// scan kept them.
func (m *message) topMembers() ([]member, bool) {
	if !m.scanned || !m.object || m.nTop > len(m.topBuf) {
		return nil, false
	}
	return m.topBuf[:m.nTop], true
}

// paramsMembers returns the members of the message's params, in order, when they are an
// object and the scan kept them.
func (m *message) paramsMembers() ([]member, bool) {
	if !m.scanned || !m.paramsObject || m.nParams > len(m.paramsBuf) {
		return nil, false
	}
	return m.paramsBuf[:m.nParams], true
}

// scanMessage reports whether body is clean (see above) and, if so, fills m.
func scanMessage(body []byte, m *message) bool {
	*m = message{body: body}
	s := scanner{b: body, top: m.topBuf[:], params: m.paramsBuf[:]}
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
	m.nTop, m.nParams, m.paramsObject, m.paramsAt = s.nTop, s.nParams, s.paramsObject, s.paramsAt
	return true
}

// membersOf returns the members of the object at b[at.start:at.end], a value of a clean
// message, in buf when they fit; ok is false when that is not an object.
func membersOf(b []byte, at span, buf []member) (members []member, ok bool) {
	if at.end <= at.start || b[at.start] != '{' {
		return nil, false
	}
	s := scanner{b: b[:at.end], i: at.start, top: buf[:cap(buf)]}
	if !s.value(0, roleTop) || s.i != at.end {
		return nil, false
	}
	if s.nTop > cap(buf) {
		s = scanner{b: b[:at.end], i: at.start, top: make([]member, s.nTop)}
		s.value(0, roleTop)
	}
	return s.top[:s.nTop], true
}

// roles of an object in the message: whose members the scanner keeps.
const (
	roleNone   = iota
	roleTop    // the message itself: top
	roleParams // the message's params: params
)

// smallObject is the number of members up to which an object's names are compared one by
// one; past it they are kept in a map, so that a message of many members costs linear
// time.
const smallObject = 8

// scanner is the state of one pass. It stores no pointer while it scans (members are
// written into top and params by index, names kept on the stack of object), so that it
// and the message it fills stay on the stack.
type scanner struct {
	b []byte
	i int
	// top and params receive the members of the message and of its params while they
	// fit; nTop and nParams count them all.
	top, params   []member
	nTop, nParams int
	paramsObject  bool // the message's "params" member is an object, at paramsAt
	paramsAt      span
}

// space skips JSON white space.
func (s *scanner) space() { s.i = strictjson.SkipSpace(s.b, s.i) }

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
		if more, ok := s.after(']'); !more {
			return ok
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
	var small [smallObject]member // the names of a small object
	n := 0
	var large map[string]struct{} // the names of a large one
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
		mb := member{name: span{start + 1, s.i - 1}, escaped: escaped}
		switch {
		case large != nil:
			name := string(mb.decodedName(s.b))
			if _, dup := large[name]; dup {
				return false
			}
			large[name] = struct{}{}
		default:
			for _, prev := range small[:n] {
				if sameName(s.b, prev, mb) {
					return false
				}
			}
			if n < smallObject {
				small[n] = mb
				n++
				break
			}
			large = make(map[string]struct{}, 4*smallObject)
			for _, prev := range small {
				large[string(prev.decodedName(s.b))] = struct{}{}
			}
			large[string(mb.decodedName(s.b))] = struct{}{}
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		valueStart := s.i
		inner := roleNone
		if role == roleTop && string(mb.decodedName(s.b)) == "params" {
			inner = roleParams
			s.paramsObject = s.i < len(s.b) && s.b[s.i] == '{'
		}
		if !s.value(depth, inner) {
			return false
		}
		mb.value = span{valueStart, s.i}
		switch role {
		case roleTop:
			if s.nTop < len(s.top) {
				s.top[s.nTop] = mb
			}
			s.nTop++
			if inner == roleParams {
				s.paramsAt = mb.value
			}
		case roleParams:
			if s.nParams < len(s.params) {
				s.params[s.nParams] = mb
			}
			s.nParams++
		}
		if more, ok := s.after('}'); !more {
			return ok
		}
	}
}

// after reads what follows an element of an array or a member of an object: a comma
// (more follows: more and ok) or closer (the end: ok alone); anything else is not JSON.
func (s *scanner) after(closer byte) (more, ok bool) {
	s.space()
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case ',':
			s.i++
			return true, true
		case closer:
			s.i++
			return false, true
		}
	}
	return false, false
}

// sameName reports whether two members of an object in b have the same name as they
// decode.
func sameName(b []byte, x, y member) bool {
	if !x.escaped && !y.escaped {
		return bytes.Equal(x.name.of(b), y.name.of(b))
	}
	return bytes.Equal(x.decodedName(b), y.decodedName(b))
}

// findSpan returns where the value of the member of b named name is, if there is one.
func findSpan(b []byte, members []member, name string) (span, bool) {
	for _, m := range members {
		if string(m.decodedName(b)) == name {
			return m.value, true
		}
	}
	return span{}, false
}
