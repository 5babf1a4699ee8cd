package workbench

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/internal/strictjson"
	"github.com/cairnstore/cairn/meta"
)

// The pure computations of workbench_commit (docs/workbench.md, workbench_commit): the canonical manifest
// form, its digest, the commit identity, the tree digest and the run-manifest envelope.
// Nothing here does I/O or reads the clock: equal inputs give equal bytes on every node and
// every release, because these bytes are hashed into identities that callers compare.

// Commit schema names and limits (docs/workbench.md, workbench_commit).
const (
	// RunManifestSchema is the schema of the envelope stored at RunManifestPath.
	RunManifestSchema = "nokv.workbench.run_manifest.v1"
	// RunManifestPath is where commit publishes the envelope (full path in the workbench):
	// the path the metadata core reserves for it (meta.RunManifestPath), declared once.
	RunManifestPath = meta.RunManifestPath
	// CommitIdentityDomain prefixes the commit identity preimage (followed by a NUL byte).
	CommitIdentityDomain = "nokv.workbench.commit_identity.v1"
	// MaxManifestDepth is the deepest nesting of objects and arrays a manifest may have;
	// the top-level object is depth 1.
	MaxManifestDepth = 64
)

// CanonicalManifest returns the canonical form of a JSON manifest (docs/workbench.md, workbench_commit;
// this is not RFC 8785):
//
//   - compact: no whitespace outside strings;
//   - object members sorted by the UTF-8 bytes of their keys, at every depth (so U+FF61
//     sorts before U+1F600, unlike UTF-16 order); array order kept;
//   - numbers written exactly as the caller wrote them (1.0, 1e3, -0.0, 1.50 and
//     123456789012345678901234567890 stay as they are: no float round trip);
//   - strings decoded, then re-encoded minimally: '"' and '\' escaped, the control
//     characters U+0000..U+001F escaped (\b \f \n \r \t, else \u00XX with lower-case hex),
//     everything else written as raw UTF-8 — no HTML escaping (<, >, & stay), no escaping
//     of '/', U+007F, U+2028 or U+2029. An escape in the input such as \u00e9 or the
//     surrogate pair \ud83d\ude00 therefore decodes to its character and is written as
//     its UTF-8 bytes: "\u00e9" and "é" have the same canonical form.
//
// Rejected, each as InvalidArguments naming field "manifest": input that is not valid
// UTF-8, not JSON, or whose top level is not an object; an object with two members whose
// keys decode to the same string; anything after the object but whitespace; nesting deeper
// than MaxManifestDepth; and a \u escape of an unpaired UTF-16 surrogate (which has no
// UTF-8 form and would otherwise silently become U+FFFD).
func CanonicalManifest(raw []byte) ([]byte, error) {
	if err := strictjson.Check(raw); err != nil {
		switch {
		case err.Duplicate:
			return nil, duplicateKey(err.Name)
		case err.Reason == "invalid UTF-8":
			return nil, invalidArgument("manifest", "must be valid UTF-8")
		}
		return nil, invalidArgument("manifest", "has an %s", err.Reason)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, manifestSyntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalidArgument("manifest", "must be a JSON object")
	}
	out, werr := canonicalObject(dec, nil, 1)
	if werr != nil {
		return nil, werr
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalidArgument("manifest", "must hold exactly one JSON object: data follows it")
	}
	return out, nil
}

func manifestSyntaxError(err error) *Error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalidArgument("manifest", "is not valid JSON: unexpected end of input")
	}
	return invalidArgument("manifest", "is not valid JSON: %v", err)
}

// canonicalValue appends the canonical form of the value that starts with tok.
func canonicalValue(dec *json.Decoder, dst []byte, tok json.Token, depth int) ([]byte, *Error) {
	switch t := tok.(type) {
	case json.Delim:
		if depth+1 > MaxManifestDepth {
			return nil, invalidArgument("manifest", "nests deeper than %d levels", MaxManifestDepth)
		}
		switch t {
		case '{':
			return canonicalObject(dec, dst, depth+1)
		case '[':
			return canonicalArray(dec, dst, depth+1)
		}
		return nil, invalidArgument("manifest", "is not valid JSON: unexpected %q", rune(t))
	case string:
		return appendCanonicalString(dst, t), nil
	case json.Number:
		return append(dst, t...), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case nil:
		return append(dst, "null"...), nil
	}
	return nil, invalidArgument("manifest", "is not valid JSON")
}

