package s3_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
	"go.uber.org/goleak"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/blob/s3/s3test"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStoreConformance(t *testing.T) {
	srv := s3test.Start(t)
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return s3test.Open(t, srv.Config(s3test.Bucket()))
	})
}

// With parts of the minimum size, the suite's largest blob goes up as a multipart upload.
func TestStoreConformanceWithSmallParts(t *testing.T) {
	if testing.Short() {
		t.Skip("the suite's multipart-sized blob is cut down in -short mode")
	}
	srv := s3test.Start(t)
	blobtest.Run(t, func(t *testing.T) blob.Store {
		cfg := srv.Config(s3test.Bucket())
		cfg.PartSizeBytes = s3.MinPartSizeBytes
		return s3test.Open(t, cfg)
	})
}

// Damage rewrites an object with one payload byte flipped and its metadata kept, as bit rot
// or a tampered object would leave it: only reading the payload can tell.
func TestStoreDamageConformance(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	buckets := map[blob.Store]string{} // subtests run one at a time
	blobtest.RunDamage(t, func(t *testing.T) blob.Store {
		cfg := srv.Config(s3test.Bucket())
		s := s3test.Open(t, cfg)
		buckets[s] = cfg.Bucket
		return s
	}, func(t *testing.T, s blob.Store, key blob.Key) {
		t.Helper()
		s3test.FlipPayloadByte(t, raw, buckets[s], s.(*s3.Store).ObjectName(key))
	})
}

// objectNames lists every object name in bucket.
func objectNames(t *testing.T, c *minio.Client, bucket string) []string {
	t.Helper()
	var names []string
	for oi := range c.ListObjectsIter(t.Context(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			t.Fatalf("list bucket: %v", oi.Err)
		}
		names = append(names, oi.Key)
	}
	return names
}

func TestObjectNamesFollowTheKeyLayout(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	cases := []struct {
		name, prefix, want string
	}{
		{"with a prefix of two segments", "tenant-a/cairn", "tenant-a/cairn/roots/%s/blobs/%s/%s"},
		{"with a prefix of one segment", "cairn", "cairn/roots/%s/blobs/%s/%s"},
		{"without a prefix", "", "roots/%s/blobs/%s/%s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.Config(s3test.Bucket())
			cfg.Prefix = tc.prefix
			s := s3test.Open(t, cfg)
			var want []string
			for i, root := range []string{"r1", "r2", "r10"} {
				data := []byte(fmt.Sprintf("blob %d", i))
				key := blobtest.KeyOf(root, data)
				blobtest.Put(t, s, key, data)
				h := key.Digest.String()
				name := fmt.Sprintf(tc.want, root, h[:2], h)
				if got := s.ObjectName(key); got != name {
					t.Errorf("ObjectName(%s) = %q, want %q", key, got, name)
				}
				want = append(want, name)
			}
			slices.Sort(want)
			if got := objectNames(t, raw, cfg.Bucket); !slices.Equal(got, want) {
				t.Errorf("bucket holds %q, want exactly %q", got, want)
			}
		})
	}
}

func TestObjectMetadataRecordsEncodingAndSize(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	cfg := srv.Config(s3test.Bucket())
	s := s3test.Open(t, cfg)
	cases := []struct {
		name string
		data []byte
		enc  blob.Encoding
	}{
		{"a compressed blob", blobtest.TextBytes(1, 64<<10), blob.EncodingZstd},
		{"an incompressible blob", blobtest.RandomBytes(1, 64<<10), blob.EncodingIdentity},
		{"an empty blob", nil, blob.EncodingIdentity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := blobtest.KeyOf("r1", tc.data)
			res := blobtest.Put(t, s, key, tc.data)
			oi, err := raw.StatObject(t.Context(), cfg.Bucket, s.ObjectName(key), minio.StatObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := oi.UserMetadata[s3.MetaEncoding]; got != tc.enc.String() {
				t.Errorf("x-amz-meta-cairn-encoding = %q, want %q", got, tc.enc)
			}
			if got, want := oi.UserMetadata[s3.MetaSize], fmt.Sprint(len(tc.data)); got != want {
				t.Errorf("x-amz-meta-cairn-size = %q, want %q", got, want)
			}
			if oi.Size != res.StoredBytes {
				t.Errorf("object is %d bytes, Put reported %d stored", oi.Size, res.StoredBytes)
			}
			// The object holds the payload as is: no header, no framing.
			payload := s3test.ObjectPayload(t, raw, cfg.Bucket, s.ObjectName(key))
			if want, _ := blob.Encode(nil, tc.data); !bytes.Equal(payload, want) {
				t.Errorf("object payload (%d bytes) is not blob.Encode's (%d bytes)", len(payload), len(want))
			}
		})
	}
}

