package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/internal/pause"
)

// User metadata of every blob object (docs/architecture.md#blob-storage-and-garbage-collection), sent as x-amz-meta-cairn-encoding and
// x-amz-meta-cairn-size. minio-go reports them under these canonical names.
const (
	// MetaEncoding holds blob.Encoding.String(): "identity" or "zstd".
	MetaEncoding = "Cairn-Encoding"
	// MetaSize holds the uncompressed size in bytes, in decimal.
	MetaSize = "Cairn-Size"
)

// amzMetaPrefix starts the header name of every user metadata entry.
const amzMetaPrefix = "X-Amz-Meta-"

// abortTimeout bounds the abort of a failed multipart upload, which runs on a context of
// its own because the caller's may be what ended the upload.
const abortTimeout = 30 * time.Second

// dialTimeout bounds connecting to the object store.
const dialTimeout = 5 * time.Second

// Store is a blob.Store over an S3 bucket. Create it with Open.
type Store struct {
	cfg       Config
	prefix    string // cfg.Prefix + "/", or ""
	core      minio.Core
	transport *http.Transport

	closed atomic.Bool

	locks blob.KeyLocks // serializes Puts and Deletes of one key

	journalSeq atomic.Int64 // names upload journal entries apart

	bufs blob.EncodeBuffers // compression buffers of Puts

	// checksum, when not nil, makes the x-amz-checksum-crc32c value of a request body in
	// place of bodyChecksum's: for tests that make the store refuse a body
	// (export_test.go).
	checksum func([]byte) string
}

var _ blob.Store = (*Store)(nil)

// Open validates cfg (zero optional fields take their defaults), connects to the object
// store and makes sure the bucket exists, creating it when cfg.CreateBucket is set. It
// fails with a *ConfigError for a bad cfg, ErrBucketMissing when the bucket is absent and
// may not be created, an *ObjectUnavailableError (wrapping blob.ErrUnavailable) when the
// store cannot be reached or refuses the requests, or ctx's error.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tr, err := minio.DefaultTransport(cfg.Secure)
	if err != nil {
		return nil, fmt.Errorf("blob/s3: open: transport: %w", err)
	}
	// minio-go waits a minute for headers and 30 s to connect: a stalled store would
	// hold each attempt that long. Callers bound whole calls (blob.WithDeadline).
	tr.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	var creds *credentials.Credentials
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	} else {
		creds = credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}})
	}
	core, err := minio.NewCore(cfg.Endpoint, &minio.Options{
		Creds:     creds,
		Secure:    cfg.Secure,
		Transport: tr,
		Region:    cfg.Region,
		// minio-go's own retries wait on a fixed, process-wide schedule; Store.retry
		// retries instead, on cfg.Retry's, and classifies errors itself.
		MaxRetries: 1,
	})
	if err != nil {
		// The error text may name the endpoint; Validate has checked its shape already.
		return nil, &ConfigError{Field: "Endpoint", Rule: "must be a valid host or host:port"}
	}
	s := &Store{
		cfg:       cfg,
		core:      *core,
		transport: tr,
	}
	if cfg.Prefix != "" {
		s.prefix = cfg.Prefix + "/"
	}
	if err := s.ensureBucket(ctx); err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	if cfg.UploadJournal != "" {
		if err := os.MkdirAll(cfg.UploadJournal, 0o755); err != nil {
			tr.CloseIdleConnections()
			return nil, fmt.Errorf("blob/s3: upload journal: %w", err)
		}
		// Best effort: an entry that cannot be settled now stays for the next start.
		s.RecoverUploads(ctx)
	}
	return s, nil
}

// ensureBucket checks that the bucket exists and creates it if allowed.
func (s *Store) ensureBucket(ctx context.Context) error {
	var exists bool
	t, err := s.retry(ctx, func() (err error) {
		exists, err = s.core.BucketExists(ctx, s.cfg.Bucket)
		return err
	})
	if err != nil {
		return s.fail(ctx, "open", "bucket", t, err)
	}
	if exists {
		return nil
	}
	if !s.cfg.CreateBucket {
		return ErrBucketMissing
	}
	t, err = s.retry(ctx, func() error {
		err := s.core.MakeBucket(ctx, s.cfg.Bucket, minio.MakeBucketOptions{Region: s.cfg.Region})
		var resp minio.ErrorResponse
		if errors.As(err, &resp) && resp.Code == minio.BucketAlreadyOwnedByYou {
			return nil // created concurrently by another Open
		}
		return err
	})
	if err != nil {
		return s.fail(ctx, "open", "bucket", t, err)
	}
	return nil
}

