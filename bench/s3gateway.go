package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3GatewayConfig is where the S3 gateway phase reaches the measured Cairn's S3 gateway
// (`cairn serve --s3-listen`), and the S3 credential it signs with (`cairn admin key
// create --s3`): a key whose one agent root is Config.Agent, with workspace:read and
// workspace:write.
type S3GatewayConfig struct {
	// Endpoint is the gateway's URL: http://host:port or https://host[:port]. "" runs no
	// S3 gateway phase.
	Endpoint string
	// AccessKeyID and SecretAccessKey are the key's S3 credential; `cairn bench` takes
	// them from CAIRN_BENCH_S3_ACCESS_KEY_ID and CAIRN_BENCH_S3_SECRET_ACCESS_KEY (the
	// AWS_* variables are the minio baseline's).
	AccessKeyID, SecretAccessKey string
	// Region is the region requests are signed for, the gateway's (--s3-region). Default
	// "" = "us-east-1".
	Region string
}

// GatewayScenarios are the scenarios the S3 gateway phase has a like-for-like operation
// for: the minio baseline's.
var GatewayScenarios = BaselineScenarios[BaselineMinIO]

func (c S3GatewayConfig) validate() error {
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("endpoint %q: want http://host:port or https://host[:port]", c.Endpoint)
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return errors.New("credentials missing (CAIRN_BENCH_S3_ACCESS_KEY_ID and CAIRN_BENCH_S3_SECRET_ACCESS_KEY, from cairn admin key create --s3)")
	}
	return nil
}

// gatewayPrefix is the key prefix, inside the run's workbench, of the S3 gateway phase's
// objects.
const gatewayPrefix = "input/bench/s3-"

// openS3Gateway prepares the S3 gateway phase of cfg's scenario: the AWS SDK for Go v2's
// S3 client (path style, its default checksums: a CRC32 of every PUT body, validated on
// every GET that answers one) with bucket cfg.Workbench, which Run's setup created, and,
// for a get scenario, the Files objects the phases read, written through the gateway. nonce
// keeps its bodies apart from the REST phase's (Cairn would deduplicate equal bodies).
func openS3Gateway(ctx context.Context, cfg Config, nonce uint64) (*objectPhases, error) {
	tr := newTransport(workers(cfg))
	region := cfg.S3Gateway.Region
	if region == "" {
		region = "us-east-1"
	}
	c := awss3.New(awss3.Options{
		Region:       region,
		BaseEndpoint: aws.String(cfg.S3Gateway.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.S3Gateway.AccessKeyID, cfg.S3Gateway.SecretAccessKey, ""),
		HTTPClient:   &http.Client{Transport: tr},
		// A failed operation counts as one, as on REST, instead of hiding in a retry's latency.
		RetryMaxAttempts: 1,
	})
	store := &gatewayStore{c: c, bucket: cfg.Workbench, idle: tr.CloseIdleConnections}
	if _, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(store.bucket)}); err != nil {
		store.closeIdle()
		return nil, fmt.Errorf("s3 gateway: bucket %q (the run's workbench; the S3 key's agent root must be %q): %w", store.bucket, cfg.Agent, err)
	}
	b := &objectPhases{
		name: "s3 gateway", store: store, prefix: fmt.Sprintf("%s%016x/", gatewayPrefix, nonce),
		sizeBytes: cfg.SizeBytes, files: cfg.Files, nonce: nonce, get: isGetScenario(cfg.Scenario),
	}
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// gatewayStore is an objectStore of the AWS SDK for Go v2 in one bucket.
type gatewayStore struct {
	c      *awss3.Client
	bucket string
	idle   func()
}

func (s *gatewayStore) put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	_, err := s.c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		Body: body, ContentLength: aws.Int64(size), ContentType: aws.String("application/octet-stream")})
	return err
}

func (s *gatewayStore) get(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := s.c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

func (s *gatewayStore) closeIdle() { s.idle() }

// removePrefix deletes every object under prefix, a page of keys at a time.
func (s *gatewayStore) removePrefix(ctx context.Context, prefix string) error {
	pages := awss3.NewListObjectsV2Paginator(s.c, &awss3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := s.c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: aws.String(s.bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("delete under %s: %w", prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s: %s (and %d more)", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
	}
	return nil
}
