package client

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/internal/pause"
)

// Transfer defaults.
const (
	// DefaultConcurrency is the number of files Import and Export move at once.
	DefaultConcurrency = 8
	// DefaultImportSection is the section Import writes into when none is given.
	DefaultImportSection = "input"
)

// sectionNames are the five sections of every workbench (docs/workbench.md#common-rules).
var sectionNames = []string{"input", "scripts", "outputs", "logs", "metadata"}

// Path limits of the Workbench contract (docs/workbench.md#common-rules), checked locally by
// Import before anything is uploaded so a bad name fails the import up front.
const (
	maxPathBytes      = 4096
	maxPathComponents = 64
)

// ErrUnsafePath is wrapped by Import and Export errors for a path that cannot be mapped
// safely: a remote path that would escape the export directory, or a local name the
// server's jail rules would reject.
var ErrUnsafePath = errors.New("unsafe path")

// ImportOptions configure Import.
type ImportOptions struct {
	// Agent and Workbench name the destination; the workbench is created if missing.
	Agent, Workbench string
	// Section receives the files ("input" when empty).
	Section string
	// Dir is the local directory to upload. A symlink naming a directory is followed;
	// symlinks inside it are not.
	Dir string
	// Concurrency is the number of uploads in flight (DefaultConcurrency when < 1).
	Concurrency int
	// Start, if set, is called once before the first upload with the number of files and
	// bytes to send.
	Start func(files, bytes int64)
	// Progress, if set, is called as bytes are sent and files complete, with cumulative
	// counts (files completed, bytes sent). Calls are serialized.
	Progress func(files, bytes int64)
	// Warn, if set, receives one message per skipped entry (symlinks, sockets, devices),
	// naming it by its local path.
	Warn func(msg string)
	// Delete mirrors deletions: after every upload succeeded, each file of the section
	// that has no local counterpart is deleted, conditionally on the generation the
	// listing showed (a file someone rewrote meanwhile is kept and reported through Warn).
	// Nothing is deleted when any upload failed.
	Delete bool
	// Force uploads every file. Without it a file whose remote counterpart already has
	// the same SHA-256, size and executable flag is skipped (counted in
	// ImportStats.Skipped), so a re-run writes no new versions of unchanged files.
	Force bool
	// Fallback, if set, lists the section at a snapshot taken for the purpose when its
	// live listing (the one that finds unchanged files, the one Delete walks) kept
	// meeting writes (FallBackToSnapshot); nil fails the import with
	// ErrWorkbenchKeptChanging instead. Each such listing takes its own snapshot.
	Fallback *SnapshotFallback
}

// ImportStats summarize an Import: files and bytes uploaded completely, and the wall time
// including the local scan.
type ImportStats struct {
	Files, Bytes int64
	// Skipped counts the files left alone because the workbench already held them
	// unchanged (not with Force).
	Skipped int64
	// Deleted counts the remote files a Delete import removed.
	Deleted  int64
	Duration time.Duration
}

// ExportOptions configure Export.
type ExportOptions struct {
	// Agent and Workbench name the source.
	Agent, Workbench string
	// Section is the section to export into Dir directly; "" exports the whole workbench,
	// each section (and any entry outside the sections) as a subdirectory of Dir.
	Section string
	// Dir is the local destination; created if missing. Existing files at exported paths
	// are replaced; other files are left alone.
	Dir string
	// Concurrency is the number of downloads in flight (DefaultConcurrency when < 1).
	Concurrency int
	// Start, if set, is called once before the first download with the number of files
	// and bytes to fetch (sizes as listed).
	Start func(files, bytes int64)
	// Progress, if set, is called as bytes arrive and files complete, with cumulative
	// counts. Calls are serialized.
	Progress func(files, bytes int64)
	// AtSnapshot exports the workbench as it was at a snapshot (its listing and its
	// files); the zero value exports live state.
	AtSnapshot SnapshotRef
	// Fallback, if set, makes a live export whose walk kept meeting writes export the
	// workbench at a snapshot taken for the purpose instead, listing and files alike
	// (FallBackToSnapshot); nil fails the export with ErrWorkbenchKeptChanging.
	Fallback *SnapshotFallback
}

