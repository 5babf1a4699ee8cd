package meta

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Rules of the names the store accepts for new data (docs/workbench.md §Common rules,
// "Names"). A name that breaks one is InvalidArguments with Field naming the argument and
// Rule one of these (details.rule on the wire).
//
// The surfaces check them (ValidateNewPath, ValidateNewName) before they propose a command
// that would store a name: a file path that a write publishes, a proposal's path, a
// snapshot's name. The FSM does not: Apply accepts what the log holds, so a log written
// before these rules existed replays as it applied, and replicas of two releases never
// disagree on a command (clusterversion.go). For the same reason every read, listing,
// history, grep, delete and query still accepts a stored name that breaks them
// (ValidatePath alone): data written before the rules stays readable and removable.
const (
	// RuleControlCharacter: a C0 control (U+0000–U+001F), DEL (U+007F) or a C1 control
	// (U+0080–U+009F). They reorder, hide or forge what a terminal or a listing shows.
	RuleControlCharacter = "control_character"
	// RuleBidiControl: a bidirectional formatting character, which makes a name read in
	// another order than it is stored (CVE-2021-42574 "Trojan Source"): the embeddings and
	// overrides U+202A–U+202E, the isolates U+2066–U+2069, the marks U+200E, U+200F and
	// U+061C.
	RuleBidiControl = "bidi_control"
	// RuleZeroWidth: a character that renders as nothing, so two different names look
	// alike: U+200B–U+200D, U+2060, U+FEFF, and the other invisible format characters
	// and fillers: the soft hyphen U+00AD, the combining grapheme joiner U+034F, the Hangul
	// fillers U+115F, U+1160, U+3164, U+FFA0, the Khmer vowels U+17B4, U+17B5, the
	// Mongolian vowel separator U+180E, the invisible operators U+2061–U+2064, the
	// deprecated format characters U+206A–U+206F, the interlinear annotation characters
	// U+FFF9–U+FFFB, the musical format characters U+1D173–U+1D17A and the tag characters
	// U+E0001, U+E0020–U+E007F (which also carry text a reader never sees). Variation
	// selectors, which emoji and several scripts need, are allowed.
	RuleZeroWidth = "zero_width"
	// RuleNoncharacter: one of Unicode's 66 noncharacters (U+FDD0–U+FDEF and the last two
	// code points of every plane, U+FFFE, U+FFFF, U+1FFFE, …), reserved for a program's
	// internal use and not for interchange; XML 1.0 cannot carry U+FFFE and U+FFFF, so an
	// S3 listing could not name such a file.
	RuleNoncharacter = "noncharacter"
	// RuleNotNFC: the name is not in Unicode Normalization Form C. The store compares
	// names byte for byte and never normalizes them (docs/workbench.md: no Unicode
	// normalization), so it refuses every form but one rather than keep "café" twice, as
	// U+00E9 and as "e" U+0301, listed as two identical-looking files.
	RuleNotNFC = "not_nfc"
)

// ValidateNewPath checks a path the caller is about to store a file at: ValidatePath's
// syntax, then the rules of names (ValidateNewName) over the whole path. Reads use
// ValidatePath alone (see the rules above).
func ValidateNewPath(field, p string) *Error {
	if err := ValidatePath(field, p); err != nil {
		return err
	}
	return ValidateNewName(field, p)
}

// ValidateNewName checks the characters of a name the caller is about to store (a path, a
// snapshot name): valid UTF-8, no control character, bidirectional formatting character or
// zero-width character, and in NFC. InvalidArguments naming field, with Rule, otherwise.
// It checks characters only; syntax (separators, length) is the caller's.
func ValidateNewName(field, s string) *Error {
	if !utf8.ValidString(s) {
		return invalidArg(field, "must be valid UTF-8")
	}
	ascii := true
	for _, r := range s {
		if rule, what := nameRule(r); rule != "" {
			e := invalidArg(field, "must not contain %s (U+%04X)", what, r)
			e.Rule = rule
			return e
		}
		ascii = ascii && r < utf8.RuneSelf
	}
	// ASCII text is in NFC (no ASCII character decomposes or combines), and the check
	// would allocate its buffer for nothing.
	if !ascii && !norm.NFC.IsNormalString(s) {
		e := invalidArg(field, "must be in Unicode Normalization Form C (NFC): normalize it before writing")
		e.Rule = RuleNotNFC
		return e
	}
	return nil
}

// nameRule returns the rule r breaks in a name and a description of r, or "".
func nameRule(r rune) (rule, what string) {
	switch {
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return RuleControlCharacter, "a control character"
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return RuleBidiControl, "a bidirectional formatting character"
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff, invisible(r):
		return RuleZeroWidth, "a zero-width character"
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe:
		return RuleNoncharacter, "a noncharacter"
	}
	return "", ""
}

// invisible reports whether r is one of RuleZeroWidth's invisible format characters and
// fillers beyond the zero-width ones.
func invisible(r rune) bool {
	switch {
	case r == 0x00ad, r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r == 0x180e,
		r >= 0x2061 && r <= 0x2064, r >= 0x206a && r <= 0x206f, r == 0x3164, r == 0xffa0,
		r >= 0xfff9 && r <= 0xfffb, r >= 0x1d173 && r <= 0x1d17a, r == 0xe0001, r >= 0xe0020 && r <= 0xe007f:
		return true
	}
	return false
}
