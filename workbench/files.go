package workbench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/cache"
	"github.com/cairnstore/cairn/internal/pause"
	"github.com/cairnstore/cairn/meta"
)

// maxAppendAttempts bounds how often an append without a caller condition retries after
// losing a generation race (docs/workbench.md: append "retries conflicts itself").
const maxAppendAttempts = 32

// backoff sleeps a jittered, growing delay before retry attempt+1 (at most ~50 ms).
func backoff(ctx context.Context, attempt int) error {
	return pause.For(ctx, time.Duration(rand.Int64N(int64(min(attempt, 10))*int64(5*time.Millisecond)))+time.Millisecond)
}

// pathLocks is a striped lock over (agent, workbench, path).
type pathLocks [256]sync.Mutex

func (p *pathLocks) lock(agent, id, path string) (unlock func()) {
	h := fnv.New32a()
	h.Write([]byte(agent))
	h.Write([]byte{0})
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(path))
	m := &p[h.Sum32()%uint32(len(p))]
	m.Lock()
	return m.Unlock
}

// AppendRequest appends a body to a file, creating it when missing.
type AppendRequest struct {
	Agent, Workbench, Path string
	Body                   io.Reader
	// SizeHint > 0 is the body's length in bytes when known (REST: Content-Length); it
	// sizes buffers only.
	SizeHint int64
	// ContentType and Executable apply when the append creates the file.
	ContentType string
	Executable  bool
	// IfGeneration, when non-zero, makes the append conditional (REST If-Match): a
	// mismatch is Conflict, not retryable (PreconditionFailed), and no retry happens.
	IfGeneration    uint64
	CreateWorkbench bool
	RequestID       string
}

// AppendResult describes a file after an append.
type AppendResult struct {
	FileResult
	AppendedBytes int64
	// AppendDigest is the SHA-256 of the appended bytes alone.
	AppendDigest meta.Digest
}

func conflict(current, expected uint64) *Error {
	e := newError(CodeConflict, "the file changed: generation %d, expected %d", current, expected)
	e.Retryable = true
	if current != 0 {
		e.Details["current_generation"] = current
	}
	return e
}

// missingForGeneration answers a write conditioned on a generation (REST If-Match, edit,
// put_file replace) of a file that does not exist: NotFound, not retryable, as a condition
// of * or a conditional delete of a missing file is. Generations are never reused, so no
// retry of the same condition can pass (RFC 9110 §13.1.1: If-Match on a missing resource
// fails; REST answers 412).
func missingForGeneration(expected uint64) *Error {
	e := newError(CodeNotFound, "the file does not exist (expected generation %d)", expected)
	e.Details["expected_generation"] = expected
	return e
}

// isMissingForGeneration reports the metadata core's answer to a generation condition on
// a missing file: Conflict without a current generation (meta Put and Append; a changed
// file's Conflict always carries its current generation).
func isMissingForGeneration(e *Error) bool {
	_, has := e.Details["current_generation"]
	return e.Code == CodeConflict && !has
}

// FileInfo describes a file without its body.
type FileInfo struct {
	WorkbenchID  string
	Path         string
	Section      string
	RelativePath string
	Presentation string
	Size         int64
	Generation   uint64
	Digest       meta.Digest
	ContentType  string
	Executable   bool
	ModifiedAtMs int64
	// Producer wrote this revision (zero: unknown, data written before producers were
	// recorded).
	Producer meta.Producer
	// Fields are the revision's writer-attached fields (nil: none). Shared with the
	// state the file was read from: read-only.
	Fields map[string]meta.FieldValue
}

func (s *base) fileInfo(agent, id, path string, e *meta.Entry) FileInfo {
	sec, rel := splitSection(path)
	return FileInfo{WorkbenchID: id, Path: path, Section: sec, RelativePath: rel, Presentation: s.RootPath(agent) + "/" + id + "/" + path, // WorkbenchPath + "/" + path, in one string
		Size: e.Size, Generation: e.Generation, Digest: e.Digest, ContentType: e.ContentType, Executable: e.Executable, ModifiedAtMs: e.ModifiedAtMs,
		Producer: e.Producer, Fields: e.Fields}
}

