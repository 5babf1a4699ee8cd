package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// firstPages counts the listings the fake server saw start: list requests without a
// cursor.
func (f *fakeServer) firstPages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasSuffix(r.EscapedPath, "/list") && !strings.Contains(r.RawQuery, "cursor=") {
			n++
		}
	}
	return n
}

func TestListAllStartsAgainFromTheFirstPageWhenTheFenceChanges(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		name     string
		failures int
		wantErr  bool
	}{
		{"an unchanged workbench is listed once", 0, false},
		{"two changes cost two more listings", 2, false},
		{"the last allowed listing succeeds", ListingAttempts - 1, false},
		{"a workbench that keeps changing fails after the bound", ListingAttempts, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeServer(t)
			for _, n := range names {
				mustPut(t, c, "a", "w", "input/"+n, n, PutOptions{})
			}
			f.pageCap = 2
			f.fenceFailures = tt.failures
			start := f.firstPages()
			entries, err := c.ListAll(t.Context(), "a", "w", "input", ListOptions{Limit: 2})
			runs := f.firstPages() - start
			if tt.wantErr {
				if !errors.Is(err, ErrWorkbenchKeptChanging) || ErrorCode(err) != "ReadFenceChanged" || entries != nil {
					t.Fatalf("got %d entries, %v", len(entries), err)
				}
				if runs != ListingAttempts {
					t.Fatalf("listed %d times, want the bound %d", runs, ListingAttempts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name)
			}
			if strings.Join(got, ",") != strings.Join(names, ",") {
				t.Fatalf("entries %v, want each of %v once", got, names)
			}
			if runs != tt.failures+1 {
				t.Fatalf("listed %d times, want %d", runs, tt.failures+1)
			}
		})
	}
}

func TestRestartListingReturnsOtherErrorsAtOnce(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/f", "x", PutOptions{})
	f.fenceFailures = ListingAttempts
	start := f.firstPages()
	_, err := c.ListAll(t.Context(), "a", "w", "input/f", ListOptions{})
	if ErrorCode(err) != "NotDirectory" || errors.Is(err, ErrWorkbenchKeptChanging) {
		t.Fatalf("got %v", err)
	}
	if runs := f.firstPages() - start; runs != 1 {
		t.Fatalf("listed %d times", runs)
	}
}

func TestRestartListingTakesNoPauseTheContextCannotAfford(t *testing.T) {
	fence := &Error{HTTPStatus: 409, Code: "ReadFenceChanged", Message: "changed", Retryable: true}
	past, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	canceled, cancel2 := context.WithCancel(t.Context())
	cancel2()
	for name, ctx := range map[string]context.Context{"deadline": past, "canceled": canceled} {
		runs := 0
		err := RestartListing(ctx, func() error { runs++; return fence })
		if runs != 1 || ErrorCode(err) != "ReadFenceChanged" {
			t.Fatalf("%s: %d runs, %v", name, runs, err)
		}
	}
	if err := RestartListing(past, func() error { return fence }); !errors.Is(err, ErrWorkbenchKeptChanging) {
		t.Fatalf("deadline: %v", err)
	}
	if err := RestartListing(canceled, func() error { return fence }); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

func TestWalkListsEachDirectoryAgainWhenTheFenceChanges(t *testing.T) {
	paths := []string{"input/a", "input/b", "input/c", "input/d/e", "input/d/f", "input/d/g", "input/h"}
	for _, tt := range []struct {
		name     string
		failures int
		wantErr  bool
	}{
		{"changes within the bound", ListingAttempts - 1, false},
		{"a workbench that keeps changing", ListingAttempts, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeServer(t)
			for _, p := range paths {
				mustPut(t, c, "a", "w", p, p, PutOptions{})
			}
			f.pageCap = 2
			f.fenceFailures = tt.failures
			start := f.firstPages()
			var seen []string
			err := c.Walk(t.Context(), "a", "w", "input", func(e Entry) error {
				if !e.IsDir() {
					seen = append(seen, e.FullPath())
				}
				return nil
			})
			runs := f.firstPages() - start
			if tt.wantErr {
				// The first directory spends the bound; no outer retry multiplies it.
				if !errors.Is(err, ErrWorkbenchKeptChanging) || ErrorCode(err) != "ReadFenceChanged" || len(seen) != 0 || runs != ListingAttempts {
					t.Fatalf("%d listings, saw %v, error %v", runs, seen, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// A directory's files before its subdirectories' (walk order).
			want := []string{"input/a", "input/b", "input/c", "input/h", "input/d/e", "input/d/f", "input/d/g"}
			if strings.Join(seen, ",") != strings.Join(want, ",") {
				t.Fatalf("walk saw %v, want each of %v once", seen, want)
			}
			// input listed failures+1 times, then input/d once.
			if runs != tt.failures+2 {
				t.Fatalf("%d listings, want %d", runs, tt.failures+2)
			}
		})
	}
}

func TestRestartListingAroundAListingThatRestartsDoesNotMultiplyTheBound(t *testing.T) {
	f, c := newFakeServer(t)
	for _, n := range []string{"a", "b", "c"} {
		mustPut(t, c, "a", "w", "input/"+n, n, PutOptions{})
	}
	f.pageCap = 2
	f.fenceFailures = ListingAttempts * ListingAttempts
	start := f.firstPages()
	err := RestartListing(t.Context(), func() error {
		_, err := c.ListAll(t.Context(), "a", "w", "input", ListOptions{})
		return err
	})
	if runs := f.firstPages() - start; !errors.Is(err, ErrWorkbenchKeptChanging) || runs != ListingAttempts {
		t.Fatalf("%d listings, error %v", runs, err)
	}
}

func TestImportDoesNotRetryAListingThatSpentItsRestarts(t *testing.T) {
	f, c := newFakeServer(t)
	for _, n := range []string{"a", "b", "c"} {
		mustPut(t, c, "a", "w", "input/"+n, n, PutOptions{})
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.pageCap = 2
	f.fenceFailures = 10 * ListingAttempts // answered retryable, as the server does
	start := f.firstPages()
	_, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Section: "input", Dir: dir})
	if runs := f.firstPages() - start; !errors.Is(err, ErrWorkbenchKeptChanging) || runs != ListingAttempts {
		t.Fatalf("%d listings, error %v", runs, err)
	}
}
