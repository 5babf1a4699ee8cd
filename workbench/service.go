package workbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"
	"mime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// Core is what the adapter needs of the metadata core of one shard. *shard.Shard and the
// shard host's cores (shard/host) implement it. Its errors that are not the FSM's
// (*meta.Error) match the core errors (ErrCoreUnavailable, ErrOutcomeUnknown,
// ErrCoreStorageFull) with errors.Is.
type Core interface {
	LeaderCore
	// ReadViewAt returns a view of the serving replica's applied state once it holds shard
	// version `version` (0: whatever it applied), without a leader round trip. It is not
	// linearizable: use it only for answers that cannot depend on lag, such as data at a
	// live snapshot's read version (docs/architecture.md#the-read-path; at.go says when the adapter uses it).
	// Its errors match ErrCoreUnavailable when the replica is behind or gone.
	ReadViewAt(ctx context.Context, version uint64) (*meta.View, error)
	// WaitApplied returns once the serving replica has applied shard version `version`,
	// bounded only by ctx (whose error it then returns): what the change feed waits on
	// between reads (feed.go). Its errors match ErrCoreUnavailable when the replica is
	// gone.
	WaitApplied(ctx context.Context, version uint64) error
}

// LeaderCore is the part of a Core the leader-only work needs: a replica that proposes
// and reads linearizably. It is an alias of an interface literal, the same as
// shard/worker's Core, so that the two are one type and ResumeRestores implements
// worker.Restorer without this package importing the workers.
type LeaderCore = interface {
	// Propose replicates a command and returns its applied result.
	Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error)
	// ReadView returns a linearizable view of the state.
	ReadView(ctx context.Context) (*meta.View, error)
}

// Cores finds the core that serves an agent root (a root lives on exactly one shard,
// docs/architecture.md#vocabulary). The embedded node has one core for every root (SingleCore).
type Cores interface {
	// For returns the core of agent's root; ctx is the request's (it bounds any lookup).
	// Its error, when no replica here can serve the root, matches ErrCoreUnavailable
	// (shard.ErrNotLeader does), which maps to a retryable RoutingUnavailable. It decides
	// nothing about who may use the root: the Service does (access.go).
	For(ctx context.Context, agent string) (Core, error)
}

// HiddenCores is implemented by a Cores whose roots are not all served alike (a cluster
// node: a root's shard may be led elsewhere, or have no leader right now): ForHidden
// returns the core of agent's root for a caller that may not use it, one that serves it
// exactly as a root that does not exist, whatever the real root's shard (access.go). A
// Cores without it serves a hidden root through For, as every other.
type HiddenCores interface {
	ForHidden(ctx context.Context, agent string) (Core, error)
}

// SingleCore serves every root from one core.
type SingleCore struct{ Core Core }

// For returns the one core.
func (c SingleCore) For(context.Context, string) (Core, error) { return c.Core, nil }

// Sections are the five virtual sections of every workbench, in contract order.
var Sections = []string{"input", "scripts", "outputs", "logs", "metadata"}

// Reserved paths, written only by commit and restore (docs/workbench.md#common-rules).
var reservedPaths = map[string]bool{"metadata/run_manifest.json": true, "metadata/restore_manifest.json": true}

// Service is the Workbench domain assembled from its parts over one Cores and one
// blob store (doc.go lists what each part owns): callers use the parts
// (svc.Writes.Write, svc.Reads.Open, svc.Lifecycle.Commit, svc.Review.Propose) or the
// tool contract over them (svc.Tools.Read). Its own methods are the node-wide ones: the
// configuration, the memory budget, per-principal request limits and metrics. It is
// safe for concurrent use.
type Service struct {
	// base is the state the parts share; each part holds the same one.
	base *base
	// Writes stores files: put, append, delete (writes.go).
	Writes *Writes
	// Reads answers what is stored: files, listings, grep, queries, find (reads.go).
	Reads *Reads
	// Lifecycle makes, keeps and ends workbenches, snapshots, commits and restores
	// (lifecycle.go).
	Lifecycle *Lifecycle
	// Review holds proposals and decisions, history, diffs and the change feed
	// (review.go).
	Review *Review
	// Attempts rewinds a workbench in place (rewind.go).
	Attempts *Attempts
	// Tools is the Workbench tool contract over the parts (tools_contract.go).
	Tools *Tools
}

