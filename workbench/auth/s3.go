package auth

import (
	"context"
	"strings"
	"time"
)

// An API key made with KeySpec.S3 also holds an S3 credential for the S3 gateway (api/s3):
//
//	access key id      CAIRN<the key's id in upper case>   (CAIRN0123456789ABCDEF)
//	secret access key  Key.S3Secret: the unpadded base64url of S3SecretBytes random bytes
//
// The access key id is public, like the key id; the secret is shown once, at creation,
// and never listed, logged or returned again. The credential authenticates as the key's
// principal: revoking or expiring the key ends it too.
const (
	// S3AccessKeyPrefix starts every S3 access key id.
	S3AccessKeyPrefix = "CAIRN"
	// S3SecretBytes is the entropy of an S3 secret, in bytes (a 40-character secret).
	S3SecretBytes = 30
)

// S3AccessKeyID is the access key id of key id's S3 credential.
func S3AccessKeyID(id string) string { return S3AccessKeyPrefix + strings.ToUpper(id) }

// S3KeyID is the key id an S3 access key id names; false when it names none.
func S3KeyID(accessKeyID string) (string, bool) {
	rest, ok := strings.CutPrefix(accessKeyID, S3AccessKeyPrefix)
	if !ok || rest != strings.ToUpper(rest) {
		return "", false
	}
	id := strings.ToLower(rest)
	return id, ValidKeyID(id)
}

// S3Keys answers the S3 gateway's questions (api/s3.Keys) from a key store: the secret
// and principal of a live key that has an S3 credential. Now is the clock (time.Now when
// nil).
type S3Keys struct {
	Store Store
	Now   func() time.Time
}

func (s S3Keys) lookup(accessKeyID string) (Key, bool) {
	id, ok := S3KeyID(accessKeyID)
	if !ok {
		return Key{}, false
	}
	k, err := s.Store.Lookup(id)
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if err != nil || k.LiveIn(s.Store, now()) != nil || k.S3Secret == "" {
		return Key{}, false
	}
	return k, true
}

// S3Secret returns the secret of a live S3 credential; ok is false for none.
func (s S3Keys) S3Secret(_ context.Context, accessKeyID string) (string, bool, error) {
	k, ok := s.lookup(accessKeyID)
	return k.S3Secret, ok, nil
}

// S3Principal returns the principal of a live S3 credential; ErrUnauthenticated for none.
func (s S3Keys) S3Principal(_ context.Context, accessKeyID string) (Principal, error) {
	k, ok := s.lookup(accessKeyID)
	if !ok {
		return Principal{}, ErrUnauthenticated
	}
	return k.Principal, nil
}
