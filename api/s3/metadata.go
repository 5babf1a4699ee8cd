package s3

import (
	"encoding/hex"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/meta"
)

// An object's metadata is its file's writer-attached fields (meta.Entry.Fields): a PUT's
// x-amz-meta-NAME: VALUE stores the string field NAME, and a GET or HEAD answers every
// field of the revision as x-amz-meta-NAME (a number or boolean set through another
// surface as its text). Metadata set through REST is metadata here, and the reverse; a
// PUT replaces the object's metadata with its own, as on S3.
//
// Two namespaces are not metadata: "artifact." (Cairn's built-in fields) and "s3." (what
// the gateway records of a body, fieldContentMD5). A PUT naming either is refused.

const (
	metaHeaderPrefix = "x-amz-meta-"
	// gatewayFieldPrefix is the namespace of the fields the gateway records itself.
	gatewayFieldPrefix = "s3."
	// fieldContentMD5 records the MD5 a PUT's Content-MD5 promised and the body matched,
	// bound to the body it describes: "<md5 hex>:<sha256 hex>". It is the object's ETag
	// while the revision's digest is that SHA-256 (objectETag).
	fieldContentMD5 = gatewayFieldPrefix + "content-md5"
	// fieldChecksumPrefix and an algorithm's name ("crc32", …) record the flexible
	// checksum of a PUT's body, "<base64>:<sha256 hex>", answered on a whole GET or HEAD
	// that asks for checksums.
	fieldChecksumPrefix = gatewayFieldPrefix + "checksum-"
	// gatewayFields is the most fields the gateway records of one body.
	gatewayFields = 4
	// maxMetadataBytes is S3's bound on an object's user-defined metadata: the names
	// (without x-amz-meta-) and values of all of it, in bytes.
	maxMetadataBytes = 2048
)

// metadataFields reads the x-amz-meta-* headers of a write as fields; nil when there are
// none. A header repeated is one value, its values joined by "," (as S3 does).
func metadataFields(h http.Header) (map[string]meta.FieldValue, error) {
	var fields map[string]meta.FieldValue
	total := 0
	for key, values := range h {
		lower := strings.ToLower(key)
		name, ok := strings.CutPrefix(lower, metaHeaderPrefix)
		if !ok {
			continue
		}
		value := strings.Join(values, ",")
		total += len(name) + len(value)
		if total > maxMetadataBytes {
			return nil, errorf(CodeMetadataTooLarge, "your metadata headers exceed the maximum allowed metadata size: %d bytes of names and values", maxMetadataBytes)
		}
		if strings.HasPrefix(name, gatewayFieldPrefix) || strings.HasPrefix(name, "artifact.") {
			return nil, errorf(CodeInvalidArgument, "%s%s: the s3. and artifact. names are kept by Cairn, not by writers", metaHeaderPrefix, name)
		}
		if err := meta.ValidateFieldName("metadata", name); err != nil {
			return nil, errorf(CodeInvalidArgument, "%s%s: a metadata name here is a Cairn field name: 1..%d bytes of a-z, 0-9, '_', '-' and '.', starting with a letter",
				metaHeaderPrefix, name, meta.MaxFieldNameBytes)
		}
		if len(value) > meta.MaxFieldStringBytes || !utf8.ValidString(value) {
			return nil, errorf(CodeInvalidArgument, "%s%s: a metadata value must be valid UTF-8 of at most %d bytes", metaHeaderPrefix, name, meta.MaxFieldStringBytes)
		}
		if fields == nil {
			fields = map[string]meta.FieldValue{}
		}
		fields[name] = meta.FieldValue{Kind: meta.FieldString, Str: value}
	}
	if len(fields) > meta.MaxFieldsPerFile-gatewayFields {
		return nil, errorf(CodeInvalidArgument, "at most %d x-amz-meta-* headers: an object has at most %d fields, %d kept by the gateway",
			meta.MaxFieldsPerFile-gatewayFields, meta.MaxFieldsPerFile, gatewayFields)
	}
	return fields, nil
}

// setMetadata answers a revision's fields as x-amz-meta-* headers, but those of the
// gateway's and Cairn's own namespaces.
func setMetadata(h http.Header, fields map[string]meta.FieldValue) {
	for name, v := range fields {
		if strings.HasPrefix(name, gatewayFieldPrefix) || strings.HasPrefix(name, "artifact.") {
			continue
		}
		value := v.Str
		if v.Kind != meta.FieldString {
			value = v.String()
		}
		// Lower case as S3 answers it (a client shows the name as sent).
		h[metaHeaderPrefix+name] = []string{value}
	}
}

// bodyFields returns the fields that record what the gateway checked of the body whose
// SHA-256 is digest, each bound to it ("<value>:<sha256 hex>"): the MD5 a Content-MD5
// promised (fieldContentMD5), and the flexible checksum the request sent or named
// (fieldChecksumPrefix + its name, base64 as S3 answers it). nil when there is neither.
func bodyFields(body *Body, digest meta.Digest) map[string]meta.FieldValue {
	bound := ":" + hex.EncodeToString(digest[:])
	var fields map[string]meta.FieldValue
	add := func(name, value string) {
		if fields == nil {
			fields = map[string]meta.FieldValue{}
		}
		fields[name] = meta.FieldValue{Kind: meta.FieldString, Str: value + bound}
	}
	if sum, ok := body.ContentMD5(); ok {
		add(fieldContentMD5, hex.EncodeToString(sum))
	}
	if name, value, ok := body.Checksum(); ok {
		add(fieldChecksumPrefix+name, value)
	}
	return fields
}

// boundField returns the value of a field bodyFields recorded, when it describes the
// body whose SHA-256 is digest.
func boundField(fields map[string]meta.FieldValue, name string, digest meta.Digest) (string, bool) {
	v, ok := fields[name]
	if !ok || v.Kind != meta.FieldString {
		return "", false
	}
	value, sha, ok := strings.Cut(v.Str, ":")
	if !ok || sha != hex.EncodeToString(digest[:]) {
		return "", false
	}
	return value, true
}

// setChecksum answers the flexible checksum recorded for the revision's whole body, as
// a GET or HEAD with x-amz-checksum-mode: ENABLED asks.
func setChecksum(h http.Header, digest meta.Digest, fields map[string]meta.FieldValue) {
	for name := range checksumAlgorithms {
		if v, ok := boundField(fields, fieldChecksumPrefix+name, digest); ok {
			h.Set(checksumHeaderPrefix+name, v)
			h.Set("X-Amz-Checksum-Type", "FULL_OBJECT")
			return
		}
	}
}

// objectETag is a revision's ETag, quoted. When a PUT's Content-MD5 was checked against
// this very body (fieldContentMD5 bound to digest), it is that MD5 in hex, as S3 answers.
// Otherwise it is "sha256-" and the hex SHA-256 of the bytes: a strong validator the
// gateway has without hashing any byte twice, whose "-" tells the tools that compare an
// ETag with a local MD5 (s3cmd, rclone) that it is none, as they read a multipart ETag.
func objectETag(digest meta.Digest, fields map[string]meta.FieldValue) string {
	if md5hex, ok := boundField(fields, fieldContentMD5, digest); ok && len(md5hex) == 32 {
		return `"` + md5hex + `"`
	}
	return `"sha256-` + hex.EncodeToString(digest[:]) + `"`
}
