package s3

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// testKeys holds S3 keys: access key id → secret and principal.
type testKeys map[string]struct {
	secret string
	p      auth.Principal
}

func (k testKeys) S3Secret(_ context.Context, id string) (string, bool, error) {
	e, ok := k[id]
	return e.secret, ok, nil
}

func (k testKeys) S3Principal(_ context.Context, id string) (auth.Principal, error) {
	e, ok := k[id]
	if !ok {
		return auth.Principal{}, errors.New("no such key")
	}
	return e.p, nil
}

var gatewayKeys = testKeys{
	"AGENTA": {"secret-a", auth.Principal{ID: "ka", Agents: []string{"a"}, Scopes: auth.Scopes}},
	"AGENTB": {"secret-b", auth.Principal{ID: "kb", Agents: []string{"b"}, Scopes: auth.Scopes}},
	"READER": {"secret-r", auth.Principal{ID: "kr", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}}},
	// Keys of root a bound to path prefixes (multipart_access_test.go).
	"OUTPUTS": {"secret-o", auth.Principal{ID: "ko", Agents: []string{"a"}, Prefixes: []string{"outputs"}, Scopes: auth.Scopes}},
	"LOGS":    {"secret-l", auth.Principal{ID: "kl", Agents: []string{"a"}, Prefixes: []string{"logs"}, Scopes: auth.Scopes}},
}

// gateway serves a real Workbench service through the S3 handler over TLS and returns an
// AWS SDK for Go v2 client for each key.
func gateway(t *testing.T) (*httptest.Server, func(key string) *awss3.Client) {
	t.Helper()
	ds := blobtest.Dir(t)
	return gatewayOn(t, ds)
}

// gatewayOn is gateway over the blob store bs.
func gatewayOn(t *testing.T, bs blob.Store) (*httptest.Server, func(key string) *awss3.Client) {
	t.Helper()
	_, srv, client := gatewayNode(t, bs)
	return srv, client
}

// gatewayNode is gatewayOn that also returns the service the gateway serves.
func gatewayNode(t *testing.T, bs blob.Store) (*workbench.Service, *httptest.Server, func(key string) *awss3.Client) {
	t.Helper()
	srv, client, h := gatewayWith(t, bs, Config{})
	return h.svc, srv, client
}

// gatewayWith is gateway over the blob store bs configured by cfg; it returns the handler
// too. The service reserves UploadsWorkbench to the gateway, as api/server does.
func gatewayWith(t *testing.T, bs blob.Store, cfg Config) (*httptest.Server, func(key string) *awss3.Client, *Handler) {
	t.Helper()
	n := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 64, ReservedWorkbenches: map[string]string{UploadsWorkbench: Surface}}, bs)
	h := NewHandler(n.Service, gatewayKeys, cfg)
	srv, client := serveGateway(t, h)
	return srv, client, h
}

// serveGateway serves h over TLS and returns an AWS SDK for Go v2 client for each key.
func serveGateway(t *testing.T, h *Handler) (*httptest.Server, func(key string) *awss3.Client) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv, func(key string) *awss3.Client {
		return awss3.New(awss3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, HTTPClient: srv.Client(),
			Credentials: credentials.NewStaticCredentialsProvider(key, gatewayKeys[key].secret, ""), RetryMaxAttempts: 1,
		})
	}
}

// s3Code is the S3 error code of an SDK error, "" if none.
func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// makeBucket creates bucket with c (CreateBucket), failing the test if it cannot.
func makeBucket(t *testing.T, c *awss3.Client, bucket string) {
	t.Helper()
	if _, err := c.CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("CreateBucket %s: %v", bucket, err)
	}
}

func put(t *testing.T, c *awss3.Client, bucket, key string, body []byte) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("PutObject %s/%s: %v", bucket, key, err)
	}
}

