package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error says where and why a JSON text is refused.
type Error struct {
	// Offset is the byte offset of the first offending byte or escape, or of the
	// duplicate member name's opening quote.
	Offset int
	// Reason is "invalid UTF-8", "unpaired surrogate escape \uXXXX" or "duplicate member
	// name" followed by the name, quoted.
	Reason string
	// Duplicate says the offence is a member named twice in one object, and Field is its
	// path: the member names from the top object down, joined by '.' (arrays add nothing,
	// as encoding/json's UnmarshalTypeError.Field) and Name the name itself.
	Duplicate   bool
	Field, Name string
}

func (e *Error) Error() string { return fmt.Sprintf("%s at byte %d", e.Reason, e.Offset) }

// Check returns nil when raw is valid UTF-8, every \u escape of a surrogate in its strings
// is a high one (\ud800-\udbff) followed at once by a low one (\udc00-\udfff), and no
// object names a member twice; else an *Error naming the first offence.
func Check(raw []byte) *Error {
	if !utf8.Valid(raw) {
		return &Error{Offset: firstInvalid(raw), Reason: "invalid UTF-8"}
	}
	var sc scanner
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			end, err := stringEnd(raw, i)
			if err != nil {
				return err
			}
			if err := sc.str(raw, i, end); err != nil {
				return err
			}
			i = end
		case '{', '[':
			sc.open(c)
		case '}', ']':
			sc.close()
		case ',':
			sc.comma()
		}
	}
	return nil
}

// stringEnd returns the offset of the quote that closes the string opening at raw[start]
// (len(raw) when none does), checking its surrogate escapes on the way.
func stringEnd(raw []byte, start int) (int, *Error) {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			return i, nil
		case '\\':
			r, ok := escapeAt(raw, i)
			switch {
			case !ok:
				i++ // a two-character escape, or a malformed one the decoder refuses
			case r >= 0xd800 && r <= 0xdbff:
				lo, ok := escapeAt(raw, i+6)
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return 0, &Error{Offset: i, Reason: fmt.Sprintf(`unpaired surrogate escape \u%04x`, r)}
				}
				i += 11
			case r >= 0xdc00 && r <= 0xdfff:
				return 0, &Error{Offset: i, Reason: fmt.Sprintf(`unpaired surrogate escape \u%04x`, r)}
			default:
				i += 5
			}
		}
	}
	return len(raw), nil
}

// maxTrackedDepth is the nesting past which Check no longer tracks member names: the
// depth encoding/json refuses beyond, so a text nested deeper is the decoder's to refuse,
// and Check's memory stays bounded (one frame a level) whatever a body nests.
const maxTrackedDepth = 10000

// scanner follows the containers of a text to tell member names from values.
type scanner struct {
	frames []frame
	depth  int // containers open, tracked in frames or not
}

// frame is one open container: an array, or an object with the names it has seen.
type frame struct {
	object  bool
	wantKey bool                // an object's next string is a member name
	name    string              // the member being read (its decoded name)
	names   map[string]struct{} // the object's names so far
}

func (s *scanner) open(c byte) {
	s.depth++
	if s.depth > maxTrackedDepth {
		return
	}
	if n := len(s.frames); n > 0 && s.frames[n-1].object {
		s.frames[n-1].wantKey = false // a container is a value
	}
	s.frames = append(s.frames, frame{object: c == '{', wantKey: c == '{'})
}

func (s *scanner) close() {
	if s.depth > 0 {
		s.depth--
	}
	if n := len(s.frames); n > s.depth {
		s.frames = s.frames[:s.depth]
	}
}

func (s *scanner) comma() {
	if n := len(s.frames); n > 0 && n == s.depth && s.frames[n-1].object {
		s.frames[n-1].wantKey = true
	}
}

// str records the string raw[start:end+1] (quotes included): a member name of the
// innermost object, checked against the names before it, or a value.
func (s *scanner) str(raw []byte, start, end int) *Error {
	n := len(s.frames)
	if n == 0 || n != s.depth || !s.frames[n-1].object || !s.frames[n-1].wantKey || end >= len(raw) {
		return nil
	}
	f := &s.frames[n-1]
	f.wantKey = false
	name, ok := memberName(raw[start : end+1])
	if !ok {
		return nil // malformed: the decoder's to refuse
	}
	if _, dup := f.names[name]; dup {
		return &Error{Offset: start, Reason: "duplicate member name " + quote(name), Duplicate: true, Field: s.path(name), Name: name}
	}
	if f.names == nil {
		f.names = map[string]struct{}{}
	}
	f.names[name] = struct{}{}
	f.name = name
	return nil
}

// path is the dotted path of member name of the innermost object.
func (s *scanner) path(name string) string {
	var b strings.Builder
	for _, f := range s.frames[:len(s.frames)-1] {
		if f.object {
			b.WriteString(f.name)
			b.WriteByte('.')
		}
	}
	b.WriteString(name)
	return b.String()
}

// memberName decodes a quoted name; one without escapes is taken as it is.
func memberName(quoted []byte) (string, bool) {
	inner := quoted[1 : len(quoted)-1]
	if !strings.ContainsRune(string(inner), '\\') {
		return string(inner), true
	}
	var s string
	return s, json.Unmarshal(quoted, &s) == nil
}

// quote quotes a name for a message, at most 64 characters of it.
func quote(name string) string {
	if utf8.RuneCountInString(name) > 64 {
		name = string([]rune(name)[:64]) + "…"
	}
	return fmt.Sprintf("%q", name)
}

// escapeAt returns the code unit of the \uXXXX escape at raw[i:], if one is there.
func escapeAt(raw []byte, i int) (rune, bool) {
	if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range raw[i+2 : i+6] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// firstInvalid returns the offset of raw's first byte that starts no valid UTF-8 sequence.
func firstInvalid(raw []byte) int {
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(raw)
}

// SkipSpace returns the offset of the first byte at or after i in b that is not JSON
// white space (RFC 8259 §2: space, tab, line feed, carriage return), or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
