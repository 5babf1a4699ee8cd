package redact

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/uuid"
	"pgregory.net/rapid"
)

func mustNew(t testing.TB, cfg Config) *Redactor {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegisteredValues(t *testing.T) {
	r := mustNew(t, Config{Secrets: map[string][]Secret{
		"a": {
			{ID: "db", Value: "correct-horse"},
			{ID: "db-long", Value: "correct-horse-battery"},
			{ID: "tail", Value: "battery-staple-xyz"},
			{ID: "short-overlap", Value: "horse-bat"},
			{ID: "equal", Value: "AKIAIOSFODNN7EXAMPLE"},
			{ID: "unicode", Value: "pässwörd"},
		},
		"b": {{ID: "other", Value: "tenant-b-secret"}},
	}})
	cases := []struct{ name, tenant, in, want string }{
		{"a value is replaced by its id's marker", "a", "pw: correct-horse!", "pw: [REDACTED:db]!"},
		{"every occurrence is replaced", "a", "correct-horse correct-horse", "[REDACTED:db] [REDACTED:db]"},
		{"the longest of two values starting together wins", "a", "x correct-horse-battery y", "x [REDACTED:db-long] y"},
		{"the longest overlapping value names the marker, which covers the loser too",
			"a", "correct-horse-battery-staple-xyz!", "[REDACTED:db-long]!"},
		{"a shorter value inside a longer one is not replaced apart", "a", "correct-horse-battery", "[REDACTED:db-long]"},
		{"a value overlapping a longer one loses to it", "a", "1correct-horse-bat2", "1[REDACTED:db]2"},
		{"a run of overlaps is one marker", "a", "correct-horse-bat correct-horse", "[REDACTED:db] [REDACTED:db]"},
		{"a value glued to a near-token is still found", "a", exAWS[:12] + "correct-horse", exAWS[:12] + "[REDACTED:db]"},
		{"a value needs no boundary", "a", "xxcorrect-horsexx", "xx[REDACTED:db]xx"},
		{"a registered value beats a token of the same length", "a", "AKIAIOSFODNN7EXAMPLE", "[REDACTED:equal]"},
		{"a longer token beats a value inside it", "a", "sk-Xcorrect-horse9Z0aaaaaaaaaaaaa", "[REDACTED:openai_api_key]"},
		{"a value is counted in characters", "a", "pässwörd", "[REDACTED:unicode]"},
		{"tenant a's value stays in tenant b's body", "b", "correct-horse tenant-b-secret", "correct-horse [REDACTED:other]"},
		{"a tenant without values gets tokens only", "c", "correct-horse " + exAWS, "correct-horse [REDACTED:aws_access_key_id]"},
	}
	for _, c := range cases {
		if got := r.Redact(c.tenant, c.in); got != c.want {
			t.Errorf("%s: Redact(%q, %q) = %q, want %q", c.name, c.tenant, c.in, got, c.want)
		}
	}
}

func TestValuesAreFoundWhereverTheyOverlap(t *testing.T) {
	// The matcher must report every occurrence, overlapping ones included, or the longest
	// could be missed: check the candidates against a naive search.
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]byte("ab-"))
		word := func(label string, n int) string {
			b := rapid.SliceOfN(alphabet, n, n+4).Draw(t, label)
			return string(b)
		}
		values := map[string]bool{}
		var secrets []Secret
		for i := range rapid.IntRange(1, 5).Draw(t, "values") {
			v := word("value", 8)
			if values[v] {
				continue
			}
			values[v] = true
			secrets = append(secrets, Secret{ID: "s" + string(rune('0'+i)), Value: v})
		}
		r, err := New(Config{Secrets: map[string][]Secret{"a": secrets}})
		if err != nil {
			t.Fatal(err)
		}
		text := []byte(word("text", 0) + word("more", 60))
		got := map[[2]int]string{}
		for _, c := range r.tenant("a").candidates(nil, text, 0, len(text)) {
			got[[2]int{c.start, c.end}] = c.name
		}
		want := 0
		for _, s := range secrets {
			for i := 0; i+len(s.Value) <= len(text); i++ {
				if string(text[i:i+len(s.Value)]) == s.Value {
					want++
					if got[[2]int{i, i + len(s.Value)}] != s.ID {
						t.Fatalf("%s at %d not a candidate in %q", s.ID, i, text)
					}
				}
			}
		}
		if len(got) != want {
			t.Fatalf("%d candidates, %d occurrences", len(got), want)
		}
	})
}

