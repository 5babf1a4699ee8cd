package ops

import (
	"net"
	"strings"
)

// The authentication modes (Config.Auth).
const (
	// AuthAuto requires a key when the client listener is not on loopback (the default).
	AuthAuto = "auto"
	// AuthRequired requires a key on every request, on loopback too.
	AuthRequired = "required"
	// AuthOff never requires a key; only on a loopback listener.
	AuthOff = "off"
)

// DefaultAuth is the default authentication mode.
const DefaultAuth = AuthAuto

// AuthRequired reports whether every request needs an API key: Auth is "required", or
// "auto" with a client listener that is not on loopback (DESIGN.md §4).
func (c Config) AuthRequired() bool {
	switch c.Auth {
	case AuthRequired:
		return true
	case AuthOff:
		return false
	}
	return !loopbackListen(c.Listen)
}

// loopbackListen reports whether a listen address binds loopback only.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validateAuth checks the authentication settings.
func (c Config) validateAuth() []*ConfigError {
	if c.RequireDistinctReviewer && !c.AuthRequired() {
		return []*ConfigError{{Field: "RequireDistinctReviewer", Value: "true",
			Rule: "needs API keys (--auth required, or a --listen beyond loopback): without them every request is the local operator, who could decide nothing it proposed"}}
	}
	switch c.Auth {
	case AuthAuto, AuthRequired:
	case AuthOff:
		if !loopbackListen(c.Listen) {
			return []*ConfigError{{Field: "Auth", Value: c.Auth,
				Rule: "must not be off when --listen is not a loopback address (anyone who reaches it would act as the local operator)"}}
		}
	default:
		return []*ConfigError{{Field: "Auth", Rule: "must be auto, required or off", Value: c.Auth}}
	}
	return nil
}

var authSettings = []setting{
	stringSetting("Auth", "auth", "API keys: auto (required when --listen is not loopback), required, or off (loopback only)",
		func(c *Config) *string { return &c.Auth }),
	boolSetting("MetricsRequireKey", "metrics_require_key", "require an API key for /metrics on loopback connections too (by default they need none)",
		func(c *Config) *bool { return &c.MetricsRequireKey }),
	boolSetting("RequireDistinctReviewer", "require_distinct_reviewer", "refuse a decision on a proposal by the principal that proposed it (403 PermissionDenied, details.reason self_review); needs API keys",
		func(c *Config) *bool { return &c.RequireDistinctReviewer }),
}
