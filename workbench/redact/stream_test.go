package redact

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

// splitReader returns src in reads of the given sizes, cycled.
type splitReader struct {
	src   []byte
	sizes []int
	i     int
}

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.src) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(s.src), s.sizes[s.i%len(s.sizes)])
	s.i++
	copy(p, s.src[:n])
	s.src = s.src[n:]
	return n, nil
}

// streamTokens are the pieces the property test builds bodies of, besides filler.
var streamTokens = []string{
	exOpenAI, exOpenAIProj, exAnthropic, exAWS, exGitHub, exGitHubPAT, exSlack, exJWT, exJWTNone,
	exPEM, exPEMEncrypted, exOpenSSH, "correct-horse", "correct-horse-battery", "battery-staple",
	"aaaaaaaaaaaa", "p@ss:w0rd/.", "[REDACTED:db]", "[REDACTED:jwt]", "[REDACTED:", "-----BEGIN RSA PRIVATE KEY-----\n",
	"-----END RSA PRIVATE KEY-----", "eyJ", "sk-", "AKIA", ".", "-", "_", "]", "[", "\n",
}

// drawBody builds a body of filler and streamTokens, sometimes longer than a few stream
// windows so that the reader decides it in several steps.
func drawBody(t *rapid.T) []byte {
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
	alphabet := []byte("abcXYZ0189-_.:/+= \n[]")
	var b bytes.Buffer
	for range rapid.IntRange(0, 120).Draw(t, "pieces") {
		if rapid.Bool().Draw(t, "filler") {
			n := rapid.IntRange(0, 2*StreamWindowBytes).Draw(t, "filler length")
			if rapid.IntRange(0, 3).Draw(t, "long") > 0 {
				n /= 64
			}
			for range n {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
			continue
		}
		b.WriteString(rapid.SampledFrom(streamTokens).Draw(t, "token"))
	}
	return b.Bytes()
}

func TestStreamEqualsRedactOnAnySplit(t *testing.T) {
	r := fuzzRedactor(t)
	rapid.Check(t, func(t *rapid.T) {
		body := drawBody(t)
		sizes := rapid.SliceOfN(rapid.IntRange(1, 3*StreamWindowBytes), 1, 8).Draw(t, "read sizes")
		chunk := rapid.SampledFrom([]int{64, 1000, StreamChunkBytes}).Draw(t, "chunk")
		want := r.RedactBytes("a", body)
		z := r.NewReader("a", &splitReader{src: body, sizes: sizes}).(*reader)
		z.chunk = chunk
		got, err := io.ReadAll(z)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("stream differs from Redact at byte %d of %d: stream …%q…, Redact …%q…", i, len(want),
				got[max(0, i-40):min(len(got), i+80)], want[max(0, i-40):min(len(want), i+80)])
		}
	})
}

func TestASecretAcrossAStepIsRedacted(t *testing.T) {
	// A step decides chunk bytes past what it kept: put each secret at every offset
	// across that point, and split the reads there too.
	r := fuzzRedactor(t)
	const chunk = 1000
	for _, tok := range []string{exAnthropic, exPEM, "correct-horse-battery"} {
		for at := chunk - len(tok) - 2; at <= chunk+2; at++ {
			body := strings.Repeat("lorem ipsum ", at/12+1)[:at] + " " + tok + " " + strings.Repeat("dolor ", StreamWindowBytes/6+1)
			want := r.Redact("a", body)
			if strings.Contains(want, tok) {
				t.Fatalf("Redact left %q", tok)
			}
			z := r.NewReader("a", io.MultiReader(strings.NewReader(body[:at+2]), strings.NewReader(body[at+2:]))).(*reader)
			z.chunk = chunk
			if got, err := io.ReadAll(z); err != nil || string(got) != want {
				t.Fatalf("%.20s… at %d: %v, the stream differs from Redact", tok, at, err)
			}
		}
	}
}

func TestStreamHoldsABoundedWindow(t *testing.T) {
	r := fuzzRedactor(t)
	// A run of overlapping candidates far longer than StreamMaxRunBytes (every offset of
	// "aaaa…" starts the value "aaaaaaaa"), then plain text.
	body := strings.Repeat("a", 8*StreamMaxRunBytes) + strings.Repeat("plain text ", 10000)
	z := r.NewReader("a", strings.NewReader(body)).(*reader)
	n, maxBuf := 0, 0
	buf := make([]byte, 32<<10)
	var out bytes.Buffer
	for {
		k, err := z.Read(buf)
		out.Write(buf[:k])
		n += k
		maxBuf = max(maxBuf, cap(z.buf))
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if limit := StreamWindowBytes + StreamChunkBytes + contextBytes; maxBuf > 2*limit {
		t.Fatalf("the reader held %d bytes, more than twice its bound %d", maxBuf, limit)
	}
	if bytes.Contains(out.Bytes(), []byte("aaaaaaaa")) {
		t.Fatal("the stream left the registered value in a long run")
	}
	// Redact makes the run one marker; the stream, past StreamMaxRunBytes, one per piece.
	if want := "[REDACTED:rep]" + strings.Repeat("plain text ", 10000); r.Redact("a", body) != want {
		t.Fatal("Redact did not make the run one marker")
	}
	pieces := strings.TrimSuffix(out.String(), strings.Repeat("plain text ", 10000))
	if pieces == out.String() || strings.ReplaceAll(pieces, "[REDACTED:rep]", "") != "" {
		t.Fatalf("the stream of a long run is not markers then the text: %.200q…", pieces)
	}
}

func TestStreamReturnsTheSourceError(t *testing.T) {
	boom := errors.New("boom")
	src := io.MultiReader(strings.NewReader("head "+exAWS[:10]), iotest.ErrReader(boom))
	got, err := io.ReadAll((*Redactor)(nil).NewReader("a", src))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if len(got) != 0 {
		t.Fatalf("undecided bytes %q were given out before the error", got)
	}
}

func TestRedactBodyOnlyForOptedInTenants(t *testing.T) {
	r := mustNew(t, Config{Secrets: map[string][]Secret{"a": fuzzSecrets}, AllSurfaces: []string{"a"}})
	body := "pw correct-horse " + exAWS
	for tenant, want := range map[string]string{
		"a": "pw [REDACTED:db] [REDACTED:aws_access_key_id]",
		"b": body,
	} {
		got, err := io.ReadAll(r.RedactBody(tenant, strings.NewReader(body)))
		if err != nil || string(got) != want {
			t.Errorf("RedactBody(%q) = %q, %v; want %q", tenant, got, err, want)
		}
	}
}
