package dir_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/dir"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStoreConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, t.TempDir()) })
}

func TestStoreDamageConformance(t *testing.T) {
	blobtest.RunDamage(t, func(t *testing.T) blob.Store { return open(t, t.TempDir()) }, func(t *testing.T, s blob.Store, key blob.Key) {
		t.Helper()
		path := s.(*dir.Store).BlobPath(key)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		blobtest.FlipByte(t, path, dir.HeaderBytes+(fi.Size()-dir.HeaderBytes)/2)
	})
}

func open(t *testing.T, path string) *dir.Store {
	t.Helper()
	s, err := dir.Open(path)
	if err != nil {
		t.Fatalf("Open %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s *dir.Store, data []byte) (blob.Key, blob.PutResult) {
	t.Helper()
	key := blobtest.KeyOf("r1", data)
	res, err := s.Put(t.Context(), key, blob.Hash(data))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return key, res
}

// readErr returns the first error of a ranged Get, its Reads or its Close.
func readErr(t *testing.T, s blob.Store, key blob.Key, offset, length int64) error {
	t.Helper()
	_, err := blobtest.Read(t.Context(), s, key, offset, length)
	return err
}

func TestLayout(t *testing.T) {
	path := t.TempDir()
	s := open(t, path)
	data := blobtest.TextBytes(1, 10<<10)
	key, res := put(t, s, data)
	hex := key.Digest.String()
	file := filepath.Join(path, "roots", "r1", "blobs", hex[:2], hex)
	if s.BlobPath(key) != file {
		t.Errorf("BlobPath = %s, want %s", s.BlobPath(key), file)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the blob is not at its documented path: %v", err)
	}
	if string(raw[:4]) != "CRNB" || raw[4] != 1 || blob.Encoding(raw[5]) != blob.EncodingZstd ||
		raw[6] != 0 || raw[7] != 0 || binary.BigEndian.Uint64(raw[8:16]) != uint64(len(data)) {
		t.Errorf("header = % x, want magic CRNB, version 1, zstd, size %d", raw[:dir.HeaderBytes], len(data))
	}
	if int64(len(raw)-dir.HeaderBytes) != res.StoredBytes {
		t.Errorf("file holds %d payload bytes, Put reported %d", len(raw)-dir.HeaderBytes, res.StoredBytes)
	}
}

func TestOpenRemovesTemporaryFiles(t *testing.T) {
	path := t.TempDir()
	s := open(t, path)
	data := []byte("a blob that must survive reopening")
	key, _ := put(t, s, data)
	other := blobtest.KeyOf("r2", data)
	if _, err := s.Put(t.Context(), other, blob.Hash(data)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	var temps []string
	for _, k := range []blob.Key{key, other} {
		fan := filepath.Dir(s.BlobPath(k))
		for _, name := range []string{".tmp-123", ".tmp-partial-upload"} {
			p := filepath.Join(fan, name)
			if err := os.WriteFile(p, []byte("half a blob"), 0o600); err != nil {
				t.Fatal(err)
			}
			temps = append(temps, p)
		}
	}

	s = open(t, path)
	for _, p := range temps {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temporary file %s survived Open (stat error %v)", p, err)
		}
	}
	for _, k := range []blob.Key{key, other} {
		if err := readErr(t, s, k, 0, -1); err != nil {
			t.Errorf("blob %s after reopening: %v", k, err)
		}
	}
}

func TestDamagedPayloadFailsWithErrCorrupt(t *testing.T) {
	const size = 64 << 10
	blobs := []struct {
		name string
		data []byte
		enc  blob.Encoding
	}{
		{"an identity", blobtest.RandomBytes(1, size), blob.EncodingIdentity},
		{"a zstd", blobtest.TextBytes(2, size), blob.EncodingZstd},
	}
	ranges := []struct {
		name           string
		offset, length int64
	}{
		{"the whole blob", 0, -1},
		{"the first bytes", 0, 10},
		{"the last bytes", size - 10, 10},
		{"zero bytes", 100, 0},
		{"nothing at offset equal to size", size, -1},
	}
	for _, b := range blobs {
		for _, where := range []string{"first", "middle", "last"} {
			t.Run(fmt.Sprintf("a flipped %s payload byte of %s blob", where, b.name), func(t *testing.T) {
				s := open(t, t.TempDir())
				key, res := put(t, s, b.data)
				if res.Encoding != b.enc {
					t.Fatalf("stored as %v, the test needs %v", res.Encoding, b.enc)
				}
				at := map[string]int64{"first": 0, "middle": res.StoredBytes / 2, "last": res.StoredBytes - 1}[where]
				blobtest.FlipByte(t, s.BlobPath(key), dir.HeaderBytes+at)
				for _, r := range ranges {
					err := readErr(t, s, key, r.offset, r.length)
					if !errors.Is(err, blob.ErrCorrupt) {
						t.Errorf("read of %s: error %v, want one wrapping ErrCorrupt", r.name, err)
					}
				}
			})
		}
	}
}

func TestDamagedFileFailsWithErrCorrupt(t *testing.T) {
	identity := blobtest.RandomBytes(2, 4096)
	zstd := blobtest.TextBytes(3, 64<<10)
	rewrite := func(f func(raw []byte) []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, f(raw), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	truncate := func(n int) func(t *testing.T, path string) {
		return rewrite(func(raw []byte) []byte { return raw[:n] })
	}
	setByte := func(i int, v byte) func(t *testing.T, path string) {
		return rewrite(func(raw []byte) []byte { raw[i] = v; return raw })
	}
	setSize := func(delta int64) func(t *testing.T, path string) {
		return rewrite(func(raw []byte) []byte {
			n := binary.BigEndian.Uint64(raw[8:16])
			binary.BigEndian.PutUint64(raw[8:16], uint64(int64(n)+delta))
			return raw
		})
	}
	cases := []struct {
		name string
		data []byte
		harm func(t *testing.T, path string)
		// statOK: the damage is in the payload, which Stat does not read.
		statOK bool
	}{
		{"an empty file", identity, truncate(0), false},
		{"a file cut inside the header", identity, truncate(5), false},
		{"a file cut one byte short of a header", zstd, truncate(dir.HeaderBytes - 1), false},
		{"a bad magic", identity, setByte(0, 'X'), false},
		{"an unknown format version", identity, setByte(4, 2), false},
		{"an unknown encoding", zstd, setByte(5, 7), false},
		{"non-zero reserved bytes", identity, setByte(7, 1), false},
		{"an identity payload one byte short", identity, truncate(dir.HeaderBytes + len(identity) - 1), false},
		{"an identity payload with a byte appended", identity, rewrite(func(raw []byte) []byte { return append(raw, 0) }), false},
		{"an identity blob whose header claims the wrong size", identity, setSize(1), false},
		{"a header only, for a zstd blob", zstd, truncate(dir.HeaderBytes), true},
		{"a zstd payload cut short", zstd, rewrite(func(raw []byte) []byte { return raw[:len(raw)-10] }), true},
		{"a zstd payload with bytes appended", zstd, rewrite(func(raw []byte) []byte { return append(raw, 1, 2, 3, 4, 5, 6, 7, 8, 9) }), true},
		{"a zstd blob whose header claims a larger size", zstd, setSize(1), true},
		{"a zstd blob whose header claims a smaller size", zstd, setSize(-1), true},
		{"a zstd payload replaced by an identity payload", zstd, setByte(5, byte(blob.EncodingIdentity)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, t.TempDir())
			key, _ := put(t, s, tc.data)
			tc.harm(t, s.BlobPath(key))
			for _, r := range []struct{ offset, length int64 }{{0, -1}, {0, 1}, {0, 0}} {
				if err := readErr(t, s, key, r.offset, r.length); !errors.Is(err, blob.ErrCorrupt) {
					t.Errorf("Get [%d, +%d): error %v, want one wrapping ErrCorrupt", r.offset, r.length, err)
				}
			}
			if _, err := s.Stat(t.Context(), key); tc.statOK != (err == nil) || (err != nil && !errors.Is(err, blob.ErrCorrupt)) {
				t.Errorf("Stat: error %v, want %s", err, map[bool]string{true: "none", false: "one wrapping ErrCorrupt"}[tc.statOK])
			}
			if !tc.statOK {
				err := s.List(t.Context(), "r1", func(blob.Key, blob.Info) error { return nil })
				if !errors.Is(err, blob.ErrCorrupt) {
					t.Errorf("List over a damaged header: error %v, want one wrapping ErrCorrupt", err)
				}
			}
		})
	}
}

func TestPutReplacesADamagedFile(t *testing.T) {
	s := open(t, t.TempDir())
	data := blobtest.TextBytes(4, 8<<10)
	key, _ := put(t, s, data)
	if err := os.Truncate(s.BlobPath(key), 3); err != nil {
		t.Fatal(err)
	}
	res, err := s.Put(t.Context(), key, blob.Hash(data))
	if err != nil || !res.Created {
		t.Fatalf("Put over a damaged file: %+v, %v; want Created", res, err)
	}
	if err := readErr(t, s, key, 0, -1); err != nil {
		t.Errorf("Get after the repair: %v", err)
	}
}

func TestStatModTimeIsTheFileMtime(t *testing.T) {
	s := open(t, t.TempDir())
	key, _ := put(t, s, []byte("old blob"))
	when := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(s.BlobPath(key), when, when); err != nil {
		t.Fatal(err)
	}
	info, err := s.Stat(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !info.ModTime.Equal(when) {
		t.Errorf("Stat ModTime = %v, want the file's mtime %v", info.ModTime, when)
	}
	err = s.List(t.Context(), "r1", func(_ blob.Key, info blob.Info) error {
		if !info.ModTime.Equal(when) {
			return fmt.Errorf("List ModTime = %v, want the file's mtime %v", info.ModTime, when)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

func TestListSkipsForeignFiles(t *testing.T) {
	s := open(t, t.TempDir())
	key, _ := put(t, s, []byte("the only blob"))
	fan := filepath.Dir(s.BlobPath(key))
	misplaced := strings.Repeat("ab", 32)
	if strings.HasPrefix(key.Digest.String(), "ab") {
		misplaced = strings.Repeat("cd", 32)
	}
	for _, name := range []string{".tmp-in-flight", "README", misplaced, strings.ToUpper(key.Digest.String())} {
		if err := os.WriteFile(filepath.Join(fan, name), []byte("not a blob"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(filepath.Dir(fan), "zz"), 0o750); err != nil {
		t.Fatal(err)
	}
	var got []blob.Key
	if err := s.List(t.Context(), "r1", func(k blob.Key, _ blob.Info) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != key {
		t.Errorf("List = %v, want only %s", got, key)
	}
}

func TestPutRecreatesRemovedDirectories(t *testing.T) {
	path := t.TempDir()
	s := open(t, path)
	put(t, s, []byte("first"))
	if err := os.RemoveAll(filepath.Join(path, "roots", "r1")); err != nil {
		t.Fatal(err)
	}
	data := []byte("first")
	if _, res := put(t, s, data); !res.Created {
		t.Errorf("Put after its root directory was removed: Created = false")
	}
	if err := readErr(t, s, blobtest.KeyOf("r1", data), 0, -1); err != nil {
		t.Errorf("Get: %v", err)
	}
}

func TestOpenFailsOnAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := dir.Open(path); err == nil {
		s.Close()
		t.Fatalf("Open of a regular file succeeded")
	}
	if _, err := dir.Open(""); err == nil {
		t.Fatalf("Open of an empty path succeeded")
	}
}
