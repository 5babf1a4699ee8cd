package s3

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Defaults of Config (DefaultConfig).
const (
	// DefaultRegion is the region requests are signed for when Config.Region is empty. MinIO,
	// Ceph RGW and SeaweedFS accept it whatever their own setting; AWS needs the bucket's.
	DefaultRegion = "us-east-1"
	// DefaultPartSizeBytes: payloads longer than this are uploaded in parts of this size.
	// Segments are at most blob.ChunkMaxBytes (16 MiB), so Puts of the write path are single
	// PUTs.
	DefaultPartSizeBytes = 16 << 20
	// DefaultResponseHeaderTimeout is Config.ResponseHeaderTimeout's default.
	DefaultResponseHeaderTimeout = 10 * time.Second
	// DefaultMaxAttempts, DefaultBaseDelay and DefaultMaxDelay bound the retries of one
	// request: at most 5 attempts, waiting up to 100 ms, 200 ms, 400 ms, 800 ms between
	// them (full jitter): at most 1.5 s of waiting in all.
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = 100 * time.Millisecond
	DefaultMaxDelay    = 2 * time.Second
)

// Limits of S3 multipart uploads (AWS S3 "Multipart upload limits"): every part but the last
// is at least MinPartSizeBytes and at most MaxPartSizeBytes long.
const (
	MinPartSizeBytes = 5 << 20
	MaxPartSizeBytes = 5 << 30
)

// partConcurrency is how many parts of one multipart upload are in flight at once.
const partConcurrency = 4

// Config says where the store lives and how it talks to it. Start from DefaultConfig: a
// zero PartSizeBytes or Retry field means its default, but the zero CreateBucket is false.
type Config struct {
	// Endpoint is the object store's "host:port" (or "host"), without a scheme, e.g.
	// "127.0.0.1:9000" or "s3.eu-west-1.amazonaws.com". Required.
	Endpoint string
	// Bucket is the bucket that holds the blobs. Required; S3 bucket naming rules apply.
	Bucket string
	// Prefix is prepended to every object name: objects are
	// "<Prefix>/roots/<root uid>/blobs/<aa>/<sha256 hex>" (docs/architecture.md#blob-storage-and-garbage-collection), or
	// "roots/..." when Prefix is empty. Segments are separated by "/" and must be
	// non-empty; no leading or trailing "/". Default "".
	Prefix string
	// AccessKey and SecretKey are the static credentials requests are signed with (AWS
	// Signature Version 4). Both empty means anonymous requests.
	AccessKey string
	SecretKey string
	// Region is the region requests are signed for. Default DefaultRegion ("us-east-1").
	Region string
	// Secure selects HTTPS. Default false (plain HTTP).
	Secure bool
	// CreateBucket makes Open create Bucket when it does not exist; when false, Open fails
	// with ErrBucketMissing instead. Default true.
	CreateBucket bool
	// PartSizeBytes: a stored payload longer than this is uploaded as a multipart upload
	// in parts of this many bytes; shorter ones are one PUT. Between MinPartSizeBytes (5
	// MiB) and MaxPartSizeBytes (5 GiB); 0 means DefaultPartSizeBytes (16 MiB).
	PartSizeBytes int64
	// ResponseHeaderTimeout bounds the wait for an answer's headers once a request is
	// sent; a stalled store then costs one attempt this long, not minio-go's minute.
	// Non-negative; 0 means DefaultResponseHeaderTimeout (10 s).
	ResponseHeaderTimeout time.Duration
	// Retry bounds the retries of each request on transient failures.
	Retry RetryConfig
	// UploadJournal, when set, is a local directory where the Store notes every multipart
	// upload before it starts and forgets it once completed or aborted. Open aborts the
	// uploads a crashed process left noted there, so their parts are not kept (and
	// billed) forever (docs/architecture.md#blob-storage-and-garbage-collection). Empty: no journal.
	UploadJournal string
}

// RetryConfig bounds the retries of one request (one PUT, GET, HEAD, DELETE, list page or
// upload part) that failed transiently: a connection error, HTTP 500, 502, 503 or 504, 429,
// or an S3 throttling code such as SlowDown. Attempt n (from 0) is followed by a wait drawn
// uniformly from [0, min(MaxDelay, BaseDelay·2ⁿ)) ("full jitter", AWS Architecture Blog,
// "Exponential Backoff And Jitter"); a done ctx ends the wait at once.
//
// The Store retries itself and runs minio-go with its retries off, because minio-go's
// schedule is process-wide and not configurable. minio-go still waits up to 200 ms (its
// DefaultRetryUnit, jittered) after a failed attempt before it returns the failure; that
// wait comes on top of these.
type RetryConfig struct {
	// MaxAttempts is the number of attempts, the first included; 1 disables retries.
	// 0 means DefaultMaxAttempts (5).
	MaxAttempts int
	// BaseDelay is the bound of the first wait. 0 means DefaultBaseDelay (100 ms).
	BaseDelay time.Duration
	// MaxDelay caps every wait. 0 means DefaultMaxDelay (2 s).
	MaxDelay time.Duration
}