// File is an opened file revision: its description and a way to stream its bytes. The
// revision is pinned: later writes to the path do not change what Reader returns.
type File struct {
	Info FileInfo
	// SnapshotID is the snapshot the file was read at (0: live state).
	SnapshotID uint64
	s          *base
	agent      string
	entry      *meta.Entry
}

// Open resolves the file at path (linearizable) for reading. NotFound when absent,
// NotArtifact when the path is a directory.
func (s *Reads) Open(ctx context.Context, agent, id, path string) (*File, error) {
	return s.OpenAt(ctx, agent, id, path, At{})
}

// OpenAt is Open at a snapshot (or live state for the zero At). SnapshotNotFound and
// SnapshotExpired as the selector requires.
func (s *Reads) OpenAt(ctx context.Context, agent, id, path string, at At) (*File, error) {
	if err := validateTarget(agent, id, path); err != nil {
		return nil, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, invalidArgument("path", "must not be empty")
	}
	view, ws, snap, err := s.base.resolve(ctx, agent, id, at)
	if err != nil {
		return nil, err
	}
	var snapID uint64
	if snap != nil {
		snapID = snap.ID
	}
	e, err := view.File(ws, path)
	if err != nil {
		return nil, AsError(err)
	}
	return &File{Info: s.base.fileInfo(agent, id, path, e), SnapshotID: snapID, s: s.base, agent: agent, entry: e}, nil
}

// Reader streams bytes [offset, offset+length) of the revision (length < 0: to the end).
// Every object-store segment read verifies its digest.
func (f *File) Reader(ctx context.Context, offset, length int64) (io.ReadCloser, error) {
	return f.s.openEntry(ctx, f.agent, f.entry, offset, length)
}

// ReadAll loads the whole body, refusing bodies above max bytes with PayloadTooLarge.
// The caller must hold a load slot (Service.admitLoad) when max is large.
func (f *File) ReadAll(ctx context.Context, max int64) ([]byte, error) {
	if f.Info.Size > max {
		return nil, tooLargeToLoad(f.Info.Size, max)
	}
	r, err := f.Reader(ctx, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readExact(r, f.Info.Size)
}

// readExact reads the n bytes a file reader yields into a buffer of exactly n bytes (no
// growing in search of the end) and checks that the reader ends there.
func readExact(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			err = fmt.Errorf("the body ended after fewer than its %d bytes: %w", n, blob.ErrCorrupt)
		}
		return nil, AsError(err)
	}
	switch m, err := r.Read(make([]byte, 1)); {
	case m > 0:
		return nil, AsError(fmt.Errorf("the body holds more than its %d bytes: %w", n, blob.ErrCorrupt))
	case err != nil && err != io.EOF:
		return nil, AsError(err)
	}
	return buf, nil
}

// tooLargeToLoad answers a call that would load a body of size bytes, above max.
func tooLargeToLoad(size, max int64) *Error {
	e := payloadTooLarge(size, max)
	e.Message = fmt.Sprintf("the file is %d bytes, more than the %d bytes this call loads; read it with format=bytes or over REST", size, max)
	return e
}

func payloadTooLarge(actual, max int64) *Error {
	e := newError(CodePayloadTooLarge, "the payload is %d bytes, more than the %d-byte limit", actual, max)
	e.Details["actual_bytes"] = actual
	e.Details["max_bytes"] = max
	return e
}

// openEntry streams a range of an entry's body, segment by segment, each verified before
// any of its bytes is returned (integrity.go).
func (s *base) openEntry(ctx context.Context, agent string, e *meta.Entry, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 || offset > e.Size {
		return nil, invalidArgument("offset", "%d is outside the body (size %d)", offset, e.Size)
	}
	end := e.Size
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	return &entryReader{ctx: ctx, s: s, agent: agent, digest: e.Digest, single: len(e.Segments) == 1,
		segs: e.Segments, pos: 0, off: offset, end: end}, nil
}