// ObjectName returns the name of key's object in the bucket:
// "<Prefix>/roots/<root uid>/blobs/<aa>/<sha256 hex>" (docs/architecture.md#blob-storage-and-garbage-collection).
func (s *Store) ObjectName(key blob.Key) string {
	h := key.Digest.String()
	return s.rootPrefix(key.Root) + h[:2] + "/" + h
}

// rootPrefix is the name prefix of every object of root, ending in "/".
func (s *Store) rootPrefix(root string) string {
	return s.prefix + "roots/" + root + "/blobs/"
}

// begin checks what every call checks first: the root, ctx, and Close.
func (s *Store) begin(ctx context.Context, op, root string, what any) error {
	if err := blob.ValidateRoot(root); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blob/s3: %s %v: %w", op, what, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("blob/s3: %s: store closed: %w", op, blob.ErrUnavailable)
	}
	return nil
}

// meta is what an object's user metadata says about its blob.
type meta struct {
	enc  blob.Encoding
	size int64
}

// parseMeta reads the blob metadata of an object whose payload is stored bytes long from
// its user metadata, keyed with or without the x-amz-meta- prefix. Every defect wraps
// blob.ErrCorrupt.
func parseMeta(user map[string]string, stored int64) (meta, error) {
	var encText, sizeText string
	var haveEnc, haveSize bool
	for k, v := range user {
		// Listings carry the header names, x-amz-meta- prefix and all.
		if len(k) > len(amzMetaPrefix) && strings.EqualFold(k[:len(amzMetaPrefix)], amzMetaPrefix) {
			k = k[len(amzMetaPrefix):]
		}
		switch {
		case strings.EqualFold(k, MetaEncoding):
			encText, haveEnc = v, true
		case strings.EqualFold(k, MetaSize):
			sizeText, haveSize = v, true
		}
	}
	if !haveEnc || !haveSize {
		return meta{}, fmt.Errorf("object has no %s/%s metadata: %w", MetaEncoding, MetaSize, blob.ErrCorrupt)
	}
	var m meta
	switch encText {
	case blob.EncodingIdentity.String():
		m.enc = blob.EncodingIdentity
	case blob.EncodingZstd.String():
		m.enc = blob.EncodingZstd
	default:
		return meta{}, fmt.Errorf("unknown encoding %q in metadata: %w", encText, blob.ErrCorrupt)
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 {
		return meta{}, fmt.Errorf("bad size %q in metadata: %w", sizeText, blob.ErrCorrupt)
	}
	m.size = size
	if m.enc == blob.EncodingIdentity && stored != size {
		return meta{}, fmt.Errorf("identity payload of %d bytes, metadata says %d: %w", stored, size, blob.ErrCorrupt)
	}
	return m, nil
}

// stat HEADs key's object. A missing object is (blob.Info{}, false, nil); an object with
// bad metadata is an error wrapping blob.ErrCorrupt.
func (s *Store) stat(ctx context.Context, op string, key blob.Key) (blob.Info, bool, error) {
	var oi minio.ObjectInfo
	t, err := s.retry(ctx, func() (err error) {
		oi, err = s.core.StatObject(ctx, s.cfg.Bucket, s.ObjectName(key), minio.StatObjectOptions{})
		return err
	})
	if err != nil {
		if classify(err).notFound {
			return blob.Info{}, false, nil
		}
		return blob.Info{}, false, s.fail(ctx, op, key, t, err)
	}
	m, err := parseMeta(oi.UserMetadata, oi.Size)
	if err != nil {
		return blob.Info{}, true, fmt.Errorf("blob/s3: %s %s: %w", op, key, err)
	}
	return blob.Info{Size: m.size, StoredBytes: oi.Size, Encoding: m.enc, ModTime: oi.LastModified}, true, nil
}

// Put implements blob.Store. It HEADs the object first and uploads nothing when a valid
// blob is there (docs/architecture.md#blob-storage-and-garbage-collection, put-if-absent): valid means its metadata parses and its
// payload, read back whole, hashes to the key (a dedupe hit costs a GET of the object;
// a damaged object is overwritten). The upload is conditional
// (If-None-Match: *, S3 conditional writes), so of concurrent Puts of a new key in any
// number of processes one creates the object and the others report Created=false. (When
// an upload is retried because the answer to a first attempt that did store it was lost,
// the retry finds the object and the Put reports Created=false: Created may understate,
// never overstate.) An object with missing or bad metadata is overwritten unconditionally.
// Payloads longer than PartSizeBytes go up as a multipart upload, which is aborted when the
// Put fails.
func (s *Store) Put(ctx context.Context, key blob.Key, hd blob.Hashed) (blob.PutResult, error) {
	if err := s.begin(ctx, "put", key.Root, key); err != nil {
		return blob.PutResult{}, err
	}
	unlock, err := s.locks.LockPut(ctx, "blob/s3", key, hd)
	if err != nil {
		return blob.PutResult{}, err
	}
	defer unlock()
	data := hd.Bytes()

	info, exists, err := s.stat(ctx, "put", key)
	switch {
	case err == nil && exists:
		// Trust the object only once its bytes hash to the key (put-if-absent must not
		// dedupe onto damaged data, which could then never be repaired).
		switch verr := s.verify(blob.WithBlake3(ctx, key.Digest, hd.Blake3()), key); {
		case verr == nil:
			return blob.PutResult{StoredBytes: info.StoredBytes, Encoding: info.Encoding}, nil
		case errors.Is(verr, blob.ErrNotFound):
			exists = false // deleted since the HEAD: a conditional upload below
		case errors.Is(verr, blob.ErrCorrupt):
			// Present but damaged: overwrite it with the right bytes.
		default:
			return blob.PutResult{}, verr
		}
	case errors.Is(err, blob.ErrCorrupt):
		// Present but damaged: overwrite it with the right bytes.
	case err != nil:
		return blob.PutResult{}, err
	}
	overwrite := exists

	payload, enc, release := s.bufs.Encode(data)
	defer release()

	// An identity payload is data itself, whose CRC32C was taken with its digests.
	created, err := s.upload(ctx, key, payload, meta{enc: enc, size: int64(len(data))}, hd.CRC32C(), enc == blob.EncodingIdentity, overwrite)
	if err != nil {
		return blob.PutResult{}, err
	}
	if created {
		return blob.PutResult{Created: true, StoredBytes: int64(len(payload)), Encoding: enc}, nil
	}
	// Another writer created the object between our HEAD and our upload.
	info, exists, err = s.stat(ctx, "put", key)
	switch {
	case err != nil:
		return blob.PutResult{}, err
	case !exists:
		// Created and deleted again since: the caller may retry.
		return blob.PutResult{}, &ObjectUnavailableError{Op: "put", Reason: "object changed during the put", Transient: true, Attempts: 1}
	}
	return blob.PutResult{StoredBytes: info.StoredBytes, Encoding: info.Encoding}, nil
}

// verify reads key's object whole through Get, which checks the digest (Put's context
// carries the BLAKE3 of the bytes it was given, blob.WithBlake3): nil when the stored blob
// is intact, else Get's or the reader's error (blob.ErrNotFound,
// blob.ErrCorrupt, an *ObjectUnavailableError, ctx's).
func (s *Store) verify(ctx context.Context, key blob.Key) error {
	r, err := s.Get(ctx, key, 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	err = blob.Drain(r)
	return err
}

// upload stores payload under key's object with its metadata; unless overwrite, only if no
// object is there. crc is payload's CRC32C when known (else it is taken here). It reports
// false when the condition failed (someone else stored it).
func (s *Store) upload(ctx context.Context, key blob.Key, payload []byte, m meta, crc uint32, known, overwrite bool) (created bool, err error) {
	name := s.ObjectName(key)
	opts := minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		UserMetadata: map[string]string{
			MetaEncoding: m.enc.String(),
			MetaSize:     strconv.FormatInt(m.size, 10),
		},
	}
	if int64(len(payload)) > s.cfg.PartSizeBytes {
		return s.putMultipart(ctx, key, name, payload, opts, overwrite)
	}
	if !overwrite {
		opts.SetMatchETagExcept("*")
	}
	// UNSIGNED-PAYLOAD plus x-amz-checksum-crc32c (doc.go): the store verifies the body
	// against the checksum and refuses one damaged in transit, and nothing hashes the
	// payload with SHA-256 a second time.
	opts.DisableContentSha256 = true
	opts.UserMetadata[amzChecksumCRC32C] = s.bodyChecksum(payload, crc, known)
	t, err := s.retry(ctx, func() error {
		_, err := s.core.PutObject(ctx, s.cfg.Bucket, name, bytes.NewReader(payload), int64(len(payload)), "", "", opts)
		return err
	})
	switch {
	case err == nil:
		return true, nil
	case classify(err).precondition:
		return false, nil
	default:
		return false, s.fail(ctx, "put", key, t, err)
	}
}

// Get implements blob.Store. One GET fetches the object with its metadata; the reader
// streams it from its first byte, because verifying the digest of the whole blob
// (blob.NewReader) needs every byte whatever the range. The range is cut by
// blob.NewReader. An error of the body mid-stream surfaces as an *ObjectUnavailableError
// with Op "read".
func (s *Store) Get(ctx context.Context, key blob.Key, offset, length int64) (io.ReadCloser, error) {
	if err := s.begin(ctx, "get", key.Root, key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("blob/s3: get %s: offset %d is negative: %w", key, offset, blob.ErrRange)
	}
	var (
		body io.ReadCloser
		oi   minio.ObjectInfo
	)
	t, err := s.retry(ctx, func() (err error) {
		body, oi, _, err = s.core.GetObject(ctx, s.cfg.Bucket, s.ObjectName(key), minio.GetObjectOptions{})
		return err
	})
	if err != nil {
		if classify(err).notFound {
			return nil, fmt.Errorf("blob/s3: get %s: %w", key, blob.ErrNotFound)
		}
		return nil, s.fail(ctx, "get", key, t, err)
	}
	m, err := parseMeta(oi.UserMetadata, oi.Size)
	if err != nil {
		body.Close()
		return nil, fmt.Errorf("blob/s3: get %s: %w", key, err)
	}
	p := &payloadReader{ctx: ctx, body: body}
	r, err := blob.NewReader(ctx, key, p, m.enc, m.size, offset, length)
	if err != nil {
		return nil, fmt.Errorf("blob/s3: get: %w", err)
	}
	return &getReader{r: r, p: p}, nil
}

// payloadReader is the body of a GET. Its errors are *ObjectUnavailableError values, or
// ctx's error once ctx is done, never net/http's, whose text names the URL.
type payloadReader struct {
	ctx  context.Context
	body io.ReadCloser
	err  error // the first error Read returned
}

func (p *payloadReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.body.Read(b)
	switch {
	case err == nil, err == io.EOF:
		return n, err
	case p.ctx.Err() != nil:
		p.err = p.ctx.Err()
	default:
		p.err = unavailable("read", classify(err), 1)
	}
	return n, p.err
}

func (p *payloadReader) Close() error { return p.body.Close() }

// getReader is what Get returns: blob.NewReader's reader, except that a failure of the
// payload is reported as the payload's own *ObjectUnavailableError, whose message names
// no key (blob.NewReader's would).
type getReader struct {
	r io.ReadCloser
	p *payloadReader
}

func (g *getReader) Read(b []byte) (int, error) {
	n, err := g.r.Read(b)
	if err != nil && err != io.EOF {
		var u *ObjectUnavailableError
		if errors.As(g.p.err, &u) && errors.Is(err, blob.ErrUnavailable) {
			err = u
		}
	}
	return n, err
}

func (g *getReader) Close() error { return g.r.Close() }

// Stat implements blob.Store with one HEAD: the metadata holds the encoding and the
// uncompressed size, so the payload is not read. ModTime is the object's Last-Modified
// (whole seconds).
func (s *Store) Stat(ctx context.Context, key blob.Key) (blob.Info, error) {
	if err := s.begin(ctx, "stat", key.Root, key); err != nil {
		return blob.Info{}, err
	}
	info, exists, err := s.stat(ctx, "stat", key)
	if err != nil {
		return blob.Info{}, err
	}
	if !exists {
		return blob.Info{}, fmt.Errorf("blob/s3: stat %s: %w", key, blob.ErrNotFound)
	}
	return info, nil
}

// PresignGet implements blob.Presigner: one HEAD for the blob's Info (absent: ErrNotFound),
// then a SigV4 presigned GET of its object, computed locally (no request), valid for
// expiry (at most 7 days, S3's limit).
func (s *Store) PresignGet(ctx context.Context, key blob.Key, expiry time.Duration) (*url.URL, blob.Info, error) {
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, blob.Info{}, err
	}
	u, err := s.core.PresignedGetObject(ctx, s.cfg.Bucket, s.ObjectName(key), expiry, nil)
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("blob/s3: presign %s: %w", key, err)
	}
	return u, info, nil
}

