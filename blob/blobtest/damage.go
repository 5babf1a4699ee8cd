package blobtest

import (
	"os"
	"testing"
)

// FlipByte damages the file at path the way a bad disk sector would: it inverts every bit
// of the byte at off and syncs the file, so that a reader in another process sees the
// damage. It fails tb when the file cannot be read or written at off. Backends whose
// blobs are files (blob/dir) build their Damage function from it; end-to-end tests use it
// on a node's data directory.
func FlipByte(tb testing.TB, path string, off int64) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatalf("blobtest: damage %s: %v", path, err)
		return
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		tb.Fatalf("blobtest: damage %s: read byte %d: %v", path, off, err)
		return
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], off); err != nil {
		tb.Fatalf("blobtest: damage %s: write byte %d: %v", path, off, err)
		return
	}
	if err := f.Sync(); err != nil {
		tb.Fatalf("blobtest: damage %s: sync: %v", path, err)
	}
}
