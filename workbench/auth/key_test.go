package auth_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench/auth"
)

func TestNewKeyShape(t *testing.T) {
	now := time.Now()
	k, token, err := auth.NewKey(auth.KeySpec{Name: "ci", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(token) != auth.TokenLen || !strings.HasPrefix(token, auth.TokenPrefix+k.ID+"_") {
		t.Fatalf("token %d bytes, want %d starting with the prefix and id", len(token), auth.TokenLen)
	}
	if id, err := auth.ParseToken(token); err != nil || id != k.ID {
		t.Fatalf("ParseToken = %q, %v; want %q", id, err, k.ID)
	}
	if k.Digest != auth.Digest(token) || strings.Contains(k.Digest, token[len(token)-20:]) {
		t.Fatalf("digest %q is not the token's SHA-256", k.Digest)
	}
	_, token2, _ := auth.NewKey(auth.KeySpec{Name: "ci", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}}, now)
	if token2 == token {
		t.Fatal("two keys with the same secret")
	}
}

func TestKeySpecValidate(t *testing.T) {
	now := time.Now()
	ok := auth.KeySpec{Name: "n", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}}
	tests := []struct {
		name  string
		edit  func(*auth.KeySpec)
		field string
	}{
		{"a valid spec passes", func(*auth.KeySpec) {}, ""},
		{"all agents with no list passes", func(s *auth.KeySpec) { s.Agents, s.AllAgents = nil, true }, ""},
		{"an empty name is refused", func(s *auth.KeySpec) { s.Name = "" }, "name"},
		{"a name with a newline is refused", func(s *auth.KeySpec) { s.Name = "a\nb" }, "name"},
		{"a name with a bidi override is refused", func(s *auth.KeySpec) { s.Name = "ci\u202etoor" }, "name"},
		{"a name with a zero-width space is refused", func(s *auth.KeySpec) { s.Name = "c\u200bi" }, "name"},
		{"a name not in NFC is refused", func(s *auth.KeySpec) { s.Name = "cafe\u0301" }, "name"},
		{"a name in NFC with non-ASCII letters passes", func(s *auth.KeySpec) { s.Name = "caf\u00e9 ünï" }, ""},
		{"no agents and not all is refused", func(s *auth.KeySpec) { s.Agents = nil }, "agents"},
		{"agents and all is refused", func(s *auth.KeySpec) { s.AllAgents = true }, "agents"},
		{"a bad agent id is refused", func(s *auth.KeySpec) { s.Agents = []string{"../x"} }, "agents"},
		{"an agent twice is refused", func(s *auth.KeySpec) { s.Agents = []string{"a", "a"} }, "agents"},
		{"no scope is refused", func(s *auth.KeySpec) { s.Scopes = nil }, "scopes"},
		{"an unknown scope is refused", func(s *auth.KeySpec) { s.Scopes = []auth.Scope{"root"} }, "scopes"},
		{"a scope twice is refused", func(s *auth.KeySpec) { s.Scopes = []auth.Scope{auth.ScopeRead, auth.ScopeRead} }, "scopes"},
		{"a tenant without a workspace is refused", func(s *auth.KeySpec) { s.Tenant = "t" }, "tenant"},
		{"a tenant-bound key needs no agent list", func(s *auth.KeySpec) { s.Agents, s.Tenant, s.Workspace = nil, "t", "w" }, ""},
		{"a past expiry is refused", func(s *auth.KeySpec) { s.ExpiresAt = now.Add(-time.Second) }, "expires_at"},
		{"a workbench and prefixes with a trailing slash pass", func(s *auth.KeySpec) {
			s.Workbench, s.Prefixes = "fork", []string{"outputs/run1/", "input"}
		}, ""},
		{"a workbench with a tenant binding is refused", func(s *auth.KeySpec) { s.Workbench, s.Tenant, s.Workspace = "fork", "a", "w" }, "workbench"},
		{"a bad workbench id is refused", func(s *auth.KeySpec) { s.Workbench = "no/slash" }, "workbench"},
		{"an absolute prefix is refused", func(s *auth.KeySpec) { s.Prefixes = []string{"/outputs"} }, "prefixes"},
		{"a dot-dot prefix is refused", func(s *auth.KeySpec) { s.Prefixes = []string{"outputs/../input"} }, "prefixes"},
		{"a prefix below another is refused", func(s *auth.KeySpec) { s.Prefixes = []string{"outputs", "outputs/run1"} }, "prefixes"},
		{"too many prefixes are refused", func(s *auth.KeySpec) {
			for i := range auth.MaxPrefixes + 1 {
				s.Prefixes = append(s.Prefixes, "outputs/r"+string(rune('a'+i%26))+string(rune('a'+i/26)))
			}
		}, "prefixes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			s.Agents = append([]string(nil), ok.Agents...)
			tt.edit(&s)
			err := s.Validate(now)
			var ie *auth.InvalidSpecError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.field != "" && (!errors.As(err, &ie) || ie.Field != tt.field):
				t.Fatalf("Validate: %v, want a rule of %s", err, tt.field)
			}
		})
	}
}

