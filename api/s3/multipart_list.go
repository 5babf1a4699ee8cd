package s3

import (
	"cmp"
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Listing multipart uploads and their parts (multipart.go).

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
func (m *multipart) listParts(w http.ResponseWriter, r *request) error {
	u, err := m.openUpload(r)
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
	view, ws, _, err := m.svc.Reads.ViewAt(r.bookkeeping(), r.agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	who := owner{ID: u.rec.Principal, DisplayName: u.rec.Principal}
	out := listPartsResult{Xmlns: xmlns, Bucket: r.bucket, Key: r.key, UploadID: u.id, Initiator: who,
		Owner: rootOwner(r), StorageClass: "STANDARD", PartNumberMarker: marker, MaxParts: limit, Parts: []partInfo{}}
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
			out.Parts = append(out.Parts, partInfo{PartNumber: n, LastModified: iso8601(c.Entry.ModifiedAtMs), ETag: objectETag(c.Entry.Digest, c.Entry.Fields), Size: c.Entry.Size})
			out.NextPartNumberMarker = n
		}
		if !more {
			return writeXML(w, out)
		}
	}
}

type listUploadsResult struct {
	XMLName            xml.Name       `xml:"ListMultipartUploadsResult"`
	Xmlns              string         `xml:"xmlns,attr"`
	Bucket             string         `xml:"Bucket"`
	KeyMarker          string         `xml:"KeyMarker"`
	UploadIDMarker     string         `xml:"UploadIdMarker"`
	NextKeyMarker      string         `xml:"NextKeyMarker"`
	NextUploadIDMarker string         `xml:"NextUploadIdMarker"`
	Prefix             string         `xml:"Prefix"`
	Delimiter          string         `xml:"Delimiter,omitempty"`
	EncodingType       string         `xml:"EncodingType,omitempty"`
	MaxUploads         int            `xml:"MaxUploads"`
	IsTruncated        bool           `xml:"IsTruncated"`
	Uploads            []uploadInfo   `xml:"Upload"`
	CommonPrefixes     []listedPrefix `xml:"CommonPrefixes"`
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

// listUploads lists the bucket's uploads in progress of the keys the caller sees
// (multipart_access.go) by key, then by when they started, after key-marker (and
// upload-id-marker), as S3 does; a delimiter rolls keys up into common prefixes. It reads
// every upload record of the bucket from one view (memory in the bucket's uploads in
// progress) and first aborts the expired ones it finds (a bounded number).
func (m *multipart) listUploads(w http.ResponseWriter, r *request) error {
	if _, _, err := m.lookup.workspace(r); err != nil {
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
	m.remember(r.agent)
	if _, err := m.reclaimBucket(r.bookkeeping(), r.agent, r.bucket, reclaimPerRound); err != nil {
		m.log.Warn("s3: reclaiming expired uploads", "request_id", r.id, "err", err)
	}
	ups, err := m.bucketUploads(r.bookkeeping(), r.agent, r.bucket)
	if err != nil {
		return err
	}
	// An upload of a key outside the caller's prefixes is not there (multipart_access.go).
	ups = slices.DeleteFunc(ups, func(u upload) bool { return !r.showsKey(u.rec.Key) })
	pfx, delim := q.Get("prefix"), q.Get("delimiter")
	keyMarker, idMarker := q.Get("key-marker"), q.Get("upload-id-marker")
	enc := func(s string) string {
		if q.Get("encoding-type") == "url" {
			return url.QueryEscape(s)
		}
		return s
	}
	out := listUploadsResult{Xmlns: xmlns, Bucket: r.bucket, KeyMarker: enc(keyMarker), UploadIDMarker: idMarker, Prefix: enc(pfx),
		Delimiter: enc(delim), EncodingType: q.Get("encoding-type"), MaxUploads: limit, Uploads: []uploadInfo{}}
	who := rootOwner(r)
	var lastPrefix string
	emit := func(key, id string) bool {
		if len(out.Uploads)+len(out.CommonPrefixes) == limit {
			// A page of 0 (max-uploads=0) is not truncated, as ListObjectsV2's max-keys=0:
			// it names no marker to go on from, and a client would ask for it again forever.
			out.IsTruncated = limit > 0
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
				out.CommonPrefixes = append(out.CommonPrefixes, listedPrefix{enc(cp)})
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
func (m *multipart) bucketUploads(ctx context.Context, agent, bucket string) ([]upload, error) {
	view, ws, _, err := m.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
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
			u, err := m.readUpload(ctx, agent, view, ws, bucket, c.Name)
			if codeOf(err) == CodeNoSuchUpload {
				continue
			}
			if err != nil {
				return nil, err
			}
			if !m.expired(u) && u.rec.Completed == nil && !u.orphaned(view, agent, bucket) {
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
