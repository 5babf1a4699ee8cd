package s3

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The names of AWS Signature Version 4 as S3 uses them ("Authenticating Requests (AWS
// Signature Version 4)", Amazon S3 API Reference).
const (
	algorithm       = "AWS4-HMAC-SHA256"
	service         = "s3"
	terminator      = "aws4_request"
	amzDateLayout   = "20060102T150405Z"
	scopeDateLayout = "20060102"

	headerDate          = "X-Amz-Date"
	headerContentSHA256 = "X-Amz-Content-Sha256"

	// The payload hashes that are not a hex SHA-256 (x-amz-content-sha256).
	UnsignedPayload          = "UNSIGNED-PAYLOAD"
	StreamingSignedPayload   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	StreamingSignedTrailer   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	StreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256              = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

	// MaxClockSkew is how far a signed request's time may be from the node's clock.
	MaxClockSkew = 15 * time.Minute
	// MaxPresignExpiry is the longest X-Amz-Expires a presigned URL may ask for (7 days).
	MaxPresignExpiry = 7 * 24 * time.Hour
)

// Secrets finds the secret access key of an access key id. ok is false when no key has
// that id (or it may not use S3); err is for a store that cannot answer.
type Secrets interface {
	S3Secret(ctx context.Context, accessKeyID string) (secret string, ok bool, err error)
}

// Verifier checks the SigV4 signature of a request, in its Authorization header or in a
// presigned URL's query.
type Verifier struct {
	Secrets Secrets
	// Region is the only region credentials may be scoped to. Default "us-east-1".
	Region string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Signed is what a verified request authenticates: the access key, and how its body is
// to be checked as it is read (Body).
type Signed struct {
	AccessKeyID string
	// PayloadHash is x-amz-content-sha256 as signed: a hex SHA-256 of the body, or one of
	// UnsignedPayload, StreamingSignedPayload, StreamingSignedTrailer,
	// StreamingUnsignedTrailer.
	PayloadHash string

	// What a signed chunked body's chunks are signed with.
	seed  string    // the request's signature, the first chunk's previous signature
	key   []byte    // the signing key of the scope
	time  time.Time // the request's signing time
	scope string    // date/region/s3/aws4_request
}

// Verify checks r's signature. A request with neither an Authorization header nor a
// presigned query is anonymous: Verify answers ErrAccessDenied. Errors are *Error with
// S3's codes (AccessDenied, SignatureDoesNotMatch, InvalidAccessKeyId,
// RequestTimeTooSkewed, AuthorizationHeaderMalformed, AuthorizationQueryParametersError,
// InvalidRequest); none carries the secret or the expected signature.
func (v *Verifier) Verify(r *http.Request) (Signed, error) {
	q := r.URL.Query()
	switch {
	case r.Header.Get("Authorization") != "":
		return v.verifyHeader(r)
	case q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential"):
		return v.verifyPresigned(r, q)
	case r.Method == http.MethodPost && formUpload(r):
		// A POST policy signs the form's fields, not the request: a browser upload.
		return Signed{}, errorf(CodeNotImplemented, "POST Object (a browser form upload signed by a POST policy) is not implemented by this gateway: upload with PUT, or a presigned PUT URL")
	case q.Has("Signature") && q.Has("AWSAccessKeyId"):
		return Signed{}, errorf(CodeAccessDenied, "this URL is signed with AWS Signature Version 2, which this gateway does not accept: presign with Signature Version 4 (aws: s3.signature_version s3v4; boto3: Config(signature_version=\"s3v4\"))")
	default:
		return Signed{}, errorf(CodeAccessDenied, "anonymous access is not allowed: sign the request (AWS Signature Version 4)")
	}
}

// formUpload reports whether r's body is a multipart/form-data form: S3's POST Object,
// the upload a presigned POST (a POST policy) makes.
func formUpload(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

func (v *Verifier) region() string {
	if v.Region == "" {
		return "us-east-1"
	}
	return v.Region
}

func (v *Verifier) now() time.Time {
	if v.Now == nil {
		return time.Now()
	}
	return v.Now()
}

// credential is a parsed Credential: <access key>/<date>/<region>/s3/aws4_request.
type credential struct {
	accessKeyID, date, region string
}

func (c credential) scope() string {
	return c.date + "/" + c.region + "/" + service + "/" + terminator
}

// parseCredential parses and checks a Credential value; code is the error code of a
// malformed one (it differs between the header and the query).
func (v *Verifier) parseCredential(s string, code Code) (credential, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 || parts[0] == "" {
		return credential{}, errorf(code, "Credential must be <access key>/<yyyymmdd>/<region>/s3/aws4_request")
	}
	c := credential{accessKeyID: parts[0], date: parts[1], region: parts[2]}
	if _, err := time.Parse(scopeDateLayout, c.date); err != nil {
		return credential{}, errorf(code, "Credential's date %q is not yyyymmdd", c.date)
	}
	if c.region != v.region() {
		return credential{}, errorf(code, "the region %q is wrong; expecting %q", c.region, v.region())
	}
	if parts[3] != service || parts[4] != terminator {
		return credential{}, errorf(code, "Credential must be scoped to the service s3 and end with aws4_request")
	}
	return c, nil
}

// authorization is a parsed Authorization header.
type authorization struct {
	cred          credential
	signedHeaders []string
	signature     string
}

func (v *Verifier) parseAuthorization(h string) (authorization, error) {
	const code = CodeAuthorizationHeaderMalformed
	alg, rest, ok := strings.Cut(h, " ")
	if !ok || alg != algorithm {
		return authorization{}, errorf(code, "the authorization header's algorithm must be %s", algorithm)
	}
	var a authorization
	var haveCred, haveHeaders, haveSig bool
	for _, field := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok {
			return authorization{}, errorf(code, "the authorization header's field %q is not name=value", field)
		}
		switch k {
		case "Credential":
			c, err := v.parseCredential(val, code)
			if err != nil {
				return authorization{}, err
			}
			a.cred, haveCred = c, true
		case "SignedHeaders":
			a.signedHeaders, haveHeaders = strings.Split(val, ";"), true
		case "Signature":
			a.signature, haveSig = val, true
		default:
			return authorization{}, errorf(code, "the authorization header has an unknown field %q", k)
		}
	}
	if !haveCred || !haveHeaders || !haveSig {
		return authorization{}, errorf(code, "the authorization header needs Credential, SignedHeaders and Signature")
	}
	return a, checkSignedHeaders(a.signedHeaders, code)
}

// checkSignedHeaders: lower case, sorted, no repeats, host among them.
func checkSignedHeaders(names []string, code Code) error {
	host := false
	for i, n := range names {
		if n == "" || n != strings.ToLower(n) || (i > 0 && names[i-1] >= n) {
			return errorf(code, "SignedHeaders must be distinct lower-case names in order")
		}
		host = host || n == "host"
	}
	if !host {
		return errorf(code, "SignedHeaders must include host")
	}
	return nil
}

func (v *Verifier) verifyHeader(r *http.Request) (Signed, error) {
	a, err := v.parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return Signed{}, err
	}
	t, err := time.Parse(amzDateLayout, r.Header.Get(headerDate))
	if err != nil {
		return Signed{}, errorf(CodeAccessDenied, "the request needs a valid X-Amz-Date header (yyyymmddThhmmssZ)")
	}
	if t.Format(scopeDateLayout) != a.cred.date {
		return Signed{}, errorf(CodeAuthorizationHeaderMalformed, "the Credential's date %s is not the date of X-Amz-Date", a.cred.date)
	}
	if d := v.now().Sub(t); d > MaxClockSkew || d < -MaxClockSkew {
		return Signed{}, errorf(CodeRequestTimeTooSkewed, "the difference between the request time and the server's time is too large")
	}
	payload := r.Header.Get(headerContentSHA256)
	if !validPayloadHash(payload) {
		return Signed{}, errorf(CodeInvalidRequest, "the request needs an x-amz-content-sha256 header: a hex SHA-256 or one of %s, %s, %s, %s",
			UnsignedPayload, StreamingSignedPayload, StreamingSignedTrailer, StreamingUnsignedTrailer)
	}
	if err := unsignedAmzHeaders(r.Header, a.signedHeaders); err != nil {
		return Signed{}, err
	}
	return v.checkRequest(r, "", a.signedHeaders, payload, a.cred, t, a.signature)
}

func (v *Verifier) verifyPresigned(r *http.Request, q url.Values) (Signed, error) {
	const code = CodeAuthorizationQueryParametersError
	if q.Get("X-Amz-Algorithm") != algorithm {
		return Signed{}, errorf(code, "X-Amz-Algorithm must be %s", algorithm)
	}
	cred, err := v.parseCredential(q.Get("X-Amz-Credential"), code)
	if err != nil {
		return Signed{}, err
	}
	t, err := time.Parse(amzDateLayout, q.Get("X-Amz-Date"))
	if err != nil {
		return Signed{}, errorf(code, "X-Amz-Date must be yyyymmddThhmmssZ")
	}
	if t.Format(scopeDateLayout) != cred.date {
		return Signed{}, errorf(code, "the Credential's date %s is not the date of X-Amz-Date", cred.date)
	}
	expires, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	if err != nil || expires < 1 || time.Duration(expires)*time.Second > MaxPresignExpiry {
		return Signed{}, errorf(code, "X-Amz-Expires must be a number of seconds from 1 to %d", int64(MaxPresignExpiry/time.Second))
	}
	now := v.now()
	if now.Before(t.Add(-MaxClockSkew)) {
		return Signed{}, errorf(CodeAccessDenied, "the request is not valid yet")
	}
	if now.After(t.Add(time.Duration(expires) * time.Second)) {
		return Signed{}, errorf(CodeAccessDenied, "the request has expired")
	}
	signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	if err := checkSignedHeaders(signed, code); err != nil {
		return Signed{}, err
	}
	if err := unsignedAmzHeaders(r.Header, signed); err != nil {
		return Signed{}, err
	}
	payload := UnsignedPayload
	if h := r.Header.Get(headerContentSHA256); h != "" {
		payload = h
	}
	if !validPayloadHash(payload) || strings.HasPrefix(payload, "STREAMING-") {
		return Signed{}, errorf(CodeInvalidRequest, "a presigned request's x-amz-content-sha256 must be a hex SHA-256 or %s", UnsignedPayload)
	}
	return v.checkRequest(r, "X-Amz-Signature", signed, payload, cred, t, q.Get("X-Amz-Signature"))
}

// checkRequest checks the signature got of r's canonical request (canonicalRequest, its
// query without skip). The SDKs trim a signed header's value in two ways: botocore and
// the JavaScript SDK make every run of white space one space, the AWS SDK for Go v2 only
// runs of spaces (SigV4's rule), so a value holding a tab signs differently; when a signed
// header holds white space other than a space and the first form does not match, the
// second is tried.
func (v *Verifier) checkRequest(r *http.Request, skip string, signed []string, payload string, c credential, t time.Time, got string) (Signed, error) {
	s, err := v.check(r.Context(), c, t, canonicalRequest(r, r.URL.RawQuery, skip, signed, payload, false), got, payload)
	if codeOf(err) != CodeSignatureDoesNotMatch || !otherWhiteSpace(r, signed) {
		return s, err
	}
	if s, serr := v.check(r.Context(), c, t, canonicalRequest(r, r.URL.RawQuery, skip, signed, payload, true), got, payload); serr == nil {
		return s, nil
	}
	return s, err
}

// otherWhiteSpace reports whether a signed header of r holds white space other than a
// space, where the two ways of trimming differ.
func otherWhiteSpace(r *http.Request, signed []string) bool {
	for _, name := range signed {
		for _, v := range r.Header.Values(name) {
			if strings.ContainsFunc(v, func(c rune) bool { return c != ' ' && unicode.IsSpace(c) }) {
				return true
			}
		}
	}
	return false
}

// check compares the signature of canonical with the one the request carries.
func (v *Verifier) check(ctx context.Context, c credential, t time.Time, canonical, got, payload string) (Signed, error) {
	secret, ok, err := v.Secrets.S3Secret(ctx, c.accessKeyID)
	if err != nil {
		return Signed{}, err
	}
	if !ok {
		return Signed{}, errorf(CodeInvalidAccessKeyID, "the access key id you provided does not exist in our records")
	}
	key := signingKey(secret, c.date, c.region)
	sum := sha256.Sum256([]byte(canonical))
	want := hex.EncodeToString(hmacSHA256(key, algorithm+"\n"+t.Format(amzDateLayout)+"\n"+c.scope()+"\n"+hex.EncodeToString(sum[:])))
	if !hmac.Equal([]byte(got), []byte(want)) {
		return Signed{}, errorf(CodeSignatureDoesNotMatch, "the request signature we calculated does not match the signature you provided; check your key and signing method")
	}
	return Signed{AccessKeyID: c.accessKeyID, PayloadHash: payload, seed: want, key: key, time: t, scope: c.scope()}, nil
}

func validPayloadHash(p string) bool {
	switch p {
	case UnsignedPayload, StreamingSignedPayload, StreamingSignedTrailer, StreamingUnsignedTrailer:
		return true
	}
	if len(p) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(p)
	return err == nil && strings.ToLower(p) == p
}

// unsignedAmzHeaders refuses an x-amz-* header the signature does not cover: it would
// change what the request does (a copy source, a condition) without the key holder's say.
func unsignedAmzHeaders(h http.Header, signed []string) error {
	for name := range h {
		n := strings.ToLower(name)
		if !strings.HasPrefix(n, "x-amz-") {
			continue
		}
		if _, found := sort.Find(len(signed), func(i int) int { return strings.Compare(n, signed[i]) }); !found {
			return errorf(CodeAccessDenied, "there were headers present in the request which were not signed: %s", n)
		}
	}
	return nil
}

// canonicalRequest is the SigV4 canonical request of r: the path exactly as the client
// sent it (S3 signs the path without normalizing or escaping it again), the query's
// parameters re-encoded and sorted without skip, the signed headers with trimmed values
// (headerValue), and the payload hash.
func canonicalRequest(r *http.Request, rawQuery, skip string, signed []string, payload string, spacesOnly bool) string {
	path := r.URL.EscapedPath()
	if u := r.RequestURI; u != "" && u[0] == '/' {
		path, _, _ = strings.Cut(u, "?")
	}
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(path)
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(rawQuery, skip))
	b.WriteByte('\n')
	for _, name := range signed {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(headerValue(r, name, spacesOnly))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payload)
	return b.String()
}

