package s3

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// putObject streams the body through the write path: it publishes the file only after
// the body ended with every signature and digest checked (Signed.Body), so a body that
// fails a check leaves the path as it was. If-None-Match: * creates only; If-Match: ETag
// replaces only the version whose ETag it names, as one compare-and-swap on its
// generation.
func (h *Handler) putObject(w http.ResponseWriter, r *request) error {
	path, fields, err := writeTarget(r)
	if err != nil {
		return err
	}
	req := workbench.WriteRequest{Agent: r.agent, Workbench: r.bucket, Path: path, ContentType: r.Header.Get("Content-Type"), Fields: fields}
	if req.Cond, req.IfGeneration, err = h.lookup.writeCondition(r, path); err != nil {
		return err
	}
	body, size, err := r.signed.ObjectBody(r.Request)
	if err != nil {
		return err
	}
	if size > MaxPutSize {
		return errorf(CodeEntityTooLarge, "your proposed upload exceeds the maximum allowed size: a PUT is at most %d bytes; upload larger objects in parts", int64(MaxPutSize))
	}
	req.Body, req.SizeHint = body, size
	var stored map[string]meta.FieldValue
	req.AfterBody = func(digest meta.Digest) (map[string]meta.FieldValue, error) {
		if err := body.CheckSHA256(digest); err != nil {
			return nil, err
		}
		stored = bodyFields(body, digest)
		return stored, nil
	}
	res, err := h.svc.Writes.Write(r.Context(), req)
	if err != nil {
		if berr := body.Err(); berr != nil {
			return berr
		}
		if clash := keyClash(err, req.Cond); clash != nil {
			return clash
		}
		return h.lookup.objectError(r, err)
	}
	w.Header().Set("ETag", objectETag(res.Digest, stored))
	w.Header().Set(versionHeader, versionID(r.bucket, path, res.Generation))
	if name, value, ok := body.Checksum(); ok {
		w.Header().Set(checksumHeaderPrefix+name, value)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// writeTarget checks what a write of a new object (PutObject, CreateMultipartUpload)
// asks: the key as a path, headers the gateway keeps (checkWriteHeaders), and the
// metadata it stores.
func writeTarget(r *request) (path string, fields map[string]meta.FieldValue, err error) {
	if path, err = objectPath(r.key); err != nil {
		return "", nil, err
	}
	if err := checkWriteHeaders(r.Header); err != nil {
		return "", nil, err
	}
	if fields, err = metadataFields(r.Header); err != nil {
		return "", nil, err
	}
	return path, fields, nil
}

// writeCondition reads a write's preconditions on its target: If-None-Match: * creates
// only; If-Match: ETag replaces only the revision whose ETag it names, as a condition on
// that revision's generation, so the check and the write are one compare-and-swap. If-Match
// on a key with no current object is NoSuchKey (NoSuchBucket when the bucket is missing).
func (l *lookup) writeCondition(r *request, path string) (meta.Condition, uint64, error) {
	switch inm, im := r.Header.Get("If-None-Match"), r.Header.Get("If-Match"); {
	case inm != "" && im != "":
		return 0, 0, errorf(CodeNotImplemented, "If-Match and If-None-Match together are not supported on a write")
	case inm == "*":
		return meta.CondCreateOnly, 0, nil
	case inm != "":
		return 0, 0, errorf(CodeNotImplemented, "If-None-Match on a write takes only *")
	case im != "":
		f, err := l.svc.Reads.Open(r.Context(), r.agent, r.bucket, path)
		if err != nil {
			// No current object (never written, or deleted: S3's delete marker) is
			// NoSuchKey, as on S3 (Amazon S3 User Guide, "Conditional writes"), not 412.
			return 0, 0, l.objectError(r, err)
		}
		if !etagMatches(im, objectETag(f.Info.Digest, f.Info.Fields)) {
			return 0, 0, preconditionFailed()
		}
		return meta.CondIfGeneration, f.Info.Generation, nil
	}
	return meta.CondNone, 0, nil
}

// keyClash is the answer to a write the tree refused where the caller set no condition: a
// key that is a prefix of other keys, or one below a key that is an object. In Cairn a key
// is a path, and a path is a file or a directory, never both; S3 would store both, so the
// answer says why instead of a misleading NoSuchKey or PreconditionFailed. nil for any
// other error.
func keyClash(err error, cond meta.Condition) error {
	var e *workbench.Error
	if cond != meta.CondNone || !errors.As(err, &e) {
		return nil
	}
	switch e.Code {
	case workbench.CodeNotDirectory, workbench.CodeNotArtifact, workbench.CodeConflict, workbench.CodeAlreadyExists:
		return errorf(CodeInvalidArgument, "%s: a key here is a path, and cannot be both an object and the prefix of other keys", e.Message)
	}
	return nil
}

func preconditionFailed() error {
	return errorf(CodePreconditionFailed, "at least one of the pre-conditions you specified did not hold")
}

// etagMatches reports whether a list of entity tags (If-Match, If-None-Match) names tag;
// "*" names every tag.
func etagMatches(list, tag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == tag || `"`+t+`"` == tag {
			return true
		}
	}
	return false
}

// getObject answers GET and HEAD: the conditions of RFC 9110 §13 in S3's order (If-Match
// before If-Unmodified-Since, If-None-Match before If-Modified-Since), then one byte range
// or one part (?partNumber=, parts.go).
func (h *Handler) getObject(w http.ResponseWriter, r *request, withBody bool) error {
	if err := checkReadHeaders(r.Header); err != nil {
		return err
	}
	overrides, err := responseOverrides(r.URL.Query())
	if err != nil {
		return err
	}
	path, ok := readPath(r.key)
	if !ok {
		q := r.URL.Query()
		return h.lookup.absent(r, r.bucket, q.Has("versionId"), q.Get("versionId"))
	}
	f, err := h.openVersion(w, r, path) // versions.go
	if err != nil {
		return err
	}
	etag := objectETag(f.Info.Digest, f.Info.Fields)
	modified := time.UnixMilli(f.Info.ModifiedAtMs).UTC().Truncate(time.Second)
	hdr := w.Header()
	hdr.Set("ETag", etag)
	hdr.Set("Last-Modified", modified.Format(http.TimeFormat))
	hdr.Set("Accept-Ranges", "bytes")
	contentType := f.Info.ContentType
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	hdr.Set("Content-Type", contentType)
	hdr.Set("X-Content-Type-Options", "nosniff")
	setMetadata(hdr, f.Info.Fields)
	for name, v := range overrides {
		hdr.Set(name, v)
	}
	if status := conditions(r.Header, "", etag, modified); status != 0 {
		if status == http.StatusPreconditionFailed {
			return preconditionFailed()
		}
		w.WriteHeader(status)
		return nil
	}
	offset, length, partial, err := byteRange(r.Header.Get("Range"), f.Info.Size)
	if r.URL.Query().Has("partNumber") {
		var parts int
		if offset, length, parts, err = partRange(r.Request, f.Info.Fields, f.Info.Size); err != nil {
			return err
		}
		if partial = parts > 0; partial {
			hdr.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(parts))
		}
	}
	if err != nil {
		hdr.Set("Content-Range", "bytes */"+strconv.FormatInt(f.Info.Size, 10))
		return err
	}
	hdr.Set("Content-Length", strconv.FormatInt(length, 10))
	status := http.StatusOK
	if partial {
		status = http.StatusPartialContent
		hdr.Set("Content-Range", "bytes "+strconv.FormatInt(offset, 10)+"-"+strconv.FormatInt(offset+length-1, 10)+"/"+strconv.FormatInt(f.Info.Size, 10))
	} else if strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") {
		// Only on a whole object's bytes: a client checks the body it gets against it, and
		// the body of a 304, 412 or 416 is no object's (boto3 fails on such an error).
		setChecksum(hdr, f.Info.Digest, f.Info.Fields)
	}
	if !withBody || length == 0 {
		w.WriteHeader(status)
		return nil
	}
	rc, err := f.Reader(r.Context(), offset, length)
	if err != nil {
		return h.lookup.objectError(r, err)
	}
	defer rc.Close()
	w.WriteHeader(status)
	if _, err := io.Copy(w, rc); err != nil {
		// The status is out: the client sees a body shorter than Content-Length.
		h.log.Warn("s3: a read ended early", "request_id", r.id, "err", err)
	}
	return nil
}

