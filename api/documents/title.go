package documents

import "unicode"

// Rules of a title's characters (checkTitle), besides the design's 1..MaxTitleChars.
const (
	// RuleControlCharacter: a C0 control (NUL, a tab, a line feed, …), DEL, a C1 control,
	// or a line or paragraph separator (U+2028, U+2029): a title is one line of text.
	RuleControlCharacter = "control-character"
	// RuleBidiControl: a bidirectional embedding, override (U+202A–U+202E) or isolate
	// (U+2066–U+2069), which makes a title, and what a list shows after it, read in
	// another order than it is stored. The marks U+200E, U+200F and U+061C, which
	// right-to-left text needs and which open no such run, are allowed.
	RuleBidiControl = "bidi-control"
)

// checkTitle refuses a title (already 1..MaxTitleChars) that holds a control character
// (RuleControlCharacter) or a bidirectional embedding, override or isolate
// (RuleBidiControl), naming the first with its code point, and one with no visible
// character: only whitespace and default-ignorable characters (zero-width spaces and
// joiners, the soft hyphen, variation selectors, Hangul fillers, …) is RuleRequired, as
// an empty title is. The design bounds a title's length and says nothing of its
// characters (docs/documents.md#limits); these are Cairn's.
func checkTitle(title string) *Error {
	visible := false
	for i, r := range []rune(title) {
		switch {
		case unicode.IsControl(r) || r == 0x2028 || r == 0x2029:
			return invalid("title", RuleControlCharacter, "must not contain a control character or line break (U+%04X, code point %d of the title)", r, i+1)
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return invalid("title", RuleBidiControl, "must not contain a bidirectional embedding, override or isolate (U+%04X, code point %d of the title)", r, i+1)
		}
		visible = visible || !blank(r)
	}
	if !visible {
		return invalid("title", RuleRequired, "must hold a visible character: it is only whitespace or invisible characters")
	}
	return nil
}

// blank reports whether r shows nothing: whitespace, or a default-ignorable code point
// (a format character but the prepended concatenation marks, which print, a variation
// selector, or one of Unicode's other default-ignorable code points).
func blank(r rune) bool {
	return unicode.In(r, unicode.White_Space, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) ||
		unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r)
}
