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
	"io"
	"net/http"
	"net/url"
	"slices"
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
	// maxRecordBytes bounds an upload record read back.
	maxRecordBytes = 64 << 10
	// maxCompleteBody bounds a CompleteMultipartUpload document (10,000 parts with every
	// checksum fit well below it).
	maxCompleteBody = 4 << 20
)

// uploadRecord is the body of an upload's record file.
type uploadRecord struct {
	Key         string `json:"key"`
	ContentType string `json:"content_type,omitempty"`
	InitiatedMs int64  `json:"initiated_ms"`
	Principal   string `json:"principal,omitempty"`
}

// upload is an upload found: its id, record and directory in UploadsWorkbench.
type upload struct {
	id  string
	rec uploadRecord
	dir string
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

// multipart serves the multipart operation op.
func (h *Handler) multipart(w http.ResponseWriter, r *request, op string) error {
	switch op {
	case "ListMultipartUploads":
		return h.listUploads(w, r.op(op))
	case "CreateMultipartUpload":
		return h.createUpload(w, r.op(op))
	case "UploadPart":
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			return h.uploadPart(w, r.op("UploadPartCopy"))
		}
		return h.uploadPart(w, r.op(op))
	case "CompleteMultipartUpload":
		return h.completeUpload(w, r.op(op))
	case "AbortMultipartUpload":
		return h.abortUpload(w, r.op(op))
	}
	return h.listParts(w, r.op(op))
}

func noSuchUpload() error {
	return errorf(CodeNoSuchUpload, "the specified upload does not exist: it may have been aborted or completed")
}

func (h *Handler) minPartSize() int64 {
	if h.cfg.MinPartSize > 0 {
		return h.cfg.MinPartSize
	}
	return DefaultMinPartSize
}

func (h *Handler) uploadDeadline() time.Duration {
	if h.cfg.UploadDeadline > 0 {
		return h.cfg.UploadDeadline
	}
	return DefaultUploadDeadline
}

// now is the clock of uploads' deadlines: uploadClock when a test set one, else the
// gateway's.
func (h *Handler) now() time.Time {
	if h.uploadClock != nil {
		return h.uploadClock()
	}
	if h.cfg.Now != nil {
		return h.cfg.Now()
	}
	return time.Now()
}

type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