// base is the state every part of the Service shares: the cores, the blob store, the
// configuration, the node's budgets and caches; its methods are the helpers more than one
// part needs (reading a view, proposing a command, ingesting and verifying bodies,
// admission, access). Parts hold it as a named field, so its methods are never a part's.
type base struct {
	cores   Cores
	blobs   blob.Store
	cfg     Config
	cursors cursorCodec
	roots   sync.Map // agent → root uid (immutable once created)
	// ingests and loads bound the node's memory (Config.MaxConcurrentIngests and
	// MaxConcurrentLoads).
	ingests *ingestBudget
	loads   chan struct{}
	// prefetches bounds segment read-ahead (Config.MaxConcurrentPrefetches).
	prefetches slots
	// readBudget holds Config.MaxReadBufferBytes: the verified segment bytes reads hold.
	readBudget *semaphore.Weighted
	// queries is the node's query budget in bytes (Config.QueryBudgetBytes, admission.go).
	queries *semaphore.Weighted
	query   queryState
	// now is the clock uploads are timed by (Config.MaxUploadDuration); tests replace it.
	now func() time.Time
	gc  gcState
	// corrupt counts reads of damaged stored bytes (integrity.go); nil until
	// Instrument.
	corrupt atomic.Pointer[prometheus.CounterVec]
	log     *slog.Logger
	// limits holds the per-principal caps (Config.Limits).
	limits *principalLimits
	// chunkFormat is how ingest cuts bodies of several segments: blob.CurrentChunkFormat
	// (tests of older data set another).
	chunkFormat blob.ChunkFormat
}

