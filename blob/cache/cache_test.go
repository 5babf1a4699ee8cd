package cache_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/cache"
	"github.com/cairnstore/cairn/internal/metricstest"
)

func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
	return b
}

func keyOf(data []byte) blob.Key { return blob.Key{Root: "r1", Digest: blob.DigestOf(data)} }

func open(t *testing.T, dir string, max int64) *cache.Cache {
	t.Helper()
	c, err := cache.Open(dir, max, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// read returns the whole cached blob of key, or nil on a miss, through both ways of
// serving it; a check of the file verifies it by SHA-256 (no BLAKE3 recorded).
func read(t *testing.T, c *cache.Cache, key blob.Key, size int) []byte {
	t.Helper()
	return readChecked(t, c, key, blob.Blake3{}, size)
}

// readChecked is read for a blob whose metadata recorded BLAKE3 sum.
func readChecked(t *testing.T, c *cache.Cache, key blob.Key, sum blob.Blake3, size int) []byte {
	t.Helper()
	f, ok := c.Get(key, int64(size), sum)
	if !ok {
		return nil
	}
	defer f.Close()
	var w bytes.Buffer
	if n, err := f.WriteRange(&w, 0, int64(size)); err != nil || n != int64(size) {
		t.Fatalf("WriteRange: %d bytes, %v", n, err)
	}
	p := make([]byte, size)
	if _, err := f.ReadAt(p, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p, w.Bytes()) {
		t.Fatal("ReadAt and WriteRange disagree")
	}
	return p
}

// cachedBytes sums the sizes of the blob files under dir.
func cachedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func TestAFilledBlobIsServedWhole(t *testing.T) {
	c := open(t, t.TempDir(), 1<<20)
	data := randomBytes(1, 100<<10)
	key := keyOf(data)
	if got := read(t, c, key, len(data)); got != nil {
		t.Fatal("a blob never filled is a hit")
	}
	c.Put(key, data)
	if got := read(t, c, key, len(data)); !bytes.Equal(got, data) {
		t.Fatal("a filled blob reads back other bytes, or misses")
	}
	if _, ok := c.Get(key, int64(len(data))+1, blob.Blake3{}); ok {
		t.Error("a Get of another size than the cached blob's hit")
	}
	f, _ := c.Get(key, int64(len(data)), blob.Blake3{})
	defer f.Close()
	var w bytes.Buffer
	if _, err := f.WriteRange(&w, 1000, 5000); err != nil || !bytes.Equal(w.Bytes(), data[1000:6000]) {
		t.Errorf("a range of the cached blob: %v, or other bytes", err)
	}
	if _, err := f.WriteRange(&w, int64(len(data))-1, 2); err == nil {
		t.Error("a range past the blob's end was served")
	}
}

// However many blobs are filled, concurrently or not, the files never add up to more
// than the bound, and the least recently used go first.
func TestTheCacheStaysWithinItsBoundAndEvictsTheLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	const max = 1 << 20
	c := open(t, dir, max)
	reg := prometheus.NewRegistry()
	if err := c.Register(reg); err != nil {
		t.Fatal(err)
	}
	blobs := make([][]byte, 40)
	for i := range blobs {
		blobs[i] = randomBytes(uint64(i), 110<<10+i)
	}
	c.Put(keyOf(blobs[0]), blobs[0])
	for i := 1; i < 9; i++ {
		c.Put(keyOf(blobs[i]), blobs[i])
		read(t, c, keyOf(blobs[0]), len(blobs[0])) // blob 0 stays the most recently used
	}
	c.Put(keyOf(blobs[9]), blobs[9]) // evicts blob 1, the least recently used
	if !c.Contains(keyOf(blobs[0])) || c.Contains(keyOf(blobs[1])) || !c.Contains(keyOf(blobs[9])) {
		t.Errorf("after a fill past the bound: blob 0 (used) cached %v, blob 1 (least used) cached %v, blob 9 cached %v",
			c.Contains(keyOf(blobs[0])), c.Contains(keyOf(blobs[1])), c.Contains(keyOf(blobs[9])))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(blobs); i += 4 {
				c.Put(keyOf(blobs[i]), blobs[i])
				if c.Bytes() > max {
					t.Errorf("the cache holds %d bytes, over its bound %d", c.Bytes(), max)
				}
				read(t, c, keyOf(blobs[(i+7)%len(blobs)]), len(blobs[(i+7)%len(blobs)]))
			}
		}()
	}
	wg.Wait()
	if n := cachedBytes(t, dir); n > max || n != c.Bytes() {
		t.Errorf("the cache directory holds %d bytes (index: %d), bound %d", n, c.Bytes(), max)
	}
	if ev := metricstest.Value(t, reg, "cairn_cache_evictions_total"); ev < 20 {
		t.Errorf("cairn_cache_evictions_total = %v after filling 40 blobs of ~110 KiB into 1 MiB", ev)
	}
	big := randomBytes(99, max+1)
	c.Put(keyOf(big), big)
	if c.Contains(keyOf(big)) {
		t.Error("a blob larger than the whole cache was cached")
	}
}

