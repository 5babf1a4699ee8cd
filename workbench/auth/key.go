package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// An API key is one string, shown once at creation:
//
//	cairn_<id>_<secret>
//
// <id> is KeyIDLen lowercase hex characters (64 random bits): public, the principal's ID,
// what `cairn admin key list` shows and `revoke` takes. <secret> is the unpadded
// base64url encoding of SecretBytes random bytes (256 bits). The store keeps only the
// SHA-256 digest of the whole string: a key is a random token, not a password, so one
// hash is enough and a stolen store names no usable key.
const (
	// TokenPrefix starts every key (secret scanners can match it).
	TokenPrefix = "cairn_"
	// KeyIDLen is the length of a key id, in hex characters.
	KeyIDLen = 16
	// SecretBytes is the entropy of a key's secret, in bytes.
	SecretBytes = 32
	// secretLen is the length of the encoded secret (base64url, no padding).
	secretLen = (SecretBytes*8 + 5) / 6
	// TokenLen is the length of a whole key string.
	TokenLen = len(TokenPrefix) + KeyIDLen + 1 + secretLen
)

// The errors of keys and their stores. A request's credential errors all match
// ErrUnauthenticated; none of them ever carries a secret.
var (
	// ErrUnauthenticated: the request carries no valid key (missing, malformed, unknown,
	// wrong secret, revoked or expired).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrNoCredentials: the request carries no Authorization header.
	ErrNoCredentials = fmt.Errorf("%w: no API key (Authorization: Bearer %s…)", ErrUnauthenticated, TokenPrefix)
	// ErrMalformed: the Authorization header or the key in it does not parse.
	ErrMalformed = fmt.Errorf("%w: malformed API key", ErrUnauthenticated)
	// ErrKeyRevoked and ErrKeyExpired: the key was valid once.
	ErrKeyRevoked = fmt.Errorf("%w: API key revoked", ErrUnauthenticated)
	ErrKeyExpired = fmt.Errorf("%w: API key expired", ErrUnauthenticated)

	// ErrKeyNotFound: no key has this id.
	ErrKeyNotFound = errors.New("no such API key")
	// ErrKeyExists: a key with this id exists already (Create).
	ErrKeyExists = errors.New("API key id already exists")
	// ErrInvalidSpec: a KeySpec breaks a rule (InvalidSpecError names it).
	ErrInvalidSpec = errors.New("invalid key spec")
	// ErrStoreUnavailable: the store cannot answer now (etcd unreachable); retryable.
	ErrStoreUnavailable = errors.New("key store unavailable")
)

// InvalidSpecError names the field of a KeySpec that breaks a rule.
type InvalidSpecError struct {
	Field, Rule string
}

func (e *InvalidSpecError) Error() string { return "key " + e.Field + " " + e.Rule }
func (e *InvalidSpecError) Unwrap() error { return ErrInvalidSpec }

