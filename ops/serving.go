package ops

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/api/rest"
)

// Defaults of the serving limits (Config).
const (
	DefaultReadHeaderTimeout       = 10 * time.Second
	DefaultIdleTimeout             = 2 * time.Minute
	DefaultWriteTimeout            = rest.DefaultWriteTimeout
	DefaultBodyMinBytesPerSecond   = rest.DefaultBodyMinBytesPerSecond
	DefaultBodyRateWindow          = rest.DefaultBodyRateWindow
	DefaultMaxConnections          = 4096
	DefaultMaxConnectionsPerClient = 1024
	DefaultBlobTimeout             = 30 * time.Second
	DefaultAdminListen             = "" // the client port + 1 (AdminAddress)
)

// validateServing checks the serving limits (each field documents its rule).
func (c Config) validateServing() []*ConfigError {
	var errs configErrors
	bad := errs.add
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"ReadHeaderTimeout", c.ReadHeaderTimeout}, {"IdleTimeout", c.IdleTimeout}, {"WriteTimeout", c.WriteTimeout},
		{"BodyRateWindow", c.BodyRateWindow}, {"BlobTimeout", c.BlobTimeout}} {
		if d.v <= 0 {
			bad(d.field, "must be positive", d.v.String())
		}
	}
	if c.BodyMinBytesPerSecond < 1 {
		bad("BodyMinBytesPerSecond", "must be at least 1 byte per second", strconv.FormatInt(c.BodyMinBytesPerSecond, 10))
	}
	if c.MaxConnections < 1 {
		bad("MaxConnections", "must be at least 1", strconv.Itoa(c.MaxConnections))
	}
	if c.MaxConnectionsPerClient < 1 || c.MaxConnectionsPerClient > max(c.MaxConnections, 1) {
		bad("MaxConnectionsPerClient", fmt.Sprintf("must be between 1 and --max-connections (%d)", c.MaxConnections), strconv.Itoa(c.MaxConnectionsPerClient))
	}
	if c.AdminListen != "" {
		if rule := checkHostPort(c.AdminListen); rule != "" {
			bad("AdminListen", rule, c.AdminListen)
		} else if c.AdminListen == c.Listen && !strings.HasSuffix(c.Listen, ":0") {
			bad("AdminListen", "must differ from --listen (admin routes are never served on the client listener)", c.AdminListen)
		}
	} else if _, port, err := net.SplitHostPort(c.Listen); err == nil && port == "65535" {
		bad("AdminListen", "must be set when --listen uses port 65535 (the default is the client port + 1)", "")
	}
	for _, h := range c.AllowedHostList() {
		if strings.ContainsAny(h, " /\\@\x00") {
			bad("AllowedHosts", "must be comma-separated host names or host:port", c.AllowedHosts)
			break
		}
	}
	return errs
}

// AdminAddress returns the admin listen address: AdminListen, or by default the host of
// Listen with the next port (port 0, a free port, when Listen picks a free port).
func (c Config) AdminAddress() string {
	if c.AdminListen != "" {
		return c.AdminListen
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return c.Listen
	}
	n, err := strconv.Atoi(port)
	if err != nil || n == 0 {
		return net.JoinHostPort(host, "0")
	}
	return net.JoinHostPort(host, strconv.Itoa(n+1))
}

// AllowedHostList returns AllowedHosts split at commas, trimmed, lower-cased, empty ones
// dropped.
func (c Config) AllowedHostList() []string {
	return splitList(strings.ToLower(c.AllowedHosts))
}

// HostNames returns the names the client listener answers in a Host header: the
// loopback names, the host of Listen and AllowedHosts (with or without a port).
func (c Config) HostNames() []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if host, _, err := net.SplitHostPort(c.Listen); err == nil && host != "" {
		names = append(names, strings.ToLower(host))
	}
	return append(names, c.AllowedHostList()...)
}

var servingSettings = []setting{
	durationSetting("ReadHeaderTimeout", "read_header_timeout", "deadline for reading a request's headers",
		func(c *Config) *time.Duration { return &c.ReadHeaderTimeout }),
	durationSetting("IdleTimeout", "idle_timeout", "keep-alive connections idle this long are closed",
		func(c *Config) *time.Duration { return &c.IdleTimeout }),
	durationSetting("WriteTimeout", "write_timeout", "a client that reads nothing of a response this long is cut off",
		func(c *Config) *time.Duration { return &c.WriteTimeout }),
	int64Setting("BodyMinBytesPerSecond", "body_min_bytes_per_second", "slowest average rate a request body may arrive at, bytes/s",
		func(c *Config) *int64 { return &c.BodyMinBytesPerSecond }),
	durationSetting("BodyRateWindow", "body_rate_window", "waiting time the minimum body rate is averaged over (a body stalled this long is cut off)",
		func(c *Config) *time.Duration { return &c.BodyRateWindow }),
	intSetting("MaxConnections", "max_connections", "most client connections the node holds open",
		func(c *Config) *int { return &c.MaxConnections }),
	intSetting("MaxConnectionsPerClient", "max_connections_per_client", "most client connections from one IP address",
		func(c *Config) *int { return &c.MaxConnectionsPerClient }),
	durationSetting("BlobTimeout", "blob_timeout", "deadline of each object-store call (each part of a streamed one); past it: 503 ObjectUnavailable",
		func(c *Config) *time.Duration { return &c.BlobTimeout }),
	stringSetting("AdminListen", "admin_listen", "listen address of the admin routes (/v1/admin/...), host:port (default: the client port + 1; beyond loopback as --listen)",
		func(c *Config) *string { return &c.AdminListen }),
	stringSetting("AllowedHosts", "allowed_hosts", "extra comma-separated Host names the client listener answers (besides loopback and the listen address)",
		func(c *Config) *string { return &c.AllowedHosts }),
}
