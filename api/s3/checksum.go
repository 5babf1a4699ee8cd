package s3

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"net/http"
	"strings"

	"github.com/minio/crc64nvme"
)

// The flexible checksums of S3 ("Checking object integrity", Amazon S3 User Guide): each
// is sent as x-amz-checksum-<name>, the base64 of the big-endian digest, in a header or
// in an aws-chunked body's trailer.
var checksumAlgorithms = map[string]func() hash.Hash{
	"crc32":     func() hash.Hash { return crc32.NewIEEE() },
	"crc32c":    func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"crc64nvme": func() hash.Hash { return crc64nvme.New() },
	"sha1":      sha1.New,
	"sha256":    sha256.New,
}

const checksumHeaderPrefix = "x-amz-checksum-"

// checksumOf returns the algorithm named by a checksum header ("x-amz-checksum-crc32").
func checksumOf(header string) (string, bool) {
	name, ok := strings.CutPrefix(strings.ToLower(header), checksumHeaderPrefix)
	if !ok {
		return "", false
	}
	_, known := checksumAlgorithms[name]
	return name, known
}

// verifier is one digest a body must match once read whole.
type verifier struct {
	h    hash.Hash
	want string // nil-able: the trailer fills it in
	// encode turns the digest into want's form.
	encode func([]byte) string
	code   Code
	what   string
}

// expectations are the digests a request's headers promise for its body: Content-MD5,
// a hex x-amz-content-sha256, and at most one x-amz-checksum-* (in a header, or named by
// x-amz-trailer and found in the trailer). The checksum is computed even when only
// x-amz-sdk-checksum-algorithm names it, so the answer can carry it.
type expectations struct {
	list []*verifier
	// checksum is the flexible checksum's verifier, nil if none.
	checksum     *verifier
	checksumName string
	// trailer is the header name x-amz-trailer announced, "" if none.
	trailer string
	// md5 is Content-MD5's verifier, nil if the request sent none.
	md5 *verifier
	// known, when the caller hashes the body with SHA-256 itself (Signed.ObjectBody), is
	// the SHA-256 every SHA-256 verifier reads instead of hashing the bytes again; those
	// verifiers are checked by checkSHA256 once the caller has the digest, not at the end
	// of the body.
	known *knownSum
}

// knownSum is a hash.Hash whose bytes another reader hashes: Write does nothing, and Sum
// answers the SHA-256 that reader computed of the same bytes, once set.
type knownSum struct{ sum []byte }

func (k *knownSum) Write(p []byte) (int, error) { return len(p), nil }
func (k *knownSum) Sum(b []byte) []byte         { return append(b, k.sum...) }
func (k *knownSum) Reset()                      { k.sum = nil }
func (k *knownSum) Size() int                   { return sha256.Size }
func (k *knownSum) BlockSize() int              { return sha256.BlockSize }