// Delete implements blob.Store with one DELETE, which S3 answers with success whether or
// not the object existed.
func (s *Store) Delete(ctx context.Context, key blob.Key) error {
	if err := s.begin(ctx, "delete", key.Root, key); err != nil {
		return err
	}
	unlock, err := s.locks.LockOp(ctx, "blob/s3", "delete", key)
	if err != nil {
		return err
	}
	defer unlock()
	t, err := s.retry(ctx, func() error {
		return s.core.RemoveObject(ctx, s.cfg.Bucket, s.ObjectName(key), minio.RemoveObjectOptions{})
	})
	if err != nil && !classify(err).notFound {
		return s.fail(ctx, "delete", key, t, err)
	}
	return nil
}

// List implements blob.Store with ListObjectsV2 under the root's prefix, whose
// lexicographic order is digest order. On MinIO the listing carries each object's user
// metadata (a MinIO extension); elsewhere List HEADs each object for it. An object with
// bad metadata stops the listing with an error wrapping blob.ErrCorrupt (fail closed: the
// garbage collector must not proceed over a listing it cannot trust, docs/architecture.md#blob-storage-and-garbage-collection). Names
// that are not "<aa>/<64 lower-case hex>" with aa the digest's first byte are skipped. A
// page that fails transiently is fetched again after the last name seen.
func (s *Store) List(ctx context.Context, root string, fn func(blob.Key, blob.Info) error) error {
	if err := s.begin(ctx, "list", root, root); err != nil {
		return err
	}
	prefix := s.rootPrefix(root)
	// Cancelled when List returns, which stops minio-go's listing.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	noOwner := false
	var (
		after string // the last name handed to fn or skipped
		t     tries
	)
	for {
		var listErr error
		progressed := false
		for oi := range s.core.ListObjectsIter(lctx, s.cfg.Bucket, minio.ListObjectsOptions{
			Prefix:       prefix,
			Recursive:    true,
			WithMetadata: true,
			StartAfter:   after,
			FetchOwner:   &noOwner,
		}) {
			if oi.Err != nil {
				listErr = oi.Err
				break
			}
			progressed = true
			after = oi.Key
			key, ok := parseName(root, strings.TrimPrefix(oi.Key, prefix))
			if !ok {
				continue
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("blob/s3: list %s: %w", root, err)
			}
			info, ok, err := s.listInfo(ctx, key, oi)
			if err != nil {
				return err
			}
			if !ok {
				continue // deleted since the listing
			}
			if err := fn(key, info); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("blob/s3: list %s: %w", root, err)
		}
		if listErr == nil {
			return nil
		}
		if progressed {
			t = tries{}
		}
		t.n++
		f := classify(listErr)
		if !f.transient || t.n >= s.cfg.Retry.MaxAttempts {
			return s.fail(ctx, "list", root, t, listErr)
		}
		t.last = &f
		if pause.For(ctx, s.backoff(t.n-1)) != nil {
			return s.fail(ctx, "list", root, t, listErr)
		}
	}
}

