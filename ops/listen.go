package ops

import (
	"net"
)

// validateListeners checks the listener policy: the form of Listen (AdminListen's is
// validateServing's), the client TLS files, and which hosts the client and admin
// listeners may bind. Loopback is always allowed; beyond it a listener needs TLS
// (TLSCert and TLSKey) or, knowingly, InsecurePlaintext.
func (c Config) validateListeners() []*ConfigError {
	var errs configErrors
	bad := errs.add
	listenOK := true
	if rule := checkHostPort(c.Listen); rule != "" {
		bad("Listen", rule, c.Listen)
		listenOK = false
	}
	switch {
	case c.TLSCert != "" && c.TLSKey == "":
		bad("TLSKey", "must be set with --tls-cert (both or neither)", "")
	case c.TLSCert == "" && c.TLSKey != "":
		bad("TLSCert", "must be set with --tls-key (both or neither)", "")
	}
	if c.TLSClientCA != "" && (c.TLSCert == "" || c.TLSKey == "") {
		bad("TLSClientCA", "needs --tls-cert and --tls-key (mutual TLS is TLS first)", "")
	}
	if c.InsecurePlaintext && (c.TLSCert != "" || c.TLSKey != "") {
		bad("InsecurePlaintext", "must not be set with --tls-cert/--tls-key (they serve TLS)", "true")
	}
	if c.TLS() || c.InsecurePlaintext {
		return errs
	}
	const rule = "must be a loopback address (127.0.0.0/8, ::1 or localhost) unless TLS is configured (--tls-cert, --tls-key) or --insecure-plaintext is given"
	if listenOK && !loopbackAddr(c.Listen) {
		bad("Listen", rule, c.Listen)
	}
	if c.AdminListen != "" && checkHostPort(c.AdminListen) == "" && !loopbackAddr(c.AdminListen) {
		bad("AdminListen", rule, c.AdminListen)
	}
	return errs
}

// TLS reports whether the client and admin listeners serve TLS (TLSCert and TLSKey set).
func (c Config) TLS() bool { return c.TLSCert != "" && c.TLSKey != "" }

// ClientScheme is the URL scheme of the client and admin listeners: "https" with TLS,
// else "http".
func (c Config) ClientScheme() string {
	if c.TLS() {
		return "https"
	}
	return "http"
}

// BeyondLoopback reports whether the client or the admin listener binds an address
// other hosts can reach (anything but 127.0.0.0/8, ::1 and localhost; an empty host or
// 0.0.0.0 is every interface).
func (c Config) BeyondLoopback() bool {
	return !loopbackAddr(c.Listen) || !loopbackAddr(c.AdminAddress())
}

// loopbackAddr reports whether host:port addr binds loopback only; an address that does
// not parse counts as not loopback.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(host)
}

// loopbackHost reports whether host is "localhost" or a loopback IP address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var listenerSettings = []setting{
	stringSetting("TLSCert", "tls_cert", "PEM certificate (chain) the client and admin listeners serve TLS with; re-read when it changes",
		func(c *Config) *string { return &c.TLSCert }),
	stringSetting("TLSKey", "tls_key", "PEM private key of --tls-cert; re-read when it changes",
		func(c *Config) *string { return &c.TLSKey }),
	stringSetting("TLSClientCA", "tls_client_ca", "PEM CA bundle: require client certificates it signs (mutual TLS)",
		func(c *Config) *string { return &c.TLSClientCA }),
	boolSetting("InsecurePlaintext", "insecure_plaintext", "allow a listener beyond loopback without TLS (keys and data in clear text; logged as a warning)",
		func(c *Config) *bool { return &c.InsecurePlaintext }),
}
