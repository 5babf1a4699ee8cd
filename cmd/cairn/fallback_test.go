package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/workbench/auth"
)

// busyWorkbench is workbench a/w with a writer that changes it without pause while
// commands run: round k creates input/new-k, rewrites each of busySeeds with "<path>@k"
// and deletes input/new-(k-2). Commands reach the node through a proxy that cuts listings
// into pages of two and makes the outcome certain without timing anything: it holds the
// first page of every live listing until the writer has finished a write it started after
// the page was read (so the next page meets ReadFenceChanged), and the answer of every
// snapshot taken until the writer has finished a whole round it started after the
// snapshot (so every file read live instead of at the snapshot would differ from it).
type busyWorkbench struct {
	direct *client.Client // the node itself, as the local operator
	// operator and reader are the proxy's URLs as the local operator and as a key that
	// may only read (workspace:read of root a).
	operator, reader string

	mu       sync.Mutex
	writes   int           // writes finished
	rounds   int           // rounds finished
	progress chan struct{} // closed and replaced when writes or rounds move
	events   []busyEvent   // every write, in the order (and generation order) applied
}

// busyEvent is one write of the workbench: a put of content, or a delete.
type busyEvent struct {
	path       string
	generation uint64
	content    string
	deleted    bool
}

var busySeeds = []string{"input/a", "input/b", "input/c", "input/d/e", "input/d/f", "input/d/g", "input/h"}