// ExportStats summarize an Export: files and bytes written completely, and the wall time
// including the remote walk.
type ExportStats struct {
	Files, Bytes int64
	Duration     time.Duration
}

// Import uploads every regular file under opts.Dir to
// "<section>/<path relative to Dir, with forward slashes>" in the workbench, with
// Cairn-Executable set from the file's owner-execute bit. Each upload is an unconditional
// PUT (an upsert), so re-running an import converges. Order: scan Dir (skipping symlinks
// and other non-regular entries, reported through Warn), create the workbench, list the
// section (unless Force), then per file: skip it if the workbench already holds the same
// bytes (same size and executable flag in the listing, then the same SHA-256 as the file's
// Cairn-Digest), else upload it.
//
// Every request Import makes means the same sent twice: the create, the listing, the HEADs,
// and each PUT, which carries an Idempotency-Key unique to this run and path, so a PUT
// that applied but whose answer was lost is answered from the first time instead of
// writing another version. A request cut off by the connection (refused, reset, closed
// mid-body) or answered with a retryable error is sent again after a backoff, within
// importRetry's bounds (the file is re-opened and sent from its start).
//
// Errors: the first local or remote failure that outlasts its retries stops the import
// (in-flight uploads are cancelled) and is returned, wrapped with the file it concerns,
// together with the stats of what completed. A name the server would reject (backslash,
// too long, too deep) wraps ErrUnsafePath and fails before anything is uploaded.
func Import(ctx context.Context, c *Client, opts ImportOptions) (ImportStats, error) {
	start := time.Now()
	section := opts.Section
	if section == "" {
		section = DefaultImportSection
	}
	if !slices.Contains(sectionNames, section) {
		return ImportStats{}, fmt.Errorf("import: section %q is not one of %s: %w", section, strings.Join(sectionNames, ", "), ErrUnsafePath)
	}
	root, err := filepath.EvalSymlinks(opts.Dir)
	if err != nil {
		return ImportStats{}, fmt.Errorf("import: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return ImportStats{}, fmt.Errorf("import: %w", err)
	} else if !fi.IsDir() {
		return ImportStats{}, fmt.Errorf("import: %s is not a directory", opts.Dir)
	}

	type item struct{ local, remote, display string }
	var items []item
	var totalBytes int64
	warn := func(format string, args ...any) {
		if opts.Warn != nil {
			opts.Warn(fmt.Sprintf(format, args...))
		}
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		display := filepath.Join(opts.Dir, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			warn("skipping symlink %s", display)
			return nil
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			warn("skipping %s: not a regular file", display)
			return nil
		}
		remote := section + "/" + filepath.ToSlash(rel)
		if err := checkRemoteName(remote); err != nil {
			return fmt.Errorf("%s: %w", display, err)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		items = append(items, item{local: p, remote: remote, display: display})
		totalBytes += info.Size()
		return nil
	})
	if err != nil {
		return ImportStats{Duration: time.Since(start)}, fmt.Errorf("import: %w", err)
	}

	if err := retryIdempotent(ctx, func() error {
		_, err := c.CreateWorkbench(ctx, opts.Agent, opts.Workbench)
		return err
	}); err != nil {
		return ImportStats{Duration: time.Since(start)}, fmt.Errorf("import: create workbench %q: %w", opts.Workbench, err)
	}
	var remote map[string]Entry
	if !opts.Force {
		if remote, err = listFiles(ctx, c, opts.Agent, opts.Workbench, section, opts.Fallback); err != nil {
			return ImportStats{Duration: time.Since(start)}, fmt.Errorf("import: list %s: %w", section, err)
		}
	}
	if opts.Start != nil {
		opts.Start(int64(len(items)), totalBytes)
	}

	run := randomID()
	prog := &progress{fn: opts.Progress}
	err = forEach(ctx, opts.Concurrency, items, func(ctx context.Context, it item) error {
		if e, ok := remote[it.remote]; ok {
			same, size, err := unchanged(ctx, c, opts.Agent, opts.Workbench, it.local, e)
			if err != nil {
				return fmt.Errorf("import %s: %w", it.display, err)
			}
			if same {
				prog.skip(size)
				return nil
			}
		}
		key := run + "-" + it.remote
		if len(key) > maxIdempotencyKeyBytes || !printableASCII(key) {
			sum := sha256.Sum256([]byte(it.remote))
			key = run + "-" + hex.EncodeToString(sum[:])
		}
		var n int64
		err := retryIdempotent(ctx, func() error {
			var err error
			n, err = uploadFile(ctx, c, opts.Agent, opts.Workbench, it.local, it.remote, key, prog)
			return err
		})
		if err != nil {
			return fmt.Errorf("import %s: %w", it.display, err)
		}
		prog.done(n)
		return nil
	})
	files, bytes, skipped := prog.completed()
	stats := ImportStats{Files: files, Bytes: bytes, Skipped: skipped}
	if err == nil && opts.Delete {
		keep := make(map[string]bool, len(items))
		for _, it := range items {
			keep[it.remote] = true
		}
		stats.Deleted, err = mirrorDeletions(ctx, c, opts, section, keep, warn)
	}
	stats.Duration = time.Since(start)
	return stats, err
}

// mirrorDeletions deletes the files of the workbench section that keep does not name, each
// at the generation the walk listed, and returns how many it deleted. A file that changed
// since the walk (Conflict) or went away (NotFound) is left to whoever changed it. The walk
// is live, or with opts.Fallback at a snapshot when the workbench kept changing under it:
// the deletes being conditional on the listed generation, a walk at a snapshot deletes
// nothing a live walk would not.
func mirrorDeletions(ctx context.Context, c *Client, opts ImportOptions, section string, keep map[string]bool, warn func(string, ...any)) (int64, error) {
	type stale struct {
		path       string
		generation uint64
	}
	var gone []stale
	err := c.FallBackToSnapshot(ctx, opts.Agent, opts.Workbench, SnapshotRef{}, opts.Fallback, func(at SnapshotRef) error {
		gone = gone[:0]
		return c.WalkAt(ctx, opts.Agent, opts.Workbench, section, at, func(e Entry) error {
			if !e.IsDir() && !keep[e.FullPath()] {
				gone = append(gone, stale{e.FullPath(), e.Generation})
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("import: list %s for --delete: %w", section, err)
	}
	var deleted atomic.Int64
	err = forEach(ctx, opts.Concurrency, gone, func(ctx context.Context, g stale) error {
		_, err := c.Delete(ctx, opts.Agent, opts.Workbench, g.path, DeleteOptions{IfMatch: g.generation})
		switch ErrorCode(err) {
		case "":
			deleted.Add(1)
		case "Conflict", "NotFound":
			warn("kept %s: it changed on the server during the import", g.path)
		default:
			return fmt.Errorf("import: delete %s: %w", g.path, err)
		}
		return nil
	})
	return deleted.Load(), err
}

// uploadFile PUTs one local file under the Idempotency-Key key and returns the number of
// bytes sent. A failed attempt takes back from prog the bytes it had reported.
func uploadFile(ctx context.Context, c *Client, agent, wb, local, remote, key string, prog *progress) (int64, error) {
	f, err := os.Open(local)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("no longer a regular file")
	}
	size := fi.Size()
	// Send exactly the size observed now: a file growing during the upload must not
	// overrun the Content-Length; one shrinking fails the request.
	var body io.Reader = http.NoBody
	var sent atomic.Int64 // added to by the transport's goroutine that sends the body
	if size > 0 {
		body = &countingReader{r: io.LimitReader(f, size), add: func(n int64) { sent.Add(n); prog.sent(n) }}
	}
	_, err = c.PutFile(ctx, agent, wb, remote, body, PutOptions{
		Executable:     fi.Mode()&0o100 != 0,
		Size:           size,
		IdempotencyKey: key,
	})
	if n := sent.Load(); err != nil && n > 0 {
		prog.sent(-n)
	}
	return size, err
}

// listFiles returns the files under section, by their path in the workbench: live, or
// at a snapshot when fb is set and the workbench kept changing while it was listed. The
// listing only picks the files worth hashing: unchanged compares each with the live file.
func listFiles(ctx context.Context, c *Client, agent, wb, section string, fb *SnapshotFallback) (map[string]Entry, error) {
	var files map[string]Entry
	err := c.FallBackToSnapshot(ctx, agent, wb, SnapshotRef{}, fb, func(at SnapshotRef) error {
		return retryIdempotent(ctx, func() error {
			files = map[string]Entry{}
			return c.WalkAt(ctx, agent, wb, section, at, func(e Entry) error {
				if !e.IsDir() {
					files[e.FullPath()] = e
				}
				return nil
			})
		})
	})
	return files, err
}

// unchanged reports whether the workbench's file e already holds local's bytes and
// executable flag, and local's size: the listing's size and flag first, then the SHA-256
// of local against the file's Cairn-Digest (one HEAD).
func unchanged(ctx context.Context, c *Client, agent, wb, local string, e Entry) (bool, int64, error) {
	fi, err := os.Stat(local)
	if err != nil {
		return false, 0, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != e.SizeBytes || (fi.Mode()&0o100 != 0) != e.Executable {
		return false, fi.Size(), nil
	}
	var info *FileInfo
	if err := retryIdempotent(ctx, func() error {
		info, err = c.Stat(ctx, agent, wb, e.FullPath())
		return err
	}); err != nil {
		if ErrorCode(err) == "NotFound" {
			return false, fi.Size(), nil // deleted since the listing: upload it
		}
		return false, 0, err
	}
	if info.Size != fi.Size() || info.Executable != (fi.Mode()&0o100 != 0) {
		return false, fi.Size(), nil
	}
	f, err := os.Open(local)
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, 0, err
	}
	return info.Digest == "sha256:"+hex.EncodeToString(h.Sum(nil)), fi.Size(), nil
}

// importRetry bounds how Import sends one request again: up to 6 sends within 2 minutes,
// waiting 200 ms doubling to 5 s (with jitter), or the server's Retry-After. A variable so
// that tests can shorten the waits.
var importRetry = RetryPolicy{MaxAttempts: 6, MaxElapsed: 2 * time.Minute, BaseDelay: 200 * time.Millisecond, MaxDelay: 5 * time.Second}

// retryIdempotent runs send, a request that means the same sent twice, again while it
// fails transiently (transient) and importRetry allows, and returns its last error.
func retryIdempotent(ctx context.Context, send func() error) error {
	p := importRetry
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := send()
		if err == nil || attempt >= p.MaxAttempts || !transient(ctx, err) {
			return err
		}
		wait := p.backoff(attempt)
		var e *Error
		if errors.As(err, &e) && e.RetryAfter > 0 {
			wait = e.RetryAfter
		}
		if time.Since(start)+wait > p.MaxElapsed {
			return err
		}
		if pause.For(ctx, wait) != nil {
			return err
		}
	}
}

// transient reports whether a request that failed with err may succeed if sent again:
// the server answered a retryable error, or the exchange itself failed (a refused, reset
// or closed connection, an answer cut off: a *url.Error or an unexpected EOF), unless ctx
// ended it or it is a listing that kept meeting changes of the workbench
// (ErrWorkbenchKeptChanging: its restarts are spent).
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, ErrWorkbenchKeptChanging) {
		return false // a listing that already spent its own bound of restarts
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	var ue *url.Error
	return errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// randomID is 128 random bits in hex: the run part of Import's Idempotency-Keys.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// maxIdempotencyKeyBytes is the longest Idempotency-Key the server accepts (1..255
// printable ASCII, docs/workbench.md).
const maxIdempotencyKeyBytes = 255

// printableASCII reports whether s is only printable ASCII (0x20..0x7e).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// checkRemoteName applies the jail rules of a workbench path that a local file name could
// break (docs/workbench.md#common-rules); the server checks the rest.
func checkRemoteName(p string) error {
	switch {
	case len(p) > maxPathBytes:
		return fmt.Errorf("path is longer than %d bytes: %w", maxPathBytes, ErrUnsafePath)
	case strings.Count(p, "/")+1 > maxPathComponents:
		return fmt.Errorf("path has more than %d components: %w", maxPathComponents, ErrUnsafePath)
	case strings.ContainsAny(p, "\\\x00"):
		return fmt.Errorf("name contains a backslash or NUL: %w", ErrUnsafePath)
	case !utf8.ValidString(p):
		return fmt.Errorf("name is not valid UTF-8: %w", ErrUnsafePath)
	}
	return nil
}

// Export downloads the files of a workbench (or one section of it) into opts.Dir,
// recreating the directory tree (directories 0755; files 0755 if executable, else 0644).
// Each file is written to a temporary file in its destination directory and renamed into
// place, so a file appears whole or not at all, and its bytes are checked against the
// server's Cairn-Digest. The remote tree is walked whole first (Walk lists a directory
// again from its first page when the workbench changed while it was paged), then files are fetched:
// nothing is written before the walk succeeded, and an error means the export is not
// complete. With opts.AtSnapshot the walk and every file read are at that snapshot, so
// the export is one consistent image; a live export is one only if nothing was written
// meanwhile. With opts.Fallback, a live export whose walk kept meeting writes
// (ErrWorkbenchKeptChanging) is done at a snapshot taken for it (FallBackToSnapshot).
//
// Errors: a remote path with an empty, ".", ".." or backslash component (one that could
// escape Dir) wraps ErrUnsafePath and stops the export before any file is written; the
// first download or write failure stops the export and is returned with the stats of what
// completed; a digest mismatch is an error naming the file.
func Export(ctx context.Context, c *Client, opts ExportOptions) (ExportStats, error) {
	start := time.Now()
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	root, err := os.OpenRoot(opts.Dir)
	if err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	defer root.Close()

	var stats ExportStats
	err = c.FallBackToSnapshot(ctx, opts.Agent, opts.Workbench, opts.AtSnapshot, opts.Fallback, func(at SnapshotRef) error {
		var rerr error
		stats, rerr = exportAt(ctx, c, opts, root, at)
		return rerr
	})
	stats.Duration = time.Since(start)
	return stats, err
}

// exportAt is Export at at (the zero SnapshotRef: live state) into root: the walk, then
// the downloads. It writes nothing when the walk fails.
func exportAt(ctx context.Context, c *Client, opts ExportOptions, root *os.Root, at SnapshotRef) (ExportStats, error) {
	prefix := ""
	if opts.Section != "" {
		prefix = opts.Section + "/"
	}
	type item struct{ remote, local string }
	var (
		items      []item
		dirs       []string
		totalBytes int64
	)
	visit := func(e Entry) error {
		full := e.FullPath()
		rel, ok := strings.CutPrefix(full, prefix)
		if !ok {
			return fmt.Errorf("remote path %q is outside %q: %w", full, opts.Section, ErrUnsafePath)
		}
		if err := checkLocalRel(rel); err != nil {
			return fmt.Errorf("remote path %q: %w", full, err)
		}
		if e.IsDir() {
			dirs = append(dirs, filepath.FromSlash(rel))
			return nil
		}
		items = append(items, item{remote: full, local: rel})
		totalBytes += e.SizeBytes
		return nil
	}
	// Walk lists each directory whole, again from its first page when the workbench
	// changed while it was paged; nothing is written before it is done.
	if err := c.WalkAt(ctx, opts.Agent, opts.Workbench, opts.Section, at, visit); err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	for _, d := range dirs {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return ExportStats{}, fmt.Errorf("export: %w", err)
		}
	}
	if opts.Start != nil {
		opts.Start(int64(len(items)), totalBytes)
	}

	prog := &progress{fn: opts.Progress}
	err := forEach(ctx, opts.Concurrency, items, func(ctx context.Context, it item) error {
		n, err := downloadFile(ctx, c, opts.Agent, opts.Workbench, it.remote, at, root, it.local, prog)
		if err != nil {
			return fmt.Errorf("export %s: %w", it.remote, err)
		}
		prog.done(n)
		return nil
	})
	files, bytes, _ := prog.completed()
	return ExportStats{Files: files, Bytes: bytes}, err
}

// checkLocalRel verifies that rel (slash-separated) names a path inside the export
// directory: relative, and every component a plain name.
func checkLocalRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return fmt.Errorf("empty or absolute: %w", ErrUnsafePath)
	}
	for _, comp := range strings.Split(rel, "/") {
		if comp == "" || comp == "." || comp == ".." || strings.ContainsAny(comp, "\\\x00") {
			return fmt.Errorf("component %q: %w", comp, ErrUnsafePath)
		}
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return fmt.Errorf("not a local path: %w", ErrUnsafePath)
	}
	return nil
}

