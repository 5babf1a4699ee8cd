package ops

import (
	"errors"
	"strings"
	"testing"
)

func TestShownURLDropsUserinfoQueryAndFragment(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:18299/?X-Amz-Signature=S3CRETSIG", "http://127.0.0.1:18299/"},
		{"http://u:S3CRET@h:1/p#S3CRET", "http://h:1/p"},
		{"s3://AKIA:S3CRET@cairn/p?x=S3CRET", "s3://cairn/p"},
		{"u:S3CRET@h:2379", "h:2379"},
		{"http://h/a@b", "http://h/a@b"}, // an '@' in the path is no userinfo
		{"http://%zz:S3CRET@h?S3CRET", "http://h"},
		{"plain", "plain"},
	} {
		if got := shownURL(tt.in); got != tt.want {
			t.Errorf("shownURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRefusedURLSettingsShowNoSecret: every URL-valued setting, refused, names itself
// and echoes its value without the userinfo, query or fragment that may carry a secret.
func TestRefusedURLSettingsShowNoSecret(t *testing.T) {
	const secret = "S3CRETSIG"
	tests := []struct {
		field string
		set   func(*Config)
		shown string // must appear: the value, cut
	}{
		{"S3Endpoint", func(c *Config) {
			c.Blob, c.S3Endpoint = "s3://cairn", "http://127.0.0.1:18299/?X-Amz-Signature="+secret
		}, "http://127.0.0.1:18299/"},
		{"S3Endpoint", func(c *Config) { c.Blob, c.S3Endpoint = "s3://cairn", "http://AKIA:"+secret+"@minio:9000" }, "http://minio:9000"},
		{"S3Endpoint", func(c *Config) { c.Blob, c.S3Endpoint = "s3://cairn", "ftp://h:1#"+secret }, "ftp://h:1"},
		{"Blob", func(c *Config) { c.Blob, c.S3Endpoint = "s3://cairn/p?sig="+secret, "http://h:1" }, "s3://cairn/p"},
		{"Blob", func(c *Config) { c.Blob, c.S3Endpoint = "s3://AKIA:"+secret+"@cairn/p", "http://h:1" }, "s3://cairn/p"},
		{"AdvertiseClient", func(c *Config) { c.AdvertiseClient = "https://n1:7070/?token=" + secret }, "https://n1:7070/"},
		{"AdvertiseClient", func(c *Config) { c.AdvertiseClient = "https://u:" + secret + "@n1:7070" }, "https://n1:7070"},
		{"Etcd", func(c *Config) { c.Etcd = "http://root:" + secret + "@e1:2379" }, "http://e1:2379"},
		{"Etcd", func(c *Config) { c.Etcd = "e0:2379,http://e1:2379/?token=" + secret }, "http://e1:2379/"},
		{"DocumentsRunnerURL", func(c *Config) { c.Documents.RunnerURL = "ftp://runner/?token=" + secret }, "ftp://runner/"},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.set(&c)
		err := c.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field {
			t.Fatalf("%s: Validate() = %v, want a *ConfigError about %s", tt.field, err, tt.field)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: message %q shows the secret", tt.field, err)
		}
		if ce.Value != tt.shown {
			t.Errorf("%s: shown value %q, want %q (message %q)", tt.field, ce.Value, tt.shown, err)
		}
	}
}