func TestOrdinaryIdentifiersAreNeverRedacted(t *testing.T) {
	r := mustNew(t, Config{Secrets: map[string][]Secret{"a": {{ID: "db", Value: "correct-horse"}}}})
	check := func(kind string, gen func() string) {
		t.Helper()
		var b strings.Builder
		for range 10000 {
			b.WriteString(gen())
			b.WriteByte('\n')
		}
		in := b.String()
		if out := r.Redact("a", in); out != in {
			t.Errorf("10,000 %s: some were redacted", kind)
		}
		// One by one, in a few surroundings.
		for _, line := range strings.SplitN(in, "\n", 200)[:199] {
			for _, s := range []string{line, `"` + line + `"`, "id=" + line + ".", "WCT1-BLACKBOX-SECRET-" + line} {
				if got := r.Redact("a", s); got != s {
					t.Fatalf("%s %q redacted to %q", kind, s, got)
				}
			}
		}
	}
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	check("UUIDs", func() string { return uuid.NewString() })
	check("upper-case UUIDs", func() string { return strings.ToUpper(uuid.NewString()) })
	check("SHA-256 hex digests", func() string { d := sha256.Sum256(randBytes(16)); return hex.EncodeToString(d[:]) })
	check("sha256: URIs", func() string { d := sha256.Sum256(randBytes(16)); return "sha256:" + hex.EncodeToString(d[:]) })
	check("git SHAs", func() string { return hex.EncodeToString(randBytes(20)) })
	check("base64 of random bytes", func() string { return base64.StdEncoding.EncodeToString(randBytes(48)) })
	check("base64url of random bytes", func() string {
		// One in 64³ of them begins "sk-" followed by a mixed-case tail with a digit: an
		// OpenAI key's exact shape, which is redacted by design (about one run in 25 met
		// one among 10,000). Those are key-shaped, not ordinary identifiers: draw again.
		for {
			s := base64.RawURLEncoding.EncodeToString(randBytes(48))
			if !strings.HasPrefix(s, "sk-") {
				return s
			}
		}
	})
	check("black-box trap values", func() string { return "WCT1-BLACKBOX-SECRET-" + uuid.NewString() })
}

func TestRedactingTwiceChangesNothing(t *testing.T) {
	r := fuzzRedactor(t)
	for _, in := range []string{
		"correct-horse" + exOpenAI,
		exAWS + "correct-horse",
		"x correct-horse-battery-staple " + exJWT + ". " + exPEM,
		"[REDACTED:" + exOpenAI[:30] + "]",
		"[REDACTED:db]" + exGitHub,
		exSlack + "[REDACTED:jwt]",
	} {
		once := r.Redact("a", in)
		if twice := r.Redact("a", once); twice != once {
			t.Errorf("Redact(%q) = %q, again %q", in, once, twice)
		}
	}
}

func TestNilRedactorRedactsTokensOnly(t *testing.T) {
	var r *Redactor
	if got := r.Redact("a", "k="+exAWS); got != "k=[REDACTED:aws_access_key_id]" {
		t.Fatalf("got %q", got)
	}
	if r.AllSurfaces("a") {
		t.Fatal("a nil Redactor opts a tenant in")
	}
}

func TestRedactBytesLeavesItsInputAlone(t *testing.T) {
	in := []byte("k=" + exAWS)
	orig := string(in)
	out := (*Redactor)(nil).RedactBytes("a", in)
	if string(in) != orig || string(out) != "k=[REDACTED:aws_access_key_id]" {
		t.Fatalf("in %q, out %q", in, out)
	}
	plain := []byte("nothing here")
	if got := (*Redactor)(nil).RedactBytes("a", plain); &got[0] != &plain[0] {
		t.Fatal("a body without secrets was copied")
	}
}
