package redact

import (
	"io"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// benchBody is 1 MiB of text like an agent's files: prose, code, UUIDs and digests, with
// a secret every 64 KiB or so.
func benchBody() string {
	var b strings.Builder
	secrets := []string{exOpenAI, exAWS, exJWT, exPEM, "correct-horse-battery", exGitHub}
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString("The agent reads input/data.csv, writes outputs/report.md and logs its steps. ")
		b.WriteString(`{"run_id":"` + uuid.NewString() + `","digest":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}` + "\n")
		b.WriteString("func handle(ctx context.Context, req *Request) error { return nil }\n")
		if i%256 == 0 {
			b.WriteString("token: " + secrets[(i/256)%len(secrets)] + "\n")
		}
	}
	return b.String()[:1<<20]
}

// BenchmarkRedact redacts for an agent with registered values ("a") and for one whose
// redaction finds only the built-in patterns ("c").
func BenchmarkRedact(b *testing.B) {
	r := fuzzRedactor(b)
	body := benchBody()
	for _, bc := range []struct{ name, agent string }{
		{"registered values", "a"},
		{"no registered values", "c"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				r.Redact(bc.agent, body)
			}
		})
	}
}

func BenchmarkReader(b *testing.B) {
	r := fuzzRedactor(b)
	body := benchBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := io.Copy(io.Discard, r.NewReader("a", strings.NewReader(body))); err != nil {
			b.Fatal(err)
		}
	}
}
