package ops

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestListenerPolicy: loopback is always allowed; beyond it a listener needs TLS or,
// knowingly, --insecure-plaintext; the TLS settings come in the documented sets.
func TestListenerPolicy(t *testing.T) {
	withTLS := func(c *Config) { c.TLSCert, c.TLSKey = "node.pem", "node.key" }
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string // "" when the configuration is valid
	}{
		{"the loopback default is valid", func(*Config) {}, ""},
		{"localhost is loopback", func(c *Config) { c.Listen = "localhost:7070" }, ""},
		{"::1 is loopback", func(c *Config) { c.Listen = "[::1]:7070" }, ""},
		{"another 127/8 address is loopback", func(c *Config) { c.Listen = "127.0.0.9:7070" }, ""},
		{"TLS on loopback is valid", withTLS, ""},
		{"every interface without TLS is refused", func(c *Config) { c.Listen = "0.0.0.0:7070" }, "Listen"},
		{"an empty host (every interface) without TLS is refused", func(c *Config) { c.Listen = ":7070" }, "Listen"},
		{"an interface address without TLS is refused", func(c *Config) { c.Listen = "10.1.2.3:7070" }, "Listen"},
		{"a host name without TLS is refused", func(c *Config) { c.Listen = "cairn.example:7070" }, "Listen"},
		{"every interface with TLS is valid", func(c *Config) { withTLS(c); c.Listen = "0.0.0.0:7070" }, ""},
		{"every interface with mutual TLS is valid", func(c *Config) {
			withTLS(c)
			c.TLSClientCA = "clients.pem"
			c.Listen = "0.0.0.0:7070"
		}, ""},
		{"every interface with --insecure-plaintext is valid", func(c *Config) { c.InsecurePlaintext = true; c.Listen = "0.0.0.0:7070" }, ""},
		{"--insecure-plaintext on loopback is valid (and changes nothing)", func(c *Config) { c.InsecurePlaintext = true }, ""},
		{"an admin listener beyond loopback without TLS is refused", func(c *Config) { c.AdminListen = "0.0.0.0:7071" }, "AdminListen"},
		{"an admin listener beyond loopback with TLS is valid", func(c *Config) { withTLS(c); c.AdminListen = "0.0.0.0:7071" }, ""},
		{"a loopback admin listener beside a TLS client listener beyond loopback is valid", func(c *Config) {
			withTLS(c)
			c.Listen, c.AdminListen = "0.0.0.0:7070", "127.0.0.1:7071"
		}, ""},
		{"a client listener beyond loopback in cluster mode with TLS is valid", func(c *Config) { validCluster(c); withTLS(c); c.Listen = "0.0.0.0:7070" }, ""},
		{"a client listener beyond loopback in cluster mode without TLS is refused", func(c *Config) { validCluster(c); c.Listen = "0.0.0.0:7070" }, "Listen"},
		{"a certificate without its key is refused", func(c *Config) { c.TLSCert = "node.pem" }, "TLSKey"},
		{"a key without its certificate is refused", func(c *Config) { c.TLSKey = "node.key" }, "TLSCert"},
		{"a client CA without a server certificate is refused", func(c *Config) { c.TLSClientCA = "clients.pem" }, "TLSClientCA"},
		{"--insecure-plaintext with TLS is refused", func(c *Config) { withTLS(c); c.InsecurePlaintext = true }, "InsecurePlaintext"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			if ce.Field != tt.field || ce.Rule == "" {
				t.Fatalf("got field %q rule %q (%v), want field %q with a rule", ce.Field, ce.Rule, err, tt.field)
			}
			if flag := ce.Flag(); flag == "" || !strings.Contains(err.Error(), flag+" ") {
				t.Fatalf("message %q does not name the field %s by its flag (%q)", err, tt.field, flag)
			}
		})
	}
}

func TestBeyondLoopback(t *testing.T) {
	tests := []struct {
		listen, admin string
		want          bool
	}{
		{"127.0.0.1:7070", "", false},
		{"localhost:7070", "[::1]:7071", false},
		{"0.0.0.0:7070", "", true},                // the default admin address is on the same host
		{":7070", "", true},                       // an empty host is every interface
		{"127.0.0.1:7070", "10.0.0.5:7071", true}, // the admin listener alone
		{"10.0.0.5:7070", "127.0.0.1:7071", true},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		c.Listen, c.AdminListen = tt.listen, tt.admin
		if got := c.BeyondLoopback(); got != tt.want {
			t.Errorf("Listen %q, AdminListen %q: BeyondLoopback() = %v, want %v", tt.listen, tt.admin, got, tt.want)
		}
	}
}

func TestClientScheme(t *testing.T) {
	c := DefaultConfig()
	if got := c.ClientScheme(); got != "http" {
		t.Errorf("without TLS: %q, want http", got)
	}
	c.TLSCert, c.TLSKey = "n.pem", "n.key"
	if got := c.ClientScheme(); got != "https" {
		t.Errorf("with TLS: %q, want https", got)
	}
}

// TestInsecurePlaintextIsSettable: the flag and the variable set it, and with it a
// listener beyond loopback loads (TestEveryFieldIsSettableInEveryLayer cannot set it
// together with TLS).
func TestInsecurePlaintextIsSettable(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	BindFlags(fs)
	if err := fs.Parse([]string{"--listen", "0.0.0.0:7070", "--insecure-plaintext"}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(fs, env(nil))
	if err != nil || !c.InsecurePlaintext {
		t.Fatalf("flag: %+v, %v", c.InsecurePlaintext, err)
	}
	c, err = LoadConfig(nil, env(map[string]string{"CAIRN_LISTEN": "0.0.0.0:7070", "CAIRN_INSECURE_PLAINTEXT": "true"}))
	if err != nil || !c.InsecurePlaintext {
		t.Fatalf("environment: %+v, %v", c.InsecurePlaintext, err)
	}
	_, err = LoadConfig(nil, env(map[string]string{"CAIRN_LISTEN": "0.0.0.0:7070"}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Listen" || ce.Source != "CAIRN_LISTEN" {
		t.Fatalf("without it: %v, want a Listen error from CAIRN_LISTEN", err)
	}
}
