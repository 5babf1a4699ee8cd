//lint:file-ignore ST1005 the messages start with the blob.Store method they check (List, Stat, Get), spelled as in Go

package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/blob"
)

// Run runs the conformance suite. open must return a new, empty Store on every call (each
// subtest opens its own); Run closes it when the subtest ends.
func Run(t *testing.T, open func(t *testing.T) blob.Store) {
	newStore := func(t *testing.T) blob.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
	suite := []struct {
		name string
		run  func(t *testing.T, s blob.Store)
	}{
		{"a blob put and read back returns the same bytes", testRoundTrip},
		{"putting an existing blob again reports it was not created", testPutIfAbsent},
		{"data that does not hash to the key is rejected and nothing is stored", testDigestMismatch},
		{"ranged reads return exactly the requested bytes", testRanges},
		{"reads starting outside the blob fail with ErrRange", testRangeErrors},
		{"a missing blob is not found", testNotFound},
		{"delete removes the blob and is idempotent", testDelete},
		{"list returns exactly one root's blobs in digest order", testList},
		{"an error from the list callback stops the listing and is returned", testListAbort},
		{"the same bytes under two roots are two independent blobs", testRootIsolation},
		{"invalid roots are rejected with ErrInvalidKey", testInvalidKeys},
		{"concurrent puts of the same key all succeed, one creates it and the blob is whole", testConcurrentSameKey},
		{"concurrent puts and gets of different keys all land", testConcurrentKeys},
		{"a cancelled context is honoured", testCancel},
		{"a reader can be closed before the end", testEarlyClose},
		{"a closed store refuses calls with ErrUnavailable", testClosed},
	}
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// mixedBytes alternates 64 KiB of text and 64 KiB of random bytes: zstd keeps it, at about
// 2/3 of its size, in many blocks.
func mixedBytes(seed uint64, n int) []byte {
	const run = 64 << 10
	b := make([]byte, 0, n)
	for i := 0; len(b) < n; i++ {
		m := min(run, n-len(b))
		if i%2 == 0 {
			b = append(b, TextBytes(seed+uint64(i), m)...)
		} else {
			b = append(b, RandomBytes(seed+uint64(i), m)...)
		}
	}
	return b
}

func mustRead(t *testing.T, s blob.Store, key blob.Key, offset, length int64) []byte {
	t.Helper()
	got, err := Read(t.Context(), s, key, offset, length)
	if err != nil {
		t.Fatalf("Get %s [%d, +%d): %v", key, offset, length, err)
	}
	return got
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

func testRoundTrip(t *testing.T, s blob.Store) {
	big := 20 << 20
	if testing.Short() {
		big = 9 << 20
	}
	cases := []struct {
		name string
		data []byte
		enc  blob.Encoding
	}{
		{"an empty blob", nil, blob.EncodingIdentity},
		{"a tiny blob", []byte("hello, cairn"), blob.EncodingIdentity},
		{"a compressible blob under 512 bytes is stored identity", bytes.Repeat([]byte{'a'}, blob.CompressMinBytes-1), blob.EncodingIdentity},
		{"a compressible blob of exactly 512 bytes is compressed", bytes.Repeat([]byte{'a'}, blob.CompressMinBytes), blob.EncodingZstd},
		{"a compressible blob", TextBytes(1, 256<<10), blob.EncodingZstd},
		{"an incompressible blob", RandomBytes(2, 1<<20), blob.EncodingIdentity},
		{fmt.Sprintf("a %d MiB blob", big>>20), mixedBytes(3, big), blob.EncodingZstd},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := KeyOf("r1", tc.data)
			res := Put(t, s, key, tc.data)
			if !res.Created {
				t.Errorf("Put of a new blob: Created = false")
			}
			if res.Encoding != tc.enc {
				t.Errorf("Put: Encoding = %v, want %v", res.Encoding, tc.enc)
			}
			size := int64(len(tc.data))
			switch tc.enc {
			case blob.EncodingIdentity:
				if res.StoredBytes != size {
					t.Errorf("Put: StoredBytes = %d, want %d (identity)", res.StoredBytes, size)
				}
			case blob.EncodingZstd:
				if res.StoredBytes <= 0 || res.StoredBytes*blob.CompressKeepDen > size*blob.CompressKeepNum {
					t.Errorf("Put: StoredBytes = %d, want in (0, 7/8 of %d]", res.StoredBytes, size)
				}
			}
			if got := mustRead(t, s, key, 0, -1); !bytes.Equal(got, tc.data) {
				t.Fatalf("Get returned %d bytes that differ from the %d put", len(got), len(tc.data))
			}
			info, err := s.Stat(t.Context(), key)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if info.Size != size || info.StoredBytes != res.StoredBytes || info.Encoding != res.Encoding {
				t.Errorf("Stat = {Size %d, StoredBytes %d, Encoding %v}, want {%d, %d, %v}",
					info.Size, info.StoredBytes, info.Encoding, size, res.StoredBytes, res.Encoding)
			}
			if info.ModTime.IsZero() {
				t.Errorf("Stat: ModTime is zero")
			}
		})
	}
}