// admit takes a slot of sem, waiting while all are taken; release gives it back.
func admit(ctx context.Context, sem chan struct{}) (release func(), err error) {
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// New returns a Service. cfg.CursorKey must be set.
func New(core Core, blobs blob.Store, cfg Config) (*Service, error) {
	return NewWithCores(SingleCore{core}, blobs, cfg)
}

// NewWithCores returns a Service whose roots live on several cores (a node hosting many
// shards). cfg.CursorKey must be set.
func NewWithCores(cores Cores, blobs blob.Store, cfg Config) (*Service, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &base{cores: cores, blobs: blobs, cfg: cfg, cursors: cursorCodec{key: cfg.CursorKey},
		ingests: newIngestBudget(cfg), loads: make(chan struct{}, cfg.MaxConcurrentLoads),
		prefetches: make(slots, cfg.MaxConcurrentPrefetches), readBudget: semaphore.NewWeighted(cfg.MaxReadBufferBytes),
		log: cfg.Logger, queries: newQueryBudget(cfg.QueryBudgetBytes), now: time.Now, chunkFormat: blob.CurrentChunkFormat}
	s.limits = newPrincipalLimits(cfg.Limits, func() time.Time { return s.now() })
	writes := &Writes{base: s}
	reads := &Reads{base: s}
	life := &Lifecycle{base: s, cfg: cfg.lifecycle()}
	review := &Review{base: s, cfg: cfg.review()}
	return &Service{base: s, Review: review, Attempts: &Attempts{base: s, review: review, life: life}, Lifecycle: life, Reads: reads, Writes: writes, Tools: &Tools{base: s, review: review, life: life, reads: reads, writes: writes}}, nil
}

// Instrument registers the Service's metrics on reg: the publishes that met the garbage
// collector (publish.go), the reads that found damaged stored bytes (integrity.go), the
// ingest budget of uploads (ingest_budget.go) and the memory budget (admission.go). Call
// it once, before the first request.
func (s *Service) Instrument(reg prometheus.Registerer) error {
	if err := s.base.gc.instrument(reg); err != nil {
		return err
	}
	if err := instrumentCorrupt(reg, &s.base.corrupt); err != nil {
		return err
	}
	if err := s.base.ingests.instrument(reg); err != nil {
		return err
	}
	return s.base.query.instrument(reg, s.base.cfg.QueryBudgetBytes)
}

// Config returns the adapter's effective configuration.
func (s *Service) Config() Config { return s.base.cfg }

// WorkbenchPath is the presentation path of a workbench: "{root}/{id}".
func (s *base) WorkbenchPath(agent, id string) string {
	return s.RootPath(agent) + "/" + id
}

// RootPath is the presentation path of an agent root ("/agents/{agent}/wb" by default).
func (s *base) RootPath(agent string) string {
	return strings.ReplaceAll(s.cfg.PresentationRoot, "{agent}", agent)
}

// scopePath is the presentation path of a tool's scope: the agent root without a
// workbench, else the workbench, or the path full inside it.
func (s *base) scopePath(agent, id, full string) string {
	switch {
	case id == "":
		return s.RootPath(agent)
	case full == "":
		return s.WorkbenchPath(agent, id)
	}
	return s.WorkbenchPath(agent, id) + "/" + full
}

// splitSection splits a full path inside a workbench into its section ("" when the first
// component is not one of the five) and the path relative to it.
func splitSection(full string) (section, rel string) {
	first, rest, _ := strings.Cut(full, "/")
	for _, s := range Sections {
		if s == first {
			return first, rest
		}
	}
	return "", full
}

func validateTarget(agent, id, path string) *Error {
	if err := meta.ValidateName("agent", agent); err != nil {
		return AsError(err)
	}
	if err := meta.ValidateName("id", id); err != nil {
		return AsError(err)
	}
	if path != "" {
		if err := meta.ValidatePath("path", path); err != nil {
			return AsError(err)
		}
	}
	return nil
}

// limitArg is a tool's optional limit argument: def when given is nil, else *given, which
// must be within 1..max (InvalidArguments naming "limit" otherwise).
func limitArg(given *int, def, max int) (int, *Error) {
	if given == nil {
		return def, nil
	}
	if *given < 1 || *given > max {
		return 0, invalidArgument("limit", "must be between 1 and %d", max)
	}
	return *given, nil
}

// pageLimit is a request's page size: def for 0, else limit, which must be within 1..max
// (InvalidArguments naming "limit" otherwise).
func pageLimit(limit, def, max int) (int, *Error) {
	if limit == 0 {
		return def, nil
	}
	return limitArg(&limit, def, max)
}

// rootUID returns the uid of agent's root, creating the root when it does not exist yet
// (blob keys need it before the first publish).
func (s *base) rootUID(ctx context.Context, agent string) (string, error) {
	if err := s.mayCreate(ctx, agent, ""); err != nil {
		return "", err // before the cache: a hidden root's blobs are never written
	}
	if v, ok := s.roots.Load(agent); ok {
		return v.(string), nil
	}
	view, err := s.readView(ctx, agent)
	if err != nil {
		return "", err
	}
	if r, ok := view.Root(agent); ok {
		s.roots.Store(agent, r.UID)
		return r.UID, nil
	}
	res, err := s.proposeRaw(ctx, meta.Header{}, meta.CreateRoot{Agent: agent})
	if err != nil {
		return "", err
	}
	if res.Err != nil {
		return "", res.Err
	}
	s.roots.Store(agent, res.RootUID)
	return res.RootUID, nil
}

// propose runs a command and folds a command-level failure into the error.
func (s *base) propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, *Error) {
	res, err := s.proposeRaw(ctx, h, b)
	if err != nil {
		return res, AsError(err)
	}
	if res.Err != nil {
		return res, AsError(res.Err)
	}
	return res, nil
}

