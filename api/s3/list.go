package s3

import (
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/meta"
)

// Listing objects. S3 lists keys in the byte order of the whole key, and Cairn's
// directories list their children in the byte order of their names; the two differ where
// a directory's name is a prefix of a sibling's followed by a byte below '/' ("data" and
// "data.csv": the key "data.csv" comes before "data/x"). The walk orders siblings by name
// and holds back each directory until the siblings that sort before its "name/" are out
// (a stack, since such directories nest: "a", then "a.d", both before "a0"), so it emits
// keys in S3's order from one linearizable view of the workbench.

const (
	// DefaultMaxKeys is S3's page size, and the most a page may hold.
	DefaultMaxKeys = 1000
	// listPage is how many children one directory read takes from the view.
	listPage = 1000
)

type listParams struct {
	prefix, delimiter string
	// after: emit only keys and common prefixes above it in byte order ("" from the first).
	after string
	max   int
}

// lister collects one page of a listing.
type lister struct {
	view *meta.View
	ws   *meta.Workspace
	p    listParams
	// history walks every key with a retained version, deleted ones too
	// (meta.HistoryView.List), not only the live ones.
	history bool
	// key, when set, takes each key of the walk instead of the page (ListObjectVersions
	// expands it into its versions, versions.go); false ends the walk.
	key       func(key string, e *meta.Entry) bool
	contents  []object
	prefixes  []string
	n         int // items on the page
	truncated bool
	last      string // the last key or common prefix emitted
}

type object struct {
	key string
	e   *meta.Entry
}

// run walks from the directory the prefix names up to its last '/'.
func (l *lister) run() error {
	dir := ""
	if i := strings.LastIndexByte(l.p.prefix, '/'); i >= 0 {
		dir = l.p.prefix[:i]
	}
	_, err := l.dir(dir)
	var e *meta.Error
	if errors.As(err, &e) && (e.Code == meta.CodeNotFound || e.Code == meta.CodeNotDirectory || e.Code == meta.CodeNotArtifact) {
		return nil // nothing is under a prefix whose directory does not exist
	}
	return err
}

// emit adds one key (e its live entry) or common prefix (prefix) to the page; false once
// the page is full (the listing is then truncated: there is more).
func (l *lister) emit(key string, e *meta.Entry, prefix bool) bool {
	if !prefix && l.key != nil {
		return l.key(key, e)
	}
	if !l.room() {
		return false
	}
	if prefix {
		l.prefixes = append(l.prefixes, key)
	} else {
		l.contents = append(l.contents, object{key, e})
	}
	l.n++
	l.last = key
	return true
}

// room reports whether the page takes one more item; false marks the listing truncated.
func (l *lister) room() bool {
	if l.n == l.p.max {
		l.truncated = true
		return false
	}
	return true
}

// children reads one page of dir's children after the name after.
func (l *lister) children(dir, after string) ([]meta.DirEntry, bool, error) {
	if l.history {
		return l.view.History().List(l.ws, dir, after, listPage)
	}
	return l.view.List(l.ws, dir, after, listPage)
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// dir walks the children of dir in S3 order; false when the page filled.
func (l *lister) dir(dir string) (bool, error) {
	var pending []string // directories held back, innermost last
	after := ""
	for {
		entries, more, err := l.children(dir, after)
		if err != nil {
			return false, err
		}
		for _, c := range entries {
			for len(pending) > 0 && c.Name >= pending[len(pending)-1]+"/" {
				top := pending[len(pending)-1]
				pending = pending[:len(pending)-1]
				if ok, err := l.subtree(dir, top); !ok || err != nil {
					return ok, err
				}
			}
			switch {
			case c.Kind == meta.KindDirectory:
				pending = append(pending, c.Name)
			case c.Kind == meta.KindFile:
				if key := join(dir, c.Name); strings.HasPrefix(key, l.p.prefix) && key > l.p.after && !l.emit(key, c.Entry, false) {
					return false, nil
				}
			}
			after = c.Name
		}
		if !more {
			break
		}
	}
	for len(pending) > 0 {
		top := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if ok, err := l.subtree(dir, top); !ok || err != nil {
			return ok, err
		}
	}
	return true, nil
}

// subtree emits what directory name of dir holds: one common prefix when the delimiter
// rolls it up, else its keys.
func (l *lister) subtree(dir, name string) (bool, error) {
	key := join(dir, name) + "/"
	within := strings.HasPrefix(key, l.p.prefix)
	if !within && !strings.HasPrefix(l.p.prefix, key) {
		return true, nil // no key below it has the prefix
	}
	if l.p.after >= key && !strings.HasPrefix(l.p.after, key) {
		return true, nil // every key below it sorts before after
	}
	if within && l.p.delimiter == "/" {
		if key > l.p.after && !l.emit(key, nil, true) {
			return false, nil
		}
		return true, nil
	}
	return l.dir(join(dir, name))
}

type listObjectsResult struct {
	XMLName        xml.Name       `xml:"ListBucketResult"`
	Xmlns          string         `xml:"xmlns,attr"`
	Name           string         `xml:"Name"`
	Prefix         string         `xml:"Prefix"`
	Marker         *string        `xml:"Marker,omitempty"`
	NextMarker     string         `xml:"NextMarker,omitempty"`
	StartAfter     string         `xml:"StartAfter,omitempty"`
	ContToken      string         `xml:"ContinuationToken,omitempty"`
	NextContToken  string         `xml:"NextContinuationToken,omitempty"`
	KeyCount       *int           `xml:"KeyCount,omitempty"`
	MaxKeys        int            `xml:"MaxKeys"`
	Delimiter      string         `xml:"Delimiter,omitempty"`
	EncodingType   string         `xml:"EncodingType,omitempty"`
	IsTruncated    bool           `xml:"IsTruncated"`
	Contents       []listedObject `xml:"Contents"`
	CommonPrefixes []listedPrefix `xml:"CommonPrefixes"`
}

type listedObject struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
	// Owner is the bucket's owner (rootOwner): on every V1 object, and on a V2 object only
	// with fetch-owner=true, as on S3.
	Owner *owner `xml:"Owner,omitempty"`
}

