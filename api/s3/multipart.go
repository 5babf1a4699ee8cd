package s3

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Multipart uploads (doc.go, "Multipart uploads"). An upload lives in UploadsWorkbench of
// the key's root: the directory "<bucket>/<upload id>" holds the upload's record (the
// file "upload": key, content type, when and by whom it was started) and its parts (the
// files "00001" … "10000", ordinary Cairn files written through the write path).

// UploadsWorkbench is the workbench of every agent root that holds the root's multipart
// uploads. Only the S3 surface writes it (workbench.Config.ReservedWorkbenches); it is no
// bucket: the gateway answers it as missing and lists it never.
const UploadsWorkbench = "s3-uploads"

const (
	// DefaultMinPartSize is S3's least size of a part that is not the last.
	DefaultMinPartSize = 5 << 20
	// MaxPutSize is S3's greatest object of one PUT.
	MaxPutSize = 5 << 30
	// MaxPartSize is S3's greatest part.
	MaxPartSize = 5 << 30
	// MaxPartNumber is S3's greatest part number (and most parts of an upload).
	MaxPartNumber = 10_000
	// DefaultUploadDeadline is how long an upload may stay incomplete before the gateway
	// aborts it.
	DefaultUploadDeadline = 7 * 24 * time.Hour
	// DefaultReclaimInterval is how often the gateway's sweep looks for expired uploads.
	DefaultReclaimInterval = time.Hour
	// reclaimPerRound bounds the uploads one sweep round (or one lazy reclaim) aborts in a
	// root.
	reclaimPerRound = 100
	// deleteWorkers bounds the deletes of one upload's files in flight.
	deleteWorkers = 8
	// recordFile is the name of an upload's record in its directory.
	recordFile = "upload"
	// completedRetention is how long a completed upload's record stays, so that a
	// CompleteMultipartUpload sent again (a client that lost the first answer retries)
	// answers the object it published instead of NoSuchUpload, as S3 does.
	completedRetention = time.Hour
	// maxRecordBytes bounds an upload record read back.
	maxRecordBytes = 64 << 10
	// maxCompleteBody bounds a CompleteMultipartUpload document (10,000 parts with every
	// checksum fit well below it).
	maxCompleteBody = 4 << 20
)

// multipart serves S3's multipart uploads (doc.go, "Multipart uploads"). It owns the
// uploads' files in UploadsWorkbench, their records and parts, and every operation on
// them: CreateMultipartUpload, UploadPart and UploadPartCopy, AbortMultipartUpload (this
// file), CompleteMultipartUpload (complete.go), ListParts and ListMultipartUploads
// (multipart_list.go), and the removal of expired uploads, lazily and by the sweep
// (multipart_reclaim.go). Handler routes a request here once it authenticated it and
// found it a multipart operation (multipartOp).
//
// Invariants: what it reads of the buckets and objects themselves (a bucket, a copy
// source, the key's versions, a write's precondition) it reads through lookup, with the
// caller's own principal; its own files it reads and writes only with bookkeeping, after
// the caller was found to reach the upload's target key (multipart_access.go). Its
// settings are resolved once by newMultipart and never change; roots only grows.
type multipart struct {
	svc    *workbench.Service
	lookup *lookup
	log    *slog.Logger
	// minPartSize is Config.MinPartSize: the least size of a part but the last.
	minPartSize int64
	// uploadDeadline is Config.UploadDeadline: how long an upload may stay incomplete.
	uploadDeadline time.Duration
	// reclaimEvery is Config.ReclaimInterval: how often runReclaim sweeps.
	reclaimEvery time.Duration
	// keepAlive is Config.CompleteKeepAlive (complete.go).
	keepAlive time.Duration
	// clock is the clock of uploads' deadlines and claims, Config.Now's; tests move it
	// without skewing signatures.
	clock func() time.Time
	// instance is Config.Instance, and owner "<instance>/<run>" names the claims this run
	// of the gateway makes (run is random per newMultipart); "" without an instance
	// (claimHeld, complete.go).
	instance, owner string
	// roots are the roots this gateway served a multipart request in: the sweep's
	// (multipart_reclaim.go).
	roots sync.Map
}