// WriteRequest is a whole-body write.
type WriteRequest struct {
	Agent, Workbench string
	// Path is the full path inside the workbench (first component = section for section
	// files).
	Path string
	Body io.Reader
	// SizeHint > 0 is the body's length in bytes when the caller knows it (REST:
	// Content-Length). It sizes the ingest buffers exactly; a body of another length is
	// stored all the same.
	SizeHint    int64
	ContentType string
	Executable  bool
	Cond        meta.Condition
	// IfGeneration is the generation CondIfGeneration requires.
	IfGeneration uint64
	// CreateWorkbench creates a missing workbench (implicit create).
	CreateWorkbench bool
	// RequestID makes the write idempotent (REST Idempotency-Key).
	RequestID string
	// MaxWorkbenchFiles, when positive, caps the workbench's live files: a write that would
	// create a file in a workbench already holding this many is refused by the store
	// (meta.Put.MaxWorkbenchFiles: ResourceExhausted, details quota
	// meta.QuotaFilesPerWorkbench), in the command that writes, whichever node proposes
	// it. While a replica of the shard runs a release before meta.WorkbenchFilesVersion the
	// write goes through without the cap (Writes.Write). Not part of the request's identity
	// (an idempotency key's hash): it is the surface's configuration.
	MaxWorkbenchFiles int64
	// Fields are writer-attached metadata fields, indexed for search (names lower case;
	// meta.ValidateFields).
	Fields map[string]meta.FieldValue
	// AfterBody, when set, is called once the body ended, with the body's SHA-256, before
	// the write is proposed. It returns the fields known only then (a digest the body's
	// reader computed and checked), added to Fields (a name in both keeps Fields' value;
	// the union is checked by meta.ValidateFields), or an error that refuses the write:
	// Write returns it unchanged and publishes nothing. A caller that promised a SHA-256 of
	// the body checks it here instead of hashing the bytes a second time.
	AfterBody func(digest meta.Digest) (map[string]meta.FieldValue, error)
}

// FileResult describes a file after a write.
type FileResult struct {
	WorkbenchID  string
	Path         string // full path inside the workbench
	Section      string // "" when outside the five sections
	RelativePath string
	Presentation string // presentation path
	Size         int64
	Generation   uint64
	Digest       meta.Digest
	ContentType  string
	Executable   bool
	Created      bool
	Replayed     bool
	// Ordinal is the path's version number within its current life after the write
	// (meta.Result.Ordinal; OpenWOP host.workspace's version).
	Ordinal uint64
}

// DigestURI returns "sha256:<hex>" of the whole body.
func (r FileResult) DigestURI() string { return DigestURI(r.Digest) }

// DigestURI formats a digest as "sha256:<hex>".
func DigestURI(d meta.Digest) string {
	var b [len("sha256:") + 2*len(d)]byte
	copy(b[:], "sha256:")
	hex.Encode(b[len("sha256:"):], d[:])
	return string(b[:])
}

// ingested is a body cut into segments, uploaded where needed, and hashed.
type ingested struct {
	agent     string // the agent root the body belongs to
	segments  []meta.Segment
	size      int64
	digest    meta.Digest // of the whole body (resumed state included)
	hashState []byte
	// appendDigest is the SHA-256 of these bytes alone (append results report it).
	appendDigest meta.Digest
	// rootUID names the root the blobs went to; fence is the shard version of a view read
	// before the first upload (meta.Header.UploadFence); retained keeps a one-segment
	// body's bytes for an upload again if the garbage collector deletes them before the
	// publish (gc.go).
	rootUID  string
	fence    uint64
	retained map[meta.Digest]blob.Hashed
	// held is pooled segment memory (getSegBuf) that release gives back.
	held [][]byte
}

// release gives the body's pooled segment memory back. The caller calls it once the body
// is published or abandoned, and uses none of its bytes after; without it the memory is
// garbage collected.
func (b *ingested) release() {
	for _, p := range b.held {
		putSegBuf(&p)
	}
	b.held, b.retained = nil, nil
}

// segAlloc and freeSeg give the Splitter its segment memory from the segment buffer pools
// (integrity.go), which the read path shares.
func segAlloc(n int) []byte { return *getSegBuf(int64(n)) }

func freeSeg(p []byte) { putSegBuf(&p) }