// Key is what a store keeps of an API key: the principal it authenticates as, the
// SHA-256 digest of the key string (hex), and its lifetime. Never the secret.
type Key struct {
	Principal
	// Digest is the hex SHA-256 of the whole key string.
	Digest    string    `json:"digest"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when the key stops working; zero: never.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RevokedAt is when it was revoked; zero: it was not.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// S3Secret is the secret access key of the key's S3 credential (s3.go), "" when it has
	// none. Unlike the key string it is kept as it is: AWS Signature Version 4 needs the
	// verifier to hold the secret it checks an HMAC with.
	S3Secret string `json:"s3_secret,omitempty"`
	// MintedBy is the id of the key that minted this one (mint.go), "" for a key an
	// operator created: a key works only while every key above it does (LiveIn).
	MintedBy string `json:"minted_by,omitempty"`
}

// Live reports whether k authenticates at now: not revoked, not expired.
func (k Key) Live(now time.Time) error {
	switch {
	case !k.RevokedAt.IsZero():
		return fmt.Errorf("key %s: %w", k.ID, ErrKeyRevoked)
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return fmt.Errorf("key %s: %w", k.ID, ErrKeyExpired)
	}
	return nil
}

// KeySpec is what a new key is made for.
type KeySpec struct {
	Name      string
	Agents    []string
	AllAgents bool
	Scopes    []Scope
	Tenant    string
	Workspace string
	// Workbench binds the key to one workbench of each root it names (Principal.Workbench).
	Workbench string
	// Prefixes bind it to the paths at or below them (Principal.Prefixes); a trailing "/"
	// is dropped ("outputs/run1/" is "outputs/run1").
	Prefixes []string
	// ExpiresAt is when the key stops working; zero: never.
	ExpiresAt time.Time
	// S3 gives the key an S3 credential (S3AccessKeyID, Key.S3Secret) for the S3 gateway.
	// Such a key acts in exactly one agent root.
	S3 bool
}

// MaxNameBytes bounds a key's name.
const MaxNameBytes = 128

// MaxPrefixes bounds a key's path prefixes.
const MaxPrefixes = 64

// Validate checks s: a name of 1..MaxNameBytes bytes that keeps the rules of names
// (meta.ValidateNewName: no control, bidirectional formatting or zero-width character;
// NFC); agent roots named as agent ids, or AllAgents, not both, not neither (unless the
// key is bound to a tenant, whose root it may use); at least one known scope (or an alias,
// ScopeAliases), none twice under Cairn's names; tenant and workspace both or neither; an
// expiry after now; a workbench named as a workbench id, never with a tenant (a tenant
// binding is a workbench binding already); at most MaxPrefixes prefixes, each a valid
// path (meta.ValidatePath) after its trailing "/" is dropped, none at or below another.
func (s KeySpec) Validate(now time.Time) error {
	bad := func(field, rule string) error { return &InvalidSpecError{Field: field, Rule: rule} }
	if s.Name == "" || len(s.Name) > MaxNameBytes {
		return bad("name", fmt.Sprintf("must be 1 to %d bytes", MaxNameBytes))
	}
	if err := meta.ValidateNewName("name", s.Name); err != nil { // the rules of names: meta/name.go
		return bad("name", err.Message)
	}
	switch {
	case s.AllAgents && len(s.Agents) > 0:
		return bad("agents", "must be empty when the key is for all agents")
	case !s.AllAgents && len(s.Agents) == 0 && s.Tenant == "":
		return bad("agents", "must name at least one agent root, or the key must be for all agents or bound to an OpenWOP tenant")
	}
	seen := map[string]bool{}
	for _, a := range s.Agents {
		if err := meta.ValidateName("agent", a); err != nil {
			return bad("agents", fmt.Sprintf("must be agent ids (%q: %s)", a, err.Message))
		}
		if seen[a] {
			return bad("agents", fmt.Sprintf("must not name %q twice", a))
		}
		seen[a] = true
	}
	if len(s.Scopes) == 0 {
		return bad("scopes", "must hold at least one scope")
	}
	for i, sc := range s.Scopes {
		if !knownScope(sc) {
			return bad("scopes", fmt.Sprintf("must be among %s (got %q)", scopeList(), sc))
		}
		for _, before := range s.Scopes[:i] {
			if before.Canonical() == sc.Canonical() {
				return bad("scopes", fmt.Sprintf("must not hold %q twice", sc.Canonical()))
			}
		}
	}
	if (s.Tenant == "") != (s.Workspace == "") {
		return bad("tenant", "and workspace must be given together")
	}
	for field, v := range map[string]string{"tenant": s.Tenant, "workspace": s.Workspace} {
		if v != "" {
			if err := meta.ValidateName(field, v); err != nil {
				return bad(field, "must be an id like an agent id ("+err.Message+")")
			}
		}
	}
	if s.Workbench != "" {
		if err := meta.ValidateName("workbench", s.Workbench); err != nil {
			return bad("workbench", "must be a workbench id ("+err.Message+")")
		}
		if s.Tenant != "" {
			return bad("workbench", "must not be given with a tenant binding, which binds the key to its workspace already")
		}
	}
	if err := validatePrefixes(s.Prefixes); err != nil {
		return err
	}
	if !s.ExpiresAt.IsZero() && !s.ExpiresAt.After(now) {
		return bad("expires_at", "must be in the future")
	}
	if s.S3 && (s.AllAgents || len(s.Agents) > 1 || (len(s.Agents) == 1 && s.Tenant != "" && s.Tenant != s.Agents[0])) {
		return bad("s3", "needs a key for exactly one agent root (one agent, or a tenant binding): an S3 bucket is a workbench of that root")
	}
	return nil
}

// NormalPrefixes returns prefixes without their trailing "/" (nil for none).
func NormalPrefixes(prefixes []string) []string {
	if len(prefixes) == 0 {
		return nil
	}
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		out[i] = strings.TrimSuffix(p, "/")
	}
	return out
}

// validatePrefixes checks a key's prefixes (KeySpec.Validate).
func validatePrefixes(prefixes []string) error {
	if len(prefixes) > MaxPrefixes {
		return &InvalidSpecError{Field: "prefixes", Rule: fmt.Sprintf("must hold at most %d prefixes, got %d", MaxPrefixes, len(prefixes))}
	}
	norm := NormalPrefixes(prefixes)
	for i, p := range norm {
		if err := meta.ValidatePath("prefixes", p); err != nil {
			return &InvalidSpecError{Field: "prefixes", Rule: fmt.Sprintf("must be section-qualified paths such as outputs/run1/ (%q: %s)", prefixes[i], err.Message)}
		}
		for j, q := range norm {
			if i != j && Inside(p, q) {
				return &InvalidSpecError{Field: "prefixes", Rule: fmt.Sprintf("must not hold %q at or below %q", prefixes[i], prefixes[j])}
			}
		}
	}
	return nil
}

// knownScope reports whether s is a scope or an alias of one (ScopeAliases).
func knownScope(s Scope) bool { return slices.Contains(Scopes, s.Canonical()) }

// canonicalScopes returns scopes under Cairn's names.
func canonicalScopes(scopes []Scope) []Scope {
	out := make([]Scope, len(scopes))
	for i, s := range scopes {
		out[i] = s.Canonical()
	}
	return out
}

func scopeList() string {
	names := make([]string, len(Scopes))
	for i, s := range Scopes {
		names[i] = string(s)
	}
	aliases := make([]string, 0, len(ScopeAliases))
	for a := range ScopeAliases {
		aliases = append(aliases, string(a))
	}
	slices.Sort(aliases)
	return strings.Join(names, ", ") + " (or OpenWOP's " + strings.Join(aliases, ", ") + ")"
}

// ParseScopes parses a comma-separated scope list ("workspace:read,workspace:write"),
// aliases answered under Cairn's names.
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, Scope(f))
		}
	}
	if len(out) == 0 {
		return nil, &InvalidSpecError{Field: "scopes", Rule: "must hold at least one scope (" + scopeList() + ")"}
	}
	for _, sc := range out {
		if !knownScope(sc) {
			return nil, &InvalidSpecError{Field: "scopes", Rule: fmt.Sprintf("must be among %s (got %q)", scopeList(), sc)}
		}
	}
	return canonicalScopes(out), nil
}

// NewKey makes a key for spec: a fresh random id and secret. It returns the record to
// store (its scopes under Cairn's names) and the key string to show once. Errors:
// *InvalidSpecError; a failing random source.
func NewKey(spec KeySpec, now time.Time) (Key, string, error) {
	if err := spec.Validate(now); err != nil {
		return Key{}, "", err
	}
	raw := make([]byte, KeyIDLen/2+SecretBytes)
	if _, err := rand.Read(raw); err != nil {
		return Key{}, "", fmt.Errorf("auth: random source: %w", err)
	}
	id := hex.EncodeToString(raw[:KeyIDLen/2])
	token := TokenPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(raw[KeyIDLen/2:])
	k := Key{
		Principal: Principal{ID: id, Name: spec.Name, Agents: append([]string(nil), spec.Agents...), AllAgents: spec.AllAgents,
			Scopes: canonicalScopes(spec.Scopes), Tenant: spec.Tenant, Workspace: spec.Workspace,
			Workbench: spec.Workbench, Prefixes: NormalPrefixes(spec.Prefixes)},
		Digest:    Digest(token),
		CreatedAt: now.UTC(),
	}
	if !spec.ExpiresAt.IsZero() {
		k.ExpiresAt = spec.ExpiresAt.UTC()
	}
	if spec.S3 {
		secret := make([]byte, S3SecretBytes)
		if _, err := rand.Read(secret); err != nil {
			return Key{}, "", fmt.Errorf("auth: random source: %w", err)
		}
		k.S3Secret = base64.RawURLEncoding.EncodeToString(secret)
	}
	return k, token, nil
}

// Digest returns the hex SHA-256 of a key string, as stores keep it.
func Digest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ParseToken returns the key id of a key string. It checks the whole shape (prefix, id,
// separator, secret length and alphabet) and never returns any part of the secret.
// Errors: ErrMalformed.
func ParseToken(token string) (string, error) {
	if len(token) != TokenLen || !strings.HasPrefix(token, TokenPrefix) {
		return "", ErrMalformed
	}
	id := token[len(TokenPrefix) : len(TokenPrefix)+KeyIDLen]
	if !ValidKeyID(id) || token[len(TokenPrefix)+KeyIDLen] != '_' {
		return "", ErrMalformed
	}
	for _, c := range []byte(token[len(TokenPrefix)+KeyIDLen+1:]) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", ErrMalformed
		}
	}
	return id, nil
}

// ValidKeyID reports whether id has the shape of a key id: KeyIDLen lowercase hex digits.
func ValidKeyID(id string) bool {
	if len(id) != KeyIDLen {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseAuthorization returns the key of an Authorization header value: "Bearer <key>"
// (RFC 6750 §2.1; the scheme is case-insensitive, RFC 9110 §11.1), one or more spaces
// between, nothing after. Errors: ErrNoCredentials for an empty header, ErrMalformed for
// anything else that is not a bearer key.
func ParseAuthorization(header string) (string, error) {
	if header == "" {
		return "", ErrNoCredentials
	}
	scheme, rest, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrMalformed
	}
	token := strings.TrimLeft(rest, " ")
	if _, err := ParseToken(token); err != nil {
		return "", err
	}
	return token, nil
}

// dummyDigest is compared against when a key id is unknown, so that an unknown id and a
// wrong secret cost the same work.
var dummyDigest = Digest(TokenPrefix + strings.Repeat("0", KeyIDLen) + "_" + strings.Repeat("A", secretLen))

// CheckSecret compares the digest of token with k's in constant time (crypto/subtle).
func CheckSecret(k Key, token string) bool {
	return subtle.ConstantTimeCompare([]byte(Digest(token)), []byte(k.Digest)) == 1
}