func TestBucketsAndObjectsRoundTripThroughTheAWSSDK(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("runs")}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	if _, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String("runs")}); err != nil {
		t.Fatalf("HeadBucket: %v", err)
	}
	body := payload(300 << 10)
	put(t, c, "runs", "outputs/model.bin", body)
	put(t, c, "runs", "input/a b/ü+~.txt", []byte("hello"))

	got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/model.bin")})
	if err != nil {
		t.Fatalf("GetObject: %v", err)
	}
	b, _ := io.ReadAll(got.Body)
	if !bytes.Equal(b, body) || aws.ToInt64(got.ContentLength) != int64(len(body)) {
		t.Fatalf("GetObject: %d bytes, want %d", len(b), len(body))
	}
	rng, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/model.bin"), Range: aws.String("bytes=100-199")})
	if err != nil {
		t.Fatalf("ranged GetObject: %v", err)
	}
	b, _ = io.ReadAll(rng.Body)
	if !bytes.Equal(b, body[100:200]) || aws.ToString(rng.ContentRange) != fmt.Sprintf("bytes 100-199/%d", len(body)) {
		t.Fatalf("ranged GetObject: %d bytes, Content-Range %q", len(b), aws.ToString(rng.ContentRange))
	}
	head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/a b/ü+~.txt")})
	if err != nil || aws.ToInt64(head.ContentLength) != 5 {
		t.Fatalf("HeadObject: %v %v", head, err)
	}
	if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/nope")}); s3Code(err) != "NoSuchKey" {
		t.Fatalf("GetObject of a missing key: %v, want NoSuchKey", err)
	}
	if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("nope"), Key: aws.String("input/x")}); s3Code(err) != "NoSuchBucket" {
		t.Fatalf("GetObject in a missing bucket: %v, want NoSuchBucket", err)
	}

	buckets, err := c.ListBuckets(ctx, &awss3.ListBucketsInput{})
	if err != nil || len(buckets.Buckets) != 1 || aws.ToString(buckets.Buckets[0].Name) != "runs" {
		t.Fatalf("ListBuckets: %v %v", buckets, err)
	}
	if _, err := c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String("runs")}); s3Code(err) != "BucketNotEmpty" {
		t.Fatalf("DeleteBucket of a bucket with objects: %v, want BucketNotEmpty", err)
	}
	del, err := c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: aws.String("runs"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("outputs/model.bin")}, {Key: aws.String("input/a b/ü+~.txt")}, {Key: aws.String("input/never-was")}}}})
	if err != nil || len(del.Deleted) != 3 || len(del.Errors) != 0 {
		t.Fatalf("DeleteObjects: %+v %v", del, err)
	}
	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/never-was")}); err != nil {
		t.Fatalf("DeleteObject of a missing key: %v, want success", err)
	}
	if _, err := c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String("runs")}); err != nil {
		t.Fatalf("DeleteBucket: %v", err)
	}
	if _, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String("runs")}); err == nil {
		t.Fatal("HeadBucket after DeleteBucket succeeded")
	}
}

func TestAnotherRootsBucketAnswersAsAMissingOne(t *testing.T) {
	_, client := gateway(t)
	ctx := context.Background()
	a, b := client("AGENTA"), client("AGENTB")
	makeBucket(t, a, "private")
	put(t, a, "private", "input/secret.txt", []byte("s"))
	for name, call := range map[string]func() error{
		"GetObject": func() error {
			_, err := b.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("private"), Key: aws.String("input/secret.txt")})
			return err
		},
		"PutObject": func() error {
			_, err := b.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("private"), Key: aws.String("input/x"), Body: strings.NewReader("x")})
			return err
		},
		"ListObjectsV2": func() error {
			_, err := b.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("private")})
			return err
		},
		"DeleteBucket": func() error {
			_, err := b.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String("private")})
			return err
		},
	} {
		if code := s3Code(call()); code != "NoSuchBucket" {
			t.Errorf("%s on another root's bucket: %q, want NoSuchBucket", name, code)
		}
	}
	if _, err := client("READER").PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("private"), Key: aws.String("input/x"), Body: strings.NewReader("x")}); s3Code(err) != "AccessDenied" {
		t.Fatalf("PutObject with a read-only key: %v, want AccessDenied", err)
	}
	wrong := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: a.Options().BaseEndpoint, UsePathStyle: true, HTTPClient: a.Options().HTTPClient,
		Credentials: credentials.NewStaticCredentialsProvider("AGENTA", "not-the-secret", ""), RetryMaxAttempts: 1})
	if _, err := wrong.ListBuckets(ctx, &awss3.ListBucketsInput{}); s3Code(err) != "SignatureDoesNotMatch" {
		t.Fatalf("a wrong secret: %v, want SignatureDoesNotMatch", err)
	}
}

