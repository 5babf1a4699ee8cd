package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
)

// randomBytes(seed, n) is n incompressible bytes, the same for the same seed (blobtest's).
var randomBytes = blobtest.RandomBytes

func textBytes(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "step %d: wrote outputs/result-%d.json\n", i, i%13)
	}
	return b.Bytes()[:n]
}

func TestEncode(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want blob.Encoding
	}{
		{"nothing is stored identity", nil, blob.EncodingIdentity},
		{"511 compressible bytes are stored identity", bytes.Repeat([]byte("z"), 511), blob.EncodingIdentity},
		{"512 compressible bytes are compressed", bytes.Repeat([]byte("z"), 512), blob.EncodingZstd},
		{"text is compressed", textBytes(1 << 20), blob.EncodingZstd},
		{"random bytes are stored identity", randomBytes(1, 1<<20), blob.EncodingIdentity},
		// Half random, half zeros compresses to about 1/2: kept.
		{"half-random bytes are compressed", append(randomBytes(2, 32<<10), make([]byte, 32<<10)...), blob.EncodingZstd},
		// 15/16 random saves about 1/16, less than the 1/8 the rule asks for.
		{"bytes that compress by less than 1/8 are stored identity", append(randomBytes(3, 60<<10), make([]byte, 4<<10)...), blob.EncodingIdentity},
		// Above the probe's threshold (256 KiB) a sample decides first.
		{"a large body, random then text, is compressed", append(randomBytes(4, 512<<10), textBytes(512<<10)...), blob.EncodingZstd},
		{"a large text body is compressed", textBytes(4 << 20), blob.EncodingZstd},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			payload, enc := blob.Encode(nil, tc.data)
			if enc != tc.want {
				t.Fatalf("Encode of %d bytes chose %v (payload %d bytes), want %v", len(tc.data), enc, len(payload), tc.want)
			}
			if enc == blob.EncodingIdentity && !bytes.Equal(payload, tc.data) {
				t.Fatalf("identity payload differs from the data")
			}
			if enc == blob.EncodingZstd && len(payload)*8 > len(tc.data)*7 {
				t.Fatalf("kept a zstd payload of %d bytes for %d bytes", len(payload), len(tc.data))
			}
			again, _ := blob.Encode(make([]byte, 0, 10), tc.data)
			if !bytes.Equal(again, payload) {
				t.Errorf("Encode is not deterministic, or reusing a buffer changes its output")
			}
			got := readRange(t, tc.data, payload, enc, 0, -1)
			if !bytes.Equal(got, tc.data) {
				t.Errorf("decoding the payload gave other bytes")
			}
		})
	}
}

// readRange reads [offset, offset+length) of a blob through NewReader and fails on error.
func readRange(t *testing.T, data, payload []byte, enc blob.Encoding, offset, length int64) []byte {
	t.Helper()
	rc, err := blob.NewReader(t.Context(), blob.Key{Root: "r1", Digest: blob.DigestOf(data)},
		io.NopCloser(bytes.NewReader(payload)), enc, int64(len(data)), offset, length)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return got
}

// countingCloser records how often Close is called.
type countingCloser struct {
	io.Reader
	closes int
}

func (c *countingCloser) Close() error { c.closes++; return nil }

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// errAfter yields its bytes, then fails with err instead of io.EOF.
func errAfter(b []byte, err error) io.Reader {
	return io.MultiReader(bytes.NewReader(b), failingReader{err})
}

// storedForm is a blob's payload in one encoding.
type storedForm struct {
	name    string
	payload []byte
	enc     blob.Encoding
}

// storedForms is data stored both ways a blob can be: as it is, and zstd-compressed.
func storedForms(data []byte) []storedForm {
	zstd, _ := blob.Encode(nil, data)
	return []storedForm{{"identity", data, blob.EncodingIdentity}, {"zstd", bytes.Clone(zstd), blob.EncodingZstd}}
}

