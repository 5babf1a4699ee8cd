package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// MinIOConfig is where the minio baseline reaches the object store. Point it at the
// object store the measured Cairn keeps its blobs in: the baseline is that store's limit.
type MinIOConfig struct {
	// Endpoint is the object store's URL: http://host:port (no TLS) or https://host[:port].
	Endpoint string
	// Bucket is where the baseline writes, under the prefix "cairn-bench-baseline/"; it is
	// created when missing. Cairn's own bucket works too: the prefix is not Cairn's.
	Bucket string
	// AccessKey and SecretKey are the credentials; `cairn bench` takes them from
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, as `cairn serve` does.
	AccessKey, SecretKey string
	// Region is the region requests are signed for. Default "" = "us-east-1".
	Region string
}

// minioPrefix is the key prefix of every object the baseline writes.
const minioPrefix = "cairn-bench-baseline/"

func (c MinIOConfig) validate() error {
	if _, _, err := c.hostSecure(); err != nil {
		return err
	}
	if c.Bucket == "" {
		return errors.New("give the bucket to write to")
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return errors.New("credentials missing (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	return nil
}

// hostSecure splits Endpoint into minio-go's host:port and TLS flag.
func (c MinIOConfig) hostSecure() (host string, secure bool, err error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", false, fmt.Errorf("endpoint %q: want http://host:port or https://host[:port]", c.Endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}

// minioStore is an objectStore of minio-go in one bucket.
type minioStore struct {
	c      *minio.Client
	bucket string
	idle   func()
}

// openMinIOBaseline connects to cfg.MinIO, creates the bucket if needed and, for a get
// scenario, writes the Files objects the phases read.
func openMinIOBaseline(ctx context.Context, cfg Config, nonce uint64) (*objectPhases, error) {
	host, secure, err := cfg.MinIO.hostSecure()
	if err != nil {
		return nil, fmt.Errorf("minio baseline: %w", err)
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("minio baseline: %w", err)
	}
	tr.MaxIdleConnsPerHost = workers(cfg)
	tr.DisableCompression = true
	c, err := minio.New(host, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.MinIO.AccessKey, cfg.MinIO.SecretKey, ""),
		Secure:    secure,
		Transport: tr,
		Region:    cfg.MinIO.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("minio baseline: %w", err)
	}
	store := &minioStore{c: c, bucket: cfg.MinIO.Bucket, idle: tr.CloseIdleConnections}
	b := &objectPhases{
		name: "minio baseline", store: store, prefix: fmt.Sprintf("%s%016x/", minioPrefix, nonce),
		sizeBytes: cfg.SizeBytes, files: cfg.Files, nonce: nonce, get: isGetScenario(cfg.Scenario),
	}
	exists, err := c.BucketExists(ctx, store.bucket)
	if err == nil && !exists {
		err = c.MakeBucket(ctx, store.bucket, minio.MakeBucketOptions{Region: cfg.MinIO.Region})
	}
	if err != nil {
		store.closeIdle()
		return nil, fmt.Errorf("minio baseline: bucket %q: %w", store.bucket, err)
	}
	if err := b.setup(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

func (s *minioStore) put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	_, err := s.c.PutObject(ctx, s.bucket, key, body, size, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

func (s *minioStore) get(ctx context.Context, key string) (io.ReadCloser, error) {
	return s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
}

func (s *minioStore) closeIdle() { s.idle() }

// removePrefix deletes every object under prefix.
func (s *minioStore) removePrefix(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := make(chan minio.ObjectInfo)
	var listErr error
	go func() {
		defer close(objects)
		for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if o.Err != nil {
				listErr = fmt.Errorf("list %s: %w", prefix, o.Err)
				return
			}
			select {
			case objects <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for e := range s.c.RemoveObjects(ctx, s.bucket, objects, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && len(errs) < 3 {
			errs = append(errs, fmt.Errorf("remove %s: %w", strings.TrimPrefix(e.ObjectName, prefix), e.Err))
		}
	}
	// RemoveObjects has drained objects, so the lister has returned and set listErr.
	return errors.Join(append(errs, listErr)...)
}