func TestParseAuthorization(t *testing.T) {
	_, token, err := auth.NewKey(auth.KeySpec{Name: "n", AllAgents: true, Scopes: []auth.Scope{auth.ScopeRead}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		header string
		want   error
	}{
		{"Bearer " + token, nil},
		{"bearer " + token, nil},
		{"BEARER   " + token, nil},
		{"", auth.ErrNoCredentials},
		{"Bearer", auth.ErrMalformed},
		{"Bearer ", auth.ErrMalformed},
		{"Basic " + token, auth.ErrMalformed},
		{"Bearer " + token + " ", auth.ErrMalformed},
		{"Bearer " + token + "x", auth.ErrMalformed},
		{"Bearer " + strings.ToUpper(token), auth.ErrMalformed},
		{"Bearer\t" + token, auth.ErrMalformed},
		{"Bearer " + token[:len(token)-1] + "=", auth.ErrMalformed},
	}
	for _, tt := range tests {
		got, err := auth.ParseAuthorization(tt.header)
		if !errors.Is(err, tt.want) || (err == nil && got != token) {
			t.Errorf("ParseAuthorization(%.20q…) = %v, want %v", tt.header, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), token[len(auth.TokenPrefix)+auth.KeyIDLen+1:]) {
			t.Errorf("error %q shows the secret", err)
		}
	}
}

func TestPrincipalBoundToATenantMayUseItsRoot(t *testing.T) {
	p := auth.Principal{ID: "k", Agents: []string{"a"}, Tenant: "t", Workspace: "w"}
	for agent, want := range map[string]bool{"a": true, "t": true, "w": false, "other": false} {
		if got := p.MayUse(agent); got != want {
			t.Errorf("MayUse(%q) = %v, want %v", agent, got, want)
		}
	}
	if (auth.Principal{ID: "k"}).MayUse("") {
		t.Error("an unbound principal may use the empty root")
	}
}

func TestReachOfABoundKeyIsOneWorkbenchOfItsTenant(t *testing.T) {
	bound := auth.Principal{ID: "k", Tenant: "acme", Workspace: "other"}
	both := auth.Principal{ID: "k", Agents: []string{"acme"}, Tenant: "acme", Workspace: "other"}
	tests := []struct {
		name  string
		p     auth.Principal
		agent string
		want  auth.Reach
	}{
		{"a bound key reaches its workbench of its tenant", bound, "acme", auth.Reach{Workbench: "other"}},
		{"a bound key reaches nothing of another root", bound, "beta", auth.Reach{}},
		{"a root named among the key's roots is reached whole", both, "acme", auth.Reach{Whole: true}},
		{"a key for every root reaches every root whole", auth.Local, "acme", auth.Reach{Whole: true}},
		{"a tenant without a workspace reaches nothing", auth.Principal{ID: "k", Tenant: "acme"}, "acme", auth.Reach{}},
		{"a key bound to a workbench reaches that workbench of its roots", auth.Principal{ID: "k", Agents: []string{"acme"}, Workbench: "fork"}, "acme", auth.Reach{Workbench: "fork"}},
		{"a key bound to a workbench reaches nothing of another root", auth.Principal{ID: "k", Agents: []string{"acme"}, Workbench: "fork"}, "beta", auth.Reach{}},
		{"a key bound to prefixes reaches its roots' paths below them", auth.Principal{ID: "k", AllAgents: true, Prefixes: []string{"outputs/run1"}}, "acme", auth.Reach{Whole: true, Prefixes: []string{"outputs/run1"}}},
		{"a bound key's prefixes narrow its tenant's workbench", auth.Principal{ID: "k", Tenant: "acme", Workspace: "other", Prefixes: []string{"input"}}, "acme", auth.Reach{Workbench: "other", Prefixes: []string{"input"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.ReachIn(tt.agent); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ReachIn(%q) = %+v, want %+v", tt.agent, got, tt.want)
			}
			if tt.p.MayUse(tt.agent) != tt.want.Any() {
				t.Fatalf("MayUse(%q) disagrees with ReachIn", tt.agent)
			}
		})
	}
}