// A cache reopened on its directory (a restart) keeps its entries, drops what a crash
// left half-written, and still holds its bound when reopened smaller.
func TestARestartKeepsTheEntries(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 1<<20)
	a, b := randomBytes(1, 300<<10), randomBytes(2, 300<<10)
	c.Put(keyOf(a), a)
	c.Put(keyOf(b), b)
	stray := filepath.Join(dir, "r1", ".fill-0123")
	if err := os.WriteFile(stray, []byte("torn"), 0o640); err != nil {
		t.Fatal(err)
	}
	c = open(t, dir, 1<<20)
	if got := read(t, c, keyOf(a), len(a)); !bytes.Equal(got, a) {
		t.Error("after a restart a cached blob misses or reads back other bytes")
	}
	if got := read(t, c, keyOf(b), len(b)); !bytes.Equal(got, b) {
		t.Error("after a restart the second cached blob misses or reads back other bytes")
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("a fill's leftover survived Open: %v", err)
	}
	// Make a the older fill, then reopen with room for one blob only.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "r1", keyOf(a).Digest.String()[:2], keyOf(a).Digest.String()), old, old)
	c = open(t, dir, 400<<10)
	if c.Contains(keyOf(a)) || !c.Contains(keyOf(b)) || cachedBytes(t, dir) > 400<<10 {
		t.Errorf("reopened smaller: older blob kept %v, newer kept %v, %d bytes on disk", c.Contains(keyOf(a)), c.Contains(keyOf(b)), cachedBytes(t, dir))
	}
}

// A cached file damaged on disk is detected and dropped (a miss, so the caller refetches
// from the object store), whether it changed while the node ran or before a restart, and
// whether its check reads it through the BLAKE3 its metadata recorded or through SHA-256
// (a blob recorded before BLAKE3 digests).
func TestACorruptCachedFileIsDetectedAndDropped(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage changes the file at path; restart reopens the cache after it.
		damage  func(t *testing.T, path string)
		restart bool
	}{
		{"a byte flipped while the node runs", flip, false},
		{"a byte flipped before a restart, the modification time put back", flipKeepingTime, true},
		{"the file truncated while the node runs", func(t *testing.T, path string) { os.Truncate(path, 10) }, false},
		{"the file replaced by other bytes of the same size", func(t *testing.T, path string) {
			info, _ := os.Stat(path)
			tmp := path + "x"
			os.WriteFile(tmp, randomBytes(77, int(info.Size())), 0o640)
			os.Rename(tmp, path)
		}, false},
	} {
		for _, format := range []string{"sha256", "blake3"} {
			t.Run(tc.name+", checked by "+format, func(t *testing.T) {
				dir := t.TempDir()
				c := open(t, dir, 1<<20)
				reg := prometheus.NewRegistry()
				data := randomBytes(3, 200<<10)
				key := keyOf(data)
				var sum blob.Blake3
				if format == "blake3" {
					sum = blob.Blake3Of(data)
				}
				c.Put(key, data)
				if readChecked(t, c, key, sum, len(data)) == nil {
					t.Fatal("miss right after a fill")
				}
				hx := key.Digest.String()
				tc.damage(t, filepath.Join(dir, "r1", hx[:2], hx))
				if tc.restart {
					c = open(t, dir, 1<<20)
				}
				if err := c.Register(reg); err != nil {
					t.Fatal(err)
				}
				if got := readChecked(t, c, key, sum, len(data)); got != nil {
					t.Fatalf("a damaged cached file was served (%d bytes, equal to the blob: %v)", len(got), bytes.Equal(got, data))
				}
				if c.Contains(key) {
					t.Error("the damaged entry is still indexed")
				}
				if n := metricstest.Value(t, reg, "cairn_cache_corrupt_total"); n != 1 {
					t.Errorf("cairn_cache_corrupt_total = %v, want 1", n)
				}
				// The caller refetches and fills again: served.
				c.Put(key, data)
				if got := readChecked(t, c, key, sum, len(data)); !bytes.Equal(got, data) {
					t.Error("after a refill the blob misses or reads back other bytes")
				}
			})
		}
	}
}

