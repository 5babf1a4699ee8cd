package diff

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How a line is shown. A line that holds nothing to escape is shown as it is. A line that
// does (Line.Escaped) is shown with every backslash doubled and
//
//   - a carriage return as \r,
//   - every other C0 control but tab, DEL and each byte that is not part of valid UTF-8
//     as \xNN (two lower-case hex digits),
//   - C1 controls and the bidirectional formatting characters (which can make a line
//     read otherwise than it compiles) as \u{NNNN},
//
// so that an escaped line reads back to exactly its bytes.

// needsEscape reports whether the rune r (size n at its position; RuneError with n == 1
// for an invalid byte) must be escaped.
func needsEscape(r rune, n int) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r == utf8.RuneError && n == 1:
		return true
	case r < utf8.RuneSelf:
		return false
	}
	return unicode.IsControl(r) || isBidi(r)
}

// isBidi reports the Unicode bidirectional formatting characters (Trojan Source, CVE-2021-42574).
func isBidi(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// escapeText renders s as a line of text within limit bytes: escaped reports whether the
// escaped form was used, cut whether s did not fit whole (the output then ends on a whole
// character or escape).
func escapeText(s string, limit int) (out string, escaped, cut bool) {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n) {
			escaped = true
			break
		}
		i += n
	}
	if !escaped {
		if len(s) <= limit {
			return s, false, false
		}
		n := limit
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n], false, true
	}
	var b strings.Builder
	b.Grow(min(limit, len(s)+16))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == '\\':
			piece = `\\`
		case r == '\r':
			piece = `\r`
		case !needsEscape(r, n):
			piece = s[i : i+n]
		case n == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		default:
			piece = fmt.Sprintf(`\u{%04x}`, r)
		}
		if b.Len()+len(piece) > limit {
			return b.String(), true, true
		}
		b.WriteString(piece)
		i += n
	}
	return b.String(), true, false
}