// ingest reads r once: it cuts the bytes into segments (inline when the whole body is
// within the inline threshold), uploads non-inline segments (several at once), and hashes
// them. sizeHint > 0 is the body's expected length (it sizes buffers only). resume
// continues a body's hash (append); nil starts a new one.
//
// SHA-256 runs once per byte for a new body of one segment (its digest is the segment's
// key, docs/architecture.md#the-write-path), and twice for a body of several (the whole body, and each segment in
// its upload goroutine); an append hashes its bytes once more for the resumed whole-body
// digest. Each object-store segment's BLAKE3 (meta.Segment.Blake3, what reads verify) is
// taken in the same pass over the segment as its SHA-256 (blob.Hash); inline segments
// record none. The blob store hashes nothing again (blob.Hashed).
func (s *base) ingest(ctx context.Context, agent string, r io.Reader, sizeHint int64, resume hash.Hash) (*ingested, error) {
	out := &ingested{agent: agent}
	started := s.now()
	inMemory, isInMemory := r.(interface{ Len() int }) // bytes.Reader, strings.Reader, bytes.Buffer
	// Peek up to the inline threshold + 1 byte: a body that fits is stored inline.
	var peeked int64
	if s.cfg.InlineMaxBytes > 0 {
		hp := getHead(int(s.cfg.InlineMaxBytes) + 1)
		head := *hp
		n, complete, err := readHead(r, head)
		switch {
		case err != nil:
			headPool.Put(hp)
			return nil, readError(err)
		case !complete:
			// The body's reader (and a pump goroutine, ingest_gate.go) reads the head from
			// here on: it is left to the garbage collector, a body this large being
			// several times its size.
			r, peeked = io.MultiReader(bytes.NewReader(head[:n]), r), int64(n)
		default:
			data := bytes.Clone(head[:n]) // the record keeps it: no spare capacity
			headPool.Put(hp)
			d, err := out.finishInline(data, resume)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				out.segments = []meta.Segment{{Digest: d, Size: int64(n), Inline: data}}
			}
			out.size = int64(n)
			return out, nil
		}
	}
	if isInMemory {
		// Bytes already in memory (an MCP payload, an edit) never stall: one weight
		// throughout, by the bytes left (the reader's Len is exact).
		release, err := s.ingests.admit(ctx, peeked+int64(inMemory.Len()))
		if err != nil {
			return nil, AsError(err)
		}
		defer release()
	} else {
		// A network body holds its weight only while its bytes flow (ingest_gate.go).
		gb := newGatedBody(ctx, r, sizeHint, s.ingests)
		defer gb.close()
		if err := gb.wait(); err != nil {
			return nil, AsError(err)
		}
		r = gb
	}
	uid, err := s.rootUID(ctx, agent)
	if err != nil {
		return nil, AsError(err)
	}
	// Every blob deletion recorded up to this view happened before the uploads below.
	view, err := s.readView(ctx, agent)
	if err != nil {
		return nil, AsError(err)
	}
	out.rootUID, out.fence = uid, view.AppliedVersion()
	sp := blob.NewSplitter(r, sizeHint, s.chunkFormat, segAlloc)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.UploadConcurrency)
	// For a body of several segments: whole hashes the body (resumed), own the appended
	// bytes alone when resumed, and hashed[i] receives segment i's digests from its upload.
	var whole, own hash.Hash
	var hashed []*blob.Hashed
	for {
		seg, err := sp.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			g.Wait()
			return nil, readError(err)
		}
		if werr := s.checkUploadTime(started); werr != nil {
			g.Wait()
			return nil, werr
		}
		out.size += int64(len(seg))
		if sp.Single() {
			// The whole body: its segment key and body digest come from one hash.
			out.held = append(out.held, seg)
			hd, err := out.finishOne(seg, resume)
			if err != nil {
				return nil, err
			}
			out.segments = []meta.Segment{{Digest: meta.Digest(hd.Digest()), Size: int64(len(seg)), Blake3: meta.Blake3(hd.Blake3())}}
			out.retain(hd)
			g.Go(func() error {
				key := blob.Key{Root: uid, Digest: hd.Digest()}
				if _, err := s.blobs.Put(gctx, key, hd); err != nil {
					return err
				}
				s.cfg.SegmentCache.Put(key, hd.Bytes())
				return nil
			})
			continue
		}
		if whole == nil {
			if whole = resume; whole == nil {
				whole = sha256.New()
			} else {
				own = sha256.New()
			}
		}
		whole.Write(seg)
		if own != nil {
			own.Write(seg)
		}
		out.segments = append(out.segments, meta.Segment{Size: int64(len(seg)), Chunking: uint8(sp.Format())})
		hd := new(blob.Hashed)
		hashed = append(hashed, hd)
		g.Go(func() error {
			defer freeSeg(seg)
			*hd = blob.Hash(seg)
			key := blob.Key{Root: uid, Digest: hd.Digest()}
			if _, err := s.blobs.Put(gctx, key, *hd); err != nil {
				return err
			}
			s.cfg.SegmentCache.Put(key, seg)
			return nil
		})
		if gctx.Err() != nil {
			break
		}
	}
	if err := g.Wait(); err != nil {
		return nil, AsError(err)
	}
	if werr := s.checkUploadTime(started); werr != nil {
		return nil, werr
	}
	if whole == nil {
		if out.size == 0 {
			// An empty body: no segment.
			if _, err := out.finishInline(nil, resume); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for i, hd := range hashed {
		out.segments[i].Digest, out.segments[i].Blake3 = meta.Digest(hd.Digest()), meta.Blake3(hd.Blake3())
	}
	return out.finish(whole, own)
}

// checkUploadTime fails an ingest that has run longer than Config.MaxUploadDuration:
// the garbage collector may delete what it uploaded before it publishes (orphans older
// than the grace go), and a retry at the same speed would meet the same end, so it is
// answered at once and says why. Nothing is published; the blobs it stored are orphans.
func (s *base) checkUploadTime(started time.Time) *Error {
	took := s.now().Sub(started)
	if took <= s.cfg.MaxUploadDuration {
		return nil
	}
	e := newError(CodeResourceExhausted, "the upload took %s, longer than the %s one body may take (the max upload duration, kept below the garbage collector's grace of %s so that no uploaded data is collected before it is published); nothing was written: send the body faster, or in parts with append",
		took.Round(time.Millisecond), s.cfg.MaxUploadDuration, s.cfg.GCGrace)
	e.Details["max_upload_duration_ms"] = s.cfg.MaxUploadDuration.Milliseconds()
	e.Details["upload_ms"] = took.Milliseconds()
	return e
}

// finish sets the body's digests and hash state from whole (the body, resumed state
// included) and own (the new bytes alone; nil when they are the whole body).
func (b *ingested) finish(whole, own hash.Hash) (*ingested, error) {
	copy(b.digest[:], whole.Sum(nil))
	b.appendDigest = b.digest
	if own != nil {
		copy(b.appendDigest[:], own.Sum(nil))
	}
	st, err := whole.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, AsError(err)
	}
	b.hashState = append([]byte{hashStateFormat}, st...)
	return b, nil
}