// headerValue is a signed header's canonical value: its values joined by commas, each
// trimmed with inner runs of white space made one space, or when spacesOnly only runs of
// spaces (checkRequest).
func headerValue(r *http.Request, name string, spacesOnly bool) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	default:
		vals = r.Header.Values(name)
		if len(vals) == 0 && name == "content-length" && r.ContentLength >= 0 {
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	}
	canonical := make([]string, len(vals)) // vals may be r.Header's own: never changed
	for i, v := range vals {
		if spacesOnly {
			canonical[i] = strings.TrimSpace(strings.Join(strings.FieldsFunc(v, func(c rune) bool { return c == ' ' }), " "))
		} else {
			canonical[i] = strings.Join(strings.Fields(v), " ")
		}
	}
	return strings.Join(canonical, ",")
}

// canonicalQuery decodes each parameter of raw and encodes it again as SigV4 does (every
// byte but A-Z a-z 0-9 - _ . ~ as %XX), sorted by name, then value; skip is left out.
func canonicalQuery(raw, skip string) string {
	if raw == "" {
		return ""
	}
	type pair struct{ k, v string }
	var ps []pair
	for _, p := range strings.Split(raw, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		k, v = unescape(k), unescape(v)
		if k == skip {
			continue
		}
		ps = append(ps, pair{uriEncode(k), uriEncode(v)})
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].k != ps[j].k {
			return ps[i].k < ps[j].k
		}
		return ps[i].v < ps[j].v
	})
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// unescape decodes %XX (and '+' as itself, as S3 does: clients encode a space as %20);
// a malformed escape stays as it is, so its signature cannot match a well-formed one.
func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

func uriEncode(s string) string {
	const hexUpper = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexUpper[c>>4])
		b.WriteByte(hexUpper[c&15])
	}
	return b.String()
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// signingKey derives the key of one day, region and service from a secret.
func signingKey(secret, date, region string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, terminator)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