// DefaultConfig returns a Config with every optional field at its default. Endpoint,
// Bucket and the credentials are left empty.
func DefaultConfig() Config {
	return Config{
		Region:                DefaultRegion,
		CreateBucket:          true,
		PartSizeBytes:         DefaultPartSizeBytes,
		ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
		Retry: RetryConfig{
			MaxAttempts: DefaultMaxAttempts,
			BaseDelay:   DefaultBaseDelay,
			MaxDelay:    DefaultMaxDelay,
		},
	}
}

// withDefaults returns c with its zero optional fields set to their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Region == "" {
		c.Region = d.Region
	}
	if c.PartSizeBytes == 0 {
		c.PartSizeBytes = d.PartSizeBytes
	}
	if c.ResponseHeaderTimeout == 0 {
		c.ResponseHeaderTimeout = d.ResponseHeaderTimeout
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = d.Retry.MaxAttempts
	}
	if c.Retry.BaseDelay == 0 {
		c.Retry.BaseDelay = d.Retry.BaseDelay
	}
	if c.Retry.MaxDelay == 0 {
		c.Retry.MaxDelay = d.Retry.MaxDelay
	}
	return c
}

// ConfigError reports one bad Config field and the rule it broke. Secrets are never
// echoed.
type ConfigError struct {
	// Field is the Config field name, e.g. "Endpoint" or "Retry.MaxAttempts".
	Field string
	// Rule is the broken rule, phrased to follow the field name ("must not be empty").
	Rule string
	// Value is the offending value as text; "" when there is none to show.
	Value string
}

// Error formats as "blob/s3: config: <Field> <rule> (got "<value>")".
func (e *ConfigError) Error() string {
	msg := "blob/s3: config: " + e.Field + " " + e.Rule
	if e.Value != "" {
		msg += fmt.Sprintf(" (got %q)", e.Value)
	}
	return msg
}

// Validate checks every field against the rule documented on it, zero optional fields
// counting as their defaults. It returns nil or one *ConfigError per broken rule, joined
// with errors.Join (errors.As finds the first).
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(field, rule, value string) {
		errs = append(errs, &ConfigError{Field: field, Rule: rule, Value: value})
	}

	switch {
	case c.Endpoint == "":
		bad("Endpoint", "must not be empty", "")
	case strings.Contains(c.Endpoint, "://"):
		bad("Endpoint", `must be "host" or "host:port" without a scheme (use Secure for HTTPS)`, c.Endpoint)
	case strings.ContainsAny(c.Endpoint, "/?# \x00"):
		bad("Endpoint", `must be "host" or "host:port"`, c.Endpoint)
	default:
		if strings.Contains(c.Endpoint, ":") {
			if _, port, err := net.SplitHostPort(c.Endpoint); err != nil {
				bad("Endpoint", `must be "host" or "host:port"`, c.Endpoint)
			} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				bad("Endpoint", "must have a numeric port 1..65535", c.Endpoint)
			}
		}
	}

	if c.Bucket == "" {
		bad("Bucket", "must not be empty", "")
	} else if err := s3utils.CheckValidBucketNameStrict(c.Bucket); err != nil {
		bad("Bucket", "must be a valid S3 bucket name (3 to 63 characters of [a-z0-9.-], starting and ending with a letter or digit)", c.Bucket)
	}

	if c.Prefix != "" {
		for _, seg := range strings.Split(c.Prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				bad("Prefix", `must be "/"-separated non-empty segments other than "." and "..", without a leading or trailing "/"`, c.Prefix)
				break
			}
		}
		if strings.ContainsAny(c.Prefix, "\x00\\") {
			bad("Prefix", "must not contain NUL or a backslash", c.Prefix)
		}
	}

	if (c.AccessKey == "") != (c.SecretKey == "") {
		bad("AccessKey", "and SecretKey must both be set or both be empty", "")
	}

	if c.PartSizeBytes < MinPartSizeBytes || c.PartSizeBytes > MaxPartSizeBytes {
		bad("PartSizeBytes", fmt.Sprintf("must be between %d and %d bytes (S3 multipart limits)", MinPartSizeBytes, MaxPartSizeBytes),
			strconv.FormatInt(c.PartSizeBytes, 10))
	}

	if c.ResponseHeaderTimeout < 0 {
		bad("ResponseHeaderTimeout", "must not be negative", c.ResponseHeaderTimeout.String())
	}
	if c.Retry.MaxAttempts < 1 {
		bad("Retry.MaxAttempts", "must be at least 1", strconv.Itoa(c.Retry.MaxAttempts))
	}
	if c.Retry.BaseDelay < 0 {
		bad("Retry.BaseDelay", "must not be negative", c.Retry.BaseDelay.String())
	}
	if c.Retry.MaxDelay < c.Retry.BaseDelay {
		bad("Retry.MaxDelay", "must be at least Retry.BaseDelay", c.Retry.MaxDelay.String())
	}
	return errors.Join(errs...)
}