type listedPrefix struct {
	Prefix string `xml:"Prefix"`
}

// listObjects answers ListObjectsV2 (v2) and ListObjects (V1). A continuation token is
// the last key or common prefix of the page before (tokenVersion, then base64url), so a listing goes on
// after a write in between without repeating or skipping what did not change. Each object
// names its owner in V1, and in V2 with fetch-owner=true.
func (h *Handler) listObjects(w http.ResponseWriter, r *request, v2 bool) error {
	q := r.URL.Query()
	p, enc, err := listQuery(q)
	if err != nil {
		return err
	}
	fetch := !v2 // V1 names every object's owner; fetch-owner is V2's alone
	if v2 {
		if fetch, err = fetchOwner(q); err != nil {
			return err
		}
	}
	var who *owner
	if fetch {
		o := rootOwner(r)
		who = &o
	}
	out := listObjectsResult{Xmlns: xmlns, Name: r.bucket, Prefix: encodeKey(p.prefix, enc), MaxKeys: p.max,
		Delimiter: encodeKey(p.delimiter, enc), EncodingType: enc}
	if v2 {
		out.StartAfter = encodeKey(q.Get("start-after"), enc)
		p.after = q.Get("start-after")
		if tok := q.Get("continuation-token"); tok != "" {
			after, ok := parseToken(tok)
			if !ok {
				return errorf(CodeInvalidArgument, "the continuation token is not one this gateway issued")
			}
			out.ContToken, p.after = tok, max(p.after, after)
		}
	} else {
		marker := encodeKey(q.Get("marker"), enc)
		out.Marker, p.after = &marker, q.Get("marker")
	}
	view, ws, err := h.lookup.workspace(r)
	if err != nil {
		return err
	}
	l := &lister{view: view, ws: ws, p: p}
	if p.max > 0 {
		if err := l.run(); err != nil {
			return fromWorkbench(err, CodeNoSuchBucket)
		}
	}
	out.IsTruncated = l.truncated
	for _, o := range l.contents {
		out.Contents = append(out.Contents, listedObject{Key: encodeKey(o.key, enc), LastModified: iso8601(o.e.ModifiedAtMs),
			ETag: objectETag(o.e.Digest, o.e.Fields), Size: o.e.Size, StorageClass: "STANDARD", Owner: who})
	}
	for _, pre := range l.prefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, listedPrefix{Prefix: encodeKey(pre, enc)})
	}
	if v2 {
		out.KeyCount = &l.n
		if l.truncated {
			out.NextContToken = tokenVersion + base64.RawURLEncoding.EncodeToString([]byte(l.last))
		}
	} else if l.truncated && p.delimiter != "" {
		out.NextMarker = encodeKey(l.last, enc)
	}
	return writeXML(w, out)
}

// listQuery reads the parameters every listing takes: prefix, delimiter (only /),
// max-keys (at most DefaultMaxKeys) and encoding-type (only url, returned as enc).
func listQuery(q url.Values) (p listParams, enc string, err error) {
	p = listParams{prefix: q.Get("prefix"), delimiter: q.Get("delimiter"), max: DefaultMaxKeys}
	if p.delimiter != "" && p.delimiter != "/" {
		return p, "", errorf(CodeNotImplemented, "the only delimiter this gateway lists by is /")
	}
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, "", errorf(CodeInvalidArgument, "max-keys must be a number from 0 to %d", DefaultMaxKeys)
		}
		p.max = min(n, DefaultMaxKeys)
	}
	enc = q.Get("encoding-type")
	if enc != "" && enc != "url" {
		return p, "", errorf(CodeInvalidArgument, "encoding-type must be url")
	}
	return p, enc, nil
}

// fetchOwner reads ListObjectsV2's fetch-owner: a boolean, false when absent;
// InvalidArgument naming the parameter otherwise.
func fetchOwner(q url.Values) (bool, error) {
	v := q.Get("fetch-owner")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errorf(CodeInvalidArgument, "fetch-owner must be true or false")
	}
	return b, nil
}

// tokenVersion starts every continuation token this gateway issues.
const tokenVersion = "c1-"

// parseToken returns the key a continuation token resumes after; false for a token this
// gateway did not issue.
func parseToken(tok string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, tokenVersion)
	if !ok {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(raw) == 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw), true
}

// encodeKey applies EncodingType=url: every byte but the unreserved ones and '/' as %XX,
// which both URL decoders clients use (with and without '+' as a space) read back.
func encodeKey(s, enc string) string {
	if enc != "url" {
		return s
	}
	parts := strings.Split(s, "/")
	for i, p := range parts {
		parts[i] = uriEncode(p)
	}
	return strings.Join(parts, "/")
}

// checkListType accepts a listing's list-type only as "2", ListObjectsV2, named once: a
// listing without list-type is ListObjects (V1). Any other value is InvalidArgument naming
// the parameter, as on S3, rather than a listing of a kind the client did not ask for.
// That includes "1": S3 documents no list-type for V1 and no SDK sends one, so a value
// the gateway does not know is refused rather than guessed.
func checkListType(q url.Values) error {
	if v := q["list-type"]; len(v) != 1 || v[0] != "2" {
		return errorf(CodeInvalidArgument, "list-type must be 2 (ListObjectsV2), or absent for ListObjects")
	}
	return nil
}
