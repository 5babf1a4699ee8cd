package dir

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/blob"
)

func TestReserveCountsWritesInFlightAndRefusesWhatWouldEatIt(t *testing.T) {
	const mib = 1 << 20
	free := int64(100 * mib)
	r := reserve{dir: "unused", min: 64 * mib, free: func(string) (int64, error) { return free, nil }}

	done1, err := r.take(20 * mib)
	if err != nil {
		t.Fatalf("20 MiB with 100 MiB free and 64 kept: %v", err)
	}
	// The first write has not landed: the file system still reports 100 MiB free.
	_, err = r.take(20 * mib)
	if !errors.Is(err, blob.ErrStorageFull) || !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("a second 20 MiB while the first is in flight: %v, want ErrStorageFull and ErrUnavailable", err)
	}
	for _, want := range []string{"104857600 bytes free", "20971520 of them promised", "67108864 bytes kept free"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if done, err := r.take(16 * mib); err != nil {
		t.Fatalf("16 MiB more fits exactly (100-20-16 = 64): %v", err)
	} else {
		done()
	}
	done1()
	// The first write landed.
	free -= 20 * mib
	if done, err := r.take(16 * mib); err != nil {
		t.Fatalf("16 MiB with 80 MiB free and nothing in flight: %v", err)
	} else {
		done()
	}
	if _, err := r.take(17 * mib); !errors.Is(err, blob.ErrStorageFull) {
		t.Fatalf("17 MiB with 80 MiB free: %v, want ErrStorageFull", err)
	}

	// An unreadable figure admits (the write fails on the disk itself if it is full),
	// and so does no reserve.
	r.free = func(string) (int64, error) { return 0, errors.New("statfs failed") }
	if done, err := r.take(1 << 40); err != nil {
		t.Fatalf("free space unknown: %v", err)
	} else {
		done()
	}
	none := reserve{dir: "unused", free: func(string) (int64, error) { return 0, nil }}
	if _, err := none.take(1 << 40); err != nil {
		t.Fatalf("no reserve: %v", err)
	}
}

func TestStatfsFreeReadsTheDirectorysFileSystem(t *testing.T) {
	n, err := statfsFree(t.TempDir())
	if err != nil || n <= 0 {
		t.Fatalf("statfsFree = %d, %v", n, err)
	}
	if _, err := statfsFree(t.TempDir() + "/missing"); err == nil {
		t.Fatal("statfsFree of a missing directory did not fail")
	}
}
