package ops

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// BlobKind names a blob backend (docs/architecture.md#blob-storage-and-garbage-collection).
type BlobKind string

const (
	// BlobDir is a local directory (blob/dir).
	BlobDir BlobKind = "dir"
	// BlobS3 is an S3-compatible object store (blob/s3).
	BlobS3 BlobKind = "s3"
)

// URL schemes of Config.Blob.
const (
	blobDirScheme = "dir://"
	blobS3Scheme  = "s3://"
)

// BlobTarget is where a server keeps its blobs: Config.Blob and, for s3, the S3* fields,
// parsed. Config.BlobTarget builds it; api/server opens the backend from it.
type BlobTarget struct {
	// Kind is the backend.
	Kind BlobKind
	// Dir (BlobDir) is the blob directory: DataDir/blobs for "dir", PATH for "dir://PATH".
	Dir string
	// Bucket (BlobS3) is the BUCKET of "s3://BUCKET/PREFIX".
	Bucket string
	// Prefix (BlobS3) is the PREFIX of "s3://BUCKET/PREFIX" without leading or trailing
	// "/"; "" when the URL has none.
	Prefix string
	// Endpoint (BlobS3) is the "host" or "host:port" of S3Endpoint.
	Endpoint string
	// Secure (BlobS3) is true when S3Endpoint's scheme is https.
	Secure bool
	// Region (BlobS3) is S3Region.
	Region string
	// CreateBucket (BlobS3) is S3CreateBucket.
	CreateBucket bool
}

// BlobTarget parses c.Blob, and for an s3:// URL c.S3Endpoint, c.S3Region and
// c.S3CreateBucket. It fails with the *ConfigErrors Validate reports for those fields.
func (c Config) BlobTarget() (BlobTarget, error) {
	t, errs := c.blobTarget()
	if len(errs) > 0 {
		return BlobTarget{}, joinConfigErrors(errs)
	}
	return t, nil
}

// validateBlob returns the broken rules of Blob and the S3* fields.
func (c Config) validateBlob() []*ConfigError {
	_, errs := c.blobTarget()
	return errs
}

func (c Config) blobTarget() (BlobTarget, []*ConfigError) {
	var errs configErrors
	bad := errs.add

	var t BlobTarget
	switch {
	case c.Blob == string(BlobDir):
		t = BlobTarget{Kind: BlobDir, Dir: filepath.Join(c.DataDir, "blobs")}
	case strings.HasPrefix(c.Blob, blobDirScheme):
		t = BlobTarget{Kind: BlobDir, Dir: strings.TrimPrefix(c.Blob, blobDirScheme)}
		switch {
		case t.Dir == "":
			bad("Blob", `must name a directory after "dir://"`, c.Blob)
		case strings.ContainsRune(t.Dir, 0):
			bad("Blob", "must not contain NUL", c.Blob)
		}
	case strings.HasPrefix(c.Blob, blobS3Scheme):
		t.Kind = BlobS3
		var ok bool
		t.Bucket, t.Prefix, ok = strings.Cut(strings.TrimPrefix(c.Blob, blobS3Scheme), "/")
		t.Prefix = strings.TrimSuffix(t.Prefix, "/")
		switch {
		case strings.Contains(t.Bucket, "@"):
			bad("Blob", "must not carry credentials (the object store's come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", shownURL(c.Blob))
		case strings.ContainsAny(c.Blob, "?#"):
			bad("Blob", "must be s3://BUCKET[/PREFIX] without a query or fragment", shownURL(c.Blob))
		case t.Bucket == "":
			bad("Blob", `must name a bucket after "s3://"`, shownURL(c.Blob))
		case s3utils.CheckValidBucketNameStrict(t.Bucket) != nil:
			bad("Blob", "must name a valid S3 bucket (3 to 63 characters of [a-z0-9.-], starting and ending with a letter or digit, not an IP address)", shownURL(c.Blob))
		case ok && strings.HasSuffix(c.Blob, "//"):
			bad("Blob", s3PrefixRule, shownURL(c.Blob))
		default:
			if rule := checkS3Prefix(t.Prefix); rule != "" {
				bad("Blob", rule, shownURL(c.Blob))
			}
		}
	default:
		bad("Blob", "must be dir, dir://PATH or s3://BUCKET[/PREFIX]", c.Blob)
	}

	if t.Kind == BlobS3 {
		switch {
		case c.S3Endpoint == "":
			bad("S3Endpoint", "must be set (or CAIRN_S3_ENDPOINT) when --blob is an s3:// URL", "")
		default:
			var rule, shown string
			t.Endpoint, t.Secure, rule, shown = parseS3Endpoint(c.S3Endpoint)
			if rule != "" {
				bad("S3Endpoint", rule, shown)
			}
		}
		t.Region = c.S3Region
		t.CreateBucket = c.S3CreateBucket
	} else if c.S3Endpoint != "" {
		bad("S3Endpoint", "must be empty unless --blob is an s3:// URL (did you mean --blob s3://BUCKET?)", "")
	}
	if c.S3DirectReads && t.Kind != BlobS3 {
		bad("S3DirectReads", "needs an s3:// --blob: direct reads are presigned object-store URLs", "true")
	}
	if rule := checkS3Region(c.S3Region); rule != "" {
		bad("S3Region", rule, c.S3Region)
	}
	return t, errs
}

const s3PrefixRule = `must have a prefix of "/"-separated non-empty segments other than "." and ".."`

// checkS3Prefix returns the broken rule of the prefix of an s3:// URL (trailing "/"
// already removed), or "".
func checkS3Prefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	if len(prefix) > MaxS3PrefixBytes {
		return "must have a prefix of at most " + strconv.Itoa(MaxS3PrefixBytes) + " bytes"
	}
	if strings.ContainsAny(prefix, "\x00\\") {
		return "must not contain NUL or a backslash in its prefix"
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return s3PrefixRule
		}
	}
	return ""
}

// parseS3Endpoint parses "http(s)://host[:port]" into minio-go's "host[:port]" and whether
// to use TLS. On failure it returns the broken rule and the value to show (shownURL: no
// credentials, query or fragment).
func parseS3Endpoint(raw string) (hostPort string, secure bool, rule, shown string) {
	shown = shownURL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, "must be a URL such as http://127.0.0.1:9000 or https://s3.example.com", shown
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, "must be an http:// (no TLS) or https:// URL", shown
	case u.User != nil:
		return "", false, "must not carry credentials (they come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", shown
	case u.Host == "" || u.Hostname() == "":
		return "", false, "must have a host", shown
	case u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", false, "must be scheme://host[:port] without a path, query or fragment", shown
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return "", false, "must have a numeric port 1..65535", shown
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", false, "must have a numeric port 1..65535", shown
	}
	return u.Host, u.Scheme == "https", "", ""
}

// checkS3Region returns the broken rule of a region, or "".
func checkS3Region(region string) string {
	const rule = "must be 1 to 64 characters of [A-Za-z0-9_-]"
	if region == "" || len(region) > MaxS3RegionBytes {
		return rule
	}
	for i := 0; i < len(region); i++ {
		c := region[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return rule
		}
	}
	return ""
}