// downloadFile fetches remote, as it is at at (the zero SnapshotRef: live), into rel
// under root (temp file + rename) and returns the number of bytes written.
func downloadFile(ctx context.Context, c *Client, agent, wb, remote string, at SnapshotRef, root *os.Root, rel string, prog *progress) (n int64, err error) {
	body, info, err := c.GetFile(ctx, agent, wb, remote, GetOptions{AtSnapshot: at})
	if err != nil {
		return 0, err
	}
	defer body.Close()

	dir, base := path.Split(rel)
	if dir != "" {
		if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return 0, err
		}
	}
	tmp, f, err := createTemp(root, dir, base)
	if err != nil {
		return 0, err
	}
	defer func() {
		if f != nil {
			_ = f.Close()
		}
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()

	h := sha256.New()
	n, err = io.Copy(io.MultiWriter(f, h), &countingReader{r: body, add: prog.sent})
	if err != nil {
		return n, err
	}
	if d, ok := strings.CutPrefix(info.Digest, "sha256:"); ok && d != hex.EncodeToString(h.Sum(nil)) {
		return n, fmt.Errorf("digest mismatch: server says %s, received sha256:%x", info.Digest, h.Sum(nil))
	}
	mode := os.FileMode(0o644)
	if info.Executable {
		mode = 0o755
	}
	if err := f.Chmod(mode); err != nil {
		return n, err
	}
	err = f.Close()
	f = nil
	if err != nil {
		return n, err
	}
	if err := root.Rename(tmp, filepath.FromSlash(rel)); err != nil {
		return n, err
	}
	return n, nil
}

