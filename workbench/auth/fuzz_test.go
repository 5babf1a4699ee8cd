package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench/auth"
)

// FuzzParseAuthorization: any header value either parses to a well-formed key string
// whose id ParseToken agrees on, or fails with ErrUnauthenticated; no error shows what
// followed the key id.
func FuzzParseAuthorization(f *testing.F) {
	_, token, _ := auth.NewKey(auth.KeySpec{Name: "n", AllAgents: true, Scopes: []auth.Scope{auth.ScopeRead}}, time.Now())
	for _, s := range []string{"", "Bearer " + token, "bearer  " + token, "Basic abc", "Bearer cairn_", "Bearer " + token + " x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, err := auth.ParseAuthorization(header)
		if err != nil {
			if !errors.Is(err, auth.ErrUnauthenticated) {
				t.Fatalf("error %v does not match ErrUnauthenticated", err)
			}
			if len(header) > auth.TokenLen && strings.Contains(err.Error(), header[len(header)-8:]) {
				t.Fatalf("error %q shows part of the header", err)
			}
			return
		}
		if len(tok) != auth.TokenLen || !strings.HasSuffix(header, tok) {
			t.Fatalf("parsed %q out of %q", tok, header)
		}
		if _, err := auth.ParseToken(tok); err != nil {
			t.Fatalf("ParseToken of a parsed key: %v", err)
		}
	})
}

// FuzzKeyLookup: authenticating any key string against a store holding one key succeeds
// only for that key's exact string, and otherwise fails with ErrUnauthenticated.
func FuzzKeyLookup(f *testing.F) {
	now := time.Now()
	k, token, err := auth.NewKey(auth.KeySpec{Name: "n", AllAgents: true, Scopes: []auth.Scope{auth.ScopeRead}}, now)
	if err != nil {
		f.Fatal(err)
	}
	s, err := auth.OpenFileStore(f.TempDir() + "/" + auth.KeysFile)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Create(f.Context(), k); err != nil {
		f.Fatal(err)
	}
	f.Add(token)
	f.Add(token[:len(token)-1] + "A")
	f.Add(auth.TokenPrefix + k.ID + "_")
	f.Add(strings.Replace(token, k.ID, "0123456789abcdef", 1))
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := auth.Authenticate(s, tok, now)
		switch {
		case tok == token && (err != nil || p.ID != k.ID):
			t.Fatalf("the key itself: %+v, %v", p, err)
		case tok != token && !errors.Is(err, auth.ErrUnauthenticated):
			t.Fatalf("another string authenticated: %+v, %v", p, err)
		}
		if id, err := auth.ParseToken(tok); err == nil {
			if _, lerr := s.Lookup(id); (lerr == nil) != (id == k.ID) {
				t.Fatalf("Lookup(%q): %v", id, lerr)
			}
		}
	})
}
