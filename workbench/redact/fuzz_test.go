package redact

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// fuzzSecrets are tenant a's values in the fuzz and idempotence tests: overlapping,
// nested, sharing prefixes and suffixes, next to tokens.
var fuzzSecrets = []Secret{
	{ID: "db", Value: "correct-horse"},
	{ID: "db-long", Value: "correct-horse-battery"},
	{ID: "tail", Value: "battery-staple"},
	{ID: "rep", Value: "aaaaaaaa"},
	{ID: "punct", Value: "p@ss:w0rd/."},
	{ID: "key-like", Value: "sk-Ab1Cd2Ef3Gh4Ij5Kl6"},
}

func fuzzRedactor(t testing.TB) *Redactor {
	return mustNew(t, Config{Secrets: map[string][]Secret{"a": fuzzSecrets, "b": {{ID: "bee", Value: "bbbbbbbb"}}}})
}

// FuzzRedact: Redact never panics, its output holds no registered value of the tenant,
// redacting the output again changes nothing, and the streaming reader gives the same
// bytes read one byte at a time.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"", "correct-horse-battery-staple", "aaaaaaaaaaaaaaaaaaa", exOpenAI + "correct-horse", exJWT + ".", exPEM,
		exAWS + "[REDACTED:db]", "[REDACTED:db]" + exGitHub, "x" + exSlack + "-", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----",
		"[REDACTED:sk-Ab1Cd2Ef3Gh4Ij5Kl6Mn7]", "p@ss:w0rd/.p@ss:w0rd/.", "eyJ" + exJWT,
	} {
		f.Add([]byte(s))
	}
	r := fuzzRedactor(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		out := r.RedactBytes("a", in)
		for _, s := range fuzzSecrets {
			if bytes.Contains(out, []byte(s.Value)) {
				t.Fatalf("output %q holds secret %s", out, s.ID)
			}
		}
		if again := r.RedactBytes("a", out); !bytes.Equal(again, out) {
			t.Fatalf("Redact(%q) = %q, again %q", in, out, again)
		}
		streamed, err := io.ReadAll(r.NewReader("a", iotest.OneByteReader(bytes.NewReader(in))))
		if err != nil || !bytes.Equal(streamed, out) {
			t.Fatalf("stream of %q = %q (%v), want %q", in, streamed, err, out)
		}
	})
}
