package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench/auth"
)

func TestS3CredentialsBelongToOneLiveKey(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store, err := auth.OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(spec auth.KeySpec) auth.Key {
		t.Helper()
		k, _, err := auth.NewKey(spec, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Create(ctx, k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	s3key := mk(auth.KeySpec{Name: "s3", Agents: []string{"a"}, Scopes: auth.Scopes, S3: true})
	plain := mk(auth.KeySpec{Name: "plain", Agents: []string{"a"}, Scopes: auth.Scopes})
	if len(s3key.S3Secret) != 40 || plain.S3Secret != "" {
		t.Fatalf("S3 secrets %q (want 40 characters) and %q (want none)", s3key.S3Secret, plain.S3Secret)
	}
	akid := auth.S3AccessKeyID(s3key.ID)
	if id, ok := auth.S3KeyID(akid); !ok || id != s3key.ID || !strings.HasPrefix(akid, "CAIRN") {
		t.Fatalf("access key id %q names %q %v, want %q", akid, id, ok, s3key.ID)
	}
	keys := auth.S3Keys{Store: store}
	if secret, ok, err := keys.S3Secret(ctx, akid); !ok || err != nil || secret != s3key.S3Secret {
		t.Fatalf("S3Secret of a live key: %v %v", ok, err)
	}
	if p, err := keys.S3Principal(ctx, akid); err != nil || p.ID != s3key.ID {
		t.Fatalf("S3Principal: %v %v", p, err)
	}
	for name, id := range map[string]string{
		"a key without an S3 credential": auth.S3AccessKeyID(plain.ID),
		"a lower-case access key id":     "cairn" + s3key.ID,
		"another prefix":                 "AKIA" + strings.ToUpper(s3key.ID),
		"an unknown id":                  auth.S3AccessKeyID("0123456789abcdef"),
	} {
		if _, ok, _ := keys.S3Secret(ctx, id); ok {
			t.Errorf("%s has an S3 secret", name)
		}
		if _, err := keys.S3Principal(ctx, id); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("%s has a principal: %v", name, err)
		}
	}
	if _, err := store.Revoke(ctx, s3key.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := keys.S3Secret(ctx, akid); ok {
		t.Fatal("a revoked key's S3 credential still has a secret")
	}
}

func TestAnS3KeyActsInOneAgentRoot(t *testing.T) {
	for name, spec := range map[string]auth.KeySpec{
		"every root":  {Name: "x", AllAgents: true, Scopes: auth.Scopes, S3: true},
		"two roots":   {Name: "x", Agents: []string{"a", "b"}, Scopes: auth.Scopes, S3: true},
		"root+tenant": {Name: "x", Agents: []string{"a"}, Tenant: "b", Workspace: "w", Scopes: auth.Scopes, S3: true},
	} {
		var bad *auth.InvalidSpecError
		if _, _, err := auth.NewKey(spec, time.Now()); !errors.As(err, &bad) || bad.Field != "s3" {
			t.Errorf("%s: %v, want an invalid s3 field", name, err)
		}
	}
	if _, _, err := auth.NewKey(auth.KeySpec{Name: "x", Tenant: "t", Workspace: "w", Scopes: auth.Scopes, S3: true}, time.Now()); err != nil {
		t.Errorf("a key bound to a tenant: %v", err)
	}
}
