package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// displayed returns a name or path from the server as the CLI prints it: unchanged, or
// Go-quoted (strconv.Quote: "a\x1b[2Jb", "line\r\n") when it holds a control character
// (C0, DEL or C1), a bidirectional formatting character, or bytes that are not UTF-8.
// Paths may hold all of these (meta.ValidatePath forbids only NUL and '\'); printed raw,
// a name could move the cursor, rewrite the line or send escape sequences to the terminal.
func displayed(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unsafeRune) {
		return strconv.Quote(s)
	}
	return s
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}