// createUpload starts an upload: its record, written create-only in UploadsWorkbench. It
// first aborts the bucket's expired uploads (lazily, a bounded number).
func (h *Handler) createUpload(w http.ResponseWriter, r *request) error {
	path, err := objectPath(r.key)
	if err != nil {
		return err
	}
	if err := checkWriteHeaders(r.Header); err != nil {
		return err
	}
	if _, _, err := h.workspace(r); err != nil {
		return err
	}
	h.remember(r.agent)
	if _, err := h.reclaimBucket(r.Context(), r.agent, r.bucket, reclaimPerRound); err != nil {
		h.log.Warn("s3: reclaiming expired uploads", "request_id", r.id, "err", err)
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	rec := uploadRecord{Key: path, ContentType: r.Header.Get("Content-Type"), InitiatedMs: h.now().UnixMilli(), Principal: workbench.PrincipalID(r.Context())}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := h.svc.Writes.Write(r.Context(), workbench.WriteRequest{Agent: r.agent, Workbench: UploadsWorkbench,
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
// started for another key, or has expired.
func (h *Handler) openUpload(r *request) (upload, error) {
	if _, _, err := h.workspace(r); err != nil {
		return upload{}, err
	}
	id := r.URL.Query().Get("uploadId")
	if !validUploadID(id) {
		return upload{}, noSuchUpload()
	}
	view, ws, _, err := h.svc.Reads.ViewAt(r.Context(), r.agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		if codeOf(fromWorkbench(err, CodeNoSuchUpload)) == CodeNoSuchUpload {
			return upload{}, noSuchUpload()
		}
		return upload{}, fromWorkbench(err, CodeNoSuchUpload)
	}
	u, err := h.readUpload(r.Context(), r.agent, view, ws, r.bucket, id)
	if err != nil {
		return upload{}, err
	}
	if u.rec.Key != r.key || h.expired(u) {
		return upload{}, noSuchUpload()
	}
	return u, nil
}

// readUpload reads an upload's record from view: NoSuchUpload when it has none.
func (h *Handler) readUpload(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, bucket, id string) (upload, error) {
	dir := bucket + "/" + id
	e, err := view.File(ws, dir+"/"+recordFile)
	if err != nil {
		if meta.CodeOf(err) == meta.CodeNotFound || meta.CodeOf(err) == meta.CodeNotDirectory {
			return upload{}, noSuchUpload()
		}
		return upload{}, fromWorkbench(workbench.AsError(err), CodeNoSuchUpload)
	}
	raw, err := h.svc.Reads.ReadEntry(ctx, agent, e, maxRecordBytes)
	if err != nil {
		return upload{}, fromWorkbench(err, CodeNoSuchUpload)
	}
	u := upload{id: id, dir: dir}
	if err := json.Unmarshal(raw, &u.rec); err != nil {
		return upload{}, fmt.Errorf("upload record %s: %w", dir, err)
	}
	return u, nil
}

func (h *Handler) expired(u upload) bool {
	return h.now().Sub(time.UnixMilli(u.rec.InitiatedMs)) > h.uploadDeadline()
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
func (h *Handler) uploadPart(w http.ResponseWriter, r *request) error {
	n, err := partNumber(r.URL.Query())
	if err != nil {
		return err
	}
	if err := checkReadHeaders(r.Header); err != nil {
		return err
	}
	u, err := h.openUpload(r)
	if err != nil {
		return err
	}
	path := u.dir + "/" + partName(n)
	if r.Header.Get("X-Amz-Copy-Source") != "" {
		return h.copyPart(w, r, path)
	}
	body, size, err := r.signed.Body(r.Request)
	if err != nil {
		return err
	}
	if size > MaxPartSize {
		return errorf(CodeEntityTooLarge, "a part is at most %d bytes", int64(MaxPartSize))
	}
	res, err := h.svc.Writes.Write(r.Context(), workbench.WriteRequest{Agent: r.agent, Workbench: UploadsWorkbench, Path: path,
		Body: body, SizeHint: size})
	if err != nil {
		if berr := body.Err(); berr != nil {
			return berr
		}
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	w.Header().Set("ETag", etagOf(res.Digest))
	if name, value, ok := body.Checksum(); ok {
		w.Header().Set(checksumHeaderPrefix+name, value)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// copyPart is UploadPartCopy. A whole source is copied without moving a byte
// (workbench.Writes.Copy); a range of it (x-amz-copy-source-range) is read and written
// through the write path, where its segments dedupe against the source's wherever the
// chunker cuts alike.
func (h *Handler) copyPart(w http.ResponseWriter, r *request, path string) error {
	srcBucket, srcKey, err := copySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	srcPath, err := objectPath(srcKey)
	if err != nil {
		return err
	}
	srcReq := *r
	srcReq.bucket = srcBucket
	src, err := h.svc.Reads.Open(r.Context(), r.agent, srcBucket, srcPath)
	if err != nil {
		return h.objectError(&srcReq, err)
	}
	if conditions(r.Header, "X-Amz-Copy-Source-", etagOf(src.Info.Digest), time.UnixMilli(src.Info.ModifiedAtMs).UTC().Truncate(time.Second)) != 0 {
		return preconditionFailed()
	}
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
			return h.objectError(&srcReq, err)
		}
		defer rc.Close()
		res, err = h.svc.Writes.Write(r.Context(), workbench.WriteRequest{Agent: r.agent, Workbench: UploadsWorkbench, Path: path,
			Body: rc, SizeHint: length})
		if err != nil {
			return fromWorkbench(err, CodeNoSuchUpload)
		}
	} else {
		if src.Info.Size > MaxPartSize {
			return errorf(CodeInvalidRequest, "the source is larger than a part may be (%d bytes): copy a range of it", int64(MaxPartSize))
		}
		res, err = h.svc.Writes.Copy(r.Context(), workbench.CopyRequest{Agent: r.agent, SrcWorkbench: srcBucket, SrcPath: srcPath,
			IfSrcGeneration: src.Info.Generation, Workbench: UploadsWorkbench, Path: path, ContentType: "application/octet-stream"})
		if err != nil {
			return fromWorkbench(err, CodeNoSuchUpload)
		}
	}
	return writeXML(w, copyPartResult{Xmlns: xmlns, ETag: etagOf(res.Digest), LastModified: iso8601(h.now().UnixMilli())})
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

// completeUpload publishes the object as one command whose body is the listed parts'
// segments in order (workbench.Writes.Compose), under the request's If-None-Match: * or
// If-Match, then removes the upload. The parts listed must exist with the ETags given
// (InvalidPart), in ascending order (InvalidPartOrder), every one but the last at least
// the least part size (EntityTooSmall).
func (h *Handler) completeUpload(w http.ResponseWriter, r *request) error {
	path, err := objectPath(r.key)
	if err != nil {
		return err
	}
	u, err := h.openUpload(r)
	if err != nil {
		return err
	}
	body, _, err := r.signed.Body(r.Request)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxCompleteBody))
	if err != nil {
		return err
	}
	var in completeRequest
	if err := xml.Unmarshal(raw, &in); err != nil || len(in.Parts) == 0 {
		return errorf(CodeMalformedXML, "the CompleteMultipartUpload document is not well-formed XML naming at least one part")
	}
	view, ws, _, err := h.svc.Reads.ViewAt(r.Context(), r.agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	parts := make([]workbench.ComposePart, len(in.Parts))
	for i, p := range in.Parts {
		if i > 0 && p.PartNumber <= in.Parts[i-1].PartNumber {
			return errorf(CodeInvalidPartOrder, "the list of parts was not in ascending order: parts must be ordered by part number")
		}
		invalid := errorf(CodeInvalidPart, "part %d could not be found, or its entity tag did not match the part's", p.PartNumber)
		if p.PartNumber < 1 || p.PartNumber > MaxPartNumber {
			return invalid
		}
		e, err := view.File(ws, u.dir+"/"+partName(p.PartNumber))
		if err != nil || !etagMatches(p.ETag, etagOf(e.Digest)) {
			return invalid
		}
		if i < len(in.Parts)-1 && e.Size < h.minPartSize() {
			return errorf(CodeEntityTooSmall, "part %d is %d bytes: every part but the last must be at least %d bytes", p.PartNumber, e.Size, h.minPartSize())
		}
		parts[i] = workbench.ComposePart{Path: u.dir + "/" + partName(p.PartNumber), IfGeneration: e.Generation}
	}
	req := workbench.ComposeRequest{Agent: r.agent, SrcWorkbench: UploadsWorkbench, Parts: parts,
		Workbench: r.bucket, Path: path, ContentType: u.rec.ContentType}
	if req.Cond, req.IfGeneration, err = h.writeCondition(r, path); err != nil {
		return err
	}
	res, err := h.svc.Writes.Compose(r.Context(), req)
	if err != nil {
		if clash := keyClash(err, req.Cond); clash != nil {
			return clash
		}
		var e *workbench.Error
		if req.Cond == meta.CondNone && errors.As(err, &e) && e.Code == workbench.CodeConflict {
			// A part was uploaded again since it was checked above.
			return errorf(CodeInvalidPart, "a part changed while the upload was completed: list the parts and complete again")
		}
		return h.objectError(r, err)
	}
	if err := h.removeUpload(r.Context(), r.agent, u.dir); err != nil {
		h.log.Warn("s3: removing a completed upload", "request_id", r.id, "err", err)
	}
	return writeXML(w, completeResult{Xmlns: xmlns, Location: "/" + r.bucket + "/" + r.key, Bucket: r.bucket, Key: r.key, ETag: etagOf(res.Digest)})
}

// abortUpload removes the upload and its parts: NoSuchUpload for it afterwards.
func (h *Handler) abortUpload(w http.ResponseWriter, r *request) error {
	u, err := h.openUpload(r)
	if err != nil {
		return err
	}
	if err := h.removeUpload(r.Context(), r.agent, u.dir); err != nil {
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
func (h *Handler) removeUpload(ctx context.Context, agent, dir string) error {
	if _, err := h.svc.Writes.Delete(ctx, agent, UploadsWorkbench, dir+"/"+recordFile, 0, ""); err != nil && !isNotFound(err) {
		return err
	}
	view, ws, _, err := h.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
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
			if c.Kind == meta.KindFile {
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
				if _, err := h.svc.Writes.Delete(ctx, agent, UploadsWorkbench, p, 0, ""); err != nil && !isNotFound(err) {
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

type listPartsResult struct {
	XMLName              xml.Name   `xml:"ListPartsResult"`
	Xmlns                string     `xml:"xmlns,attr"`
	Bucket               string     `xml:"Bucket"`
	Key                  string     `xml:"Key"`
	UploadID             string     `xml:"UploadId"`
	Initiator            owner      `xml:"Initiator"`
	Owner                owner      `xml:"Owner"`
	StorageClass         string     `xml:"StorageClass"`
	PartNumberMarker     int        `xml:"PartNumberMarker"`
	NextPartNumberMarker int        `xml:"NextPartNumberMarker"`
	MaxParts             int        `xml:"MaxParts"`
	IsTruncated          bool       `xml:"IsTruncated"`
	Parts                []partInfo `xml:"Part"`
}

type partInfo struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
}

// maxListParts is S3's page size of ListParts, and the most a page may hold.
const maxListParts = 1000

// pageSize parses a page size parameter: its default when absent, at most max.
func pageSize(q url.Values, name string, max int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return max, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errorf(CodeInvalidArgument, "%s must be a non-negative integer", name)
	}
	return min(n, max), nil
}

// listParts lists an upload's parts above part-number-marker in ascending order.
func (h *Handler) listParts(w http.ResponseWriter, r *request) error {
	u, err := h.openUpload(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := pageSize(q, "max-parts", maxListParts)
	if err != nil {
		return err
	}
	marker := 0
	if v := q.Get("part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return errorf(CodeInvalidArgument, "part-number-marker must be a non-negative integer")
		}
	}
	view, ws, _, err := h.svc.Reads.ViewAt(r.Context(), r.agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	who := owner{ID: u.rec.Principal, DisplayName: u.rec.Principal}
	out := listPartsResult{Xmlns: xmlns, Bucket: r.bucket, Key: r.key, UploadID: u.id, Initiator: who,
		Owner: owner{ID: r.agent, DisplayName: r.agent}, StorageClass: "STANDARD", PartNumberMarker: marker, MaxParts: limit, Parts: []partInfo{}}
	after := ""
	if marker > 0 {
		after = partName(min(marker, MaxPartNumber))
	}
	for {
		entries, more, err := view.List(ws, u.dir, after, listPage)
		if err != nil {
			return fromWorkbench(workbench.AsError(err), CodeNoSuchUpload)
		}
		for _, c := range entries {
			after = c.Name
			n, err := strconv.Atoi(c.Name)
			if c.Kind != meta.KindFile || err != nil || n <= marker {
				continue
			}
			if len(out.Parts) == limit {
				out.IsTruncated = true
				return writeXML(w, out)
			}
			out.Parts = append(out.Parts, partInfo{PartNumber: n, LastModified: iso8601(c.Entry.ModifiedAtMs), ETag: etagOf(c.Entry.Digest), Size: c.Entry.Size})
			out.NextPartNumberMarker = n
		}
		if !more {
			return writeXML(w, out)
		}
	}
}

type listUploadsResult struct {
	XMLName            xml.Name     `xml:"ListMultipartUploadsResult"`
	Xmlns              string       `xml:"xmlns,attr"`
	Bucket             string       `xml:"Bucket"`
	KeyMarker          string       `xml:"KeyMarker"`
	UploadIDMarker     string       `xml:"UploadIdMarker"`
	NextKeyMarker      string       `xml:"NextKeyMarker"`
	NextUploadIDMarker string       `xml:"NextUploadIdMarker"`
	Prefix             string       `xml:"Prefix"`
	Delimiter          string       `xml:"Delimiter,omitempty"`
	MaxUploads         int          `xml:"MaxUploads"`
	IsTruncated        bool         `xml:"IsTruncated"`
	Uploads            []uploadInfo `xml:"Upload"`
	CommonPrefixes     []prefix     `xml:"CommonPrefixes"`
}

type prefix struct {
	Prefix string `xml:"Prefix"`
}

type uploadInfo struct {
	Key          string `xml:"Key"`
	UploadID     string `xml:"UploadId"`
	Initiator    owner  `xml:"Initiator"`
	Owner        owner  `xml:"Owner"`
	StorageClass string `xml:"StorageClass"`
	Initiated    string `xml:"Initiated"`
}

// maxListUploads is S3's page size of ListMultipartUploads, and the most a page may hold.
const maxListUploads = 1000

// listUploads lists the bucket's uploads in progress by key, then by when they started,
// after key-marker (and upload-id-marker), as S3 does; a delimiter rolls keys up into
// common prefixes. It reads every upload record of the bucket from one view (memory in
// the bucket's uploads in progress) and first aborts the expired ones it finds (a bounded
// number).
func (h *Handler) listUploads(w http.ResponseWriter, r *request) error {
	if _, _, err := h.workspace(r); err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := pageSize(q, "max-uploads", maxListUploads)
	if err != nil {
		return err
	}
	if et := q.Get("encoding-type"); et != "" && et != "url" {
		return errorf(CodeInvalidArgument, "encoding-type must be url")
	}
	h.remember(r.agent)
	if _, err := h.reclaimBucket(r.Context(), r.agent, r.bucket, reclaimPerRound); err != nil {
		h.log.Warn("s3: reclaiming expired uploads", "request_id", r.id, "err", err)
	}
	ups, err := h.bucketUploads(r.Context(), r.agent, r.bucket)
	if err != nil {
		return err
	}
	pfx, delim := q.Get("prefix"), q.Get("delimiter")
	keyMarker, idMarker := q.Get("key-marker"), q.Get("upload-id-marker")
	enc := func(s string) string {
		if q.Get("encoding-type") == "url" {
			return url.QueryEscape(s)
		}
		return s
	}
	out := listUploadsResult{Xmlns: xmlns, Bucket: r.bucket, KeyMarker: enc(keyMarker), UploadIDMarker: idMarker, Prefix: enc(pfx),
		Delimiter: enc(delim), MaxUploads: limit, Uploads: []uploadInfo{}}
	who := owner{ID: r.agent, DisplayName: r.agent}
	var lastPrefix string
	emit := func(key, id string) bool {
		if len(out.Uploads)+len(out.CommonPrefixes) == limit {
			out.IsTruncated = true
			return false
		}
		out.NextKeyMarker, out.NextUploadIDMarker = enc(key), id
		return true
	}
	start := 0
	if keyMarker != "" {
		start = len(ups)
		for i, u := range ups {
			if u.rec.Key > keyMarker {
				start = i
				break
			}
			if u.rec.Key == keyMarker && idMarker != "" && u.id == idMarker {
				start = i + 1
				break
			}
		}
	}
	for _, u := range ups[start:] {
		k := u.rec.Key
		if !strings.HasPrefix(k, pfx) {
			continue
		}
		if delim != "" {
			if i := strings.Index(k[len(pfx):], delim); i >= 0 {
				cp := k[:len(pfx)+i+len(delim)]
				if cp == lastPrefix || keyMarker != "" && cp <= keyMarker {
					continue
				}
				if !emit(cp, "") {
					break
				}
				lastPrefix = cp
				out.CommonPrefixes = append(out.CommonPrefixes, prefix{enc(cp)})
				continue
			}
		}
		if !emit(k, u.id) {
			break
		}
		out.Uploads = append(out.Uploads, uploadInfo{Key: enc(k), UploadID: u.id, Initiator: owner{ID: u.rec.Principal, DisplayName: u.rec.Principal},
			Owner: who, StorageClass: "STANDARD", Initiated: iso8601(u.rec.InitiatedMs)})
	}
	if !out.IsTruncated {
		out.NextKeyMarker, out.NextUploadIDMarker = "", ""
	}
	return writeXML(w, out)
}

// bucketUploads reads the bucket's uploads in progress, by key, then start, then id.
func (h *Handler) bucketUploads(ctx context.Context, agent, bucket string) ([]upload, error) {
	view, ws, _, err := h.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, fromWorkbench(err, CodeNoSuchBucket)
	}
	var out []upload
	after := ""
	for {
		entries, more, err := view.List(ws, bucket, after, listPage)
		if meta.CodeOf(err) == meta.CodeNotFound {
			return nil, nil
		}
		if err != nil {
			return nil, fromWorkbench(workbench.AsError(err), CodeNoSuchBucket)
		}
		for _, c := range entries {
			after = c.Name
			if c.Kind != meta.KindDirectory {
				continue
			}
			u, err := h.readUpload(ctx, agent, view, ws, bucket, c.Name)
			if codeOf(err) == CodeNoSuchUpload {
				continue
			}
			if err != nil {
				return nil, err
			}
			if !h.expired(u) {
				out = append(out, u)
			}
		}
		if !more {
			break
		}
	}
	slices.SortFunc(out, func(a, b upload) int {
		if c := strings.Compare(a.rec.Key, b.rec.Key); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.rec.InitiatedMs, b.rec.InitiatedMs), strings.Compare(a.id, b.id))
	})
	return out, nil
}

// reclaimBucket removes at most limit of the bucket's uploads that expired (started more
// than the upload deadline ago) or have no record (the parts a crashed completion or
// abort left). It returns how many it removed.
func (h *Handler) reclaimBucket(ctx context.Context, agent, bucket string, limit int) (int, error) {
	view, ws, _, err := h.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		if isNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	var dead []string
	after := ""
	for len(dead) < limit {
		entries, more, err := view.List(ws, bucket, after, listPage)
		if meta.CodeOf(err) == meta.CodeNotFound {
			return 0, nil
		}
		if err != nil {
			return 0, workbench.AsError(err)
		}
		for _, c := range entries {
			after = c.Name
			if c.Kind != meta.KindDirectory || len(dead) == limit {
				continue
			}
			u, err := h.readUpload(ctx, agent, view, ws, bucket, c.Name)
			switch {
			case codeOf(err) == CodeNoSuchUpload:
				dead = append(dead, bucket+"/"+c.Name)
			case err != nil:
				return 0, err
			case h.expired(u):
				dead = append(dead, u.dir)
			}
		}
		if !more {
			break
		}
	}
	for i, dir := range dead {
		if err := h.removeUpload(ctx, agent, dir); err != nil {
			return i, err
		}
	}
	return len(dead), nil
}

// remember notes a root that keeps uploads, for the sweep.
func (h *Handler) remember(agent string) { h.uploadRoots.Store(agent, struct{}{}) }

// Reclaim runs one sweep round: in every root this gateway served a multipart request
// of since it started, it removes expired uploads and leftover parts (at most
// reclaimPerRound per bucket). It acts as the node (no principal), through the S3
// surface. It returns how many uploads it removed.
func (h *Handler) Reclaim(ctx context.Context) (int, error) {
	ctx = workbench.WithSurface(ctx, Surface+"/Reclaim")
	total := 0
	var first error
	h.uploadRoots.Range(func(k, _ any) bool {
		agent := k.(string)
		view, ws, _, err := h.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
		if err != nil {
			if !isNotFound(err) {
				first = cmp.Or(first, err)
			}
			return ctx.Err() == nil
		}
		after := ""
		for {
			entries, more, err := view.List(ws, "", after, listPage)
			if err != nil {
				first = cmp.Or(first, error(workbench.AsError(err)))
				break
			}
			for _, c := range entries {
				after = c.Name
				if c.Kind != meta.KindDirectory {
					continue
				}
				n, err := h.reclaimBucket(ctx, agent, c.Name, reclaimPerRound)
				total += n
				first = cmp.Or(first, err)
			}
			if !more {
				break
			}
		}
		return ctx.Err() == nil
	})
	return total, first
}

// RunReclaim sweeps every ReclaimInterval until ctx ends.
func (h *Handler) RunReclaim(ctx context.Context) {
	every := h.cfg.ReclaimInterval
	if every <= 0 {
		every = DefaultReclaimInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := h.Reclaim(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("s3: reclaiming expired uploads", "removed", n, "err", err)
		}
	}
}