func testPutIfAbsent(t *testing.T, s blob.Store) {
	for _, data := range [][]byte{TextBytes(4, 10<<10), RandomBytes(5, 10<<10), nil} {
		key := KeyOf("r1", data)
		first := Put(t, s, key, data)
		second := Put(t, s, key, data)
		if !first.Created || second.Created {
			t.Errorf("Created = %v then %v, want true then false", first.Created, second.Created)
		}
		if second.StoredBytes != first.StoredBytes || second.Encoding != first.Encoding {
			t.Errorf("second Put reports %d bytes %v, first %d bytes %v",
				second.StoredBytes, second.Encoding, first.StoredBytes, first.Encoding)
		}
		if got := mustRead(t, s, key, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("blob changed after the second Put")
		}
	}
}

func testDigestMismatch(t *testing.T, s blob.Store) {
	data := TextBytes(6, 4<<10)
	cases := []struct {
		name string
		key  blob.Key
		data []byte
	}{
		{"other bytes of the same length", KeyOf("r1", data), RandomBytes(7, len(data))},
		{"a prefix of the bytes", KeyOf("r1", data), data[:len(data)-1]},
		{"no bytes", KeyOf("r1", data), nil},
		{"bytes under the digest of nothing", KeyOf("r1", nil), data},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Put(t.Context(), tc.key, blob.Hash(tc.data))
			wantErr(t, "Put", err, blob.ErrDigestMismatch)
			_, err = s.Stat(t.Context(), tc.key)
			wantErr(t, "Stat after a rejected Put", err, blob.ErrNotFound)
		})
	}
	err := s.List(t.Context(), "r1", func(k blob.Key, _ blob.Info) error {
		return fmt.Errorf("List shows %s after rejected Puts only", k)
	})
	if err != nil {
		t.Error(err)
	}
}

func testRanges(t *testing.T, s blob.Store) {
	const size = 300 << 10
	blobs := []struct {
		name string
		data []byte
	}{
		{"of an identity blob", RandomBytes(8, size)},
		{"of a compressed blob", TextBytes(9, size)},
	}
	cases := []struct {
		name           string
		offset, length int64
	}{
		{"the first bytes", 0, 10},
		{"a middle range", 100_000, 70_000},
		{"the last bytes", size - 10, 10},
		{"to the end with length -1", 123_457, -1},
		{"the whole blob with length -1", 0, -1},
		{"the whole blob with its exact length", 0, size},
		{"zero bytes at the start", 0, 0},
		{"zero bytes in the middle", 5000, 0},
		{"nothing at offset equal to size", size, -1},
		{"nothing at offset equal to size with a length", size, 10},
		{"a range past the end, cut at the end", size - 5, 100},
	}
	for _, b := range blobs {
		key := KeyOf("r1", b.data)
		Put(t, s, key, b.data)
		for _, tc := range cases {
			t.Run(tc.name+" "+b.name, func(t *testing.T) {
				end := int64(len(b.data))
				if tc.length >= 0 {
					end = min(end, tc.offset+tc.length)
				}
				want := b.data[tc.offset:end]
				got := mustRead(t, s, key, tc.offset, tc.length)
				if !bytes.Equal(got, want) {
					t.Errorf("Get [%d, +%d) returned %d bytes, want %d (%d..%d)", tc.offset, tc.length, len(got), len(want), tc.offset, end)
				}
			})
		}
	}
	t.Run("nothing at offset 0 of an empty blob", func(t *testing.T) {
		key := KeyOf("r1", nil)
		Put(t, s, key, nil)
		if got := mustRead(t, s, key, 0, 10); len(got) != 0 {
			t.Errorf("Get of an empty blob returned %d bytes", len(got))
		}
	})
}