// newMultipart returns the multipart uploads of a gateway over svc configured by cfg,
// each setting cfg leaves unset at its default.
func newMultipart(svc *workbench.Service, l *lookup, cfg Config) *multipart {
	m := &multipart{svc: svc, lookup: l, log: cfg.Logger, minPartSize: cfg.MinPartSize, uploadDeadline: cfg.UploadDeadline,
		reclaimEvery: cfg.ReclaimInterval, keepAlive: cfg.CompleteKeepAlive, clock: cfg.Now}
	if m.minPartSize <= 0 {
		m.minPartSize = DefaultMinPartSize
	}
	if m.uploadDeadline <= 0 {
		m.uploadDeadline = DefaultUploadDeadline
	}
	if m.reclaimEvery <= 0 {
		m.reclaimEvery = DefaultReclaimInterval
	}
	if m.keepAlive <= 0 {
		m.keepAlive = DefaultCompleteKeepAlive
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.instance = cfg.Instance; m.instance != "" {
		run := make([]byte, 8)
		_, _ = rand.Read(run)
		m.owner = m.instance + "/" + hex.EncodeToString(run)
	}
	return m
}

// uploadRecord is the body of an upload's record file.
type uploadRecord struct {
	Key         string `json:"key"`
	ContentType string `json:"content_type,omitempty"`
	InitiatedMs int64  `json:"initiated_ms"`
	Principal   string `json:"principal,omitempty"`
	// Metadata are the x-amz-meta-* fields the object gets (metadataFields), as strings.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Incarnation is the bucket's (meta.Workspace.Incarnation) when the upload started:
	// an upload does not outlive its bucket, even one created again under its name. A
	// move of the root to another shard renumbers incarnations, so BucketCreated (the
	// bucket's meta.Workspace.CreatedVersion, which a move keeps) decides when it is set
	// (ofBucket); Incarnation only for a record written before it was.
	Incarnation   uint64 `json:"incarnation,omitempty"`
	BucketCreated uint64 `json:"bucket_created,omitempty"`
	// Completing is set while a Complete publishes the object (complete.go): the claim
	// that makes one Complete (or Abort) of an upload win.
	Completing *completingUpload `json:"completing,omitempty"`
	// Completed is set once the object was published: the answer a Complete sent again
	// repeats. The parts are gone by then; the record stays completedRetention.
	Completed *completedUpload `json:"completed,omitempty"`
}

// completingUpload is a Complete's claim on its upload.
type completingUpload struct {
	ClaimMs int64 `json:"claim_ms"`
	// Parts is partsKey of the part list being published.
	Parts string `json:"parts"`
	// Owner is the owner of the gateway that claimed (multipart.owner), "" when it had no
	// instance or predates the field.
	Owner string `json:"owner,omitempty"`
}

// completedUpload is what Complete answered.
type completedUpload struct {
	ETag        string `json:"etag"`
	VersionID   string `json:"version_id"`
	CompletedMs int64  `json:"completed_ms"`
	// Parts is partsKey of the part list published: only the same list is answered again.
	Parts string `json:"parts"`
}

// fields are the object's metadata fields (nil for none).
func (r uploadRecord) fields() map[string]meta.FieldValue {
	if len(r.Metadata) == 0 {
		return nil
	}
	out := make(map[string]meta.FieldValue, len(r.Metadata))
	for k, v := range r.Metadata {
		out[k] = meta.StringField(v)
	}
	return out
}

// upload is an upload found: its id, record and directory in UploadsWorkbench.
type upload struct {
	id  string
	rec uploadRecord
	dir string
	// gen is the generation of the record read: a change of the upload's state is a
	// compare-and-swap on it.
	gen uint64
}

// validUploadID reports whether id is one this gateway issues: 32 lower-case hex digits.
func validUploadID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

func partName(n int) string { return fmt.Sprintf("%05d", n) }

// multipartOp names the multipart operation a request is, "" when it is none.
func multipartOp(method, key string, q url.Values) string {
	if key == "" {
		if method == http.MethodGet && q.Has("uploads") {
			return "ListMultipartUploads"
		}
		return ""
	}
	switch {
	case method == http.MethodPost && q.Has("uploads"):
		return "CreateMultipartUpload"
	case !q.Has("uploadId"):
		return ""
	case method == http.MethodPut && q.Has("partNumber"):
		return "UploadPart"
	case method == http.MethodPost:
		return "CompleteMultipartUpload"
	case method == http.MethodDelete:
		return "AbortMultipartUpload"
	case method == http.MethodGet:
		return "ListParts"
	}
	return ""
}

// multipartParams are the subresources of the unsupported list a multipart request uses.
var multipartParams = map[string]bool{"uploads": true, "uploadId": true, "partNumber": true}

// serve serves the multipart operation op (multipartOp).
func (m *multipart) serve(w http.ResponseWriter, r *request, op string) error {
	switch op {
	case "ListMultipartUploads":
		return m.listUploads(w, r.op(op))
	case "CreateMultipartUpload":
		return m.createUpload(w, r.op(op))
	case "UploadPart":
		if len(r.Header.Values("X-Amz-Copy-Source")) > 0 {
			return m.uploadPart(w, r.op("UploadPartCopy"))
		}
		return m.uploadPart(w, r.op(op))
	case "CompleteMultipartUpload":
		return m.completeUpload(w, r.op(op))
	case "AbortMultipartUpload":
		return m.abortUpload(w, r.op(op))
	}
	return m.listParts(w, r.op(op))
}

func noSuchUpload() error {
	return errorf(CodeNoSuchUpload, "the specified upload does not exist: it may have been aborted or completed")
}

type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

// createUpload starts an upload: its record, written create-only in UploadsWorkbench,
// once the caller may write the object (a key outside its prefixes: AccessDenied, as a
// PUT of it; multipart_access.go). It first aborts the bucket's expired uploads (lazily,
// a bounded number).
func (m *multipart) createUpload(w http.ResponseWriter, r *request) error {
	path, fields, err := writeTarget(r)
	if err != nil {
		return err
	}
	_, bucket, err := m.lookup.workspace(r)
	if err != nil {
		return err
	}
	if err := m.svc.Writes.MayWrite(r.Context(), r.agent, r.bucket, path); err != nil {
		return fromWorkbench(err, CodeNoSuchBucket)
	}
	m.remember(r.agent)
	if _, err := m.reclaimBucket(r.bookkeeping(), r.agent, r.bucket, reclaimPerRound); err != nil {
		m.log.Warn("s3: reclaiming expired uploads", "request_id", r.id, "err", err)
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	rec := uploadRecord{Key: path, ContentType: r.Header.Get("Content-Type"), InitiatedMs: m.clock().UnixMilli(), Principal: workbench.PrincipalID(r.Context()),
		Incarnation: bucket.Incarnation, BucketCreated: bucket.CreatedVersion}
	for k, v := range fields {
		if rec.Metadata == nil {
			rec.Metadata = map[string]string{}
		}
		rec.Metadata[k] = v.Str
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := m.svc.Writes.Write(r.bookkeeping(), workbench.WriteRequest{Agent: r.agent, Workbench: UploadsWorkbench,
		Path: r.bucket + "/" + id + "/" + recordFile, Body: strings.NewReader(string(body)), SizeHint: int64(len(body)),
		ContentType: "application/json", Cond: meta.CondCreateOnly, CreateWorkbench: true}); err != nil {
		return fromWorkbench(err, CodeNoSuchBucket)
	}
	if alg := r.Header.Get("X-Amz-Checksum-Algorithm"); alg != "" {
		w.Header().Set("X-Amz-Checksum-Algorithm", alg)
	}
	return writeXML(w, initiateResult{Xmlns: xmlns, Bucket: r.bucket, Key: r.key, UploadID: id})
}

// openUpload finds the request's upload (uploadId) for its bucket and key: NoSuchBucket
// when the key does not reach the bucket, NoSuchUpload when the upload is missing, was
// started for another key or one outside the caller's prefixes (multipart_access.go), or
// has expired.
func (m *multipart) openUpload(r *request) (upload, error) {
	u, err := m.findUpload(r)
	if err == nil && u.rec.Completed != nil {
		return upload{}, noSuchUpload()
	}
	return u, err
}

// findUpload is openUpload that also finds a completed upload (completeUpload answers
// it again).
func (m *multipart) findUpload(r *request) (upload, error) {
	_, bucket, err := m.lookup.workspace(r)
	if err != nil {
		return upload{}, err
	}
	id := r.URL.Query().Get("uploadId")
	if !validUploadID(id) {
		return upload{}, noSuchUpload()
	}
	view, ws, _, err := m.svc.Reads.ViewAt(r.bookkeeping(), r.agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		if codeOf(fromWorkbench(err, CodeNoSuchUpload)) == CodeNoSuchUpload {
			return upload{}, noSuchUpload()
		}
		return upload{}, fromWorkbench(err, CodeNoSuchUpload)
	}
	u, err := m.readUpload(r.bookkeeping(), r.agent, view, ws, r.bucket, id)
	if err != nil {
		return upload{}, err
	}
	m.remember(r.agent)
	if u.rec.Key != r.key || !r.showsKey(u.rec.Key) || m.expired(u) || !u.rec.ofBucket(bucket) {
		return upload{}, noSuchUpload()
	}
	return u, nil
}

// orphaned reports whether u was started in a bucket that has been deleted since (and
// maybe created again): its record names another incarnation of the bucket than view's.
func (u upload) orphaned(view *meta.View, agent, bucket string) bool {
	if u.rec.Incarnation == 0 && u.rec.BucketCreated == 0 {
		return false
	}
	ws, err := view.Workspace(agent, bucket)
	return err != nil || !u.rec.ofBucket(ws)
}

// ofBucket reports whether the upload was started in ws, its bucket as a view holds it
// now: the incarnation created at the version the record names (a move of the root to
// another shard keeps that version and renumbers the incarnation, docs/architecture.md
// "Feed cursors from before the move"), or, for a record without that version, the
// incarnation it names. A record naming neither predates both and belongs to any.
func (rec uploadRecord) ofBucket(ws *meta.Workspace) bool {
	switch {
	case rec.BucketCreated != 0:
		return rec.BucketCreated == ws.CreatedVersion
	case rec.Incarnation != 0:
		return rec.Incarnation == ws.Incarnation
	}
	return true
}

// readUpload reads an upload's record from view: NoSuchUpload when it has none.
func (m *multipart) readUpload(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, bucket, id string) (upload, error) {
	dir := bucket + "/" + id
	e, err := view.File(ws, dir+"/"+recordFile)
	if err != nil {
		if meta.CodeOf(err) == meta.CodeNotFound || meta.CodeOf(err) == meta.CodeNotDirectory {
			return upload{}, noSuchUpload()
		}
		return upload{}, fromWorkbench(workbench.AsError(err), CodeNoSuchUpload)
	}
	raw, err := m.svc.Reads.ReadEntry(ctx, agent, e, maxRecordBytes)
	if err != nil {
		return upload{}, fromWorkbench(err, CodeNoSuchUpload)
	}
	u := upload{id: id, dir: dir, gen: e.Generation}
	if err := json.Unmarshal(raw, &u.rec); err != nil {
		return upload{}, fmt.Errorf("upload record %s: %w", dir, err)
	}
	return u, nil
}

// expired reports whether u is past its life: an upload in progress its deadline after
// it started, a completed one completedRetention after it completed.
func (m *multipart) expired(u upload) bool {
	if c := u.rec.Completed; c != nil {
		return m.clock().Sub(time.UnixMilli(c.CompletedMs)) > completedRetention
	}
	return m.clock().Sub(time.UnixMilli(u.rec.InitiatedMs)) > m.uploadDeadline
}

// partNumber parses the partNumber query parameter: 1 to MaxPartNumber.
func partNumber(q url.Values) (int, error) {
	n, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || n < 1 || n > MaxPartNumber {
		return 0, errorf(CodeInvalidArgument, "part number must be an integer between 1 and %d, inclusive", MaxPartNumber)
	}
	return n, nil
}

type copyPartResult struct {
	XMLName      xml.Name `xml:"CopyPartResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

// uploadPart stores one part: the body through the write path as PutObject streams it
// (every signature and digest checked before the part is published), or, with
// x-amz-copy-source, a copy of an object of the key's root (UploadPartCopy). A part
// uploaded again replaces the one before.
func (m *multipart) uploadPart(w http.ResponseWriter, r *request) error {
	n, err := partNumber(r.URL.Query())
	if err != nil {
		return err
	}
	if err := checkReadHeaders(r.Header); err != nil {
		return err
	}
	u, err := m.openUpload(r)
	if err != nil {
		return err
	}
	path := u.dir + "/" + partName(n)
	if len(r.Header.Values("X-Amz-Copy-Source")) > 0 {
		return m.copyPart(w, r, path)
	}
	body, size, err := r.signed.ObjectBody(r.Request)
	if err != nil {
		return err
	}
	if size > MaxPartSize {
		return errorf(CodeEntityTooLarge, "a part is at most %d bytes", int64(MaxPartSize))
	}
	var stored map[string]meta.FieldValue
	res, err := m.svc.Writes.Write(r.bookkeeping(), workbench.WriteRequest{Agent: r.agent, Workbench: UploadsWorkbench, Path: path,
		Body: body, SizeHint: size, AfterBody: func(digest meta.Digest) (map[string]meta.FieldValue, error) {
			if err := body.CheckSHA256(digest); err != nil {
				return nil, err
			}
			stored = bodyFields(body, digest)
			return stored, nil
		}})
	if err != nil {
		if berr := body.Err(); berr != nil {
			return berr
		}
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	if err := m.partStayed(r, path, res.Generation); err != nil {
		return err
	}
	w.Header().Set("ETag", objectETag(res.Digest, stored))
	if name, value, ok := body.Checksum(); ok {
		w.Header().Set(checksumHeaderPrefix+name, value)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// copyPart is UploadPartCopy. A whole source is copied without moving a byte
// (workbench.Writes.Copy); a range of it (x-amz-copy-source-range) is read and written
// through the write path, where its segments dedupe against the source's wherever the
// chunker cuts alike. The source is opened with the caller's principal (one it does not
// see is NoSuchKey) and the copy pinned at that generation; the part is written with
// bookkeeping (multipart_access.go).
func (m *multipart) copyPart(w http.ResponseWriter, r *request, path string) error {
	srcBucket, srcPath, srcVersion, err := copySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	src, err := m.lookup.openCopySource(r, srcBucket, srcPath, srcVersion)
	if err != nil {
		return err
	}
	w.Header().Set(copySourceVersionHeader, versionID(srcBucket, srcPath, src.Info.Generation))
	etag := ""
	var res workbench.FileResult
	if rng := r.Header.Get("X-Amz-Copy-Source-Range"); rng != "" {
		offset, length, err := copyRange(rng, src.Info.Size)
		if err != nil {
			return err
		}
		if length > MaxPartSize {
			return errorf(CodeEntityTooLarge, "a part is at most %d bytes", int64(MaxPartSize))
		}
		rc, err := src.Reader(r.Context(), offset, length)
		if err != nil {
			return fromWorkbench(err, CodeNoSuchKey)
		}
		defer rc.Close()
		res, err = m.svc.Writes.Write(r.bookkeeping(), workbench.WriteRequest{Agent: r.agent, Workbench: UploadsWorkbench, Path: path,
			Body: rc, SizeHint: length})
		if err != nil {
			return fromWorkbench(err, CodeNoSuchUpload)
		}
		etag = objectETag(res.Digest, nil)
	} else {
		if src.Info.Size > MaxPartSize {
			return errorf(CodeInvalidRequest, "the source is larger than a part may be (%d bytes): copy a range of it", int64(MaxPartSize))
		}
		req := workbench.CopyRequest{Agent: r.agent, SrcWorkbench: srcBucket, SrcPath: srcPath, IfSrcGeneration: src.Info.Generation,
			Workbench: UploadsWorkbench, Path: path, ContentType: "application/octet-stream"}
		if srcVersion != "" {
			req.IfSrcGeneration, req.SrcGeneration = 0, src.Info.Generation
		}
		if res, err = m.svc.Writes.Copy(r.bookkeeping(), req); err != nil {
			return fromWorkbench(err, CodeNoSuchUpload)
		}
		// The part keeps the source's fields (Copy): what the gateway checked of these
		// bytes, so the part's ETag is the source's.
		etag = objectETag(res.Digest, src.Info.Fields)
	}
	if err := m.partStayed(r, path, res.Generation); err != nil {
		return err
	}
	return writeXML(w, copyPartResult{Xmlns: xmlns, ETag: etag, LastModified: iso8601(m.clock().UnixMilli())})
}

// partStayed checks, once part path was written (at generation gen), that its upload is
// still there. An Abort that removed the upload meanwhile listed the upload's parts
// before this one existed and left it behind, a file whose upload no request names any
// more (only the next sweep of its bucket would remove it): the part is removed and the
// request answers NoSuchUpload, as S3 may answer a part racing an abort. (A Complete that
// published meanwhile keeps the record, and its parts go with it.)
func (m *multipart) partStayed(r *request, path string, gen uint64) error {
	_, err := m.findUpload(r)
	if codeOf(err) != CodeNoSuchUpload {
		return nil // open, or not known: the part was written as asked
	}
	if _, derr := m.svc.Writes.Delete(r.bookkeeping(), r.agent, UploadsWorkbench, path, gen, ""); derr != nil && !isNotFound(derr) {
		m.log.Warn("s3: removing a part written after its upload ended", "request_id", r.id, "err", derr)
	}
	return err
}

// copyRange parses x-amz-copy-source-range: bytes=first-last, both given, within the
// source (InvalidArgument otherwise, as S3 answers).
func copyRange(h string, size int64) (offset, length int64, err error) {
	invalid := errorf(CodeInvalidArgument, "the x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy, within the source")
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return 0, 0, invalid
	}
	first, last, ok := strings.Cut(spec, "-")
	a, aerr := strconv.ParseInt(first, 10, 64)
	b, berr := strconv.ParseInt(last, 10, 64)
	if !ok || aerr != nil || berr != nil || a < 0 || b < a || b >= size {
		return 0, 0, invalid
	}
	return a, b - a + 1, nil
}

type completeRequest struct {
	Parts []struct {
		PartNumber int    `xml:"PartNumber"`
		ETag       string `xml:"ETag"`
	} `xml:"Part"`
}

type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// abortUpload removes the upload and its parts: NoSuchUpload for it afterwards. It races
// a Complete through the record's generation (complete.go): an upload a Complete claimed
// is not aborted (OperationAborted while it publishes, NoSuchUpload once it did).
func (m *multipart) abortUpload(w http.ResponseWriter, r *request) error {
	u, err := m.openUpload(r)
	if err != nil {
		return err
	}
	if c := u.rec.Completing; c != nil {
		done, found, _, err := m.published(r, u, u.rec.Key)
		if err != nil {
			return err
		}
		if found {
			// Its Complete published, and a crash kept it from recording that.
			done.Parts = c.Parts
			m.finish(r.bookkeeping(), r.agent, u, done, "request_id", r.id)
			return noSuchUpload()
		}
		if m.claimHeld(c) {
			return operationAborted()
		}
	}
	if _, err := m.svc.Writes.Delete(r.bookkeeping(), r.agent, UploadsWorkbench, u.dir+"/"+recordFile, u.gen, ""); err != nil {
		if !isConflict(err) {
			return fromWorkbench(err, CodeNoSuchUpload)
		}
		// A Complete claimed the upload since it was read.
		if u, err = m.openUpload(r); err == nil && u.rec.Completing != nil {
			return operationAborted()
		}
		return noSuchUpload()
	}
	if err := m.removeFiles(r.bookkeeping(), r.agent, u.dir, false); err != nil {
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeUpload deletes an upload's files through the ordinary delete: its record first
// (the upload is gone from then on), then its parts, a few at a time. The collector
// reclaims the parts' blobs no other file references after its grace; a Complete racing
// the removal is fenced (workbench.Writes.Compose). Parts a crash left behind have no
// record and are removed by the next sweep of their bucket.
func (m *multipart) removeUpload(ctx context.Context, agent, dir string) error {
	if _, err := m.svc.Writes.Delete(ctx, agent, UploadsWorkbench, dir+"/"+recordFile, 0, ""); err != nil && !isNotFound(err) {
		return err
	}
	return m.removeFiles(ctx, agent, dir, false)
}

// removeFiles deletes the files of an upload's directory, a few at a time, but its
// record when keepRecord.
func (m *multipart) removeFiles(ctx context.Context, agent, dir string, keepRecord bool) error {
	view, ws, _, err := m.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		return err
	}
	var paths []string
	after := ""
	for {
		entries, more, err := view.List(ws, dir, after, listPage)
		if meta.CodeOf(err) == meta.CodeNotFound {
			break
		}
		if err != nil {
			return workbench.AsError(err)
		}
		for _, c := range entries {
			after = c.Name
			if c.Kind == meta.KindFile && !(keepRecord && c.Name == recordFile) {
				paths = append(paths, dir+"/"+c.Name)
			}
		}
		if !more {
			break
		}
	}
	jobs := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range min(deleteWorkers, len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				if _, err := m.svc.Writes.Delete(ctx, agent, UploadsWorkbench, p, 0, ""); err != nil && !isNotFound(err) {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range paths {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	return first
}

func isNotFound(err error) bool {
	var e *workbench.Error
	return errors.As(err, &e) && e.Code == workbench.CodeNotFound
}
