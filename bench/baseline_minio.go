package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sync/errgroup"
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

// minioBaseline is BaselineMinIO bound to a run.
type minioBaseline struct {
	c         *minio.Client
	bucket    string
	prefix    string // minioPrefix + the run's nonce + "/"
	sizeBytes int64
	files     int
	get       bool // a get scenario: read the prepared objects
	nonce     uint64
	close     func()
}

// openMinIOBaseline connects to cfg.MinIO, creates the bucket if needed and, for a get
// scenario, writes the Files objects the phases read.
func openMinIOBaseline(ctx context.Context, cfg Config, nonce uint64) (*minioBaseline, error) {
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
	b := &minioBaseline{
		c: c, bucket: cfg.MinIO.Bucket, prefix: fmt.Sprintf("%s%016x/", minioPrefix, nonce),
		sizeBytes: cfg.SizeBytes, files: cfg.Files, nonce: nonce,
		get:   cfg.Scenario == ScenarioSmallGet || cfg.Scenario == ScenarioObjectGet,
		close: tr.CloseIdleConnections,
	}
	exists, err := c.BucketExists(ctx, b.bucket)
	if err == nil && !exists {
		err = c.MakeBucket(ctx, b.bucket, minio.MakeBucketOptions{Region: cfg.MinIO.Region})
	}
	if err != nil {
		b.close()
		return nil, fmt.Errorf("minio baseline: bucket %q: %w", b.bucket, err)
	}
	if b.get {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(setupConcurrency)
		for i := range b.files {
			g.Go(func() error { return b.put(gctx, b.readKey(uint64(i)), ^uint64(i)) })
		}
		if err := g.Wait(); err != nil {
			return nil, errors.Join(fmt.Errorf("minio baseline: setup: %w", err), b.Close())
		}
	}
	return b, nil
}

func (b *minioBaseline) readKey(i uint64) string { return fmt.Sprintf("%sread/%09d", b.prefix, i) }

// put writes the body of (nonce, seq) to key, the way the put scenarios generate it.
func (b *minioBaseline) put(ctx context.Context, key string, seq uint64) error {
	var body io.Reader
	if b.sizeBytes <= smallBodyBytes {
		body = bytes.NewReader(payloadBytes(b.nonce, seq, b.sizeBytes))
	} else {
		body = payload(b.nonce, seq, b.sizeBytes)
	}
	_, err := b.c.PutObject(ctx, b.bucket, key, body, b.sizeBytes, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

func (b *minioBaseline) phase(ctx context.Context, i int) (Op, func() error, error) {
	if b.get {
		return OpFunc(func(ctx context.Context, seq uint64) error {
			key := b.readKey(mix(seq) % uint64(b.files))
			obj, err := b.c.GetObject(ctx, b.bucket, key, minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			defer obj.Close()
			n, err := io.Copy(io.Discard, obj)
			if err != nil {
				return err
			}
			if n != b.sizeBytes {
				return fmt.Errorf("GET %s: %d bytes, want %d: %w", key, n, b.sizeBytes, io.ErrUnexpectedEOF)
			}
			return nil
		}), func() error { return nil }, nil
	}
	prefix := fmt.Sprintf("%sp%d/", b.prefix, i)
	return OpFunc(func(ctx context.Context, seq uint64) error {
			return b.put(ctx, fmt.Sprintf("%s%09d", prefix, seq), seq)
		}), func() error {
			return b.removePrefix(context.WithoutCancel(ctx), prefix)
		}, nil
}

// removePrefix deletes every object under prefix.
func (b *minioBaseline) removePrefix(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := make(chan minio.ObjectInfo)
	var listErr error
	go func() {
		defer close(objects)
		for o := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
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
	for e := range b.c.RemoveObjects(ctx, b.bucket, objects, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && len(errs) < 3 {
			errs = append(errs, fmt.Errorf("remove %s: %w", strings.TrimPrefix(e.ObjectName, b.prefix), e.Err))
		}
	}
	// RemoveObjects has drained objects, so the lister has returned and set listErr.
	if err := errors.Join(append(errs, listErr)...); err != nil {
		return fmt.Errorf("minio baseline: clean up: %w", err)
	}
	return nil
}

// Close removes the objects the baseline prepared and closes its idle connections.
func (b *minioBaseline) Close() error {
	defer b.close()
	if !b.get {
		return nil
	}
	return b.removePrefix(context.Background(), b.prefix)
}
