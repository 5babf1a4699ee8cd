package unicodejson

import (
	"fmt"
	"unicode/utf8"
)

// Error says where and why a JSON text is not Unicode text.
type Error struct {
	// Offset is the byte offset of the first offending byte or escape.
	Offset int
	// Reason is "invalid UTF-8" or "unpaired surrogate escape \uXXXX".
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("%s at byte %d", e.Reason, e.Offset) }

// Check returns nil when raw is valid UTF-8 and every \u escape of a surrogate in its
// strings is a high one (\ud800-\udbff) followed at once by a low one (\udc00-\udfff);
// else an *Error naming the first offence.
func Check(raw []byte) *Error {
	if !utf8.Valid(raw) {
		return &Error{Offset: firstInvalid(raw), Reason: "invalid UTF-8"}
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			r, ok := escapeAt(raw, i)
			switch {
			case !ok:
				i++ // a two-character escape, or a malformed one the decoder refuses
			case r >= 0xd800 && r <= 0xdbff:
				lo, ok := escapeAt(raw, i+6)
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return &Error{Offset: i, Reason: fmt.Sprintf(`unpaired surrogate escape \u%04x`, r)}
				}
				i += 11
			case r >= 0xdc00 && r <= 0xdfff:
				return &Error{Offset: i, Reason: fmt.Sprintf(`unpaired surrogate escape \u%04x`, r)}
			default:
				i += 5
			}
		}
	}
	return nil
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
