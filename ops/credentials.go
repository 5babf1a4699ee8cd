package ops

import (
	"fmt"
	"log/slog"
	"os"
)

// Environment variables holding the object store's credentials: the names the AWS SDKs
// and CLIs use, so existing tooling and secret stores work unchanged. Secrets are never
// read from flags (process listings, shell history) or the YAML file (configuration
// repositories).
const (
	EnvS3AccessKey = "AWS_ACCESS_KEY_ID"
	EnvS3SecretKey = "AWS_SECRET_ACCESS_KEY"
)

// Credentials are the secrets of a server process. They are kept out of Config, which is
// printed and logged: String, GoString and LogValue say only whether each one is set.
type Credentials struct {
	// S3AccessKey and S3SecretKey sign requests to an s3:// blob store (AWS Signature
	// Version 4). Both empty means anonymous requests.
	S3AccessKey string
	S3SecretKey string
}

// LoadCredentials reads the credentials from the environment through getenv (nil means
// os.Getenv): S3AccessKey from AWS_ACCESS_KEY_ID, S3SecretKey from AWS_SECRET_ACCESS_KEY.
// An empty variable counts as unset. It fails with a *ConfigError (which never shows a
// value) when only one of the two is set.
func LoadCredentials(getenv func(string) string) (Credentials, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Credentials{S3AccessKey: getenv(EnvS3AccessKey), S3SecretKey: getenv(EnvS3SecretKey)}
	if (c.S3AccessKey == "") != (c.S3SecretKey == "") {
		return Credentials{}, &ConfigError{
			Source: "environment",
			Rule:   fmt.Sprintf("%s and %s must both be set or both be unset", EnvS3AccessKey, EnvS3SecretKey),
		}
	}
	return c, nil
}

// HasS3 reports whether S3 requests are signed (both keys set).
func (c Credentials) HasS3() bool { return c.S3AccessKey != "" && c.S3SecretKey != "" }

// String says which credentials are set, never their values.
func (c Credentials) String() string {
	return fmt.Sprintf("Credentials{S3AccessKey:%s S3SecretKey:%s}", setOrUnset(c.S3AccessKey), setOrUnset(c.S3SecretKey))
}

// GoString is String, so %#v does not print the secrets either.
func (c Credentials) GoString() string { return c.String() }

// LogValue makes slog log which credentials are set, never their values.
func (c Credentials) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("s3_access_key", setOrUnset(c.S3AccessKey)),
		slog.String("s3_secret_key", setOrUnset(c.S3SecretKey)),
	)
}

func setOrUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return "set"
}