// entryReader yields a range of a body. It holds the verified bytes of at most one
// segment's part of the range (cur, ≤ blob.ChunkMaxBytes) plus at most one read-ahead
// segment; a failure is sticky.
type entryReader struct {
	ctx   context.Context
	s     *base
	agent string
	// digest is the whole body's; a body of a single segment must have the same.
	digest   meta.Digest
	single   bool
	segs     []meta.Segment
	pos      int64  // body offset of segs[0]
	off, end int64  // next body byte to return, end of range
	cur      []byte // verified bytes at off not yet returned
	free     func() // gives cur's buffer and read budget back; nil when none is held
	// file, when not nil, holds the current segment instead of cur: a verified cached
	// file (Config.SegmentCache) whose bytes [fileOff, fileOff+fileLeft) are the rest of
	// the segment's part of the range, served from the file (sendfile by WriteTo).
	file     *cache.File
	fileOff  int64
	fileLeft int64
	err      error
	// ahead fetches the next segment while the current one streams (docs/architecture.md#the-read-path);
	// nil when nothing is being fetched.
	ahead *prefetch
}

// prefetch is one segment being read ahead, whole and verified, into memory.
type prefetch struct {
	seg    int // index into the reader's segs at the time it started
	data   []byte
	free   func() // set with data: gives its buffer and read budget back
	err    *Error
	done   chan struct{}
	cancel context.CancelFunc
}

func (r *entryReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.cur) == 0 && r.file == nil {
		if r.off >= r.end {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = err
			r.Close()
			return 0, err
		}
	}
	if r.file != nil {
		n, err := r.file.ReadAt(p[:min(int64(len(p)), r.fileLeft)], r.fileOff)
		if err != nil {
			return n, r.fileFailed(err)
		}
		r.advanceFile(int64(n))
		return n, nil
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	r.off += int64(n)
	if len(r.cur) == 0 {
		r.release()
	}
	return n, nil
}

// writeChunkBytes bounds one Write of WriteTo: a segment goes to the connection in writes
// this large (not io.Copy's 32 KiB), few enough system calls per MiB, while a writer that
// extends a deadline per Write (api/rest) still cuts off a client that stops reading.
const writeChunkBytes = 1 << 20

// WriteTo writes the rest of the range to w straight from the verified segment buffers,
// without a copy buffer in between; io.Copy uses it. A read failure is sticky as in Read;
// a failure of w is returned as it is.
func (r *entryReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if r.err != nil {
			return total, r.err
		}
		if len(r.cur) == 0 && r.file == nil {
			if r.off >= r.end {
				return total, nil
			}
			if err := r.next(); err != nil {
				r.err = err
				r.Close()
				return total, err
			}
		}
		if r.file != nil {
			// Straight from the cached file to w: sendfile when w reaches a TCP
			// connection (io.ReaderFrom all the way down).
			n, err := r.file.WriteRange(w, r.fileOff, min(r.fileLeft, writeChunkBytes))
			r.advanceFile(n)
			total += n
			if err != nil {
				return total, r.fileFailed(err)
			}
			continue
		}
		chunk := r.cur[:min(len(r.cur), writeChunkBytes)]
		n, err := w.Write(chunk)
		r.cur = r.cur[n:]
		r.off += int64(n)
		total += int64(n)
		if len(r.cur) == 0 {
			r.release()
		}
		if err == nil && n < len(chunk) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, err
		}
	}
}

// next loads the verified bytes of the segment holding off, up to the range's end.
func (r *entryReader) next() *Error {
	for len(r.segs) > 0 && r.pos+r.segs[0].Size <= r.off {
		r.pos += r.segs[0].Size
		r.segs = r.segs[1:]
		if r.ahead != nil {
			r.ahead.seg--
		}
	}
	if len(r.segs) == 0 {
		return r.s.corrupted(r.agent, r.digest, corruptInline, errors.New("the segment list is shorter than the body"))
	}
	sg := r.segs[0]
	if r.single && sg.Digest != r.digest {
		source := corruptObjectStore
		if sg.IsInline() {
			source = corruptInline
		}
		return r.s.corrupted(r.agent, sg.Digest, source, fmt.Errorf("the body's only segment has another digest than the body (%s)", DigestURI(r.digest)))
	}
	from := r.off - r.pos
	n := min(sg.Size-from, r.end-r.off)
	if a := r.ahead; a != nil && a.seg == 0 && from == 0 && n == sg.Size {
		r.ahead = nil
		<-a.done
		a.cancel()
		r.s.prefetches.release()
		if a.err != nil {
			return a.err
		}
		r.cur, r.free = a.data, a.free
	} else {
		r.dropAhead()
		if f := r.s.cachedFile(r.ctx, r.agent, sg); f != nil {
			r.file, r.fileOff, r.fileLeft = f, from, n
			r.readAhead()
			return nil
		}
		data, free, err := r.s.loadSegment(r.ctx, r.agent, sg, from, n)
		if err != nil {
			return err
		}
		r.cur, r.free = data, free
	}
	r.readAhead()
	return nil
}