// newSHA256 is the hash of a SHA-256 promise: the known digest when the caller hashes
// the body itself, else a hash of its own.
func (e *expectations) newSHA256() hash.Hash {
	if e.known != nil {
		return e.known
	}
	return sha256.New()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func newExpectations(h http.Header, payloadHash string, callerHashes bool) (*expectations, error) {
	e := &expectations{}
	if callerHashes {
		e.known = &knownSum{}
	}
	if v := h.Get("Content-Md5"); v != "" {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(raw) != md5.Size {
			return nil, errorf(CodeInvalidDigest, "Content-MD5 must be the base64 of a 16-byte MD5 digest")
		}
		e.md5 = &verifier{h: md5.New(), want: v, encode: b64, code: CodeBadDigest, what: "Content-MD5"}
		e.list = append(e.list, e.md5)
	}
	if validPayloadHash(payloadHash) && len(payloadHash) == sha256.Size*2 {
		e.list = append(e.list, &verifier{h: e.newSHA256(), want: payloadHash, encode: hex.EncodeToString,
			code: CodeXAmzContentSHA256Mismatch, what: "x-amz-content-sha256"})
	}
	var found []string
	for name := range h {
		if alg, ok := checksumOf(name); ok {
			found = append(found, alg)
		} else if strings.HasPrefix(strings.ToLower(name), checksumHeaderPrefix) && !strings.EqualFold(name, "x-amz-checksum-type") {
			return nil, errorf(CodeInvalidRequest, "unknown checksum header %s: use one of crc32, crc32c, crc64nvme, sha1, sha256", strings.ToLower(name))
		}
	}
	if t := h.Get("X-Amz-Trailer"); t != "" {
		alg, ok := checksumOf(t)
		if !ok {
			return nil, errorf(CodeInvalidRequest, "x-amz-trailer %q names no checksum this gateway knows (x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256)", t)
		}
		e.trailer = checksumHeaderPrefix + alg
		found = append(found, alg)
	}
	if len(found) > 1 {
		return nil, errorf(CodeInvalidRequest, "expecting a single x-amz-checksum- header; multiple checksum types are not allowed")
	}
	alg, err := sdkChecksumAlgorithm(h)
	if err != nil {
		return nil, err
	}
	if len(found) == 1 {
		alg = found[0]
	}
	if alg != "" {
		want := ""
		if e.trailer == "" && len(found) == 1 {
			if want, err = checksumWant(alg, h.Values(checksumHeaderPrefix+alg), "header"); err != nil {
				return nil, err
			}
		}
		sum := checksumAlgorithms[alg]
		if alg == "sha256" {
			sum = e.newSHA256
		}
		e.checksum = &verifier{h: sum(), want: want, encode: b64, code: CodeBadDigest, what: checksumHeaderPrefix + alg}
		e.checksumName = alg
		e.list = append(e.list, e.checksum)
	}
	return e, nil
}

// sdkChecksumAlgorithm is the algorithm x-amz-sdk-checksum-algorithm names, "" when the
// request sent none. Sent, it names one of S3's algorithms: empty, unknown or sent twice
// is InvalidRequest, as on S3, also beside an x-amz-checksum-* header (whose algorithm
// then counts: S3 ignores the SDK's header when a checksum value is sent).
func sdkChecksumAlgorithm(h http.Header) (string, error) {
	vals := h.Values("X-Amz-Sdk-Checksum-Algorithm")
	if len(vals) == 0 {
		return "", nil
	}
	alg := strings.ToLower(strings.TrimSpace(vals[0]))
	if _, ok := checksumAlgorithms[alg]; !ok || len(vals) != 1 {
		return "", errorf(CodeInvalidRequest, "Value for x-amz-sdk-checksum-algorithm header is invalid: it names one of CRC32, CRC32C, CRC64NVME, SHA1, SHA256")
	}
	return alg, nil
}

// checksumWant checks the value of alg's checksum as sent (vals: a header's values, or
// the trailer's one value; where names which) and returns it in the form verify compares:
// the canonical base64 of the digest. A value that is not the base64 of a digest of alg's
// length, or more than one, is InvalidRequest (S3's answer to a malformed checksum);
// BadDigest is only for a well-formed value the body does not match.
func checksumWant(alg string, vals []string, where string) (string, error) {
	if len(vals) == 1 {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(vals[0]))
		if err == nil && len(raw) == checksumAlgorithms[alg]().Size() {
			return b64(raw), nil
		}
	}
	return "", errorf(CodeInvalidRequest, "Value for %s%s %s is invalid: it must be the base64 of one %s digest", checksumHeaderPrefix, alg, where, alg)
}

func (e *expectations) write(p []byte) {
	for _, v := range e.list {
		v.h.Write(p)
	}
}

// check compares every digest this reader computed with what was promised; a promise
// left empty (a checksum only named by x-amz-sdk-checksum-algorithm) is computed, not
// checked. The SHA-256 promises of a body whose caller hashes it wait for checkSHA256.
func (e *expectations) check() error {
	for _, v := range e.list {
		if !e.deferred(v) {
			if err := v.verify(); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSHA256 checks the SHA-256 promises left to the caller against sum, the caller's
// SHA-256 of the body.
func (e *expectations) checkSHA256(sum []byte) error {
	e.known.sum = sum
	for _, v := range e.list {
		if e.deferred(v) {
			if err := v.verify(); err != nil {
				return err
			}
		}
	}
	return nil
}

// deferred reports whether v reads the caller's SHA-256 (checkSHA256).
func (e *expectations) deferred(v *verifier) bool { return e.known != nil && v.h == hash.Hash(e.known) }

// verify compares v's digest with the one promised, if any.
func (v *verifier) verify() error {
	if got := v.encode(v.h.Sum(nil)); v.want != "" && got != v.want {
		return errorf(v.code, "the %s you specified did not match the calculated value", v.what)
	}
	return nil
}

// Checksum is the flexible checksum of the body read, name ("crc32", …) and base64
// value; ok is false when the request named none.
func (e *expectations) Checksum() (name, value string, ok bool) {
	if e.checksum == nil {
		return "", "", false
	}
	return e.checksumName, e.checksum.encode(e.checksum.h.Sum(nil)), true
}
