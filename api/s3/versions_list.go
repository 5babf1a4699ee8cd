package s3

import (
	"encoding/xml"
	"net/http"
	"strings"

	"github.com/cairnstore/cairn/meta"
)

type listVersionsResult struct {
	XMLName             xml.Name `xml:"ListVersionsResult"`
	Xmlns               string   `xml:"xmlns,attr"`
	Name                string   `xml:"Name"`
	Prefix              string   `xml:"Prefix"`
	KeyMarker           string   `xml:"KeyMarker"`
	VersionIDMarker     string   `xml:"VersionIdMarker"`
	NextKeyMarker       string   `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string   `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int      `xml:"MaxKeys"`
	Delimiter           string   `xml:"Delimiter,omitempty"`
	EncodingType        string   `xml:"EncodingType,omitempty"`
	IsTruncated         bool     `xml:"IsTruncated"`
	// Versions holds the Version and DeleteMarker elements in the listing's order (each
	// names itself in XMLName), as S3 interleaves them.
	Versions       []listedVersion `xml:"Version"`
	CommonPrefixes []listedPrefix  `xml:"CommonPrefixes"`
}

// listedVersion is a Version (a body) or a DeleteMarker (a tombstone).
type listedVersion struct {
	XMLName      xml.Name
	Key          string `xml:"Key"`
	VersionID    string `xml:"VersionId"`
	IsLatest     bool   `xml:"IsLatest"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag,omitempty"`
	Size         *int64 `xml:"Size,omitempty"`
	StorageClass string `xml:"StorageClass,omitempty"`
	Owner        owner  `xml:"Owner"`
}

// versionLister collects one page of ListObjectVersions: the lister walks every key with
// a retained version in S3's byte order (meta.HistoryView.List) and each key expands into
// its versions, newest first, paged from the view's history (meta.HistoryView.Versions)
// so no more than the page is ever held.
type versionLister struct {
	*lister
	r       *request
	enc     string
	out     *listVersionsResult
	lastKey string // the key of the last version on the page, and its version id
	lastID  string
	err     error
}

// expand adds key's versions below generation below (0: all of them, the newest being
// the latest) to the page; false when the page filled or the view failed.
func (v *versionLister) expand(key string, below uint64) bool {
	before := below
	for {
		if !v.room() {
			return false
		}
		rows, more, err := v.view.History().Versions(v.ws, key, before, v.p.max-v.n)
		if err != nil {
			if meta.CodeOf(err) == meta.CodeNotFound {
				return true // nothing retained (a key the walk saw is never so in one view)
			}
			v.err = err
			return false
		}
		for _, fv := range rows {
			id := versionID(v.r.bucket, key, fv.Version)
			lv := listedVersion{XMLName: xml.Name{Local: "DeleteMarker"}, Key: encodeKey(key, v.enc), VersionID: id,
				IsLatest: before == 0, LastModified: iso8601(fv.AtMs), Owner: rootOwner(v.r)}
			if e := fv.Entry; e != nil {
				size := e.Size
				lv.XMLName.Local, lv.LastModified = "Version", iso8601(e.ModifiedAtMs)
				lv.ETag, lv.Size, lv.StorageClass = objectETag(e.Digest, e.Fields), &size, "STANDARD"
			}
			v.out.Versions = append(v.out.Versions, lv)
			v.n++
			v.last, v.lastKey, v.lastID = key, key, id
			before = fv.Version
		}
		if !more {
			return true
		}
	}
}

// listObjectVersions answers ListObjectVersions: every retained version and delete
// marker of the keys the prefix and delimiter select, keys in S3's byte order and each
// key's versions newest first. A page ends after max-keys versions, delete markers and
// common prefixes; the next goes on from key-marker (and version-id-marker: the versions
// of that key older than the one it names), so paging neither repeats nor skips what
// did not change between pages.
func (h *Handler) listObjectVersions(w http.ResponseWriter, r *request) error {
	q := r.URL.Query()
	p, enc, err := listQuery(q)
	if err != nil {
		return err
	}
	keyMarker, idMarker := q.Get("key-marker"), q.Get("version-id-marker")
	out := listVersionsResult{Xmlns: xmlns, Name: r.bucket, Prefix: encodeKey(p.prefix, enc), KeyMarker: encodeKey(keyMarker, enc),
		VersionIDMarker: idMarker, MaxKeys: p.max, Delimiter: encodeKey(p.delimiter, enc), EncodingType: enc}
	var below uint64 // the generation key-marker's versions continue below (0: after key-marker)
	if idMarker != "" {
		if keyMarker == "" {
			return errorf(CodeInvalidArgument, "a version-id marker cannot be specified without a key marker")
		}
		if below, err = parseVersionID(idMarker, r.bucket, keyMarker); err != nil {
			return err
		}
		if below == 0 {
			return errorf(CodeInvalidArgument, "the version-id marker names no version of the key marker")
		}
	}
	p.after = keyMarker
	view, ws, err := h.lookup.workspace(r)
	if err != nil {
		return err
	}
	v := &versionLister{lister: &lister{view: view, ws: ws, p: p, history: true}, r: r, enc: enc, out: &out}
	v.key = func(key string, _ *meta.Entry) bool { return v.expand(key, 0) }
	if p.max > 0 {
		// The rest of key-marker's versions come first: it sorts before every key after it.
		more := true
		if below != 0 && v.selects(keyMarker) {
			more = v.expand(keyMarker, below)
		}
		if more {
			err = v.run()
		}
		if err = firstErr(err, v.err); err != nil {
			return fromWorkbench(err, CodeNoSuchBucket)
		}
	}
	out.IsTruncated = v.truncated
	for _, pre := range v.prefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, listedPrefix{Prefix: encodeKey(pre, enc)})
	}
	if v.truncated {
		out.NextKeyMarker = encodeKey(v.last, enc)
		if v.last == v.lastKey {
			out.NextVersionIDMarker = v.lastID
		}
	}
	return writeXML(w, out)
}

// selects reports whether the listing shows key's versions: a valid key under the prefix
// that the delimiter does not roll up into a common prefix.
func (v *versionLister) selects(key string) bool {
	if _, err := objectPath(key); err != nil || !strings.HasPrefix(key, v.p.prefix) {
		return false
	}
	return v.p.delimiter == "" || !strings.Contains(key[len(v.p.prefix):], v.p.delimiter)
}

// firstErr is the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
