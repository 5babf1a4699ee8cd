package s3

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
)

// What a request asks of an object that the gateway cannot keep is refused
// (NotImplemented), never accepted and dropped: an upload a client believes encrypted,
// locked or tagged must not be stored plain, deletable or untagged. x-amz-meta-* is kept
// (metadata.go).

// refusedHeaders are the headers of a write the gateway refuses.
var refusedHeaders = []string{
	"X-Amz-Server-Side-Encryption", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id",
	"X-Amz-Server-Side-Encryption-Context", "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled",
	"X-Amz-Server-Side-Encryption-Customer-Algorithm", "X-Amz-Server-Side-Encryption-Customer-Key",
	"X-Amz-Server-Side-Encryption-Customer-Key-Md5",
	"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm",
	"X-Amz-Object-Lock-Mode", "X-Amz-Object-Lock-Retain-Until-Date", "X-Amz-Object-Lock-Legal-Hold",
	"X-Amz-Grant-Full-Control", "X-Amz-Grant-Read", "X-Amz-Grant-Read-Acp", "X-Amz-Grant-Write-Acp",
	"X-Amz-Tagging", "X-Amz-Tagging-Directive", "X-Amz-Website-Redirect-Location",
	"Cache-Control", "Content-Disposition", "Content-Language", "Expires",
}

// checkWriteHeaders refuses a write (PutObject, CopyObject) that asks for what the
// gateway does not keep: encryption, object lock, grants, tags, a storage class other
// than STANDARD, an ACL other than the private one every object has, stored response
// headers, or a content encoding other than aws-chunked's framing.
func checkWriteHeaders(h http.Header) error {
	for _, name := range refusedHeaders {
		if h.Get(name) != "" {
			return errorf(CodeNotImplemented, "%s is not implemented by this gateway; the object was not stored", strings.ToLower(name))
		}
	}
	if acl := h.Get("X-Amz-Acl"); acl != "" && acl != "private" && acl != "bucket-owner-full-control" {
		return errorf(CodeNotImplemented, "the canned ACL %q is not implemented by this gateway: every object is private to its key's root", acl)
	}
	if sc := h.Get("X-Amz-Storage-Class"); sc != "" && sc != "STANDARD" {
		return errorf(CodeNotImplemented, "the storage class %q is not implemented by this gateway (STANDARD only)", sc)
	}
	for _, enc := range strings.Split(h.Get("Content-Encoding"), ",") {
		if enc = strings.TrimSpace(enc); enc != "" && !strings.EqualFold(enc, "aws-chunked") {
			return errorf(CodeNotImplemented, "storing Content-Encoding %q is not implemented by this gateway", enc)
		}
	}
	return nil
}

// checkReadHeaders refuses a read that names a customer key: no object here is
// encrypted with one.
func checkReadHeaders(h http.Header) error {
	if h.Get("X-Amz-Server-Side-Encryption-Customer-Algorithm") != "" || h.Get("X-Amz-Server-Side-Encryption-Customer-Key") != "" {
		return errorf(CodeNotImplemented, "server-side encryption with customer keys is not implemented by this gateway")
	}
	return nil
}

// overrideHeaders are the query parameters of a GET or HEAD that set a header of its
// answer, as S3 serves them on signed requests (every request here is signed).
var overrideHeaders = []struct{ param, header string }{
	{"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"},
	{"response-content-language", "Content-Language"},
	{"response-content-type", "Content-Type"},
	{"response-expires", "Expires"},
}

// responseOverrides reads a read's response-* parameters as the headers they set (header
// name → value). InvalidArgument naming the parameter for a value that is no header value
// (overrideValue), and for a response-expires that is no HTTP date (RFC 9110 §5.6.7),
// which is answered in the IMF-fixdate form.
//
// A parameter that is absent or empty sets nothing, the same for all six: the answer
// carries the object's own header, if it has one. S3 ignores an empty override too;
// refusing only an empty response-expires, the one whose value is parsed, would make the
// six disagree.
func responseOverrides(q url.Values) (map[string]string, error) {
	var out map[string]string
	for _, o := range overrideHeaders {
		param, header := o.param, o.header
		v := q.Get(param)
		if v == "" {
			continue
		}
		if err := overrideValue(param, v); err != nil {
			return nil, err
		}
		if header == "Expires" {
			t, err := http.ParseTime(v)
			if err != nil {
				return nil, errorf(CodeInvalidArgument, "%s must be an HTTP date (such as %s)", param, http.TimeFormat)
			}
			v = t.UTC().Format(http.TimeFormat)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[header] = v
	}
	return out, nil
}

// overrideValue refuses (InvalidArgument naming param) a value v that may not be answered
// as a header's value. The rule: v is RFC 9110 §5.5's field-value (visible ASCII, SP,
// HTAB, and obs-text, the bytes 0x80–0xFF), and its obs-text is UTF-8 text holding no
// control character (Unicode Cc: C0, DEL and C1, such as U+0085 NEL) and no line or
// paragraph separator (U+2028, U+2029). httpguts.ValidHeaderFieldValue checks bytes only,
// so it passes the UTF-8 of NEL (C2 85) and U+2028 (E2 80 A8) as obs-text; a client or
// proxy that decodes the header as Latin-1 or Unicode text would read those as the end of
// a line, and invalid UTF-8 is no text at all (the byte 0x85 alone is NEL in Latin-1).
// Other non-ASCII text is answered as its UTF-8 bytes. S3 is stricter there: it refuses
// (InvalidArgument) every character past U+00FF, a value it cannot send as ISO-8859-1,
// which this gateway answers as UTF-8.
func overrideValue(param, v string) error {
	if !httpguts.ValidHeaderFieldValue(v) {
		return errorf(CodeInvalidArgument, "%s must be a header value: it holds a control character", param)
	}
	if !utf8.ValidString(v) {
		return errorf(CodeInvalidArgument, "%s must be a header value: its bytes past ASCII are not UTF-8", param)
	}
	for _, c := range v {
		if c >= utf8.RuneSelf && unicode.In(c, unicode.Cc, unicode.Zl, unicode.Zp) {
			return errorf(CodeInvalidArgument, "%s must be a header value: it holds U+%04X, a control character or a line or paragraph separator", param, c)
		}
	}
	return nil
}
