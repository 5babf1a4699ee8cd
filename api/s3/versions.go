package s3

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Versions are Cairn's history (meta/records.go: every path keeps a chain of versions,
// newest first; a delete adds a tombstone; history retention and holds decide how long
// the superseded ones stay). So a bucket's versioning is always Enabled and cannot be
// suspended, a version is a retained chain element (a body, or a tombstone as S3's delete
// marker), and since the chain is immutable a version cannot be deleted, only outlived.

// The headers that name a version and mark a delete marker.
const (
	versionHeader           = "x-amz-version-id"
	copySourceVersionHeader = "x-amz-copy-source-version-id"
	deleteMarkerHeader      = "x-amz-delete-marker"
)

// versionIDBytes is the size of a version id before hex: the generation and a tag of the
// bucket and key.
const versionIDBytes = 16

// versionID is the S3 version id of the version of bucket/path whose generation is gen
// (the shard version of the command that made it: a body's generation, a delete's version
// for its tombstone; docs/architecture.md, "Vocabulary"). It is 32 lower-case hex digits:
// the generation, big-endian, then the first 8 bytes of a SHA-256 of bucket and path.
// A generation alone names one version of a path but not one path: a command that
// writes several paths (a commit's manifest and envelope, a restore) gives them one
// generation, so the tag keeps a version id of one key from naming a version of another.
// It is stable (every node derives the same id) and never reused (generations are not).
// Clients treat it as opaque.
func versionID(bucket, path string, gen uint64) string {
	var b [versionIDBytes]byte
	binary.BigEndian.PutUint64(b[:8], gen)
	tag := versionTag(bucket, path)
	copy(b[8:], tag[:])
	return hex.EncodeToString(b[:])
}

func versionTag(bucket, path string) [8]byte {
	sum := sha256.Sum256([]byte("cairn s3 version id\x00" + bucket + "\x00" + path))
	return [8]byte(sum[:8])
}

// parseVersionID returns the generation a version id names for bucket/path: 0 when it is
// well-formed but names no version of that key (an id of another key, or S3's "null",
// which a bucket that was always versioned never has). InvalidArgument when it is no id
// this gateway issues, as S3 answers a malformed one.
func parseVersionID(id, bucket, path string) (uint64, error) {
	if id == "null" {
		return 0, nil
	}
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != versionIDBytes || strings.ToLower(id) != id {
		return 0, errorf(CodeInvalidArgument, "invalid version id specified")
	}
	gen := binary.BigEndian.Uint64(raw[:8])
	if tag := versionTag(bucket, path); gen == 0 || [8]byte(raw[8:]) != tag {
		return 0, nil
	}
	return gen, nil
}

func noSuchVersion() error {
	return errorf(CodeNoSuchVersion, "the specified version does not exist")
}

// errVersionDelete answers a delete that names a version.
var errVersionDelete = errorf(CodeNotImplemented,
	"deleting a version is not implemented: Cairn's history is immutable, so a version is never removed, only superseded; history retention decides how long it is kept")

// versionWriteRefused answers a write or delete with ?versionId=: only GET and HEAD take
// one.
func versionWriteRefused(method string) error {
	if method == http.MethodDelete {
		return errVersionDelete
	}
	return errorf(CodeNotImplemented, "versionId names a version to read; a %s makes a new version instead", method)
}

type versioningConfiguration struct {
	XMLName   xml.Name `xml:"VersioningConfiguration"`
	Xmlns     string   `xml:"xmlns,attr,omitempty"`
	Status    string   `xml:"Status,omitempty"`
	MfaDelete string   `xml:"MfaDelete,omitempty"`
}

// bucketVersioning answers GetBucketVersioning: Enabled, always (Cairn keeps every
// version of every path as history).
func (h *Handler) bucketVersioning(w http.ResponseWriter, r *request) error {
	if _, _, err := h.lookup.workspace(r); err != nil {
		return err
	}
	return writeXML(w, versioningConfiguration{Xmlns: xmlns, Status: "Enabled"})
}