// canonicalObject appends the members of an object whose '{' was just read, sorted by key
// bytes, and the closing '}'.
func canonicalObject(dec *json.Decoder, dst []byte, depth int) ([]byte, *Error) {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	seen := map[string]struct{}{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, manifestSyntaxError(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			break
		}
		key, ok := tok.(string)
		if !ok {
			return nil, invalidArgument("manifest", "is not valid JSON: object key is not a string")
		}
		if _, dup := seen[key]; dup {
			return nil, duplicateKey(key)
		}
		seen[key] = struct{}{}
		tok, err = dec.Token()
		if err != nil {
			return nil, manifestSyntaxError(err)
		}
		v, werr := canonicalValue(dec, nil, tok, depth)
		if werr != nil {
			return nil, werr
		}
		members = append(members, member{key, v})
	}
	// Go compares strings bytewise, so this is UTF-8 byte order.
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCanonicalString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}'), nil
}

// canonicalArray appends the elements of an array whose '[' was just read, in order, and
// the closing ']'.
func canonicalArray(dec *json.Decoder, dst []byte, depth int) ([]byte, *Error) {
	dst = append(dst, '[')
	for n := 0; ; n++ {
		tok, err := dec.Token()
		if err != nil {
			return nil, manifestSyntaxError(err)
		}
		if d, ok := tok.(json.Delim); ok && d == ']' {
			return append(dst, ']'), nil
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		var werr *Error
		if dst, werr = canonicalValue(dec, dst, tok, depth); werr != nil {
			return nil, werr
		}
	}
}

// appendCanonicalString appends s (valid UTF-8) as a JSON string with minimal escaping.
func appendCanonicalString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// quoteForMessage quotes s for an error message, cut to a readable length.
func quoteForMessage(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// ManifestDigestURI returns "sha256:" + the hex SHA-256 of canonical (the output of
// CanonicalManifest): the manifest_digest_uri of docs/workbench.md, workbench_commit.
func ManifestDigestURI(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ValidateContentDigestURI checks a caller-supplied content_digest_uri against
// ^sha256:[0-9a-f]{64}$ (docs/workbench.md, workbench_commit's input). InvalidArguments naming
// "content_digest_uri" otherwise.
func ValidateContentDigestURI(s string) error {
	if !isDigestURI(s) {
		return invalidArgument("content_digest_uri", "must be \"sha256:\" followed by 64 lower-case hex digits")
	}
	return nil
}

func isDigestURI(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || !strings.HasPrefix(s, prefix) {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// lengthPrefixed writes len(s) as an 8-byte big-endian integer, then s.
func lengthPrefixed(h io.Writer, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	io.WriteString(h, s)
}

// CommitIdentity returns the commit_identity of docs/workbench.md, workbench_commit: the lower-case hex
// SHA-256 (no "sha256:" prefix) of CommitIdentityDomain, a NUL byte, then workbenchID,
// contentDigestURI and manifestDigestURI, each as its length in bytes (8-byte big-endian)
// followed by its UTF-8 bytes. Timestamps are not part of it: the identity covers what the
// caller claims, not when.
func CommitIdentity(workbenchID, contentDigestURI, manifestDigestURI string) string {
	h := sha256.New()
	io.WriteString(h, CommitIdentityDomain)
	h.Write([]byte{0})
	lengthPrefixed(h, workbenchID)
	lengthPrefixed(h, contentDigestURI)
	lengthPrefixed(h, manifestDigestURI)
	return hex.EncodeToString(h.Sum(nil))
}

// TreeMember is one sealed member of a commit: its full path inside the workbench and the
// digest_uri ("sha256:<hex>") of its body.
type TreeMember struct {
	Path      string
	DigestURI string
}

// TreeDigestURI returns the tree_digest_uri of docs/workbench.md, workbench_commit: "sha256:" + the hex
// SHA-256 over the members in byte order of their paths, each written as the 8-byte
// big-endian length of the path, the path, the 8-byte big-endian length of the digest_uri
// and the digest_uri. members is not modified. Members of one tree have distinct paths;
// should two share one, they are ordered by digest_uri, so the result never depends on the
// input order. No members hash to the SHA-256 of nothing.
func TreeDigestURI(members []TreeMember) string {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b TreeMember) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.DigestURI, b.DigestURI)
	})
	h := sha256.New()
	for _, m := range sorted {
		lengthPrefixed(h, m.Path)
		lengthPrefixed(h, m.DigestURI)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// RunManifest is the envelope commit stores at RunManifestPath. Its JSON tags let a stored
// envelope be decoded back (Manifest keeps the canonical bytes verbatim).
type RunManifest struct {
	Schema                 string          `json:"schema"`
	WorkbenchID            string          `json:"workbench_id"`
	WorkbenchPath          string          `json:"workbench_path"`
	ContentDigestURI       string          `json:"content_digest_uri"`
	ManifestDigestURI      string          `json:"manifest_digest_uri"`
	CommitIdentity         string          `json:"commit_identity"`
	CommittedAtUnixSeconds int64           `json:"committed_at_unix_seconds"`
	Manifest               json.RawMessage `json:"manifest"`
}

// RunManifestEnvelope derives the envelope of a commit and encodes it as the exact bytes
// to store at RunManifestPath. It computes manifest_digest_uri (ManifestDigestURI) and
// commit_identity (CommitIdentity) itself, so the stored envelope can never disagree with
// its own manifest.
//
// canonicalManifest must be CanonicalManifest's output; it is embedded verbatim. The bytes
// are compact JSON without a trailing newline, members in this fixed order (the order
// docs/workbench.md, workbench_commit lists them): schema, workbench_id, workbench_path,
// content_digest_uri, manifest_digest_uri, commit_identity, committed_at_unix_seconds,
// manifest. Strings are escaped as in CanonicalManifest (no HTML escaping), so equal
// inputs give equal bytes.
//
// Errors (InvalidArguments): a workbench id that breaks the id rules ("id"), a workbench
// path that is empty or not UTF-8 ("workbench_path"), a malformed content digest
// ("content_digest_uri"), a manifest that is not in canonical form ("manifest").
func RunManifestEnvelope(workbenchID, workbenchPath, contentDigestURI string, canonicalManifest []byte, committedAtUnixSeconds int64) (RunManifest, []byte, error) {
	if err := meta.ValidateName("id", workbenchID); err != nil {
		return RunManifest{}, nil, AsError(err)
	}
	if workbenchPath == "" || !utf8.ValidString(workbenchPath) {
		return RunManifest{}, nil, invalidArgument("workbench_path", "must be a non-empty UTF-8 string")
	}
	if err := ValidateContentDigestURI(contentDigestURI); err != nil {
		return RunManifest{}, nil, err
	}
	canon, err := CanonicalManifest(canonicalManifest)
	if err != nil {
		return RunManifest{}, nil, err
	}
	if !bytes.Equal(canon, canonicalManifest) {
		return RunManifest{}, nil, invalidArgument("manifest", "is not in canonical form (use CanonicalManifest)")
	}
	m := RunManifest{
		Schema:                 RunManifestSchema,
		WorkbenchID:            workbenchID,
		WorkbenchPath:          workbenchPath,
		ContentDigestURI:       contentDigestURI,
		ManifestDigestURI:      ManifestDigestURI(canon),
		CommittedAtUnixSeconds: committedAtUnixSeconds,
		Manifest:               json.RawMessage(canon),
	}
	m.CommitIdentity = CommitIdentity(m.WorkbenchID, m.ContentDigestURI, m.ManifestDigestURI)
	b := make([]byte, 0, 512+len(canon))
	field := func(name string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendCanonicalString(b, name)
		b = append(b, ':')
	}
	b = append(b, '{')
	field("schema")
	b = appendCanonicalString(b, m.Schema)
	field("workbench_id")
	b = appendCanonicalString(b, m.WorkbenchID)
	field("workbench_path")
	b = appendCanonicalString(b, m.WorkbenchPath)
	field("content_digest_uri")
	b = appendCanonicalString(b, m.ContentDigestURI)
	field("manifest_digest_uri")
	b = appendCanonicalString(b, m.ManifestDigestURI)
	field("commit_identity")
	b = appendCanonicalString(b, m.CommitIdentity)
	field("committed_at_unix_seconds")
	b = strconv.AppendInt(b, m.CommittedAtUnixSeconds, 10)
	field("manifest")
	b = append(b, canon...)
	b = append(b, '}')
	return m, b, nil
}

// duplicateKey is the refusal of a manifest object naming key twice.
func duplicateKey(key string) *Error {
	e := invalidArgument("manifest", "has a duplicate object key %s", quoteForMessage(key))
	e.Details["duplicate_key"] = key
	return e
}