// finishInline is finish for bytes kept inline in the metadata (or no bytes: an empty
// body). It hashes them by SHA-256 only, once for a new body and once more into resume for
// an append: no blob store holds them, so no read verifies them by a BLAKE3. It returns
// their own digest.
func (b *ingested) finishInline(data []byte, resume hash.Hash) (meta.Digest, error) {
	whole := resume
	if whole == nil {
		whole = sha256.New()
	}
	whole.Write(data)
	if _, err := b.finish(whole, nil); err != nil {
		return meta.Digest{}, err
	}
	if resume != nil {
		b.appendDigest = meta.Digest(blob.DigestOf(data))
	}
	return b.appendDigest, nil
}

// finishOne is finish for a body of one object-store segment, which it hashes: once for a
// new body (the SHA-256, also the segment's, with the BLAKE3 in the same pass), and once
// more into resume for an append. It returns the bytes with their own digests.
func (b *ingested) finishOne(data []byte, resume hash.Hash) (blob.Hashed, error) {
	if resume != nil {
		hd := blob.Hash(data)
		resume.Write(data)
		if _, err := b.finish(resume, nil); err != nil {
			return blob.Hashed{}, err
		}
		b.appendDigest = meta.Digest(hd.Digest())
		return hd, nil
	}
	hd, st, err := blob.HashState(data)
	if err != nil {
		return blob.Hashed{}, AsError(err)
	}
	b.digest = meta.Digest(hd.Digest())
	b.appendDigest = b.digest
	b.hashState = append([]byte{hashStateFormat}, st...)
	return hd, nil
}

