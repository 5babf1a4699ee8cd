package blob_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/mem"
)

// The BLAKE3 reference's test vectors (testdata/blake3_vectors.json, input byte i is
// i % 251) from 0 bytes to 100,000: past one chunk (1,024), past the 8 and 16 chunks a
// SIMD pass hashes together, and uneven tails. Every way Cairn computes a BLAKE3 must give
// them on every CPU, or a segment written on one node would read as corrupt on another:
// Blake3Of, Hash (the write path's pass, in strides), and Check (the read path's verifier,
// fed as a socket feeds it, in uneven reads).
func TestBlake3MatchesTheReferenceVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/blake3_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Cases []struct {
			InputLen int    `json:"input_len"`
			Hash     string `json:"hash"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors.Cases) < 20 {
		t.Fatalf("%d vectors in testdata/blake3_vectors.json, want the reference's 22", len(vectors.Cases))
	}
	for _, c := range vectors.Cases {
		in := make([]byte, c.InputLen)
		for i := range in {
			in[i] = byte(i % 251)
		}
		if got := blob.Blake3Of(in).String(); got != c.Hash {
			t.Errorf("Blake3Of(%d bytes) = %s, want %s", c.InputLen, got, c.Hash)
		}
		if got := blob.Hash(in).Blake3().String(); got != c.Hash {
			t.Errorf("Hash(%d bytes).Blake3() = %s, want %s", c.InputLen, got, c.Hash)
		}
		var want blob.Blake3
		if _, err := hex.Decode(want[:], []byte(c.Hash)); err != nil {
			t.Fatal(err)
		}
		key := blob.Key{Root: "r", Digest: blob.DigestOf(in)}
		if err := blob.Check(&unevenReader{b: in}, key, want, int64(len(in))); err != nil {
			t.Errorf("Check of %d bytes against the reference's BLAKE3: %v", c.InputLen, err)
		}
	}
}

// zeebo/blake3 picks its code path (AVX2, SSE4.1, pure Go) once, from the CPU and from
// BLAKE3_DISABLE_AVX2, BLAKE3_DISABLE_SSE41 and BLAKE3_PUREGO (internal/consts/cpu.go of
// v0.2.4), so a node on a CPU without AVX2 hashes by another path than this machine
// does. The reference vectors must come out of each: this test binary runs the vectors
// test again under each setting.
func TestBlake3MatchesTheReferenceVectorsOnEveryCodePath(t *testing.T) {
	for _, env := range []string{"BLAKE3_DISABLE_AVX2=1", "BLAKE3_DISABLE_AVX2=1 BLAKE3_DISABLE_SSE41=1", "BLAKE3_PUREGO=1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBlake3MatchesTheReferenceVectors$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), strings.Fields(env)...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestBlake3MatchesTheReferenceVectors") {
			t.Errorf("with %s: %v\n%s", env, err, out)
		}
	}
}

// unevenReader returns b in reads of 1, 2, 3, … 4,099 bytes, then again from 1.
type unevenReader struct {
	b    []byte
	next int
}

func (r *unevenReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	r.next = r.next%4099 + 1
	n := copy(p[:min(len(p), r.next)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// Hash and HashState compute both digests and the CRC32C in their one pass, equal to each
// computed alone, at sizes around the stride they feed the hashes by.
func TestHashComputesTheSHA256AndTheBlake3(t *testing.T) {
	for _, n := range []int{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1<<20 + 3} {
		data := randomBytes(uint64(n), n)
		hd := blob.Hash(data)
		hs, _, err := blob.HashState(data)
		if err != nil {
			t.Fatal(err)
		}
		for name, h := range map[string]blob.Hashed{"Hash": hd, "HashState": hs} {
			if h.Digest() != blob.DigestOf(data) || h.Blake3() != blob.Blake3Of(data) {
				t.Errorf("%s of %d bytes: digests %s, %s; want %s, %s", name, n, h.Digest(), h.Blake3(), blob.DigestOf(data), blob.Blake3Of(data))
			}
			if want := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)); h.CRC32C() != want {
				t.Errorf("%s of %d bytes: CRC32C %08x, want %08x", name, n, h.CRC32C(), want)
			}
		}
	}
}

// A read under WithBlake3 verifies by the BLAKE3 it was given, not by the SHA-256: the
// right sum reads the blob, a wrong one refuses it although its SHA-256 matches the key.
// A sum given for another blob, or a zero one, changes nothing: that read verifies by
// SHA-256.
func TestAReadVerifiesByTheBlake3ItIsGivenForItsBlob(t *testing.T) {
	data := textBytes(300 << 10)
	other := []byte("other bytes")
	key := blob.Key{Root: "r1", Digest: blob.DigestOf(data)}
	for _, p := range storedForms(data) {
		for _, tc := range []struct {
			name   string
			digest blob.Digest
			sum    blob.Blake3
			want   error
		}{
			{"its own BLAKE3 reads it", key.Digest, blob.Blake3Of(data), nil},
			{"another content's BLAKE3 refuses it", key.Digest, blob.Blake3Of(other), blob.ErrCorrupt},
			{"a BLAKE3 given for another blob is ignored", blob.DigestOf(other), blob.Blake3Of(other), nil},
			{"a zero BLAKE3 is ignored", key.Digest, blob.Blake3{}, nil},
		} {
			t.Run(p.name+": "+tc.name, func(t *testing.T) {
				ctx := blob.WithBlake3(t.Context(), tc.digest, tc.sum)
				rc, err := blob.NewReader(ctx, key, io.NopCloser(bytes.NewReader(p.payload)), p.enc, int64(len(data)), 100, 1000)
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				got, err := io.ReadAll(rc)
				if !errors.Is(err, tc.want) {
					t.Fatalf("Read: %v, want %v", err, tc.want)
				}
				if err == nil && !bytes.Equal(got, data[100:1100]) {
					t.Error("read other bytes than the range")
				}
				if err != nil && !strings.Contains(err.Error(), "BLAKE3") {
					t.Errorf("the error does not say the BLAKE3 failed: %v", err)
				}
			})
		}
	}
}

// The context of a Get reaches the reader through a backend (blob/mem here; blobtest runs
// every backend's Put, which checks an existing blob by its BLAKE3, the same way).
func TestGetUnderWithBlake3VerifiesByIt(t *testing.T) {
	s := mem.New()
	data := randomBytes(9, 100<<10)
	key := blob.Key{Root: "r1", Digest: blob.DigestOf(data)}
	if _, err := s.Put(t.Context(), key, blob.Hash(data)); err != nil {
		t.Fatal(err)
	}
	for sum, want := range map[blob.Blake3]error{blob.Blake3Of(data): nil, blob.Blake3Of([]byte("x")): blob.ErrCorrupt} {
		rc, err := s.Get(blob.WithBlake3(t.Context(), key.Digest, sum), key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if err := blob.Drain(rc); !errors.Is(err, want) {
			t.Errorf("Get under the BLAKE3 %s: %v, want %v", sum, err, want)
		}
		rc.Close()
	}
}

func TestCheck(t *testing.T) {
	data := randomBytes(3, 70<<10)
	key := blob.Key{Root: "r1", Digest: blob.DigestOf(data)}
	flipped := bytes.Clone(data)
	flipped[10] ^= 1
	for _, tc := range []struct {
		name  string
		bytes []byte
		sum   blob.Blake3
		size  int64
		want  error
	}{
		{"intact bytes pass by SHA-256", data, blob.Blake3{}, int64(len(data)), nil},
		{"intact bytes pass by their BLAKE3", data, blob.Blake3Of(data), int64(len(data)), nil},
		{"a changed byte fails by SHA-256", flipped, blob.Blake3{}, int64(len(data)), blob.ErrCorrupt},
		{"a changed byte fails by BLAKE3", flipped, blob.Blake3Of(data), int64(len(data)), blob.ErrCorrupt},
		{"bytes short of the size fail", data[:100], blob.Blake3Of(data[:100]), int64(len(data)), blob.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := blob.Check(bytes.NewReader(tc.bytes), key, tc.sum, tc.size); !errors.Is(err, tc.want) {
				t.Errorf("Check: %v, want %v", err, tc.want)
			}
		})
	}
	ioErr := errors.New("disk on fire")
	if err := blob.Check(errAfter(data[:10], ioErr), key, blob.Blake3Of(data), int64(len(data))); !errors.Is(err, ioErr) || errors.Is(err, blob.ErrCorrupt) {
		t.Errorf("Check of a failing reader: %v, want its error, not corruption", err)
	}
}
