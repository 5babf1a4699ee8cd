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

func TestValidateAuth(t *testing.T) {
	tests := []struct {
		name, auth, listen string
		bad                bool
	}{
		{"auto is valid", "auto", "127.0.0.1:7070", false},
		{"required is valid", "required", "127.0.0.1:7070", false},
		{"off on loopback is valid", "off", "127.0.0.1:7070", false},
		{"off on every interface is refused", "off", "0.0.0.0:7070", true},
		{"an unknown mode is refused", "maybe", "127.0.0.1:7070", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Auth, c.Listen = tt.auth, tt.listen
			var ce *ConfigError
			errs := c.validateAuth()
			if got := len(errs) > 0; got != tt.bad {
				t.Fatalf("validateAuth() = %v, want bad %v", errs, tt.bad)
			}
			if tt.bad && (!errors.As(errs[0], &ce) || ce.Flag() != "--auth") {
				t.Fatalf("error %v does not name --auth", errs[0])
			}
		})
	}
}

func TestRequireDistinctReviewerNeedsAPIKeys(t *testing.T) {
	tests := []struct {
		name, auth, listen string
		bad                bool
	}{
		{"with keys required on loopback it is valid", "required", "127.0.0.1:7070", false},
		{"beyond loopback under auto it is valid", "auto", "0.0.0.0:7070", false},
		{"on a keyless loopback node it is refused", "auto", "127.0.0.1:7070", true},
		{"with auth off it is refused", "off", "127.0.0.1:7070", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Auth, c.Listen, c.RequireDistinctReviewer = tt.auth, tt.listen, true
			errs := c.validateAuth()
			if got := len(errs) > 0; got != tt.bad {
				t.Fatalf("validateAuth() = %v, want bad %v", errs, tt.bad)
			}
			var ce *ConfigError
			if tt.bad && (!errors.As(errs[0], &ce) || ce.Flag() != "--require-distinct-reviewer") {
				t.Fatalf("error %v does not name --require-distinct-reviewer", errs[0])
			}
		})
	}
}