// rawPut stores an object with the given user metadata, bypassing the Store.
func rawPut(t *testing.T, c *minio.Client, bucket, name string, payload []byte, meta map[string]string) {
	t.Helper()
	_, err := c.PutObject(t.Context(), bucket, name, bytes.NewReader(payload), int64(len(payload)),
		minio.PutObjectOptions{UserMetadata: meta})
	if err != nil {
		t.Fatalf("raw put %s: %v", name, err)
	}
}

func TestDamagedObjectsAreCorrupt(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	data := blobtest.TextBytes(2, 8<<10)
	zstd, _ := blob.Encode(nil, data)
	size := fmt.Sprint(len(data))
	cases := []struct {
		name    string
		payload []byte
		meta    map[string]string
		// statOK: the damage is in the payload, which Stat and List do not read.
		statOK bool
	}{
		{"an object without metadata", zstd, nil, false},
		{"an object without its size", zstd, map[string]string{s3.MetaEncoding: "zstd"}, false},
		{"an object with an unknown encoding", zstd, map[string]string{s3.MetaEncoding: "gzip", s3.MetaSize: size}, false},
		{"an object with a negative size", zstd, map[string]string{s3.MetaEncoding: "zstd", s3.MetaSize: "-1"}, false},
		{"an identity object of the wrong length", data[1:], map[string]string{s3.MetaEncoding: "identity", s3.MetaSize: size}, false},
		{"a compressed object that does not decode", data, map[string]string{s3.MetaEncoding: "zstd", s3.MetaSize: size}, true},
		{"an identity object with other bytes", bytes.ToUpper(data), map[string]string{s3.MetaEncoding: "identity", s3.MetaSize: size}, true},
		{"a compressed object of the wrong size", zstd, map[string]string{s3.MetaEncoding: "zstd", s3.MetaSize: fmt.Sprint(len(data) - 1)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.Config(s3test.Bucket())
			s := s3test.Open(t, cfg)
			key := blobtest.KeyOf("r1", data)
			rawPut(t, raw, cfg.Bucket, s.ObjectName(key), tc.payload, tc.meta)

			_, err := blobtest.Read(t.Context(), s, key, 0, -1)
			if !errors.Is(err, blob.ErrCorrupt) {
				t.Errorf("Get: %v, want an error wrapping ErrCorrupt", err)
			}
			_, err = blobtest.Read(t.Context(), s, key, 100, 10)
			if !errors.Is(err, blob.ErrCorrupt) {
				t.Errorf("ranged Get: %v, want an error wrapping ErrCorrupt", err)
			}
			_, err = s.Stat(t.Context(), key)
			listErr := s.List(t.Context(), "r1", func(blob.Key, blob.Info) error { return nil })
			if tc.statOK {
				if err != nil || listErr != nil {
					t.Errorf("Stat: %v, List: %v; want both to succeed without reading the payload", err, listErr)
				}
				return
			}
			if !errors.Is(err, blob.ErrCorrupt) {
				t.Errorf("Stat: %v, want an error wrapping ErrCorrupt", err)
			}
			if !errors.Is(listErr, blob.ErrCorrupt) {
				t.Errorf("List: %v, want an error wrapping ErrCorrupt (fail closed)", listErr)
			}
			res, err := s.Put(t.Context(), key, blob.Hash(data))
			if err != nil || !res.Created {
				t.Fatalf("Put over an object with bad metadata: %+v, %v; want it rewritten", res, err)
			}
			if got, err := blobtest.Read(t.Context(), s, key, 0, -1); err != nil || !bytes.Equal(got, data) {
				t.Errorf("Get after the repair: %d bytes, %v", len(got), err)
			}
		})
	}
}

