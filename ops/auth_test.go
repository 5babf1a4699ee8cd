package ops

import (
	"errors"
	"testing"
)

func TestAuthRequired(t *testing.T) {
	tests := []struct {
		auth, listen string
		want         bool
	}{
		{"auto", "127.0.0.1:7070", false},
		{"auto", "[::1]:7070", false},
		{"auto", "localhost:7070", false},
		{"auto", "0.0.0.0:7070", true},
		{"auto", "10.0.0.5:7070", true},
		{"required", "127.0.0.1:7070", true},
		{"off", "127.0.0.1:7070", false},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		c.Auth, c.Listen = tt.auth, tt.listen
		if got := c.AuthRequired(); got != tt.want {
			t.Errorf("--auth %s --listen %s: AuthRequired() = %v, want %v", tt.auth, tt.listen, got, tt.want)
		}
	}
}

// TestValidateAuth: the modes and where they may run, and --require-distinct-reviewer,
// which needs API keys; a refusal names the flag that broke its rule.
func TestValidateAuth(t *testing.T) {
	tests := []struct {
		name, auth, listen string
		reviewer           bool   // --require-distinct-reviewer
		flag               string // the flag the error names; "" when valid
	}{
		{"auto is valid", "auto", "127.0.0.1:7070", false, ""},
		{"required is valid", "required", "127.0.0.1:7070", false, ""},
		{"off on loopback is valid", "off", "127.0.0.1:7070", false, ""},
		{"off on every interface is refused", "off", "0.0.0.0:7070", false, "--auth"},
		{"an unknown mode is refused", "maybe", "127.0.0.1:7070", false, "--auth"},
		{"a distinct reviewer with keys required on loopback is valid", "required", "127.0.0.1:7070", true, ""},
		{"a distinct reviewer beyond loopback under auto is valid", "auto", "0.0.0.0:7070", true, ""},
		{"a distinct reviewer on a keyless loopback node is refused", "auto", "127.0.0.1:7070", true, "--require-distinct-reviewer"},
		{"a distinct reviewer with auth off is refused", "off", "127.0.0.1:7070", true, "--require-distinct-reviewer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Auth, c.Listen, c.RequireDistinctReviewer = tt.auth, tt.listen, tt.reviewer
			errs := c.validateAuth()
			if bad := tt.flag != ""; (len(errs) > 0) != bad {
				t.Fatalf("validateAuth() = %v, want bad %v", errs, bad)
			}
			var ce *ConfigError
			if tt.flag != "" && (!errors.As(errs[0], &ce) || ce.Flag() != tt.flag) {
				t.Fatalf("error %v does not name %s", errs[0], tt.flag)
			}
		})
	}
}
