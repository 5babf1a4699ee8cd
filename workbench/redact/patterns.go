package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
)

// The kinds of secret-shaped tokens, the names their markers carry ("[REDACTED:jwt]").
const (
	KindAnthropicAPIKey = "anthropic_api_key"
	KindOpenAIAPIKey    = "openai_api_key"
	KindAWSAccessKeyID  = "aws_access_key_id"
	KindGitHubToken     = "github_token"
	KindSlackToken      = "slack_token"
	KindJWT             = "jwt"
	KindPrivateKey      = "private_key"
)

// Kinds lists every kind, in the order the package documents them.
var Kinds = []string{KindAnthropicAPIKey, KindOpenAIAPIKey, KindAWSAccessKeyID, KindGitHubToken,
	KindSlackToken, KindJWT, KindPrivateKey}

// Length bounds of tokens, in bytes. A longer run of a token's alphabet is not that kind
// of token (it is left as it is); the bounds also size the streaming window.
const (
	// MaxTokenBytes bounds every token but a PEM block.
	MaxTokenBytes = 8 << 10
	// MaxPEMBytes bounds a PEM private key block, BEGIN and END lines included (an RSA
	// 8192-bit key in PKCS#1 is about 6.3 KiB).
	MaxPEMBytes = 16 << 10
)

// byteSet is a set of bytes, for the alphabets of tokens and of their surroundings.
type byteSet [256]bool