func TestListSkipsForeignObjects(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	cfg := srv.Config(s3test.Bucket())
	cfg.Prefix = "p"
	s := s3test.Open(t, cfg)
	data := []byte("the only blob")
	key := blobtest.KeyOf("r1", data)
	blobtest.Put(t, s, key, data)
	h := key.Digest.String()
	misplaced := strings.Repeat("ab", 32)
	if strings.HasPrefix(h, "ab") {
		misplaced = strings.Repeat("cd", 32)
	}
	meta := map[string]string{s3.MetaEncoding: "identity", s3.MetaSize: "10"}
	for _, name := range []string{
		"p/roots/r1/blobs/README",
		"p/roots/r1/blobs/" + h[:2] + "/" + h + ".tmp",
		"p/roots/r1/blobs/" + h[:2] + "/" + strings.ToUpper(h),
		"p/roots/r1/blobs/" + h[:2] + "/" + misplaced,
		"p/roots/r1/blobs/zz/" + h,
		"p/roots/r1/blobs/" + h[:2] + "/sub/" + h,
		"p/roots/r1/other/" + h[:2] + "/" + h,
		"roots/r1/blobs/" + h[:2] + "/" + h,
	} {
		rawPut(t, raw, cfg.Bucket, name, []byte("not a blob"), meta)
	}
	var got []blob.Key
	if err := s.List(t.Context(), "r1", func(k blob.Key, _ blob.Info) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != key {
		t.Errorf("List = %v, want only %s", got, key)
	}
}

func TestListPagesThroughManyBlobs(t *testing.T) {
	srv := s3test.Start(t)
	s := s3test.Open(t, srv.Config(s3test.Bucket()))
	const n = 1100 // more than one ListObjectsV2 page of 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			data := []byte(fmt.Sprintf("blob %d", i))
			if _, err := s.Put(t.Context(), blobtest.KeyOf("r1", data), blob.Hash(data)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var got []blob.Key
	if err := s.List(t.Context(), "r1", func(k blob.Key, _ blob.Info) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("List returned %d blobs, want %d", len(got), n)
	}
	if !slices.IsSortedFunc(got, func(a, b blob.Key) int { return bytes.Compare(a.Digest[:], b.Digest[:]) }) {
		t.Errorf("List is not in digest order across pages")
	}
}

func TestOpenCreatesAMissingBucket(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	cfg := srv.Config(s3test.Bucket())
	s := s3test.Open(t, cfg)
	ok, err := raw.BucketExists(t.Context(), cfg.Bucket)
	if err != nil || !ok {
		t.Fatalf("bucket after Open with CreateBucket: exists %v, %v", ok, err)
	}
	data := []byte("kept across Opens")
	blobtest.Put(t, s, blobtest.KeyOf("r1", data), data)
	again := s3test.Open(t, cfg)
	if _, err := again.Stat(t.Context(), blobtest.KeyOf("r1", data)); err != nil {
		t.Errorf("Stat through a second Open of the existing bucket: %v", err)
	}
}

func TestOpenWithoutCreateBucketFailsOnAMissingBucket(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	cfg := srv.Config(s3test.Bucket())
	cfg.CreateBucket = false
	s, err := s3.Open(t.Context(), cfg)
	if err == nil {
		s.Close()
		t.Fatal("Open of a missing bucket with CreateBucket=false succeeded")
	}
	if !errors.Is(err, s3.ErrBucketMissing) {
		t.Errorf("Open: %v, want ErrBucketMissing", err)
	}
	if errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("Open: %v wraps ErrUnavailable; a missing bucket is not fixed by retrying", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "CreateBucket") || strings.Contains(msg, cfg.Bucket) || strings.Contains(msg, srv.Endpoint) {
		t.Errorf("Open error %q should name the CreateBucket setting and neither the bucket nor the endpoint", msg)
	}
	if ok, err := raw.BucketExists(t.Context(), cfg.Bucket); err != nil || ok {
		t.Errorf("bucket after a refused Open: exists %v, %v; want absent", ok, err)
	}
	if err := raw.MakeBucket(t.Context(), cfg.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	s3test.Open(t, cfg)
}

func TestOpenRejectsABadConfig(t *testing.T) {
	valid := s3.DefaultConfig()
	valid.Endpoint = "127.0.0.1:9000"
	valid.Bucket = "cairn"
	cases := []struct {
		name  string
		edit  func(*s3.Config)
		field string
	}{
		{"an empty endpoint", func(c *s3.Config) { c.Endpoint = "" }, "Endpoint"},
		{"an endpoint with a scheme", func(c *s3.Config) { c.Endpoint = "http://127.0.0.1:9000" }, "Endpoint"},
		{"an endpoint with a path", func(c *s3.Config) { c.Endpoint = "127.0.0.1:9000/x" }, "Endpoint"},
		{"an endpoint with a bad port", func(c *s3.Config) { c.Endpoint = "127.0.0.1:99999" }, "Endpoint"},
		{"an empty bucket", func(c *s3.Config) { c.Bucket = "" }, "Bucket"},
		{"an upper-case bucket", func(c *s3.Config) { c.Bucket = "Cairn" }, "Bucket"},
		{"a bucket of two characters", func(c *s3.Config) { c.Bucket = "ca" }, "Bucket"},
		{"a prefix with a leading slash", func(c *s3.Config) { c.Prefix = "/p" }, "Prefix"},
		{"a prefix with a trailing slash", func(c *s3.Config) { c.Prefix = "p/" }, "Prefix"},
		{"a prefix with an empty segment", func(c *s3.Config) { c.Prefix = "a//b" }, "Prefix"},
		{"a prefix with a dot-dot segment", func(c *s3.Config) { c.Prefix = "a/../b" }, "Prefix"},
		{"an access key without a secret", func(c *s3.Config) { c.AccessKey = "k" }, "AccessKey"},
		{"parts under the S3 minimum", func(c *s3.Config) { c.PartSizeBytes = s3.MinPartSizeBytes - 1 }, "PartSizeBytes"},
		{"parts over the S3 maximum", func(c *s3.Config) { c.PartSizeBytes = s3.MaxPartSizeBytes + 1 }, "PartSizeBytes"},
		{"negative attempts", func(c *s3.Config) { c.Retry.MaxAttempts = -1 }, "Retry.MaxAttempts"},
		{"a negative base delay", func(c *s3.Config) { c.Retry.BaseDelay = -1 }, "Retry.BaseDelay"},
		{"a max delay under the base delay", func(c *s3.Config) { c.Retry.BaseDelay, c.Retry.MaxDelay = 2, 1 }, "Retry.MaxDelay"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.edit(&cfg)
			s, err := s3.Open(t.Context(), cfg)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			var ce *s3.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("Open: %v, want a *ConfigError for %s", err, tc.field)
			}
		})
	}
	t.Run("zero optional fields take their defaults", func(t *testing.T) {
		cfg := s3.Config{Endpoint: valid.Endpoint, Bucket: valid.Bucket}
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate of a Config with only Endpoint and Bucket: %v", err)
		}
	})
	t.Run("the secret key is never echoed", func(t *testing.T) {
		cfg := valid
		cfg.SecretKey = "hunter2-secret"
		err := cfg.Validate()
		if err == nil || strings.Contains(err.Error(), cfg.SecretKey) {
			t.Errorf("Validate: %v; want an error that does not show the secret", err)
		}
	})
}