func TestConditionalPutsAreOneCompareAndSwap(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "cas")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("cas"), Key: aws.String("input/lock"),
				Body: strings.NewReader(fmt.Sprint("writer ", i)), IfNoneMatch: aws.String("*")})
			mu.Lock()
			codes[s3Code(err)]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[""] != 1 || codes["PreconditionFailed"] != 15 {
		t.Fatalf("16 racing If-None-Match: * PUTs: %v, want one success and 15 PreconditionFailed", codes)
	}
	first, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("cas"), Key: aws.String("input/lock")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("cas"), Key: aws.String("input/lock"),
		Body: strings.NewReader("second"), IfMatch: first.ETag}); err != nil {
		t.Fatalf("If-Match with the current ETag: %v", err)
	}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("cas"), Key: aws.String("input/lock"),
		Body: strings.NewReader("third"), IfMatch: first.ETag}); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("If-Match with a stale ETag: %v, want PreconditionFailed", err)
	}
	if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("cas"), Key: aws.String("input/lock"), IfNoneMatch: first.ETag}); err != nil {
		t.Fatalf("GET If-None-Match with an old ETag: %v", err)
	}
}

// s3Listing is what S3 answers for a listing of keys (sorted by byte order), computed
// the simple way: filter, roll up by the delimiter, page.
func s3Listing(keys []string, prefix, delimiter string) []string {
	var out []string
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if delimiter != "" {
			if i := strings.Index(k[len(prefix):], delimiter); i >= 0 {
				k = k[:len(prefix)+i+len(delimiter)]
			}
		}
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// TestListingsFollowS3sKeyOrder writes keys whose directories and files share prefixes
// across '/' (a, a-b, a.c, a/…, a0) and checks every page of ListObjectsV2 and V1, with
// and without a delimiter, against S3's order computed from the sorted keys.
func TestListingsFollowS3sKeyOrder(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "order")
	rnd := rand.New(rand.NewPCG(1, 2))
	parts := []string{"a", "a-b", "a.c", "a0", "b", "a!"}
	seen := map[string]bool{}
	var keys []string
	for len(keys) < 60 {
		depth := 1 + rnd.IntN(3)
		var comps []string
		for range depth {
			comps = append(comps, parts[rnd.IntN(len(parts))])
		}
		key := "input/" + strings.Join(comps, "/")
		// A key may not be both a file and a directory.
		clash := false
		for k := range seen {
			if strings.HasPrefix(k, key+"/") || strings.HasPrefix(key, k+"/") || k == key {
				clash = true
			}
		}
		if clash {
			continue
		}
		seen[key] = true
		keys = append(keys, key)
		put(t, c, "order", key, []byte(key))
	}
	slices.Sort(keys)
	for _, prefix := range []string{"", "input/", "input/a", "input/a/", "input/a.", "input/b/a", "none/"} {
		for _, delim := range []string{"", "/"} {
			want := s3Listing(keys, prefix, delim)
			for _, pageSize := range []int32{1, 3, 1000} {
				var got []string
				var token *string
				for range 200 {
					out, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("order"), Prefix: aws.String(prefix),
						Delimiter: aws.String(delim), MaxKeys: aws.Int32(pageSize), ContinuationToken: token})
					if err != nil {
						t.Fatalf("prefix %q delimiter %q: %v", prefix, delim, err)
					}
					var page []string
					for _, o := range out.Contents {
						page = append(page, aws.ToString(o.Key))
					}
					for _, p := range out.CommonPrefixes {
						page = append(page, aws.ToString(p.Prefix))
					}
					slices.Sort(page) // S3 returns contents and prefixes as two lists
					got = append(got, page...)
					if !aws.ToBool(out.IsTruncated) {
						break
					}
					token = out.NextContinuationToken
				}
				if !slices.Equal(got, want) {
					t.Fatalf("prefix %q delimiter %q pages of %d:\n got  %q\n want %q", prefix, delim, pageSize, got, want)
				}
			}
			// V1, paging by the marker S3 clients pass: the last key or NextMarker.
			var got []string
			marker := ""
			for range 200 {
				out, err := c.ListObjects(ctx, &awss3.ListObjectsInput{Bucket: aws.String("order"), Prefix: aws.String(prefix),
					Delimiter: aws.String(delim), MaxKeys: aws.Int32(2), Marker: aws.String(marker)})
				if err != nil {
					t.Fatal(err)
				}
				var page []string
				for _, o := range out.Contents {
					page = append(page, aws.ToString(o.Key))
				}
				for _, p := range out.CommonPrefixes {
					page = append(page, aws.ToString(p.Prefix))
				}
				slices.Sort(page)
				got = append(got, page...)
				if !aws.ToBool(out.IsTruncated) {
					break
				}
				marker = aws.ToString(out.NextMarker)
				if marker == "" {
					marker = page[len(page)-1]
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("V1 prefix %q delimiter %q:\n got  %q\n want %q", prefix, delim, got, want)
			}
		}
	}
	// Keys come back URL-encoded when asked (the Go SDK hands them over as they came).
	out, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("order"), Prefix: aws.String("input/a!"), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) == 0 {
		t.Fatal("no key under input/a!")
	}
	for _, o := range out.Contents {
		raw := aws.ToString(o.Key)
		key, err := url.PathUnescape(raw)
		if !strings.HasPrefix(raw, "input/a%21") || err != nil || !seen[key] {
			t.Fatalf("an URL-encoded key %q decodes to %q (%v), not a key written", raw, key, err)
		}
	}
}