func testRangeErrors(t *testing.T, s blob.Store) {
	for _, data := range [][]byte{TextBytes(10, 64<<10), RandomBytes(11, 1000), nil} {
		key := KeyOf("r1", data)
		Put(t, s, key, data)
		for _, off := range []int64{int64(len(data)) + 1, int64(len(data)) + 1<<30, -1} {
			_, err := Read(t.Context(), s, key, off, -1)
			wantErr(t, fmt.Sprintf("Get at offset %d of a %d-byte blob", off, len(data)), err, blob.ErrRange)
		}
	}
}

func testNotFound(t *testing.T, s blob.Store) {
	Put(t, s, KeyOf("r1", []byte("present")), []byte("present"))
	key := KeyOf("r1", []byte("absent"))
	_, err := Read(t.Context(), s, key, 0, -1)
	wantErr(t, "Get", err, blob.ErrNotFound)
	_, err = Read(t.Context(), s, key, 1<<20, -1)
	wantErr(t, "Get at an offset past any end", err, blob.ErrNotFound)
	_, err = s.Stat(t.Context(), key)
	wantErr(t, "Stat", err, blob.ErrNotFound)
}

func testDelete(t *testing.T, s blob.Store) {
	data := TextBytes(12, 8<<10)
	key := KeyOf("r1", data)
	other := KeyOf("r1", []byte("other"))
	Put(t, s, key, data)
	Put(t, s, other, []byte("other"))
	for i := range 2 {
		if err := s.Delete(t.Context(), key); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	_, err := s.Stat(t.Context(), key)
	wantErr(t, "Stat after Delete", err, blob.ErrNotFound)
	_, err = Read(t.Context(), s, key, 0, -1)
	wantErr(t, "Get after Delete", err, blob.ErrNotFound)
	if err := s.Delete(t.Context(), KeyOf("r9", data)); err != nil {
		t.Errorf("Delete of a blob that never existed: %v", err)
	}
	if got := mustRead(t, s, other, 0, -1); string(got) != "other" {
		t.Errorf("Delete of one blob changed another")
	}
	if res := Put(t, s, key, data); !res.Created {
		t.Errorf("Put after Delete: Created = false")
	}
	if got := mustRead(t, s, key, 0, -1); !bytes.Equal(got, data) {
		t.Errorf("Get after Delete and Put returned other bytes")
	}
}

func testList(t *testing.T, s blob.Store) {
	want := map[blob.Key]blob.PutResult{}
	for i := range 12 {
		var data []byte
		switch i % 3 {
		case 0:
			data = TextBytes(uint64(100+i), 2000+i)
		case 1:
			data = RandomBytes(uint64(100+i), 2000+i)
		case 2:
			data = []byte(fmt.Sprintf("small %d", i))
		}
		k := KeyOf("r1", data)
		want[k] = Put(t, s, k, data)
		if i%2 == 0 {
			Put(t, s, KeyOf("r2", data), data)
		}
	}
	Put(t, s, KeyOf("r10", []byte("a root whose name starts like r1's")), []byte("a root whose name starts like r1's"))

	var got []blob.Key
	err := s.List(t.Context(), "r1", func(k blob.Key, info blob.Info) error {
		got = append(got, k)
		res, ok := want[k]
		if !ok {
			return fmt.Errorf("List of r1 returned %s, which is not r1's", k)
		}
		st, err := s.Stat(t.Context(), k)
		if err != nil {
			return fmt.Errorf("Stat %s: %w", k, err)
		}
		if info.Size != st.Size || info.StoredBytes != res.StoredBytes || info.Encoding != res.Encoding {
			return fmt.Errorf("List info of %s = %+v, Stat = %+v, Put = %+v", k, info, st, res)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("List of r1 returned %d blobs, want %d", len(got), len(want))
	}
	if !slices.IsSortedFunc(got, func(a, b blob.Key) int { return bytes.Compare(a.Digest[:], b.Digest[:]) }) {
		t.Errorf("List of r1 is not in ascending digest order")
	}
	seen := map[blob.Key]bool{}
	for _, k := range got {
		if seen[k] {
			t.Errorf("List returned %s twice", k)
		}
		seen[k] = true
	}

	if err := s.List(t.Context(), "r3", func(k blob.Key, _ blob.Info) error {
		return fmt.Errorf("List of a root without blobs returned %s", k)
	}); err != nil {
		t.Error(err)
	}

	t.Run("the callback may delete the blob it is given", func(t *testing.T) {
		n := 0
		err := s.List(t.Context(), "r2", func(k blob.Key, _ blob.Info) error {
			n++
			return s.Delete(t.Context(), k)
		})
		if err != nil || n != 6 {
			t.Fatalf("List of r2 deleting as it goes: %d blobs, error %v; want 6, nil", n, err)
		}
		if err := s.List(t.Context(), "r2", func(k blob.Key, _ blob.Info) error {
			return fmt.Errorf("%s survived its Delete", k)
		}); err != nil {
			t.Error(err)
		}
	})
}

func testListAbort(t *testing.T, s blob.Store) {
	for i := range 5 {
		data := []byte(fmt.Sprintf("blob %d", i))
		Put(t, s, KeyOf("r1", data), data)
	}
	stop := errors.New("stop here")
	calls := 0
	err := s.List(t.Context(), "r1", func(blob.Key, blob.Info) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Errorf("List returned %v, want the callback's error unchanged", err)
	}
	if calls != 2 {
		t.Errorf("List called the callback %d times after it failed on call 2", calls)
	}
}

func testRootIsolation(t *testing.T, s blob.Store) {
	data := TextBytes(13, 20<<10)
	a, b := KeyOf("r1", data), KeyOf("r2", data)
	if !Put(t, s, a, data).Created || !Put(t, s, b, data).Created {
		t.Fatalf("Put of the same bytes under a second root: Created = false; roots must not share blobs")
	}
	if err := s.Delete(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, s, b, 0, -1); !bytes.Equal(got, data) {
		t.Errorf("Delete in r1 changed r2's blob")
	}
	_, err := s.Stat(t.Context(), a)
	wantErr(t, "Stat of the deleted blob", err, blob.ErrNotFound)
}

func testInvalidKeys(t *testing.T, s blob.Store) {
	data := []byte("data")
	d := blob.DigestOf(data)
	roots := []struct{ name, root string }{
		{"an empty root", ""},
		{"an upper-case root", "R1"},
		{"a root with an underscore", "r_1"},
		{"a root with a dash", "r-1"},
		{"a root with a slash", "r/1"},
		{"a root of dots", ".."},
		{"a root with a space", "r1 "},
		{"a root with a non-ASCII letter", "ré"},
		{"a root with a NUL byte", "r\x001"},
		{"a root of 65 characters", strings.Repeat("a", 65)},
	}
	for _, tc := range roots {
		t.Run(tc.name, func(t *testing.T) {
			key := blob.Key{Root: tc.root, Digest: d}
			check := func(op string, err error) {
				t.Helper()
				wantErr(t, op, err, blob.ErrInvalidKey)
				var ke *blob.KeyError
				if !errors.As(err, &ke) || ke.Field != "root" {
					t.Errorf("%s: error %v is not a *blob.KeyError for field root", op, err)
				}
			}
			_, err := s.Put(t.Context(), key, blob.Hash(data))
			check("Put", err)
			_, err = s.Get(t.Context(), key, 0, -1)
			check("Get", err)
			_, err = s.Stat(t.Context(), key)
			check("Stat", err)
			check("Delete", s.Delete(t.Context(), key))
			check("List", s.List(t.Context(), tc.root, func(blob.Key, blob.Info) error { return nil }))
		})
	}
	t.Run("a root of 64 characters is valid", func(t *testing.T) {
		key := blob.Key{Root: strings.Repeat("z9", 32), Digest: d}
		Put(t, s, key, data)
		if got := mustRead(t, s, key, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("Get returned other bytes")
		}
	})
}

// testConcurrentSameKey: Puts of one new key at once through one store all succeed, exactly
// one reports Created (a store serializes its Puts of a key), and the blob is whole.
func testConcurrentSameKey(t *testing.T, s blob.Store) {
	const writers = 8
	for _, data := range [][]byte{TextBytes(14, 512<<10), RandomBytes(15, 256<<10)} {
		key := KeyOf("r1", data)
		if created := ConcurrentPuts(t, slices.Repeat([]blob.Store{s}, writers), key, data); created != 1 {
			t.Errorf("%d of %d concurrent Puts of a new key reported Created, want exactly 1", created, writers)
		}
		if got := mustRead(t, s, key, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("blob is not whole after concurrent Puts")
		}
	}
}

// ConcurrentPuts puts data under key through every store in stores at once (the same store
// may stand there more than once) and returns how many Puts reported Created. A Put that
// fails is an error of t.
func ConcurrentPuts(t *testing.T, stores []blob.Store, key blob.Key, data []byte) (created int) {
	t.Helper()
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for _, s := range stores {
		wg.Go(func() {
			res, err := s.Put(t.Context(), key, blob.Hash(data))
			if err != nil {
				t.Errorf("concurrent Put of %s: %v", key, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Created {
				created++
			}
		})
	}
	wg.Wait()
	return created
}

func testConcurrentKeys(t *testing.T, s blob.Store) {
	const n = 16
	data := make([][]byte, n)
	for i := range data {
		if i%2 == 0 {
			data[i] = TextBytes(uint64(200+i), 64<<10+i)
		} else {
			data[i] = RandomBytes(uint64(200+i), 64<<10+i)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := range data {
		wg.Go(func() {
			key := KeyOf("r1", data[i])
			if _, err := s.Put(t.Context(), key, blob.Hash(data[i])); err != nil {
				errs <- err
				return
			}
			got, err := Read(t.Context(), s, key, 0, -1)
			if err != nil {
				errs <- err
			} else if !bytes.Equal(got, data[i]) {
				errs <- fmt.Errorf("Get %s returned other bytes", key)
			}
		})
		// Readers of a blob that exists throughout.
		if i == 0 {
			continue
		}
		wg.Go(func() {
			if _, err := s.Stat(t.Context(), KeyOf("r1", data[0])); err != nil && !errors.Is(err, blob.ErrNotFound) {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	count := 0
	if err := s.List(t.Context(), "r1", func(blob.Key, blob.Info) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Errorf("List after %d concurrent Puts returned %d blobs", n, count)
	}
}

func testCancel(t *testing.T, s blob.Store) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	stored := TextBytes(16, 4<<10)
	storedKey := KeyOf("r1", stored)
	Put(t, s, storedKey, stored)

	t.Run("put stores nothing", func(t *testing.T) {
		data := []byte("never stored")
		key := KeyOf("r1", data)
		_, err := s.Put(cancelled, key, blob.Hash(data))
		wantErr(t, "Put", err, context.Canceled)
		_, err = s.Stat(t.Context(), key)
		wantErr(t, "Stat after a cancelled Put", err, blob.ErrNotFound)
	})
	t.Run("get, stat and list fail", func(t *testing.T) {
		_, err := Read(cancelled, s, storedKey, 0, -1)
		wantErr(t, "Get", err, context.Canceled)
		_, err = s.Stat(cancelled, storedKey)
		wantErr(t, "Stat", err, context.Canceled)
		err = s.List(cancelled, "r1", func(blob.Key, blob.Info) error { return nil })
		wantErr(t, "List", err, context.Canceled)
	})
	t.Run("delete deletes nothing", func(t *testing.T) {
		wantErr(t, "Delete", s.Delete(cancelled, storedKey), context.Canceled)
		if _, err := s.Stat(t.Context(), storedKey); err != nil {
			t.Errorf("Stat after a cancelled Delete: %v", err)
		}
	})
	t.Run("a reader fails once its context is cancelled", func(t *testing.T) {
		data := RandomBytes(17, 1<<20)
		key := KeyOf("r1", data)
		Put(t, s, key, data)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		rc, err := s.Get(ctx, key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if _, err := io.ReadFull(rc, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		cancel()
		_, err = io.ReadAll(rc)
		wantErr(t, "Read after cancel", err, context.Canceled)
	})
	t.Run("a listing stops once its context is cancelled", func(t *testing.T) {
		for i := range 3 {
			data := []byte(fmt.Sprintf("listed %d", i))
			Put(t, s, KeyOf("r2", data), data)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		calls := 0
		err := s.List(ctx, "r2", func(blob.Key, blob.Info) error {
			calls++
			cancel()
			return nil
		})
		wantErr(t, "List", err, context.Canceled)
		if calls != 1 {
			t.Errorf("List called back %d times after its context was cancelled on the first", calls)
		}
	})
}

func testEarlyClose(t *testing.T, s blob.Store) {
	for _, data := range [][]byte{TextBytes(18, 1<<20), RandomBytes(19, 1<<20)} {
		key := KeyOf("r1", data)
		Put(t, s, key, data)
		rc, err := s.Get(t.Context(), key, 100, -1)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		if _, err := io.ReadFull(rc, buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[100:110]) {
			t.Errorf("first bytes of a ranged read differ")
		}
		if err := rc.Close(); err != nil {
			t.Errorf("Close before the end: %v", err)
		}
		if err := rc.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := rc.Read(buf); err == nil {
			t.Errorf("Read after Close succeeded")
		}
	}
}

func testClosed(t *testing.T, s blob.Store) {
	data := []byte("before close")
	key := KeyOf("r1", data)
	Put(t, s, key, data)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := s.Put(t.Context(), KeyOf("r1", []byte("after")), blob.Hash([]byte("after")))
	wantErr(t, "Put after Close", err, blob.ErrUnavailable)
	_, err = s.Get(t.Context(), key, 0, -1)
	wantErr(t, "Get after Close", err, blob.ErrUnavailable)
	_, err = s.Stat(t.Context(), key)
	wantErr(t, "Stat after Close", err, blob.ErrUnavailable)
	wantErr(t, "Delete after Close", s.Delete(t.Context(), key), blob.ErrUnavailable)
	wantErr(t, "List after Close", s.List(t.Context(), "r1", func(blob.Key, blob.Info) error { return nil }), blob.ErrUnavailable)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Damage changes the stored bytes of key's blob behind the store's back (a flipped byte in
// the payload, as a failing disk or a tampered object would leave it), keeping whatever the
// backend records beside the payload (blob/dir's header, s3's metadata), so that only
// reading the payload can tell. Each backend's test supplies its own.
type Damage func(t *testing.T, s blob.Store, key blob.Key)

// RunDamage runs the damage part of the conformance suite (docs/architecture.md#blob-storage-and-garbage-collection, issue 10): a
// damaged blob fails every read, whatever the range, with ErrCorrupt and never a clean
// io.EOF; put-if-absent verifies a blob it finds before trusting it, so the next Put of the
// same content replaces a damaged blob. open is as for Run.
func RunDamage(t *testing.T, open func(t *testing.T) blob.Store, damage Damage) {
	cases := []struct {
		name string
		data []byte
	}{
		{"an identity blob", RandomBytes(40, 64<<10)},
		{"a compressed blob", TextBytes(41, 256<<10)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			key := KeyOf("r1", tc.data)
			Put(t, s, key, tc.data)
			damage(t, s, key)
			size := int64(len(tc.data))
			for _, r := range []struct {
				what           string
				offset, length int64
			}{
				{"the whole blob", 0, -1},
				{"its first bytes", 0, 10},
				{"bytes in the middle", size / 3, 100},
				{"its last byte", size - 1, 1},
				{"nothing at its end", size, -1},
			} {
				got, err := Read(t.Context(), s, key, r.offset, r.length)
				if !errors.Is(err, blob.ErrCorrupt) {
					t.Errorf("Get %s of the damaged blob: %d bytes, error %v; want an error wrapping ErrCorrupt", r.what, len(got), err)
				}
			}
			if _, err := s.Put(t.Context(), key, blob.Hash(tc.data)); err != nil {
				t.Fatalf("Put of the same content over the damaged blob: %v", err)
			}
			if got := mustRead(t, s, key, 0, -1); !bytes.Equal(got, tc.data) {
				t.Fatalf("Get after the repairing Put: %d bytes that differ from the %d put", len(got), len(tc.data))
			}
			if got := mustRead(t, s, key, size/3, 100); !bytes.Equal(got, tc.data[size/3:size/3+100]) {
				t.Fatalf("ranged Get after the repairing Put returned other bytes")
			}
			res := Put(t, s, key, tc.data)
			if res.Created {
				t.Errorf("Put of the repaired, intact blob: Created = true, want false (put-if-absent)")
			}
		})
	}
}