// MinIO honours S3 conditional writes, which Put relies on to create a blob once across
// processes.
func TestMinIORefusesAConditionalPutOverAnObject(t *testing.T) {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	bucket := s3test.Bucket()
	if err := raw.MakeBucket(t.Context(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	var opts minio.PutObjectOptions
	opts.SetMatchETagExcept("*")
	body := []byte("first")
	if _, err := raw.PutObject(t.Context(), bucket, "o", bytes.NewReader(body), int64(len(body)), opts); err != nil {
		t.Fatalf("conditional PUT of a new object: %v", err)
	}
	_, err := raw.PutObject(t.Context(), bucket, "o", bytes.NewReader(body), int64(len(body)), opts)
	if resp := minio.ToErrorResponse(err); resp.StatusCode != http.StatusPreconditionFailed {
		t.Fatalf("conditional PUT over an object: %v (status %d), want 412 Precondition Failed", err, resp.StatusCode)
	}
}

// A blob longer than a part goes up as a multipart upload whose completion carries
// If-None-Match: * (multipart.go; minio-go v7.4.1 sends PutObjectOptions' headers with
// CompleteMultipartUpload, api-put-object-multipart.go). Two uploads of one name racing,
// as two nodes' Puts of the same new blob do after both HEADs found nothing: the first
// completion creates the object, the second must be refused with 412, not replace it.
func TestMinIORefusesAConditionalCompleteOverAnObject(t *testing.T) {
	srv := s3test.Start(t)
	core := minio.Core{Client: srv.Client(t)}
	ctx := t.Context()
	bucket := s3test.Bucket()
	if err := core.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	var cond minio.PutObjectOptions
	cond.SetMatchETagExcept("*")
	upload := func(body string) (string, []minio.CompletePart) {
		id, err := core.NewMultipartUpload(ctx, bucket, "o", minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := core.PutObjectPart(ctx, bucket, "o", id, 1, strings.NewReader(body), int64(len(body)), minio.PutObjectPartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return id, []minio.CompletePart{{PartNumber: 1, ETag: p.ETag}}
	}
	firstID, firstParts := upload("first")
	secondID, secondParts := upload("second")
	if _, err := core.CompleteMultipartUpload(ctx, bucket, "o", firstID, firstParts, cond); err != nil {
		t.Fatalf("conditional completion of the first upload of a new object: %v", err)
	}
	_, err := core.CompleteMultipartUpload(ctx, bucket, "o", secondID, secondParts, cond)
	if resp := minio.ToErrorResponse(err); resp.StatusCode != http.StatusPreconditionFailed {
		t.Fatalf("conditional completion over an object: %v (status %d), want 412 Precondition Failed", err, resp.StatusCode)
	}
	if got := s3test.ObjectPayload(t, srv.Client(t), bucket, "o"); string(got) != "first" {
		t.Fatalf("object holds %q after the refused completion, want the first upload's", got)
	}
	_ = core.AbortMultipartUpload(ctx, bucket, "o", secondID)
}

// Separate stores' Puts of one new blob longer than a part (multipart uploads) create it
// once, as single PUTs do (TestConcurrentPutsFromSeparateStoresCreateOnce).
func TestConcurrentMultipartPutsFromSeparateStoresCreateOnce(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config(s3test.Bucket())
	cfg.PartSizeBytes = s3.MinPartSizeBytes
	ss := make([]blob.Store, 3)
	for i := range ss {
		ss[i] = s3test.Open(t, cfg)
	}
	for round := range 2 {
		data := blobtest.RandomBytes(uint64(200+round), s3.MinPartSizeBytes+1<<10)
		key := blobtest.KeyOf("r1", data)
		if created := blobtest.ConcurrentPuts(t, ss, key, data); created != 1 {
			t.Errorf("round %d: %d of %d concurrent multipart Puts from separate stores reported Created, want exactly 1", round, created, len(ss))
		}
		if got, err := blobtest.Read(t.Context(), ss[0], key, 0, -1); err != nil || !bytes.Equal(got, data) {
			t.Errorf("round %d: Get after concurrent Puts: %d bytes, %v", round, len(got), err)
		}
	}
}

func TestConcurrentPutsFromSeparateStoresCreateOnce(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config(s3test.Bucket())
	const stores = 6
	ss := make([]blob.Store, stores)
	for i := range ss {
		ss[i] = s3test.Open(t, cfg)
	}
	for round := range 5 {
		data := blobtest.RandomBytes(uint64(100+round), 256<<10)
		key := blobtest.KeyOf("r1", data)
		if created := blobtest.ConcurrentPuts(t, ss, key, data); created != 1 {
			t.Errorf("round %d: %d of %d concurrent Puts from separate stores reported Created, want exactly 1", round, created, stores)
		}
		if got, err := blobtest.Read(t.Context(), ss[0], key, 0, -1); err != nil || !bytes.Equal(got, data) {
			t.Errorf("round %d: Get after concurrent Puts: %d bytes, %v", round, len(got), err)
		}
	}
}