// hashStateFormat prefixes a serialized SHA-256 state (docs/architecture.md#the-write-path).
const hashStateFormat = 1

// resumeHash restores the hash state stored with an entry; ok is false when the format is
// unknown or the state does not restore (the caller then rehashes the body once).
func resumeHash(e *meta.Entry) (hash.Hash, bool) {
	if len(e.HashState) < 2 || e.HashState[0] != hashStateFormat {
		return nil, false
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(e.HashState[1:]); err != nil {
		return nil, false
	}
	return h, true
}

// checkWritable enforces the write-side path rules beyond the jail rules: the rules of
// new names (meta.ValidateNewName: no control, bidirectional formatting or zero-width
// character, NFC only; details.rule names the one broken), the reserved manifest paths,
// the five sections (always directories, never files), and a section path that repeats
// its section's name (which the tool contract could never address). Every write that
// stores a file at a path it names (put, append, edit, a proposal) passes here; reads,
// deletes and restores do not, so names stored before these rules stay usable.
func checkWritable(full string) *Error {
	if err := meta.ValidateNewName("path", full); err != nil {
		return AsError(err)
	}
	if reservedPaths[full] {
		return invalidArgument("path", "%q is reserved: only commit and restore write it", full)
	}
	sec, rel := splitSection(full)
	if sec == "" {
		return nil
	}
	if rel == "" {
		return invalidArgument("path", "%q is a section, always a directory: write a file below it", sec)
	}
	if first, _, _ := strings.Cut(rel, "/"); first == sec {
		return invalidArgument("path", "must not repeat the section name %q as its first component below it", sec)
	}
	return nil
}

// MaxContentTypeBytes bounds a stored content type.
const MaxContentTypeBytes = 256

// normalizeContentType checks a content type ("" = application/octet-stream): a media type
// as RFC 9110 §8.3.1 defines it, at most MaxContentTypeBytes, no control characters (it is
// served back as a header).
func normalizeContentType(ct string) (string, *Error) {
	if ct == "" {
		return "application/octet-stream", nil
	}
	if err := CheckContentType("content_type", ct); err != nil {
		return "", err
	}
	return ct, nil
}

// CheckContentType is the rule a write applies to a non-empty content type: at most
// MaxContentTypeBytes of printable ASCII that parses as a media type. It is nil, or an
// InvalidArguments naming field (a surface's own name for it) and the rule.
func CheckContentType(field, ct string) *Error {
	if len(ct) > MaxContentTypeBytes {
		return invalidArgument(field, "must be at most %d bytes", MaxContentTypeBytes)
	}
	for i := 0; i < len(ct); i++ {
		if c := ct[i]; c < 0x20 && c != '\t' || c == 0x7f || c >= 0x80 {
			return invalidArgument(field, "must be printable ASCII")
		}
	}
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		return invalidArgument(field, "is not a media type (type/subtype, then any ; parameters), such as text/plain; charset=utf-8")
	}
	return nil
}

// headPool recycles the buffers ingest peeks a body's head into (the inline threshold and
// one byte: 4 KiB by default): an inline body's record keeps a copy of its bytes, never
// the buffer, so a small put allocates its body's size, not the threshold's. A body larger
// than the threshold keeps its buffer (its reader reads on from it).
var headPool sync.Pool

// getHead returns a pooled buffer of n bytes.
func getHead(n int) *[]byte {
	if p, ok := headPool.Get().(*[]byte); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n)
	return &b
}