func newBusyWorkbench(t *testing.T) *busyWorkbench {
	t.Helper()
	_, h := testHandler(t)
	node := httptest.NewServer(h)
	t.Cleanup(node.Close)
	b := &busyWorkbench{direct: client.New(node.URL, nil), progress: make(chan struct{})}
	reader := auth.Principal{ID: "0123456789abcdef", Name: "reader", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}}
	b.operator = b.proxy(t, h, nil)
	b.reader = b.proxy(t, h, &reader)
	for _, p := range busySeeds {
		b.put(t.Context(), t, p, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.write(ctx, t)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// proxy serves h, as principal p when not nil, behind the holds busyWorkbench describes.
func (b *busyWorkbench) proxy(t *testing.T, h http.Handler, p *auth.Principal) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p != nil {
			r = r.WithContext(auth.WithPrincipal(r.Context(), *p)) // what the node's authentication sets
		}
		q := r.URL.Query()
		isList := r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/list")
		if isList {
			q.Set("limit", "2")
			r.URL.RawQuery = q.Encode()
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		b.mu.Lock()
		writes, rounds := b.writes, b.rounds
		b.mu.Unlock()
		switch {
		case isList && !q.Has("cursor") && !q.Has("at_snapshot"):
			// The write finished next may have been applied before the page was read; the
			// one after it began after.
			b.await(r.Context(), func() bool { return b.writes >= writes+2 })
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/snapshots") && rec.Code == http.StatusCreated:
			b.await(r.Context(), func() bool { return b.rounds >= rounds+2 })
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// await returns once done (called under b.mu) holds, or ctx ends.
func (b *busyWorkbench) await(ctx context.Context, done func() bool) {
	for {
		b.mu.Lock()
		ok, ch := done(), b.progress
		b.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// write runs the writer's rounds until ctx ends.
func (b *busyWorkbench) write(ctx context.Context, t *testing.T) {
	for k := 1; ctx.Err() == nil; k++ {
		b.put(ctx, t, fmt.Sprintf("input/new-%d", k), fmt.Sprintf("new %d", k))
		for _, p := range busySeeds {
			b.put(ctx, t, p, fmt.Sprintf("%s@%d", p, k))
		}
		if k > 2 {
			p := fmt.Sprintf("input/new-%d", k-2)
			res, err := b.direct.Delete(ctx, "a", "w", p, client.DeleteOptions{})
			if err != nil {
				b.failed(ctx, t, p, err)
				return
			}
			b.record(busyEvent{path: p, generation: res.Generation, deleted: true}, false)
		}
		b.record(busyEvent{}, true)
	}
}

func (b *busyWorkbench) put(ctx context.Context, t *testing.T, p, content string) {
	res, err := b.direct.PutFile(ctx, "a", "w", p, strings.NewReader(content), client.PutOptions{Size: -1})
	if err != nil {
		b.failed(ctx, t, p, err)
		return
	}
	b.record(busyEvent{path: p, generation: res.Generation, content: content}, false)
}

func (b *busyWorkbench) failed(ctx context.Context, t *testing.T, p string, err error) {
	if ctx.Err() == nil {
		t.Errorf("writing %s: %v", p, err)
	}
}

// record adds e (unless round), counts it, and wakes whoever awaits progress.
func (b *busyWorkbench) record(e busyEvent, round bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if round {
		b.rounds++
	} else {
		b.events = append(b.events, e)
		b.writes++
	}
	close(b.progress)
	b.progress = make(chan struct{})
}

// at is the workbench's files as they were at read version v: path → the event of its
// newest write at or before v.
func (b *busyWorkbench) at(v uint64) map[string]busyEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	files := map[string]busyEvent{}
	for _, e := range b.events {
		switch {
		case e.generation > v:
		case e.deleted:
			delete(files, e.path)
		default:
			files[e.path] = e
		}
	}
	return files
}

// retiredSnapshots checks that the snapshots a command's stderr names as taken for it are
// every snapshot of the workbench but the earlier ones before it, each retired, with the
// fallback's lease and a reason, and returns their read versions in the order named.
func (b *busyWorkbench) retiredSnapshots(t *testing.T, stderr string, earlier int) []uint64 {
	t.Helper()
	named := regexp.MustCompile(`reads it at snapshot (\d+), taken for it`).FindAllStringSubmatch(stderr, -1)
	list, err := b.direct.ListSnapshots(t.Context(), "a", "w")
	if err != nil {
		t.Fatal(err)
	}
	var versions []uint64
	for _, m := range named {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		i := slices.IndexFunc(list.Snapshots, func(s client.Snapshot) bool { return s.SnapshotID == id })
		if i < 0 {
			t.Fatalf("stderr names snapshot %d, which the workbench does not have: %+v", id, list.Snapshots)
		}
		s := list.Snapshots[i]
		if s.State != client.SnapshotRetired || s.TTLDays != client.FallbackTTLDays || !strings.Contains(s.Annotation.Reason, "kept changing") {
			t.Fatalf("snapshot %d: state %s, lease %d days, reason %q; want retired, %d day, a reason", id, s.State, s.TTLDays, s.Annotation.Reason, client.FallbackTTLDays)
		}
		versions = append(versions, s.ReadVersion)
	}
	if earlier+len(named) != len(list.Snapshots) {
		t.Fatalf("stderr names %d snapshots, the workbench has %d besides the %d earlier ones:\n%s", len(named), len(list.Snapshots)-earlier, earlier, stderr)
	}
	return versions
}

// TestLsAndExportOfABusyWorkbenchReadItAtASnapshotTakenForThem: under a writer that never
// pauses, a live listing of more than one page never completes; ls, ls -r and export
// then read the workbench at a snapshot they take, print or write exactly its state, say
// so on stderr in one line, and retire the snapshot.
func TestLsAndExportOfABusyWorkbenchReadItAtASnapshotTakenForThem(t *testing.T) {
	b := newBusyWorkbench(t)
	w := []string{"--server", b.operator, "--agent", "a", "--workbench", "w"}
	taken := 0
	for _, args := range [][]string{{"ls", "input"}, {"ls", "-r", "input"}} {
		name := strings.Join(args, " ")
		out, stderr, err := execCairn(t, append(w, args...)...)
		if err != nil {
			t.Fatalf("%s: %v (stderr %q)", name, err, stderr)
		}
		if n := strings.Count(stderr, "\n"); n != 1 || !strings.Contains(stderr, "kept changing") {
			t.Fatalf("%s: stderr %q, want one line naming the snapshot", name, stderr)
		}
		versions := b.retiredSnapshots(t, stderr, taken)
		if len(versions) != 1 {
			t.Fatalf("%s: %d snapshots, want 1", name, len(versions))
		}
		taken++
		want := map[string]string{} // name as ls prints it → generation ("-" for a directory)
		for p, e := range b.at(versions[0]) {
			rel := strings.TrimPrefix(p, "input/")
			if d, _, ok := strings.Cut(rel, "/"); ok {
				want[d+"/"] = "-"
				if !slices.Contains(args, "-r") {
					continue
				}
			}
			want[rel] = strconv.FormatUint(e.generation, 10)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("%s: line %q", name, line)
			}
			got[f[3]] = f[2]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s printed %v, want the snapshot's state %v", name, got, want)
		}
	}

	dst := filepath.Join(t.TempDir(), "out")
	out, stderr, err := execCairn(t, append(w, "export", "--section", "input", dst)...)
	if err != nil || !strings.HasPrefix(out, "exported ") {
		t.Fatalf("export: %v (stdout %q, stderr %q)", err, out, stderr)
	}
	versions := b.retiredSnapshots(t, stderr, taken)
	if len(versions) != 1 {
		t.Fatalf("export: %d snapshots, want 1", len(versions))
	}
	want := map[string]string{}
	for p, e := range b.at(versions[0]) {
		want[strings.TrimPrefix(p, "input/")] = e.content
	}
	got := map[string]string{}
	for _, rel := range filesUnder(t, dst) {
		body, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		got[rel] = string(body)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("export wrote %v, want the snapshot's files %v", got, want)
	}
}

// TestImportDeleteOfABusyWorkbenchListsItAtSnapshots: import --delete lists its section
// twice (to skip unchanged files, then to find the files to delete); each listing a
// writer keeps invalidating is done at a snapshot of its own, retired after it.
func TestImportDeleteOfABusyWorkbenchListsItAtSnapshots(t *testing.T) {
	b := newBusyWorkbench(t)
	for _, p := range []string{"scripts/old1", "scripts/old2", "scripts/keep"} {
		if _, err := b.direct.PutFile(t.Context(), "a", "w", p, strings.NewReader("old"), client.PutOptions{Size: -1}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, f := range []string{"keep", "new1", "new2"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := execCairn(t, "--server", b.operator, "import", dir, "--agent", "a", "--workbench", "w", "--section", "scripts", "--delete")
	if err != nil || !strings.Contains(out, "deleted 2") {
		t.Fatalf("import --delete: %v (stdout %q, stderr %q)", err, out, stderr)
	}
	if versions := b.retiredSnapshots(t, stderr, 0); len(versions) != 2 {
		t.Fatalf("import --delete took %d snapshots, want 2 (stderr %q)", len(versions), stderr)
	}
	var got []string
	err = b.direct.Walk(t.Context(), "a", "w", "scripts", func(e client.Entry) error {
		got = append(got, e.FullPath())
		return nil
	})
	if err != nil || strings.Join(got, ",") != "scripts/keep,scripts/new1,scripts/new2" {
		t.Fatalf("scripts holds %v (%v), want keep, new1, new2", got, err)
	}
}

// TestABusyWorkbenchFailsTheListingWhenNoSnapshotMayBeTaken: a key that may only read
// cannot take the snapshot, and --no-snapshot-fallback does not try: both fail with
// ReadFenceChanged, print nothing on stdout and leave no snapshot; the first says why the
// fallback could not be used.
func TestABusyWorkbenchFailsTheListingWhenNoSnapshotMayBeTaken(t *testing.T) {
	b := newBusyWorkbench(t)
	dst := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		server string
		args   []string
		want   []string
	}{
		{b.reader, []string{"ls", "-r", "input"}, []string{"kept changing", "taking one failed", "PermissionDenied", "--at-snapshot"}},
		{b.reader, []string{"export", "--section", "input", dst}, []string{"kept changing", "taking one failed", "PermissionDenied", "no file was written"}},
		{b.operator, []string{"ls", "-r", "input", "--no-snapshot-fallback"}, []string{"kept changing", "--at-snapshot"}},
		{b.operator, []string{"export", "--section", "input", "--no-snapshot-fallback", dst}, []string{"kept changing", "no file was written"}},
	} {
		name := strings.Join(tc.args, " ")
		out, stderr, err := execCairn(t, append([]string{"--server", tc.server, "--agent", "a", "--workbench", "w"}, tc.args...)...)
		if err == nil || out != "" || stderr != "" {
			t.Fatalf("%s: stdout %q, stderr %q, error %v; want only an error", name, out, stderr, err)
		}
		code, msg := describeError(err)
		for _, want := range tc.want {
			if code != "ReadFenceChanged" || !strings.Contains(msg, want) {
				t.Fatalf("%s: error %s: %s, want ReadFenceChanged with %q in it", name, code, msg, want)
			}
		}
		if strings.Contains(strings.Join(tc.args, " "), fallbackFlag) && strings.Contains(msg, "taking one failed") {
			t.Fatalf("%s: %s", name, msg)
		}
	}
	if got := filesUnder(t, dst); len(got) != 0 {
		t.Fatalf("a failed export wrote %v", got)
	}
	if list, err := b.direct.ListSnapshots(t.Context(), "a", "w"); err != nil || len(list.Snapshots) != 0 {
		t.Fatalf("snapshots %+v (%v), want none", list, err)
	}
}
