package meta

import (
	"slices"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"pgregory.net/rapid"
)

// forbiddenInNames lists, by rule, every character the rules of names refuse, written out
// as the issue states them rather than as name.go computes them.
var forbiddenInNames = map[string][]rune{
	RuleControlCharacter: controlRunes(),
	RuleBidiControl:      {0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c},
	RuleZeroWidth: append([]rune{0x200b, 0x200c, 0x200d, 0x2060, 0xfeff, 0x00ad, 0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x180e,
		0x2061, 0x2062, 0x2063, 0x2064, 0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0x3164, 0xffa0, 0xfff9, 0xfffa, 0xfffb,
		0x1d173, 0x1d174, 0x1d175, 0x1d176, 0x1d177, 0x1d178, 0x1d179, 0x1d17a, 0xe0001}, runeRange(0xe0020, 0xe007f)...),
	RuleNoncharacter: append(runeRange(0xfdd0, 0xfdef), 0xfffe, 0xffff, 0x1fffe, 0x1ffff, 0x2fffe, 0x2ffff, 0x3fffe, 0x3ffff,
		0x4fffe, 0x4ffff, 0x5fffe, 0x5ffff, 0x6fffe, 0x6ffff, 0x7fffe, 0x7ffff, 0x8fffe, 0x8ffff, 0x9fffe, 0x9ffff, 0xafffe, 0xaffff,
		0xbfffe, 0xbffff, 0xcfffe, 0xcffff, 0xdfffe, 0xdffff, 0xefffe, 0xeffff, 0xffffe, 0xfffff, 0x10fffe, 0x10ffff),
}

// runeRange returns the runes from lo to hi, both included.
func runeRange(lo, hi rune) []rune {
	var rs []rune
	for r := lo; r <= hi; r++ {
		rs = append(rs, r)
	}
	return rs
}

func controlRunes() []rune {
	var rs []rune
	for r := rune(0); r < 0x20; r++ {
		rs = append(rs, r)
	}
	rs = append(rs, 0x7f)
	for r := rune(0x80); r <= 0x9f; r++ {
		rs = append(rs, r)
	}
	return rs
}

// modelNewName is the naive model of ValidateNewName: the rule the first forbidden
// character breaks, else "not_nfc" when NFC changes the name, else "".
func modelNewName(s string) string {
	if !utf8.ValidString(s) {
		return "utf8"
	}
	for _, r := range s {
		for rule, rs := range forbiddenInNames {
			if slices.Contains(rs, r) {
				return rule
			}
		}
	}
	if norm.NFC.String(s) != s {
		return RuleNotNFC
	}
	return ""
}

// checkNewPath checks ValidateNewPath(p) against ValidatePath and the model (t: a
// *testing.T or a *rapid.T).
func checkNewPath(t interface {
	Helper()
	Fatalf(string, ...any)
}, p string) {
	t.Helper()
	err := ValidateNewPath("path", p)
	old := ValidatePath("path", p)
	want := modelNewName(p)
	switch {
	case old != nil:
		if err == nil || err.Code != CodeInvalidArguments || err.Field != "path" {
			t.Fatalf("ValidateNewPath(%q) = %+v although ValidatePath refuses it (%v)", p, err, old)
		}
	case want == "":
		if err != nil {
			t.Fatalf("ValidateNewPath(%q) refused a conforming path: %v", p, err)
		}
	default:
		if err == nil || err.Code != CodeInvalidArguments || err.Field != "path" || err.Rule != want {
			t.Fatalf("ValidateNewPath(%q) = %+v, want InvalidArguments on path with rule %q", p, err, want)
		}
	}
}

func TestValidateNewNameRefusesEachForbiddenCharacterWithItsRule(t *testing.T) {
	for rule, rs := range forbiddenInNames {
		for _, r := range rs {
			if r == 0 {
				continue // NUL: ValidatePath's own rule, checked below
			}
			p := "outputs/a" + string(r) + "b.txt"
			if ValidatePath("path", p) != nil {
				t.Fatalf("U+%04X: ValidatePath refuses %q; old names must stay readable", r, p)
			}
			err := ValidateNewPath("path", p)
			if err == nil || err.Code != CodeInvalidArguments || err.Field != "path" || err.Rule != rule {
				t.Errorf("U+%04X: got %+v, want rule %s", r, err, rule)
			}
		}
	}
	if err := ValidateNewPath("path", "a\x00b"); err == nil || err.Field != "path" {
		t.Errorf("NUL accepted: %v", err)
	}
}

func TestValidateNewNameRefusesTheNFDTwinAndAcceptsTheNFCOne(t *testing.T) {
	nfc, nfd := "outputs/caf\u00e9.txt", "outputs/cafe\u0301.txt"
	if err := ValidateNewPath("path", nfc); err != nil {
		t.Fatalf("NFC name refused: %v", err)
	}
	err := ValidateNewPath("path", nfd)
	if err == nil || err.Rule != RuleNotNFC || err.Field != "path" {
		t.Fatalf("NFD twin: got %+v, want rule %s", err, RuleNotNFC)
	}
	for _, ok := range []string{"input/ünï/cödé.csv", "logs/日本語.log", "outputs/emoji-🙂.png", "a b/c d", "metadata/x", "outputs/heart-\u2764\ufe0f.txt", "logs/\u182e\u180b.log"} {
		if err := ValidateNewPath("path", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}

// nameRunes draws characters that exercise every rule: ASCII, Latin letters with and
// without combining marks, Hangul (which NFC composes), singletons NFC replaces (U+212B
// ANGSTROM SIGN), and the forbidden characters.
func nameRunes() *rapid.Generator[rune] {
	pool := []rune{'a', 'e', 'z', '0', '.', '-', ' ', '/', 0xe9, 0xc5, 0x301, 0x308, 0x30a, 0x1100, 0x1161, 0xac00, 0x212b, 0x2126}
	for _, rs := range forbiddenInNames {
		pool = append(pool, rs...)
	}
	return rapid.SampledFrom(pool)
}

// TestValidateNewNameMatchesItsModel: on names drawn to exercise every rule,
// ValidateNewPath answers as the naive model does, and of two names that normalize to the
// same NFC string at most one is ever accepted, so no two stored names look alike through
// normalization.
func TestValidateNewNameMatchesItsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := string(rapid.SliceOfN(nameRunes(), 1, 12).Draw(rt, "runes"))
		checkNewPath(rt, s)
		twins := []string{s, norm.NFC.String(s), norm.NFD.String(s), norm.NFKC.String(s)}
		accepted := map[string]string{}
		for _, v := range twins {
			if ValidateNewName("name", v) != nil {
				continue
			}
			key := norm.NFC.String(v)
			if prev, ok := accepted[key]; ok && prev != v {
				rt.Fatalf("both %+q and %+q accepted: they normalize to the same name", prev, v)
			}
			accepted[key] = v
		}
	})
}
