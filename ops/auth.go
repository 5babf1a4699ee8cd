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
// "auto" with a client listener that is not on loopback (workbench/auth/doc.go).
func (c Config) AuthRequired() bool {
	switch c.Auth {
	case AuthRequired:
		return true
	case AuthOff:
		return false
	}
	return !loopbackListen(c.Listen)
}

// AdminAuthRequired reports whether requests to the admin listener need an API key: when
// the client listener's do (AuthRequired), and whenever the admin listener binds beyond
// loopback, whatever the client listener's address ("auto" with a loopback --listen and
// a non-loopback --admin-listen would otherwise serve key creation to the network).
func (c Config) AdminAuthRequired() bool {
	return c.AuthRequired() || !loopbackListen(c.AdminAddress())
}

// ClientBeyondLoopback and AdminBeyondLoopback report whether the client or the admin
// listener binds an address other hosts can reach (anything but 127.0.0.0/8, ::1 and
// localhost).
func (c Config) ClientBeyondLoopback() bool { return !loopbackListen(c.Listen) }

// Per-principal concurrency caps on by default beyond loopback (issue 25: one read key's
// 80 parallel listings took a node to 2.3 GB). A node on loopback serves one host's
// agents, which an operator trusts; beyond it every key is capped unless configured.
const (
	// AutoPrincipalLimit (-1) is the default of the per-principal caps: no limit on a
	// loopback client listener, the Default* value beyond it.
	AutoPrincipalLimit = -1
	// DefaultPrincipalMaxUploads is half the node's default ingest slots, so two
	// principals can always write at once.
	DefaultPrincipalMaxUploads = 2
	// DefaultPrincipalMaxAdmissions is how many shares of the memory budget one principal
	// holds at once beyond loopback.
	DefaultPrincipalMaxAdmissions = 8
)

// EffectivePrincipalMaxUploads is PrincipalMaxUploads with AutoPrincipalLimit resolved
// against the client listener (0: no limit).
func (c Config) EffectivePrincipalMaxUploads() int {
	return c.autoLimit(c.PrincipalMaxUploads, DefaultPrincipalMaxUploads)
}

// EffectivePrincipalMaxAdmissions is PrincipalMaxAdmissions with AutoPrincipalLimit
// resolved against the client listener (0: no limit).
func (c Config) EffectivePrincipalMaxAdmissions() int {
	return c.autoLimit(c.PrincipalMaxAdmissions, DefaultPrincipalMaxAdmissions)
}

func (c Config) autoLimit(v, beyond int) int {
	switch {
	case v != AutoPrincipalLimit:
		return v
	case c.ClientBeyondLoopback():
		return beyond
	}
	return 0
}

// AdminBeyondLoopback: see ClientBeyondLoopback.
func (c Config) AdminBeyondLoopback() bool { return !loopbackListen(c.AdminAddress()) }

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
		if !loopbackListen(c.AdminAddress()) {
			return []*ConfigError{{Field: "Auth", Value: c.Auth,
				Rule: "must not be off when --admin-listen is not a loopback address (anyone who reaches it would act as the operator)"}}
		}
	default:
		return []*ConfigError{{Field: "Auth", Rule: "must be auto, required or off", Value: c.Auth}}
	}
	return nil
}

var authSettings = []setting{
	stringSetting("Auth", "auth", "API keys: auto (required when --listen is not loopback), required, or off (loopback only)",
		func(c *Config) *string { return &c.Auth }),
	boolSetting("MetricsRequireKey", "metrics_require_key", "require an API key (with the admin scope) for /metrics on a loopback listener's loopback connections too (by default they need none; beyond loopback it is always required)",
		func(c *Config) *bool { return &c.MetricsRequireKey }),
	boolSetting("RequireDistinctReviewer", "require_distinct_reviewer", "refuse a decision on a proposal by the principal that proposed it (403 PermissionDenied, details.reason self_review); needs API keys",
		func(c *Config) *bool { return &c.RequireDistinctReviewer }),
}