// newByteSet returns the set of extra's bytes, and of the ASCII letters and digits when
// letters is set.
func newByteSet(letters bool, extra string) *byteSet {
	var s byteSet
	for c := 0; letters && c < 256; c++ {
		s[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(extra); i++ {
		s[extra[i]] = true
	}
	return &s
}

func (s *byteSet) all(b []byte) bool {
	for _, c := range b {
		if !s[c] {
			return false
		}
	}
	return true
}

var (
	alnum      = newByteSet(true, "")
	upperDigit = newByteSet(false, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	// keyWord is the alphabet of sk-, Slack and GitHub tokens with its separators: a token
	// next to one of these bytes is part of a longer word (task-…, a_ghp_…), not a token.
	keyWord = newByteSet(true, "_-")
	// jwtWord adds '.', which joins a JWT's parts.
	jwtWord = newByteSet(true, "_-.")
	// jwtPart is a JWT part's alphabet (base64url without padding).
	jwtPart = newByteSet(true, "_-")
	// pemBody is what lies between a PEM block's BEGIN and END lines: base64, white space
	// and RFC 1421 headers (Proc-Type: 4,ENCRYPTED; DEK-Info: AES-128-CBC,…). It has no
	// '[' or ']', so no marker is ever inside a block.
	pemBody = newByteSet(true, "+/=:,.- \t\r\n")
)

// A pattern finds one family of tokens: re finds a run (every pattern's run starts with a
// literal, which keeps the search fast), check decides whether the run at buf[s:e] is a
// token and of which kind. A run's alphabet is within its pattern's word set, so a
// rejected run never hides a token inside it (no byte inside has a boundary before it).
type pattern struct {
	re    *regexp.Regexp
	check func(t *tenant, buf []byte, s, e int) (kind string, ok bool)
}

var patterns = []pattern{
	{regexp.MustCompile(`sk-[A-Za-z0-9_-]+`), checkSK},
	{regexp.MustCompile(`AKIA[A-Za-z0-9]+`), checkAWS},
	{regexp.MustCompile(`ASIA[A-Za-z0-9]+`), checkAWS},
	{regexp.MustCompile(`gh[pousr]_[A-Za-z0-9_]+`), checkGitHub},
	{regexp.MustCompile(`github_pat_[A-Za-z0-9_]+`), checkGitHubPAT},
	{regexp.MustCompile(`xox[baprs]-[A-Za-z0-9-]+`), checkSlack},
	{regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`), checkJWT},
}

// standsAlone reports whether buf[s:e] has no byte of word (and no marker) on either
// side. A marker next to a token counts as a word: the marker stands for bytes that were
// there before, so a token that was not one before its neighbour was redacted does not
// become one after (idempotence).
func (t *tenant) standsAlone(buf []byte, s, e int, word *byteSet) bool {
	if s > 0 && (word[buf[s-1]] || buf[s-1] == ']' && t.markerEndsAt(buf, s)) {
		return false
	}
	if e < len(buf) && (word[buf[e]] || buf[e] == '[' && t.markerStartsAt(buf, e)) {
		return false
	}
	return true
}

// mixed reports whether b has an upper-case letter, a lower-case letter and a digit: a
// random key of 20 or more base62 characters has all three but for a chance below 0.1 %;
// a kebab-case name (sk-learn-pipeline-config) has not.
func mixed(b []byte) bool {
	var up, low, dig bool
	for _, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			up = true
		case c >= 'a' && c <= 'z':
			low = true
		case c >= '0' && c <= '9':
			dig = true
		}
	}
	return up && low && dig
}

// checkSK: sk- then at least 20 characters of [A-Za-z0-9_-] with mixed case and a digit.
func checkSK(t *tenant, buf []byte, s, e int) (string, bool) {
	body := buf[s+len("sk-") : e]
	if e-s > MaxTokenBytes || len(body) < 20 || !mixed(body) || !t.standsAlone(buf, s, e, keyWord) {
		return "", false
	}
	if bytes.HasPrefix(body, []byte("ant-")) {
		return KindAnthropicAPIKey, true
	}
	return KindOpenAIAPIKey, true
}

// checkAWS: AKIA or ASIA then exactly 16 of [A-Z0-9], between non-alphanumerics.
func checkAWS(t *tenant, buf []byte, s, e int) (string, bool) {
	if e-s != 20 || !upperDigit.all(buf[s+4:e]) || !t.standsAlone(buf, s, e, alnum) {
		return "", false
	}
	return KindAWSAccessKeyID, true
}

// checkGitHub: ghp_, gho_, ghu_, ghs_ or ghr_ then 36 to 251 alphanumerics.
func checkGitHub(t *tenant, buf []byte, s, e int) (string, bool) {
	body := buf[s+4 : e]
	if len(body) < 36 || len(body) > 251 || !alnum.all(body) || !t.standsAlone(buf, s, e, keyWord) {
		return "", false
	}
	return KindGitHubToken, true
}

// checkGitHubPAT: github_pat_ then at least 22 of [A-Za-z0-9_] with a digit.
func checkGitHubPAT(t *tenant, buf []byte, s, e int) (string, bool) {
	body := buf[s+len("github_pat_") : e]
	if len(body) < 22 || e-s > MaxTokenBytes || !bytes.ContainsAny(body, "0123456789") || !t.standsAlone(buf, s, e, keyWord) {
		return "", false
	}
	return KindGitHubToken, true
}

// checkSlack: xoxb-, xoxa-, xoxp-, xoxr- or xoxs- then at least 10 of [A-Za-z0-9-] with
// a digit.
func checkSlack(t *tenant, buf []byte, s, e int) (string, bool) {
	body := buf[s+5 : e]
	if len(body) < 10 || e-s > MaxTokenBytes || !bytes.ContainsAny(body, "0123456789") || !t.standsAlone(buf, s, e, keyWord) {
		return "", false
	}
	return KindSlackToken, true
}

// checkJWT: header.payload.signature in base64url, the header a JSON object, the payload
// decodable, the signature possibly empty (alg "none"); not a part of a longer dotted
// name. A '.' right after it ends a sentence unless a part-like byte follows.
func checkJWT(t *tenant, buf []byte, s, e int) (string, bool) {
	if e-s > MaxTokenBytes {
		return "", false
	}
	if s > 0 && (jwtWord[buf[s-1]] || buf[s-1] == ']' && t.markerEndsAt(buf, s)) {
		return "", false
	}
	if e < len(buf) {
		next := e
		if buf[e] == '.' {
			next = e + 1
		}
		if next < len(buf) && (jwtPart[buf[next]] || buf[next] == '[' && t.markerStartsAt(buf, next)) {
			return "", false
		}
	}
	parts := bytes.SplitN(buf[s:e], []byte("."), 3)
	header, err := base64.RawURLEncoding.DecodeString(string(parts[0]))
	if err != nil || len(header) == 0 || header[0] != '{' || !json.Valid(header) {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(string(parts[1])); err != nil {
		return "", false
	}
	return KindJWT, true
}

// pemBegin finds a private key block's BEGIN line; group 1 is its label before "PRIVATE
// KEY" ("RSA ", "EC ", "ENCRYPTED ", "OPENSSH ", or "" for PKCS#8).
var pemBegin = regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----`)

// pemAt returns the end of the private key block whose BEGIN line is buf[s:bodyStart]
// with label: the first END line after it, which must carry the same label, within
// MaxPEMBytes of s, and only pemBody bytes between.
func pemAt(buf []byte, s, bodyStart int, label []byte) (int, bool) {
	limit := min(len(buf), s+MaxPEMBytes)
	i := bytes.Index(buf[bodyStart:limit], []byte("-----END "))
	if i < 0 {
		return 0, false
	}
	end := bodyStart + i
	line := append(append([]byte("-----END "), label...), "PRIVATE KEY-----"...)
	if !bytes.HasPrefix(buf[end:limit], line) || !pemBody.all(buf[bodyStart:end]) {
		return 0, false
	}
	return end + len(line), true
}