func TestRequestsOutsideTheSubsetAnswerNotImplemented(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "b")
	if _, err := c.GetBucketTagging(ctx, &awss3.GetBucketTaggingInput{Bucket: aws.String("b")}); s3Code(err) != "NotImplemented" {
		t.Fatalf("GetBucketTagging: %v, want NotImplemented", err)
	}
	resp, err := srv.Client().Get(srv.URL + "/b")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte("<Code>AccessDenied</Code>")) {
		t.Fatalf("an anonymous request: %d %s", resp.StatusCode, body)
	}
	// A browser form upload (POST Object, what a presigned POST makes) carries its
	// signature in the form, not the request: it is not served, and is told so rather
	// than told it is anonymous.
	form := "--x\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\ninput/f\r\n" +
		"--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nbody\r\n--x--\r\n"
	resp, err = srv.Client().Post(srv.URL+"/b", "multipart/form-data; boundary=x", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented || !bytes.Contains(body, []byte("<Code>NotImplemented</Code>")) {
		t.Fatalf("a form upload: %d %s, want 501 NotImplemented", resp.StatusCode, body)
	}
}

func TestCopyObjectMovesNoBytes(t *testing.T) {
	hs, puts := blobtest.CountingPuts(t)
	_, client := gatewayOn(t, hs)
	c := client("AGENTA")
	ctx := context.Background()
	for _, b := range []string{"src", "dst"} {
		if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	body := payload(3 << 20)
	put(t, c, "src", "outputs/ckpt.bin", body)
	head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("src"), Key: aws.String("outputs/ckpt.bin")})
	if err != nil {
		t.Fatal(err)
	}
	before := puts.Load()
	if before == 0 {
		t.Fatal("the body never reached the object store: the test would prove nothing")
	}
	out, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("input/ckpt copy.bin"),
		CopySource: aws.String("src/outputs/ckpt.bin"), CopySourceIfMatch: head.ETag})
	if err != nil {
		t.Fatalf("CopyObject: %v", err)
	}
	if aws.ToString(out.CopyObjectResult.ETag) != aws.ToString(head.ETag) {
		t.Fatalf("the copy's ETag %s, the source's %s", aws.ToString(out.CopyObjectResult.ETag), aws.ToString(head.ETag))
	}
	if after := puts.Load(); after != before {
		t.Fatalf("CopyObject wrote %d blobs, want none", after-before)
	}
	got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("dst"), Key: aws.String("input/ckpt copy.bin")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	if !bytes.Equal(b, body) {
		t.Fatalf("the copy reads %d bytes, want %d", len(b), len(body))
	}
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("input/other"),
		CopySource: aws.String("src/outputs/ckpt.bin"), CopySourceIfNoneMatch: head.ETag}); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("a copy whose source condition fails: %v, want PreconditionFailed", err)
	}
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("src"), Key: aws.String("outputs/ckpt.bin"),
		CopySource: aws.String("src/outputs/ckpt.bin")}); s3Code(err) != "InvalidRequest" {
		t.Fatalf("a copy onto itself without REPLACE: %v, want InvalidRequest", err)
	}
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("src"), Key: aws.String("outputs/ckpt.bin"),
		CopySource: aws.String("src/outputs/ckpt.bin"), MetadataDirective: "REPLACE", ContentType: aws.String("application/x-ckpt")}); err != nil {
		t.Fatalf("a copy onto itself with REPLACE: %v", err)
	}
	if h, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("src"), Key: aws.String("outputs/ckpt.bin")}); err != nil ||
		aws.ToString(h.ContentType) != "application/x-ckpt" {
		t.Fatalf("the content type after a REPLACE copy: %v %v", h, err)
	}
	if _, err := client("AGENTB").CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("mine"), Key: aws.String("input/x"),
		CopySource: aws.String("src/outputs/ckpt.bin")}); s3Code(err) != "NoSuchBucket" {
		t.Fatalf("a copy from another root's bucket: %v, want NoSuchBucket", err)
	}
}