// createTemp creates a new hidden temporary file next to dir/base under root and returns
// its root-relative name.
func createTemp(root *os.Root, dir, base string) (string, *os.File, error) {
	for range 10 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := filepath.FromSlash(dir + "." + base + ".cairn-tmp-" + hex.EncodeToString(b[:]))
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, fmt.Errorf("creating a temporary file for %s: too many collisions", base)
}

// forEach runs fn over items with at most n in flight (DefaultConcurrency when n < 1).
// The first error cancels the context the others see and is returned once all stopped.
func forEach[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	if n < 1 {
		n = DefaultConcurrency
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for _, it := range items {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, it) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// progress aggregates transfer progress from concurrent workers and reports it to fn,
// one call at a time.
type progress struct {
	mu        sync.Mutex
	fn        func(files, bytes int64)
	files     int64 // files completed
	skipped   int64 // files found unchanged (reported to fn as completed)
	sentBytes int64 // bytes moved (or skipped) so far, including files still in flight
	doneBytes int64 // bytes of completed files
}

// sent records n more bytes moved (negative: an attempt that failed takes its bytes back).
func (p *progress) sent(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sentBytes += n
	if p.fn != nil {
		p.fn(p.files+p.skipped, p.sentBytes)
	}
}

// done records one completed file of size bytes.
func (p *progress) done(size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files++
	p.doneBytes += size
	if p.fn != nil {
		p.fn(p.files+p.skipped, p.sentBytes)
	}
}

// skip records one file of size bytes that needed no transfer.
func (p *progress) skip(size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skipped++
	p.sentBytes += size
	if p.fn != nil {
		p.fn(p.files+p.skipped, p.sentBytes)
	}
}

// completed returns the files completed and their bytes, and the files skipped.
func (p *progress) completed() (files, bytes, skipped int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.files, p.doneBytes, p.skipped
}

// countingReader reports every successful read to add.
type countingReader struct {
	r   io.Reader
	add func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}