// advanceFile records n bytes of the cached file served.
func (r *entryReader) advanceFile(n int64) {
	r.fileOff += n
	r.fileLeft -= n
	r.off += n
	if r.fileLeft == 0 {
		r.release()
	}
}

// fileFailed makes a failure to serve the cached file (a read error of the local disk,
// or a failed write to the caller) sticky, as every failure of the reader is.
func (r *entryReader) fileFailed(err error) error {
	r.err = err
	r.Close()
	return err
}

// release gives the current segment's buffer and read budget back, or closes its cached
// file.
func (r *entryReader) release() {
	if r.free != nil {
		r.free()
	}
	r.free, r.cur = nil, nil
	if r.file != nil {
		r.file.Close()
		r.file, r.fileLeft = nil, 0
	}
}

// readAhead starts fetching the segment after the current one when it lies wholly inside
// the range, lives in the object store and not in the segment cache (whose file next
// serves without memory), and a node-wide prefetch slot and the read budget
// for it are free without waiting (memory stays bounded: Config.MaxConcurrentPrefetches
// segments of at most blob.ChunkMaxBytes, within Config.MaxReadBufferBytes).
func (r *entryReader) readAhead() {
	if r.ahead != nil || len(r.segs) < 2 {
		return
	}
	next := r.segs[1]
	if next.IsInline() || r.pos+r.segs[0].Size+next.Size > r.end || r.s.isCached(r.ctx, r.agent, next) ||
		!r.s.prefetches.tryAcquire() {
		return
	}
	w := r.s.readWeight(next.Size)
	if !r.s.readBudget.TryAcquire(w) {
		r.s.prefetches.release()
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	a := &prefetch{seg: 1, done: make(chan struct{}), cancel: cancel}
	r.ahead = a
	go func() {
		defer close(a.done)
		a.data, a.free, a.err = r.s.loadHeld(ctx, r.agent, next, 0, next.Size, w)
	}()
}

// dropAhead abandons a read-ahead that will not be used.
func (r *entryReader) dropAhead() {
	if a := r.ahead; a != nil {
		r.ahead = nil
		a.cancel()
		<-a.done
		if a.free != nil {
			a.free()
		}
		r.s.prefetches.release()
	}
}

func (r *entryReader) Close() error {
	r.dropAhead()
	r.release()
	r.segs = nil
	r.off = r.end
	return nil
}

// slots is a non-blocking counting semaphore.
type slots chan struct{}

func (s slots) tryAcquire() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s slots) release() { <-s }

// StatResult describes a path: a file, a directory (sections included) or the workbench.
type StatResult struct {
	Kind string // "file", "directory" or "workbench"
	File FileInfo
	Dir  meta.DirInfo
	// Path is the full path inside the workbench ("" for the workbench).
	Path string
	// SealedBy is the identity of the workbench's head commit when it seals what was
	// described: the workbench itself once committed, or a file whose revision is the one
	// the head commit holds. "" otherwise.
	SealedBy string
	// Producer wrote what was described: the file's revision (File.Producer), or the
	// workbench's current revision at live state. Zero for directories, for a workbench
	// read at a snapshot, and for data written before producers were recorded.
	Producer meta.Producer
}

// Stat describes path ("" = the workbench itself). Sections always exist.
func (s *Reads) Stat(ctx context.Context, agent, id, path string) (StatResult, error) {
	return s.StatAt(ctx, agent, id, path, At{})
}