// conditions evaluates a read's preconditions, the headers If-Match, If-None-Match,
// If-Modified-Since and If-Unmodified-Since after prefix (a copy's source conditions are
// "X-Amz-Copy-Source-If-Match", …); 0 when the read goes on, else the status (304 or 412)
// to answer.
func conditions(h http.Header, prefix, etag string, modified time.Time) int {
	im, inm := h.Get(prefix+"If-Match"), h.Get(prefix+"If-None-Match")
	if im != "" && !etagMatches(im, etag) {
		return http.StatusPreconditionFailed
	}
	if t, err := http.ParseTime(h.Get(prefix + "If-Unmodified-Since")); im == "" && err == nil && modified.After(t) {
		return http.StatusPreconditionFailed
	}
	if inm != "" && etagMatches(inm, etag) {
		return http.StatusNotModified
	}
	if t, err := http.ParseTime(h.Get(prefix + "If-Modified-Since")); inm == "" && err == nil && !modified.After(t) {
		return http.StatusNotModified
	}
	return 0
}

// byteRange parses one Range of bytes (bytes=a-b, bytes=a-, bytes=-n) against size. A
// header that is not one byte range is ignored, as S3 does (the whole object); a range
// starting past the end, or a suffix range of an empty object (which has no last bytes),
// is InvalidRange.
func byteRange(h string, size int64) (offset, length int64, partial bool, err error) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if h == "" || !ok || strings.Contains(spec, ",") {
		return 0, size, false, nil
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, size, false, nil
	}
	invalid := errorf(CodeInvalidRange, "the requested range is not satisfiable")
	if first == "" {
		n, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || n < 0 {
			return 0, size, false, nil
		}
		if n == 0 || size == 0 {
			return 0, 0, false, invalid
		}
		n = min(n, size)
		return size - n, n, true, nil
	}
	a, perr := strconv.ParseInt(first, 10, 64)
	if perr != nil || a < 0 {
		return 0, size, false, nil
	}
	if a >= size {
		return 0, 0, false, invalid
	}
	b := size - 1
	if last != "" {
		if b, perr = strconv.ParseInt(last, 10, 64); perr != nil || b < a {
			return 0, size, false, nil
		}
		b = min(b, size-1)
	}
	return a, b - a + 1, true, nil
}

