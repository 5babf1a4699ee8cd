package client

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/cairnstore/cairn/internal/strictjson"
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
	ok := s.object(pageFields, func(name []byte) (int, bool) {
		switch string(name) {
		case "workbench_id":
			return 0, s.str(&p.WorkbenchID, false)
		case "workbench_path":
			return 1, s.str(&p.WorkbenchPath, false)
		case "path":
			return 2, s.str(&p.Path, false)
		case "entry_count":
			var n int64
			ok := s.int(&n, strconv.IntSize)
			p.EntryCount = int(n)
			return 3, ok
		case "entries":
			return 4, s.entries(&p.Entries)
		case "next_cursor":
			return 5, s.str(&p.NextCursor, false)
		case "truncated":
			return 6, s.bool(&p.Truncated)
		}
		return -1, true
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
func (s *pageScanner) space() { s.i = strictjson.SkipSpace(s.b, s.i) }

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

// object reads an object. member is called with each name and the scanner at its value;
// it returns the index in fields of the name's field, having read the value, and whether
// the value was one of the field's; or -1 for a name of no field, leaving the value
// unread. Such a name is skipped unless it matches a field but for case (encoding/json
// would set that field); a name repeated is refused.
func (s *pageScanner) object(fields []string, member func(name []byte) (f int, ok bool)) bool {
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
		f, ok := member(name)
		switch {
		case !ok:
			return false
		case f >= 0:
			if read&(1<<f) != 0 {
				return false
			}
			read |= 1 << f
		case folds(fields, name) || !s.skip():
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

// folds reports whether name matches one of fields without regard to case.
func folds(fields []string, name []byte) bool {
	for _, f := range fields {
		if bytes.EqualFold(name, []byte(f)) {
			return true
		}
	}
	return false
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
	var name, path, rel []byte // between their quotes; nil when absent or null
	ok := s.object(entryFields, func(n []byte) (int, bool) {
		switch string(n) {
		case "name":
			return 0, s.raw(&name)
		case "path":
			return 1, s.raw(&path)
		case "section":
			return 2, s.str(&e.Section, true)
		case "relative_path":
			return 3, s.raw(&rel)
		case "kind":
			return 4, s.str(&e.Kind, true)
		case "size_bytes":
			return 5, s.int(&e.SizeBytes, 64)
		case "entry_count":
			return 6, s.int(&e.EntryCount, 64)
		case "generation":
			return 7, s.uint(&e.Generation)
		case "executable":
			return 8, s.bool(&e.Executable)
		}
		return -1, true
	})
	if !ok {
		return false
	}
	// A name and a relative path are most often the path's end: one allocation holds the
	// three.
	if path != nil {
		e.Path = string(path)
	}
	e.Name, e.RelativePath = endOf(e.Path, name), endOf(e.Path, rel)
	return true
}

// endOf returns b as a string: the end of full when full ends with b, else a copy.
func endOf(full string, b []byte) string {
	if n := len(full) - len(b); n >= 0 && full[n:] == string(b) {
		return full[n:]
	}
	return string(b)
}

// raw reads a string into out, what is between its quotes (null leaves out nil).
func (s *pageScanner) raw(out *[]byte) bool {
	if s.word("null") {
		return true
	}
	v, ok := s.quoted()
	*out = v
	return ok
}

// quoted reads a string without escapes, valid in UTF-8, and returns what is between
// its quotes.
func (s *pageScanner) quoted() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	j := s.i
	for j < len(s.b) && plainBytes[s.b[j]] {
		j++
	}
	ascii := true
	for ; j < len(s.b); j++ {
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

// plainBytes are the bytes quoted passes over at once: printable ASCII but '"' and '\'.
var plainBytes = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string into out (null leaves out as it is). With common, the strings every
// entry repeats (its kind, its section) are not allocated again.
func (s *pageScanner) str(out *string, common bool) bool {
	if s.word("null") {
		return true
	}
	v, ok := s.quoted()
	if !ok {
		return false
	}
	if common {
		for _, c := range commonStrings {
			if string(v) == c {
				*out = c
				return true
			}
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

// uint reads an unsigned integer of 64 bits into out (null leaves out as it is).
func (s *pageScanner) uint(out *uint64) bool {
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