// StatAt is Stat at a snapshot (or live state for the zero At).
func (s *Reads) StatAt(ctx context.Context, agent, id, path string, at At) (StatResult, error) {
	if err := validateTarget(agent, id, path); err != nil {
		return StatResult{}, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return StatResult{}, err
	}
	view, ws, _, err := s.base.resolve(ctx, agent, id, at)
	if err != nil {
		return StatResult{}, err
	}
	st, err := view.Stat(ws, path)
	if err != nil {
		if meta.CodeOf(err) == meta.CodeNotFound && isSection(path) {
			return StatResult{Kind: "directory", Path: path}, nil
		}
		return StatResult{}, AsError(err)
	}
	if path == "" {
		info := st.Dir
		info.Children = int64(len(s.topNames(view, ws)))
		return StatResult{Kind: "workbench", Dir: info, SealedBy: ws.HeadIdentity, Producer: ws.Producer}, nil
	}
	if st.Kind == meta.KindFile {
		return StatResult{Kind: "file", File: s.base.fileInfo(agent, id, path, st.Entry), Path: path,
			SealedBy: sealedBy(view, ws, path, st.Entry), Producer: st.Entry.Producer}, nil
	}
	return StatResult{Kind: "directory", Dir: st.Dir, Path: path}, nil
}

// sealedBy is the identity of ws's head commit if it holds e (the same generation of path
// at the commit's version), else "".
func sealedBy(view *meta.View, ws *meta.Workspace, path string, e *meta.Entry) string {
	c, ok := view.Lifecycle().Head(ws)
	if !ok || e.Generation > c.Version {
		return ""
	}
	cv, cws, err := view.Lifecycle().VersionView(ws, c.Version)
	if err != nil {
		return ""
	}
	if at, err := cv.File(cws, path); err == nil && at.Generation == e.Generation {
		return c.Identity
	}
	return ""
}

func isSection(p string) bool {
	for _, s := range Sections {
		if s == p {
			return true
		}
	}
	return false
}

// topNames returns every name at the workbench top: the five sections and whatever else
// was written there, sorted.
func (s *Reads) topNames(view *meta.View, ws *meta.Workspace) []string {
	names := map[string]bool{}
	for _, sec := range Sections {
		names[sec] = true
	}
	after := ""
	for {
		ents, more, err := view.List(ws, "", after, 1000)
		if err != nil {
			break
		}
		for _, e := range ents {
			names[e.Name] = true
		}
		if !more || len(ents) == 0 {
			break
		}
		after = ents[len(ents)-1].Name
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// OpenGeneration opens the retained version of path whose generation is gen, at live
// state (linearizable): a superseded body that history retention or a hold keeps, or the
// live one. NotFound naming field "generation" when no retained body has that generation
// (pruned, never one, or a delete's); NotFound for a missing workbench; InvalidArguments
// for a bad path or generation 0.
func (s *Reads) OpenGeneration(ctx context.Context, agent, id, path string, gen uint64) (*File, error) {
	_, _, fv, err := s.atGeneration(ctx, agent, id, path, gen)
	if err != nil {
		return nil, err
	}
	return &File{Info: s.base.fileInfo(agent, id, path, fv.Entry), s: s.base, agent: agent, entry: fv.Entry}, nil
}

// StatGeneration is Stat of the retained version of path whose generation is gen (errors
// as OpenGeneration).
func (s *Reads) StatGeneration(ctx context.Context, agent, id, path string, gen uint64) (StatResult, error) {
	view, ws, fv, err := s.atGeneration(ctx, agent, id, path, gen)
	if err != nil {
		return StatResult{}, err
	}
	return StatResult{Kind: "file", File: s.base.fileInfo(agent, id, path, fv.Entry), Path: path,
		SealedBy: sealedBy(view, ws, path, fv.Entry), Producer: fv.Entry.Producer}, nil
}

func (s *Reads) atGeneration(ctx context.Context, agent, id, path string, gen uint64) (*meta.View, *meta.Workspace, meta.FileVersion, error) {
	if err := validateTarget(agent, id, path); err != nil {
		return nil, nil, meta.FileVersion{}, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, nil, meta.FileVersion{}, err
	}
	if path == "" {
		return nil, nil, meta.FileVersion{}, invalidArgument("path", "must not be empty")
	}
	if gen == 0 {
		return nil, nil, meta.FileVersion{}, invalidArgument("generation", "must be a generation (an integer ≥ 1)")
	}
	view, ws, err := s.base.workspaceView(ctx, agent, id)
	if err != nil {
		return nil, nil, meta.FileVersion{}, err
	}
	fv, err := view.History().FileAt(ws, path, gen)
	if err != nil {
		return nil, nil, meta.FileVersion{}, AsError(err)
	}
	return view, ws, fv, nil
}