// After a restart a cached file is checked against the BLAKE3 the caller passes, not its
// SHA-256 alone: the right BLAKE3 serves it, another one drops it (so a BLAKE3 recorded
// in the metadata is what vouches for the file), and none checks its SHA-256.
func TestARestartedCacheChecksAFileAgainstTheBlake3ItIsGiven(t *testing.T) {
	data := randomBytes(4, 100<<10)
	for _, tc := range []struct {
		name   string
		sum    blob.Blake3
		served bool
	}{
		{"its own BLAKE3 serves it", blob.Blake3Of(data), true},
		{"another blob's BLAKE3 drops it", blob.Blake3Of([]byte("other bytes")), false},
		{"no BLAKE3 recorded: its SHA-256 serves it", blob.Blake3{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			open(t, dir, 1<<20).Put(keyOf(data), data)
			c := open(t, dir, 1<<20) // a restart: the file is checked on its first Get
			got := readChecked(t, c, keyOf(data), tc.sum, len(data))
			if served := bytes.Equal(got, data); served != tc.served || c.Contains(keyOf(data)) != tc.served {
				t.Errorf("served %v (%d bytes), still cached %v; want both %v", served, len(got), c.Contains(keyOf(data)), tc.served)
			}
		})
	}
}

// flip changes one byte of the file and moves its modification time on (a coarse
// filesystem clock could otherwise give the write the time of the fill).
func flip(t *testing.T, path string) {
	t.Helper()
	flipShiftingTime(t, path, time.Second)
}

// flipKeepingTime changes one byte and puts the modification time back, as silent damage
// would leave it: only the restart's re-verification can catch it.
func flipKeepingTime(t *testing.T, path string) {
	t.Helper()
	flipShiftingTime(t, path, 0)
}

// flipShiftingTime changes one byte of the file and sets its modification time to the one
// it had before, moved on by shift.
func flipShiftingTime(t *testing.T, path string, shift time.Duration) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat the file to damage: %v", err)
	}
	flipByte(t, path)
	mtime := info.ModTime().Add(shift)
	os.Chtimes(path, mtime, mtime)
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, 1234)
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, 1234); err != nil {
		t.Fatal(err)
	}
}

// Readers of one blob and fills of others run at once; every hit serves the right bytes.
func TestConcurrentReadersServeTheRightBytes(t *testing.T) {
	c := open(t, t.TempDir(), 2<<20)
	blobs := make([][]byte, 8)
	for i := range blobs {
		blobs[i] = randomBytes(uint64(100+i), 300<<10)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				b := blobs[(g+i)%len(blobs)]
				if got := read(t, c, keyOf(b), len(b)); got == nil {
					c.Put(keyOf(b), b)
				} else if !bytes.Equal(got, b) {
					t.Errorf("reader %d: a hit served other bytes", g)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestOpenRefusesANonPositiveBound(t *testing.T) {
	for _, max := range []int64{0, -1} {
		if _, err := cache.Open(t.TempDir(), max, nil); err == nil {
			t.Errorf("Open with max bytes %d succeeded", max)
		}
	}
}