func TestDeletesWithAVersionOrAStaleConditionDeleteNothing(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "d")
	put(t, c, "d", "input/keep", []byte("v1"))
	old, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("d"), Key: aws.String("input/keep")})
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "d", "input/keep", []byte("v2"))
	out, err := c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: aws.String("d"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("input/keep"), VersionId: aws.String("some-version")},
		{Key: aws.String("input/keep"), ETag: old.ETag}}}})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, e := range out.Errors {
		codes[aws.ToString(e.Code)] = true
	}
	if len(out.Deleted) != 0 || !codes["NotImplemented"] || !codes["PreconditionFailed"] {
		t.Fatalf("DeleteObjects with a version and a stale ETag: deleted %d, errors %v", len(out.Deleted), codes)
	}
	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("d"), Key: aws.String("input/keep"), IfMatch: old.ETag}); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("DELETE with a stale If-Match: %v, want PreconditionFailed", err)
	}
	got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("d"), Key: aws.String("input/keep")})
	if err != nil {
		t.Fatalf("the object after refused deletes: %v", err)
	}
	if b, _ := io.ReadAll(got.Body); string(b) != "v2" {
		t.Fatalf("the object after refused deletes: %q", b)
	}
	cur, _ := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("d"), Key: aws.String("input/keep")})
	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("d"), Key: aws.String("input/keep"), IfMatch: cur.ETag}); err != nil {
		t.Fatalf("DELETE with the current If-Match: %v", err)
	}
}

func TestWritesAskingForWhatIsNotKeptAreRefusedAndReadsCanOverrideHeaders(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "h")
	for name, in := range map[string]*awss3.PutObjectInput{
		"encryption":     {ServerSideEncryption: types.ServerSideEncryptionAes256},
		"an object lock": {ObjectLockMode: types.ObjectLockModeCompliance},
		"tags":           {Tagging: aws.String("a=b")},
		"glacier":        {StorageClass: types.StorageClassGlacier},
		"a public ACL":   {ACL: types.ObjectCannedACLPublicRead},
		"gzip encoding":  {ContentEncoding: aws.String("gzip")},
	} {
		in.Bucket, in.Key, in.Body = aws.String("h"), aws.String("input/x"), strings.NewReader("x")
		if _, err := c.PutObject(ctx, in); s3Code(err) != "NotImplemented" {
			t.Errorf("a PUT asking for %s: %v, want NotImplemented", name, err)
		}
	}
	if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("h"), Key: aws.String("input/x")}); err == nil {
		t.Fatal("a refused PUT stored its object")
	}
	put(t, c, "h", "input/page.html", []byte("<script>alert(1)</script>"))
	out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("h"), Key: aws.String("input/page.html"),
		ResponseContentDisposition: aws.String("attachment"), ResponseContentType: aws.String("text/plain")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.ContentDisposition) != "attachment" || aws.ToString(out.ContentType) != "text/plain" {
		t.Fatalf("response overrides: disposition %q, type %q", aws.ToString(out.ContentDisposition), aws.ToString(out.ContentType))
	}
}

