package client

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// decodeListPage decodes a listing page as the server writes one, scanning its bytes
// itself instead of through decodeResult's reflection, which was most of a listing's CPU
// in the client. It reads a subset of JSON whose meaning under encoding/json it knows:
// objects of distinct member names, strings without escapes and valid in UTF-8, integers
// without a fraction or an exponent, true, false and null, with JSON's white space
// between them. A name of no field is skipped when its value is a string, an integer or a
// literal, as encoding/json skips it. For anything else (an escape, invalid UTF-8, a name
// repeated or matching a field only without regard to case, a value of another kind
// than its field's or out of its range, a null entry, anything after the value) it
// reports false, and decodeResult decodes the page from scratch.
// FuzzDecodeResultMatchesEncodingJSON holds the two together.
func decodeListPage(body []byte, p *ListPage) bool {
	s := pageScanner{b: body}
	ok := s.object(pageFields, func(f int) bool {
		switch pageFields[f] {
		case "workbench_id":
			return s.str(&p.WorkbenchID)
		case "workbench_path":
			return s.str(&p.WorkbenchPath)
		case "path":
			return s.str(&p.Path)
		case "entry_count":
			var n int64
			if !s.int(&n, strconv.IntSize) {
				return false
			}
			p.EntryCount = int(n)
			return true
		case "entries":
			return s.entries(&p.Entries)
		case "next_cursor":
			return s.str(&p.NextCursor)
		case "truncated":
			return s.bool(&p.Truncated)
		}
		return false
	})
	s.space()
	return ok && s.i == len(s.b)
}

// The JSON names of ListPage's and Entry's fields (at most 32 each: object's set of
// names read is a bit mask).
var (
	pageFields  = []string{"workbench_id", "workbench_path", "path", "entry_count", "entries", "next_cursor", "truncated"}
	entryFields = []string{"name", "path", "section", "relative_path", "kind", "size_bytes", "entry_count", "generation", "executable"}
)

// pageScanner reads b from i on.
type pageScanner struct {
	b []byte
	i int
}

// space skips JSON white space.
func (s *pageScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and returns the next byte (0 at the end).
func (s *pageScanner) next() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// take skips white space and c.
func (s *pageScanner) take(c byte) bool {
	if s.next() != c {
		return false
	}
	s.i++
	return true
}

// word skips white space and w (true, false or null).
func (s *pageScanner) word(w string) bool {
	s.space()
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		return false
	}
	s.i += len(w)
	return true
}

// object reads an object, calling member with the index in fields of each name of a
// field, with the scanner at its value.
func (s *pageScanner) object(fields []string, member func(f int) bool) bool {
	if !s.take('{') {
		return false
	}
	if s.take('}') {
		return true
	}
	var read uint32
	for {
		name, ok := s.quoted()
		if !ok || !s.take(':') {
			return false
		}
		switch f := field(fields, name); {
		case f >= 0:
			if read&(1<<f) != 0 || !member(f) {
				return false
			}
			read |= 1 << f
		case f == foldedName:
			return false
		case !s.skip():
			return false
		}
		switch {
		case s.take(','):
		case s.take('}'):
			return true
		default:
			return false
		}
	}
}

// foldedName is what field answers for a name that matches a field only without regard
// to case: encoding/json would set that field.
const foldedName = -2

// field returns the index of name in fields, -1 for a name of no field, or foldedName.
func field(fields []string, name []byte) int {
	for i, f := range fields {
		if string(name) == f {
			return i
		}
	}
	for _, f := range fields {
		if bytes.EqualFold(name, []byte(f)) {
			return foldedName
		}
	}
	return -1
}

// skip reads the value of a name of no field: a string, an integer or a literal.
func (s *pageScanner) skip() bool {
	switch c := s.next(); {
	case c == '"':
		_, ok := s.quoted()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		_, ok := s.integer()
		return ok
	}
	return s.word("null") || s.word("true") || s.word("false")
}

// entries reads the array of a page's entries (null leaves it nil).
func (s *pageScanner) entries(out *[]Entry) bool {
	if s.word("null") {
		return true
	}
	if !s.take('[') {
		return false
	}
	es := make([]Entry, 0, 16)
	if !s.take(']') {
		for {
			es = append(es, Entry{})
			if !s.entry(&es[len(es)-1]) {
				return false
			}
			if s.take(']') {
				break
			}
			if !s.take(',') {
				return false
			}
		}
	}
	*out = es
	return true
}

func (s *pageScanner) entry(e *Entry) bool {
	return s.object(entryFields, func(f int) bool {
		switch entryFields[f] {
		case "name":
			return s.str(&e.Name)
		case "path":
			return s.str(&e.Path)
		case "section":
			return s.str(&e.Section)
		case "relative_path":
			return s.str(&e.RelativePath)
		case "kind":
			return s.str(&e.Kind)
		case "size_bytes":
			return s.int(&e.SizeBytes, 64)
		case "entry_count":
			return s.int(&e.EntryCount, 64)
		case "generation":
			if s.word("null") {
				return true
			}
			v, ok := s.integer()
			if !ok {
				return false
			}
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return false
			}
			e.Generation = n
			return true
		case "executable":
			return s.bool(&e.Executable)
		}
		return false
	})
}

// quoted reads a string without escapes, valid in UTF-8, and returns what is between
// its quotes.
func (s *pageScanner) quoted() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	ascii := true
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i:j]
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			s.i = j + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string into out (null leaves out as it is). The strings every entry
// repeats (its kind, its section) are not allocated again.
func (s *pageScanner) str(out *string) bool {
	if s.word("null") {
		return true
	}
	v, ok := s.quoted()
	if !ok {
		return false
	}
	for _, c := range commonStrings {
		if string(v) == c {
			*out = c
			return true
		}
	}
	*out = string(v)
	return true
}

var commonStrings = []string{KindFile, KindDirectory, "input", "scripts", "outputs", "logs", "metadata"}

// integer reads a number written as an integer: an optional minus, then 0 or a digit
// other than 0 followed by digits. A fraction or an exponent after it is left unread, and
// what reads next (a ',', '}' or ']', or the end) refuses it.
func (s *pageScanner) integer() ([]byte, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || s.b[digits] == '0' && s.i > digits+1 {
		return nil, false
	}
	return s.b[start:s.i], true
}

// int reads an integer of bits bits into out (null leaves out as it is).
func (s *pageScanner) int(out *int64, bits int) bool {
	if s.word("null") {
		return true
	}
	v, ok := s.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, bits)
	if err != nil {
		return false
	}
	*out = n
	return true
}

func (s *pageScanner) bool(out *bool) bool {
	switch {
	case s.word("null"):
	case s.word("true"):
		*out = true
	case s.word("false"):
		*out = false
	default:
		return false
	}
	return true
}