// deleteObject removes the file; deleting a key that does not exist succeeds, as in S3.
// If-Match deletes only the revision whose ETag it names (one compare-and-swap on its
// generation); the conditions on a version, a time or a size are not served.
func (h *Handler) deleteObject(w http.ResponseWriter, r *request) error {
	for _, name := range []string{"X-Amz-If-Match-Last-Modified-Time", "X-Amz-If-Match-Size"} {
		if r.Header.Get(name) != "" {
			return errorf(CodeNotImplemented, "%s is not implemented by this gateway", strings.ToLower(name))
		}
	}
	marker, err := h.deleteKey(r, r.key, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	if marker != 0 {
		w.Header().Set(deleteMarkerHeader, "true")
		w.Header().Set(versionHeader, versionID(r.bucket, r.key, marker))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteKey deletes key, only at the revision whose ETag ifMatch names when it is set
// (PreconditionFailed otherwise, also for a missing key); a missing key is no error
// without a condition, nor a key no object can have (readPath). It returns the generation
// of the tombstone (the delete marker), 0 when there was nothing to delete.
func (h *Handler) deleteKey(r *request, key, ifMatch string) (uint64, error) {
	path, ok := readPath(key)
	if !ok {
		if _, _, err := h.lookup.workspace(r); err != nil {
			return 0, err
		}
		if ifMatch != "" {
			return 0, preconditionFailed()
		}
		return 0, nil
	}
	var gen uint64
	if ifMatch != "" {
		f, err := h.svc.Reads.Open(r.Context(), r.agent, r.bucket, path)
		if err != nil {
			if e := h.lookup.objectError(r, err); codeOf(e) != CodeNoSuchKey {
				return 0, e
			}
			return 0, preconditionFailed()
		}
		if !etagMatches(ifMatch, objectETag(f.Info.Digest, f.Info.Fields)) {
			return 0, preconditionFailed()
		}
		gen = f.Info.Generation
	}
	marker, err := h.svc.Writes.Delete(r.Context(), r.agent, r.bucket, path, gen, "")
	if err != nil {
		e := h.lookup.objectError(r, err)
		switch codeOf(e) {
		case CodeNoSuchKey:
			if gen != 0 {
				return 0, preconditionFailed()
			}
			return 0, nil
		case CodePreconditionFailed:
			return 0, preconditionFailed()
		}
		return 0, e
	}
	return marker, nil
}

// maxDeleteObjects is S3's bound on the keys of one DeleteObjects request.
const maxDeleteObjects = 1000

type deleteRequest struct {
	Quiet   bool `xml:"Quiet"`
	Objects []struct {
		Key string `xml:"Key"`
		// A version, or the conditions of S3's conditional deletes: ETag is served, a
		// version, time or size is refused for its key (NotImplemented), never ignored.
		VersionID        string `xml:"VersionId"`
		ETag             string `xml:"ETag"`
		LastModifiedTime string `xml:"LastModifiedTime"`
		Size             string `xml:"Size"`
	} `xml:"Object"`
}

type deleteResult struct {
	XMLName xml.Name        `xml:"DeleteResult"`
	Xmlns   string          `xml:"xmlns,attr"`
	Deleted []deletedObject `xml:"Deleted"`
	Errors  []deleteError   `xml:"Error"`
}

type deletedObject struct {
	Key                   string `xml:"Key"`
	DeleteMarker          bool   `xml:"DeleteMarker,omitempty"`
	DeleteMarkerVersionID string `xml:"DeleteMarkerVersionId,omitempty"`
}

type deleteError struct {
	Key     string `xml:"Key"`
	Code    Code   `xml:"Code"`
	Message string `xml:"Message"`
}

// deleteObjects deletes up to 1,000 keys, each on its own (S3's DeleteObjects is not
// atomic either); each key's outcome is in the answer.
func (h *Handler) deleteObjects(w http.ResponseWriter, r *request) error {
	var in deleteRequest
	if err := readXML(r, &in, "Delete", maxXMLBodyBytes); err != nil {
		return err
	}
	if len(in.Objects) == 0 || len(in.Objects) > maxDeleteObjects {
		return errorf(CodeMalformedXML, "a Delete document names 1 to %d objects", maxDeleteObjects)
	}
	if _, _, err := h.lookup.workspace(r); err != nil {
		return err
	}
	out := deleteResult{Xmlns: xmlns}
	for _, o := range in.Objects {
		err := checkKeyLength(o.Key)
		var marker uint64
		switch {
		case err != nil:
		case o.Key == "":
			err = errorf(CodeInvalidArgument, "an Object of a Delete document names its Key")
		case o.VersionID != "":
			err = errVersionDelete
		case o.LastModifiedTime != "" || o.Size != "":
			err = errorf(CodeNotImplemented, "deleting on a time or size condition is not implemented by this gateway")
		default:
			marker, err = h.deleteKey(r, o.Key, o.ETag)
		}
		var e *Error
		switch {
		case err == nil && !in.Quiet:
			d := deletedObject{Key: o.Key}
			if marker != 0 {
				d.DeleteMarker, d.DeleteMarkerVersionID = true, versionID(r.bucket, o.Key, marker)
			}
			out.Deleted = append(out.Deleted, d)
		case errors.As(err, &e):
			out.Errors = append(out.Errors, deleteError{Key: o.Key, Code: e.Code, Message: e.Message})
		case err != nil:
			out.Errors = append(out.Errors, deleteError{Key: o.Key, Code: CodeInternalError, Message: "we encountered an internal error; please try again"})
		}
	}
	return writeXML(w, out)
}
