package s3

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

type copyObjectResult struct {
	XMLName      xml.Name `xml:"CopyObjectResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

// copySource parses x-amz-copy-source: "bucket/key" or "/bucket/key", URL-encoded, with
// an optional "?versionId=" naming the version to copy ("" for the live one); a key past
// MaxKeyBytes is KeyTooLongError. A key no object can have is the source's to answer for
// (openCopySource: NoSuchKey).
func copySource(h string) (bucket, key, versionID string, err error) {
	p, query, _ := strings.Cut(strings.TrimPrefix(h, "/"), "?")
	if query != "" {
		q, qerr := url.ParseQuery(query)
		if qerr != nil || len(q) != 1 || len(q["versionId"]) != 1 {
			return "", "", "", errorf(CodeInvalidArgument, "x-amz-copy-source takes bucket/key and at most ?versionId=")
		}
		versionID = q.Get("versionId")
	}
	rawBucket, rawKey, ok := strings.Cut(p, "/")
	if !ok || rawBucket == "" || rawKey == "" {
		return "", "", "", errorf(CodeInvalidArgument, "x-amz-copy-source must be bucket/key")
	}
	if bucket, err = url.PathUnescape(rawBucket); err != nil {
		return "", "", "", errorf(CodeInvalidArgument, "x-amz-copy-source's bucket is not a valid escaped path segment")
	}
	if key, err = url.PathUnescape(rawKey); err != nil {
		return "", "", "", errorf(CodeInvalidArgument, "x-amz-copy-source's key is not a valid escaped path")
	}
	if err := checkKeyLength(key); err != nil {
		return "", "", "", err
	}
	if bucket == UploadsWorkbench {
		return "", "", "", errorf(CodeNoSuchBucket, "the specified bucket does not exist")
	}
	return bucket, key, versionID, nil
}

// openCopySource opens the version a copy reads and checks the source conditions
// (x-amz-copy-source-if-*) on it.
func (l *lookup) openCopySource(r *request, bucket, path, versionID string) (*workbench.File, error) {
	f, err := l.openCopyVersion(r, bucket, path, versionID)
	if err != nil {
		return nil, err
	}
	if conditions(r.Header, "X-Amz-Copy-Source-", objectETag(f.Info.Digest, f.Info.Fields), time.UnixMilli(f.Info.ModifiedAtMs).UTC().Truncate(time.Second)) != 0 {
		return nil, preconditionFailed()
	}
	return f, nil
}

// openCopyVersion opens the version a copy reads: the live one, or the one versionID
// names; a key no object can have answers as a missing one (lookup.absent). A delete marker cannot be copied (InvalidRequest, as S3 answers); a version id
// that names no retained version of the key is NoSuchVersion.
func (l *lookup) openCopyVersion(r *request, bucket, key, versionID string) (*workbench.File, error) {
	path, ok := readPath(key)
	if !ok {
		return nil, l.absent(r, bucket, versionID != "", versionID)
	}
	src := *r
	src.bucket = bucket
	if versionID == "" {
		f, err := l.svc.Reads.Open(r.Context(), r.agent, bucket, path)
		if err != nil {
			return nil, l.objectError(&src, err)
		}
		return f, nil
	}
	gen, err := parseVersionID(versionID, bucket, path)
	if err != nil {
		return nil, err
	}
	if gen != 0 {
		f, err := l.svc.Reads.OpenGeneration(r.Context(), r.agent, bucket, path, gen)
		if err == nil {
			return f, nil
		}
		if e := fromWorkbench(err, CodeNoSuchKey); codeOf(e) != CodeNoSuchKey {
			return nil, e
		}
	}
	el, ok, err := l.versionOf(&src, path, gen)
	switch {
	case err != nil:
		return nil, err
	case gen != 0 && ok && el.Entry == nil:
		return nil, errorf(CodeInvalidRequest, "the source of a copy request may not specifically refer to a delete marker by version id")
	}
	return nil, noSuchVersion()
}

// copyObject copies an object of the key's root without moving a byte
// (workbench.Writes.Copy: the copy references the source's segments). The source
// conditions (x-amz-copy-source-if-*) are checked on the revision read, and the copy is
// of exactly that revision; the target's (If-None-Match: *, If-Match) are the write's
// compare-and-swap. The copy keeps the source's metadata; x-amz-metadata-directive
// REPLACE gives it the request's Content-Type and x-amz-meta-* instead.
func (h *Handler) copyObject(w http.ResponseWriter, r *request) error {
	srcBucket, srcPath, srcVersion, err := copySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	path, err := objectPath(r.key)
	if err != nil {
		return err
	}
	if err := checkWriteHeaders(r.Header); err != nil {
		return err
	}
	directive := r.Header.Get("X-Amz-Metadata-Directive")
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return errorf(CodeInvalidArgument, "x-amz-metadata-directive must be COPY or REPLACE")
	}
	if srcBucket == r.bucket && srcPath == path && srcVersion == "" && directive != "REPLACE" {
		return errorf(CodeInvalidRequest, "this copy request is illegal because it is trying to copy an object to itself without changing the object's metadata")
	}
	src, err := h.lookup.openCopySource(r, srcBucket, srcPath, srcVersion)
	if err != nil {
		return err
	}
	req := workbench.CopyRequest{Agent: r.agent, SrcWorkbench: srcBucket, SrcPath: srcPath, IfSrcGeneration: src.Info.Generation,
		Workbench: r.bucket, Path: path}
	if srcVersion != "" {
		req.IfSrcGeneration, req.SrcGeneration = 0, src.Info.Generation
	}
	fields := src.Info.Fields
	if directive == "REPLACE" {
		req.ContentType = r.Header.Get("Content-Type")
		if fields, err = metadataFields(r.Header); err != nil {
			return err
		}
		// What the gateway knows of the bytes stays true of the copy's same bytes.
		for name, v := range src.Info.Fields {
			if strings.HasPrefix(name, gatewayFieldPrefix) {
				if fields == nil {
					fields = map[string]meta.FieldValue{}
				}
				fields[name] = v
			}
		}
		req.ReplaceFields, req.Fields = true, fields
	}
	if req.Cond, req.IfGeneration, err = h.lookup.writeCondition(r, path); err != nil {
		return err
	}
	res, err := h.svc.Writes.Copy(r.Context(), req)
	if err != nil {
		if clash := keyClash(err, req.Cond); clash != nil {
			return clash
		}
		return h.lookup.objectError(r, err)
	}
	w.Header().Set(versionHeader, versionID(r.bucket, path, res.Generation))
	w.Header().Set(copySourceVersionHeader, versionID(srcBucket, srcPath, src.Info.Generation))
	return writeXML(w, copyObjectResult{Xmlns: xmlns, ETag: objectETag(res.Digest, fields), LastModified: iso8601(time.Now().UnixMilli())})
}