// listInfo returns the Info of a listed object, from the listing's metadata when it has
// ours, else from a HEAD. ok is false when the object is gone.
func (s *Store) listInfo(ctx context.Context, key blob.Key, oi minio.ObjectInfo) (info blob.Info, ok bool, err error) {
	if m, err := parseMeta(oi.UserMetadata, oi.Size); err == nil {
		return blob.Info{Size: m.size, StoredBytes: oi.Size, Encoding: m.enc, ModTime: oi.LastModified}, true, nil
	}
	info, ok, err = s.stat(ctx, "list", key)
	if err != nil {
		return blob.Info{}, false, err
	}
	return info, ok, nil
}

// parseName parses "<aa>/<sha256 hex>", the part of an object name after the root's
// prefix.
func parseName(root, rest string) (blob.Key, bool) {
	fan, name, ok := strings.Cut(rest, "/")
	if !ok || len(fan) != 2 || len(name) != 64 || name[:2] != fan || strings.ToLower(name) != name {
		return blob.Key{}, false
	}
	d, err := blob.ParseDigest(name)
	if err != nil {
		return blob.Key{}, false
	}
	return blob.Key{Root: root, Digest: d}, true
}

// Close implements blob.Store: later calls fail with blob.ErrUnavailable, and idle
// connections are closed. Readers returned by Get keep their connection until they are
// closed.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.transport.CloseIdleConnections()
	return nil
}