func TestAContinuationTokenNotIssuedHereIsRefused(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "t")
	if _, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("t"), ContinuationToken: aws.String("garbage")}); s3Code(err) != "InvalidArgument" {
		t.Fatalf("a made-up continuation token: %v, want InvalidArgument", err)
	}
}

// TestAStalledUploadIsCutOff: a client that stops sending its body is answered
// RequestTimeout once its rate window passes, and the object is not stored.
func TestAStalledUploadIsCutOff(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 64})
	srv := httptest.NewServer(NewHandler(n.Service, gatewayKeys, Config{BodyRateWindow: 200 * time.Millisecond}))
	t.Cleanup(srv.Close)
	if _, err := n.Service.Lifecycle.CreateWorkbench(auth.WithPrincipal(context.Background(), gatewayKeys["AGENTA"].p), "a", "stall", ""); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	r, err := http.NewRequest("PUT", srv.URL+"/stall/input/slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set(headerContentSHA256, UnsignedPayload)
	creds := aws.Credentials{AccessKeyID: "AGENTA", SecretAccessKey: gatewayKeys["AGENTA"].secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, UnsignedPayload, "s3", "us-east-1", time.Now(),
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head strings.Builder
	head.WriteString("PUT /stall/input/slow HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Length: 1000000\r\n")
	for k, v := range r.Header {
		head.WriteString(k + ": " + v[0] + "\r\n")
	}
	head.WriteString("\r\n0123456789") // then nothing more
	if _, err := conn.Write([]byte(head.String())); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on the test, not the rule
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled upload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("<Code>RequestTimeout</Code>")) {
		t.Fatalf("a stalled upload: %d %s", resp.StatusCode, body)
	}
	if _, err := n.Service.Reads.Stat(auth.WithPrincipal(context.Background(), gatewayKeys["AGENTA"].p), "a", "stall", "input/slow"); err == nil {
		t.Fatal("the stalled upload was stored")
	}
}

func TestAKeyThatClashesWithAPrefixIsInvalidArgument(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "p")
	put(t, c, "p", "input/a", []byte("x"))
	put(t, c, "p", "input/d/e", []byte("x"))
	for _, key := range []string{"input/a/b", "input/d"} {
		_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("p"), Key: aws.String(key), Body: strings.NewReader("y")})
		if s3Code(err) != "InvalidArgument" || !strings.Contains(err.Error(), "prefix of other keys") {
			t.Errorf("PUT %s: %v, want InvalidArgument saying why", key, err)
		}
	}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("p"), Key: aws.String("input/a"), Body: strings.NewReader("y"),
		IfNoneMatch: aws.String("*")}); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("a create-only PUT of an existing key: %v, want PreconditionFailed", err)
	}
}

// TestRangesOfAnEmptyObjectAreNotSatisfiable: an empty object has no byte to serve, so
// every byte range of it, a suffix range included, is InvalidRange (416) with
// "Content-Range: bytes */0", as REST answers; never a 206 with the range "bytes 0--1/0".
func TestRangesOfAnEmptyObjectAreNotSatisfiable(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "runs")
	put(t, c, "runs", "outputs/empty", nil)
	for _, rng := range []string{"bytes=-1", "bytes=-100", "bytes=0-", "bytes=0-0"} {
		got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/empty"), Range: aws.String(rng)})
		if err == nil {
			got.Body.Close()
			t.Fatalf("%s of an empty object: status 2xx with Content-Range %q, want InvalidRange", rng, aws.ToString(got.ContentRange))
		}
		var re *awshttp.ResponseError
		if s3Code(err) != "InvalidRange" || !errors.As(err, &re) || re.Response.Header.Get("Content-Range") != "bytes */0" {
			t.Fatalf("%s of an empty object: %v, want InvalidRange with Content-Range bytes */0", rng, err)
		}
	}
}