// putBucketVersioning answers PutBucketVersioning: Enabled is what the bucket already is;
// Suspended (history cannot be switched off) and MFA delete are NotImplemented.
func (h *Handler) putBucketVersioning(w http.ResponseWriter, r *request) error {
	if _, _, err := h.lookup.workspace(r); err != nil {
		return err
	}
	if r.Header.Get("X-Amz-Mfa") != "" {
		return errorf(CodeNotImplemented, "MFA delete is not implemented by this gateway")
	}
	var in versioningConfiguration
	if err := readXML(r, &in, "VersioningConfiguration", maxXMLBodyBytes); err != nil {
		return err
	}
	switch {
	case in.MfaDelete != "" && in.MfaDelete != "Disabled":
		return errorf(CodeNotImplemented, "MFA delete is not implemented by this gateway")
	case in.Status == "Suspended":
		return errorf(CodeNotImplemented, "versioning cannot be suspended: Cairn keeps every version as history (history retention decides for how long)")
	case in.Status != "Enabled":
		return errorf(CodeMalformedXML, "the versioning status must be Enabled or Suspended")
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// openVersion opens what a GET or HEAD reads, the live version or the one ?versionId=
// names, and sets x-amz-version-id. A delete marker answers as S3's do: when it is the
// key's newest version, NoSuchKey; when versionId names it, MethodNotAllowed; both with
// x-amz-delete-marker: true and the marker's version id. A version id that names no
// retained version of the key is NoSuchVersion (NoSuchBucket when the bucket is missing
// or not the key's: the same answer as for any other request).
func (h *Handler) openVersion(w http.ResponseWriter, r *request, path string) (*workbench.File, error) {
	named := r.URL.Query().Has("versionId")
	var gen uint64
	var f *workbench.File
	var err error
	if named {
		if gen, err = parseVersionID(r.URL.Query().Get("versionId"), r.bucket, path); err != nil {
			return nil, err
		}
		if gen == 0 {
			if _, _, err := h.lookup.workspace(r); err != nil {
				return nil, err
			}
			return nil, noSuchVersion()
		}
		f, err = h.svc.Reads.OpenGeneration(r.Context(), r.agent, r.bucket, path, gen)
	} else {
		f, err = h.svc.Reads.Open(r.Context(), r.agent, r.bucket, path)
	}
	if err == nil {
		w.Header().Set(versionHeader, versionID(r.bucket, path, f.Info.Generation))
		return f, nil
	}
	missing := fromWorkbench(err, CodeNoSuchKey)
	if codeOf(missing) != CodeNoSuchKey {
		return nil, missing
	}
	el, ok, err := h.lookup.versionOf(r, path, gen)
	switch {
	case err != nil:
		return nil, err
	case ok && el.Entry == nil:
		hdr := w.Header()
		hdr.Set(deleteMarkerHeader, "true")
		hdr.Set(versionHeader, versionID(r.bucket, path, el.Version))
		hdr.Set("Last-Modified", time.UnixMilli(el.AtMs).UTC().Format(http.TimeFormat))
		if named {
			return nil, errorf(CodeMethodNotAllowed, "the specified method is not allowed against this resource: the version is a delete marker")
		}
	case named:
		return nil, noSuchVersion()
	}
	return nil, missing
}

// versionOf reads the retained version of path with generation gen (0: the newest) from
// a linearizable view of the bucket; false when there is none. NoSuchBucket when the
// bucket is missing.
func (l *lookup) versionOf(r *request, path string, gen uint64) (meta.FileVersion, bool, error) {
	view, ws, err := l.workspace(r)
	if err != nil {
		return meta.FileVersion{}, false, err
	}
	before := uint64(0)
	if gen != 0 {
		before = gen + 1
	}
	rows, _, err := view.History().Versions(ws, path, before, 1)
	if err != nil || len(rows) == 0 || (gen != 0 && rows[0].Version != gen) {
		return meta.FileVersion{}, false, nil
	}
	return rows[0], true, nil
}