// readHead fills buf from r. complete reports that r ended (io.EOF) within buf. Any other
// error, io.ErrUnexpectedEOF included (an HTTP body cut off mid-stream), is a failure: a
// truncated body must never be stored as if whole.
func readHead(r io.Reader, buf []byte) (n int, complete bool, err error) {
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// readError reports a failure to read the caller's body.
func readError(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return AsError(err)
	}
	return invalidArgument("body", "reading the request body failed: %v", err)
}

// requestHash identifies a request for idempotency: the same id with a different hash is
// rejected.
func requestHash(parts ...string) meta.Digest {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var d meta.Digest
	copy(d[:], h.Sum(nil))
	return d
}

// fieldsKey renders fields deterministically for request hashing.
func fieldsKey(fs map[string]meta.FieldValue) string {
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(fs[n].String())
		b.WriteByte(0)
	}
	return b.String()
}

// BlobStore returns the object store the service writes bodies to.
func (s *Service) BlobStore() blob.Store { return s.base.blobs }

// readView returns a linearizable view of the shard that serves agent's root, or the
// empty state when the root is not in it or hidden from the caller (access.go).
func (s *base) readView(ctx context.Context, agent string) (*meta.View, error) {
	c, err := coreFor(ctx, s, agent)
	if err != nil {
		return nil, err
	}
	v, err := c.ReadView(ctx)
	if err != nil {
		return nil, err
	}
	return s.visibleView(ctx, agent, v), nil
}

// workspaceView is readView and the workbench id of agent's root in it: every error it
// returns is an *Error.
func (s *base) workspaceView(ctx context.Context, agent, id string) (*meta.View, *meta.Workspace, error) {
	view, err := s.readView(ctx, agent)
	if err != nil {
		return nil, nil, AsError(err)
	}
	ws, err := view.Workspace(agent, id)
	if err != nil {
		return nil, nil, AsError(err)
	}
	return view, ws, nil
}

// proposeRaw replicates a command on the shard of its agent root, stamped with the
// principal and surface of ctx (attribution.go): every command of this package goes
// through here. A command for a root the caller may not change is refused before it
// reaches the core (mayWrite), and one for a missing or hidden root is decided on the
// empty state first (absentRoot).
func (s *base) proposeRaw(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	agent := meta.AgentOf(b)
	if err := mayWrite(ctx, agent); err != nil {
		return meta.Result{}, err
	}
	// A reserved workbench is created, written, snapshotted and ended only through its
	// surface: every command in it (its scope's workbench, or the files it changes).
	for _, ws := range []string{meta.ScopeOf(b).Workbench, meta.FilesWorkspace(b)} {
		if owner, ok := s.cfg.ReservedWorkbenches[ws]; ok && ws != "" && !surfaceOwns(owner, SurfaceOf(ctx)) {
			return meta.Result{}, newError(CodePermissionDenied, "workbench %q is written only through the %s surface", ws, owner)
		}
	}
	if res, done, err := s.absentRoot(ctx, agent, h, b); done {
		return res, err
	}
	if err := mayTouchPaths(ctx, s, agent, b); err != nil {
		return meta.Result{}, err
	}
	c, err := coreFor(ctx, s, agent)
	if err != nil {
		return meta.Result{}, err
	}
	p := producerOf(ctx)
	h.Principal, h.Surface = p.Principal, p.Surface
	return c.Propose(ctx, h, b)
}

// listingPageMaxBytes is the estimate a listing page may reach: an eighth of the budget,
// at most maxListingPageBytes.
func (s *base) listingPageMaxBytes() int64 {
	return min(maxListingPageBytes, s.cfg.QueryBudgetBytes/listingPageShare)
}

func (s *base) fileFields(r Result, agent, id, full string) Result {
	sec, rel := splitSection(full)
	r["workbench_id"] = id
	if sec == "" {
		r["section"] = nil
	} else {
		r["section"] = sec
	}
	r["relative_path"] = rel
	r["path"] = s.WorkbenchPath(agent, id) + "/" + full
	return r
}