func TestReaderBehavesAsAnIOReader(t *testing.T) {
	data := textBytes(200 << 10)
	for _, p := range storedForms(data) {
		for _, r := range []struct{ offset, length int64 }{{0, -1}, {777, 100_000}, {int64(len(data)) - 1, 5}} {
			t.Run(fmt.Sprintf("%s [%d, +%d)", p.name, r.offset, r.length), func(t *testing.T) {
				rc, err := blob.NewReader(t.Context(), blob.Key{Root: "r1", Digest: blob.DigestOf(data)},
					io.NopCloser(bytes.NewReader(p.payload)), p.enc, int64(len(data)), r.offset, r.length)
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				end := int64(len(data))
				if r.length >= 0 {
					end = min(end, r.offset+r.length)
				}
				if err := iotest.TestReader(rc, data[r.offset:end]); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

func TestReaderFailures(t *testing.T) {
	data := textBytes(100 << 10)
	key := blob.Key{Root: "r1", Digest: blob.DigestOf(data)}
	zstd, _ := blob.Encode(nil, data)
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 1
	ioErr := errors.New("disk on fire")
	size := int64(len(data))

	cases := []struct {
		name    string
		payload func() io.Reader
		enc     blob.Encoding
		size    int64
		want    error
	}{
		{"an identity payload with a changed byte is corrupt", func() io.Reader { return bytes.NewReader(flipped) }, blob.EncodingIdentity, size, blob.ErrCorrupt},
		{"an identity payload that ends early is corrupt", func() io.Reader { return bytes.NewReader(data[:size-1]) }, blob.EncodingIdentity, size, blob.ErrCorrupt},
		{"an identity payload that runs long is corrupt", func() io.Reader { return bytes.NewReader(append(bytes.Clone(data), 'x')) }, blob.EncodingIdentity, size, blob.ErrCorrupt},
		{"a zstd payload of garbage is corrupt", func() io.Reader { return bytes.NewReader(randomBytes(4, 1000)) }, blob.EncodingZstd, size, blob.ErrCorrupt},
		{"a zstd payload that ends early is corrupt", func() io.Reader { return bytes.NewReader(zstd[:len(zstd)/2]) }, blob.EncodingZstd, size, blob.ErrCorrupt},
		{"a zstd payload that decodes to more than size is corrupt", func() io.Reader { return bytes.NewReader(zstd) }, blob.EncodingZstd, size - 1, blob.ErrCorrupt},
		{"identity bytes read as zstd are corrupt", func() io.Reader { return bytes.NewReader(data) }, blob.EncodingZstd, size, blob.ErrCorrupt},
		{"an I/O error of an identity payload is not corruption", func() io.Reader { return errAfter(data[:1000], ioErr) }, blob.EncodingIdentity, size, blob.ErrUnavailable},
		{"an I/O error of a zstd payload is not corruption", func() io.Reader { return errAfter(zstd[:1000], ioErr) }, blob.EncodingZstd, size, blob.ErrUnavailable},
		{"a payload that makes no progress fails", func() io.Reader { return failingReader{nil} }, blob.EncodingIdentity, size, io.ErrNoProgress},
	}
	// Each failure is found whether the reader verifies by SHA-256 (no BLAKE3 recorded) or
	// by the BLAKE3 its caller gives (blob.WithBlake3).
	verifyBy := map[string]func(context.Context) context.Context{
		"sha256": func(ctx context.Context) context.Context { return ctx },
		"blake3": func(ctx context.Context) context.Context {
			return blob.WithBlake3(ctx, key.Digest, blob.Blake3Of(data))
		},
	}
	for _, tc := range cases {
		for _, r := range []struct{ offset, length int64 }{{0, -1}, {0, 10}, {tc.size, -1}, {tc.size / 2, 0}} {
			for format, withSum := range verifyBy {
				t.Run(fmt.Sprintf("%s, reading [%d, +%d), verified by %s", tc.name, r.offset, r.length, format), func(t *testing.T) {
					payload := &countingCloser{Reader: tc.payload()}
					rc, err := blob.NewReader(withSum(t.Context()), key, payload, tc.enc, tc.size, r.offset, r.length)
					if err != nil {
						t.Fatalf("NewReader: %v", err)
					}
					_, err = io.ReadAll(rc)
					if !errors.Is(err, tc.want) {
						t.Errorf("Read: error %v, want one wrapping %v", err, tc.want)
					}
					if tc.want != blob.ErrCorrupt && errors.Is(err, blob.ErrCorrupt) {
						t.Errorf("Read: error %v claims corruption", err)
					}
					if _, again := rc.Read(make([]byte, 1)); again != err {
						t.Errorf("Read after a failure returned %v, want the same error again", again)
					}
					if err := rc.Close(); err != nil || payload.closes != 1 {
						t.Errorf("Close: %v, payload closed %d times; want nil, once", err, payload.closes)
					}
				})
			}
		}
	}
}

func TestNewReaderRejects(t *testing.T) {
	key := blob.Key{Root: "r1", Digest: blob.DigestOf([]byte("0123456789"))}
	cases := []struct {
		name                 string
		enc                  blob.Encoding
		size, offset, length int64
		want                 error
	}{
		{"an offset past the end", blob.EncodingIdentity, 10, 11, -1, blob.ErrRange},
		{"a negative offset", blob.EncodingIdentity, 10, -1, 5, blob.ErrRange},
		{"an unknown encoding", blob.Encoding(9), 10, 0, -1, blob.ErrCorrupt},
		{"a negative size", blob.EncodingIdentity, -1, 0, -1, blob.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			payload := &countingCloser{Reader: bytes.NewReader([]byte("0123456789"))}
			rc, err := blob.NewReader(t.Context(), key, payload, tc.enc, tc.size, tc.offset, tc.length)
			if !errors.Is(err, tc.want) {
				t.Errorf("NewReader: %v, %v; want an error wrapping %v", rc, err, tc.want)
			}
			if payload.closes != 1 {
				t.Errorf("payload closed %d times by a failed NewReader, want once", payload.closes)
			}
		})
	}
}

func TestReaderHonoursItsContext(t *testing.T) {
	data := randomBytes(5, 1<<20)
	ctx, cancel := context.WithCancel(t.Context())
	rc, err := blob.NewReader(ctx, blob.Key{Root: "r1", Digest: blob.DigestOf(data)},
		io.NopCloser(bytes.NewReader(data)), blob.EncodingIdentity, int64(len(data)), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := rc.Read(make([]byte, 100)); !errors.Is(err, context.Canceled) {
		t.Errorf("Read after cancel: %v, want context.Canceled", err)
	}
}

func TestEncodingString(t *testing.T) {
	for enc, want := range map[blob.Encoding]string{blob.EncodingIdentity: "identity", blob.EncodingZstd: "zstd", 7: "encoding(7)"} {
		if enc.String() != want || enc.Valid() != (enc <= blob.EncodingZstd) {
			t.Errorf("Encoding(%d): String %q Valid %v", uint8(enc), enc.String(), enc.Valid())
		}
	}
}

// emptyReader returns (0, nil) for ever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestReadVerifiedHandsOutBytesOnlyAfterTheBlobsEnd(t *testing.T) {
	data := textBytes(10_000)
	key := blob.Key{Root: "r1", Digest: blob.DigestOf(data)}
	open := func(t *testing.T, payload []byte, offset, length int64) io.ReadCloser {
		t.Helper()
		r, err := blob.NewReader(t.Context(), key, io.NopCloser(bytes.NewReader(payload)), blob.EncodingIdentity, int64(len(data)), offset, length)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	damaged := bytes.Clone(data)
	damaged[len(damaged)-1] ^= 1
	for _, tc := range []struct {
		name    string
		r       func(t *testing.T) io.Reader
		dst     int
		wantErr error
	}{
		{"a whole intact blob fills dst", func(t *testing.T) io.Reader { return open(t, data, 0, -1) }, len(data), nil},
		{"a range of an intact blob fills dst", func(t *testing.T) io.Reader { return open(t, data, 100, 200) }, 200, nil},
		{"a range whose blob is damaged after it fails", func(t *testing.T) io.Reader { return open(t, damaged, 0, 100) }, 100, blob.ErrCorrupt},
		{"a blob shorter than dst fails", func(t *testing.T) io.Reader { return open(t, data, 0, -1) }, len(data) + 1, blob.ErrCorrupt},
		{"a blob longer than dst fails", func(t *testing.T) io.Reader { return open(t, data, 0, -1) }, len(data) - 1, blob.ErrCorrupt},
		{"a reader that makes no progress fails", func(*testing.T) io.Reader { return emptyReader{} }, 0, io.ErrNoProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]byte, tc.dst)
			err := blob.ReadVerified(tc.r(t), dst)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("ReadVerified: %v, want %v", err, tc.wantErr)
			}
		})
	}
}
