package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/ops"
)

// s3Cluster is a 3-node cluster serving the S3 gateway on every node, with one shard and
// one replica: node a hosts it, nodes b and c host nothing, so every S3 request they take
// must reach a. key is an S3 credential for agent root "lake", made in etcd before the
// nodes start.
type s3Cluster struct {
	a, b, c *testClusterNode
	key     *client.APIKey
}

func startS3Cluster(t *testing.T) s3Cluster {
	t.Helper()
	cb := startClusterBackends(t)
	boot, err := OpenEtcdKeys(t.Context(), []string{cb.etcd})
	if err != nil {
		t.Fatal(err)
	}
	key, err := client.NewInProcessAdmin(KeyAdminHandler(boot)).CreateKey(t.Context(),
		client.KeyRequest{Name: "lake", Agents: []string{"lake"}, Scopes: []string{"workspace:read", "workspace:write"}, S3: true})
	boot.Close()
	if err != nil {
		t.Fatal(err)
	}
	config := func() ops.Config {
		cfg := cb.config(t)
		cfg.Shards, cfg.Replication = 1, 1
		cfg.S3Gateway.Listen = freeport.Addr(t)
		return cfg
	}
	nodes := startLedCluster(t, config, 2)
	return s3Cluster{a: nodes[0], b: nodes[1], c: nodes[2], key: key}
}

// s3URL is the S3 gateway's base URL on n.
func s3URL(n *testClusterNode) string { return "http://" + n.S3Addr().String() }

// sdk is an AWS SDK for Go v2 client of n's S3 gateway signing with secret (the key's
// when ""). It does not retry: a node that cannot serve fails the test.
func (c s3Cluster) sdk(n *testClusterNode, secret string) *awss3.Client {
	if secret == "" {
		secret = c.key.S3SecretAccessKey
	}
	return awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s3URL(n)), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(c.key.S3AccessKeyID, secret, ""),
	})
}

// s3ErrorCode is the S3 error code of an SDK error, "" if none.
func s3ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// s3Read reads bucket/key through s3c.
func s3Read(ctx context.Context, s3c *awss3.Client, bucket, key string) ([]byte, error) {
	out, err := s3c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// s3Keys lists bucket under prefix through s3c, every page.
func s3Keys(ctx context.Context, s3c *awss3.Client, bucket, prefix string) ([]string, error) {
	var keys []string
	p := awss3.NewListObjectsV2Paginator(s3c, &awss3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// Every node of a cluster serves the S3 gateway for every key (issue 28: --s3-listen "on
// every node of a cluster"): the two nodes without a replica of the key's root route its
// requests to the one that has it. Through each node the AWS SDK creates or heads the
// bucket, puts, reads what the other nodes wrote, lists, copies and deletes; minio-go's
// signed aws-chunked upload (chunk signatures checked as the body is read) goes through a
// node without a replica; a presigned GET through one is answered by the replica's node
// (Cairn-Served-By); and a wrong signature is refused there as anywhere.
func TestClusterS3GatewayServesEveryKeyOnEveryNode(t *testing.T) {
	c := startS3Cluster(t)
	ctx := t.Context()
	nodes := []*testClusterNode{c.a, c.b, c.c}
	const bucket = "runs"
	// The root is not placed yet: node b serves the first call itself, places the root and
	// answers ServiceUnavailable (nothing applied), which S3 clients retry; the retry is
	// routed to node a.
	retry.SucceedsSoon(t, "CreateBucket through node b (no replica)", func() error {
		_, err := c.sdk(c.b, "").CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)})
		if err != nil && s3ErrorCode(err) != "ServiceUnavailable" {
			t.Fatalf("CreateBucket through node b (no replica): %v", err)
		}
		return err
	})
	body := func(i int) []byte { return []byte(strings.Repeat(fmt.Sprintf("written through node %d\n", i), 1000)) }
	for i, n := range nodes {
		s3c := c.sdk(n, "")
		if _, err := s3c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatalf("HeadBucket through node %d: %v", i, err)
		}
		if _, err := s3c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("input/n%d", i)),
			Body: bytes.NewReader(body(i))}); err != nil {
			t.Fatalf("PutObject through node %d: %v", i, err)
		}
	}
	mc, err := minio.New(c.b.S3Addr().String(), &minio.Options{Creds: miniocreds.NewStaticV4(c.key.S3AccessKeyID, c.key.S3SecretAccessKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	chunked := bytes.Repeat([]byte("signed chunks "), 20_000) // several 64 KiB chunks
	if _, err := mc.PutObject(ctx, bucket, "input/chunked", bytes.NewReader(chunked), int64(len(chunked)),
		minio.PutObjectOptions{DisableMultipart: true}); err != nil {
		t.Fatalf("minio-go's signed aws-chunked PutObject through node b: %v", err)
	}

	// A client that leaves a byte unescaped in the path ('{', which Go would send as %7B)
	// signs the path as it sent it: the forward must send it so too.
	raw := &http.Request{Method: http.MethodPut, URL: &url.URL{Scheme: "http", Host: c.b.S3Addr().String(), Opaque: "/" + bucket + "/input/raw{1}"},
		Header: http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}, Host: c.b.S3Addr().String(),
		Body: io.NopCloser(strings.NewReader("raw path")), ContentLength: int64(len("raw path"))}
	creds := aws.Credentials{AccessKeyID: c.key.S3AccessKeyID, SecretAccessKey: c.key.S3SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, raw, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now(),
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(raw.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT through node b of a path with an unescaped '{': %d %s", resp.StatusCode, msg)
	}

	want := []string{"input/chunked", "input/n0", "input/n1", "input/n2", "input/raw{1}"}
	for i, n := range nodes {
		s3c := c.sdk(n, "")
		for j := range nodes {
			got, err := s3Read(ctx, s3c, bucket, fmt.Sprintf("input/n%d", j))
			if err != nil || !bytes.Equal(got, body(j)) {
				t.Fatalf("GetObject through node %d of what node %d wrote: %d bytes, %v", i, j, len(got), err)
			}
		}
		if got, err := s3Read(ctx, s3c, bucket, "input/chunked"); err != nil || !bytes.Equal(got, chunked) {
			t.Fatalf("GetObject through node %d of the chunked upload: %d bytes, %v", i, len(got), err)
		}
		if keys, err := s3Keys(ctx, s3c, bucket, "input/"); err != nil || !slices.Equal(keys, want) {
			t.Fatalf("ListObjectsV2 through node %d: %v, %v; want %v", i, keys, err, want)
		}
		copied := fmt.Sprintf("output/copy%d", i)
		if _, err := s3c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(copied),
			CopySource: aws.String(bucket + "/input/n" + fmt.Sprint((i+1)%len(nodes)))}); err != nil {
			t.Fatalf("CopyObject through node %d: %v", i, err)
		}
		if got, err := s3Read(ctx, c.sdk(nodes[(i+2)%len(nodes)], ""), bucket, copied); err != nil || !bytes.Equal(got, body((i+1)%len(nodes))) {
			t.Fatalf("the copy made through node %d, read through another: %d bytes, %v", i, len(got), err)
		}
		if _, err := s3c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(copied)}); err != nil {
			t.Fatalf("DeleteObject through node %d: %v", i, err)
		}
		if _, err := s3Read(ctx, s3c, bucket, copied); s3ErrorCode(err) != "NoSuchKey" {
			t.Fatalf("GetObject through node %d of the key it deleted: %v, want NoSuchKey", i, err)
		}
	}

	get, err := awss3.NewPresignClient(c.sdk(c.c, "")).PresignGetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("input/n1")})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, get.Method, get.URL, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body(1)) || resp.Header.Get(ServedByHeader) != c.a.nodeID {
		t.Fatalf("presigned GET through node c: %d, %d bytes, served by %q; want 200 from node a (%s)",
			resp.StatusCode, len(got), resp.Header.Get(ServedByHeader), c.a.nodeID)
	}

	if _, err := s3Read(ctx, c.sdk(c.b, strings.Repeat("x", 40)), bucket, "input/n0"); s3ErrorCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("GetObject through node b signed with a wrong secret: %v, want SignatureDoesNotMatch", err)
	}
}

// When no node can serve a key's root (its only replica's node is down), a node without a
// replica answers its S3 requests as S3 answers a retryable refusal — 503 ServiceUnavailable
// in S3's XML with Retry-After, not REST's JSON envelope — naming no node's address.
func TestClusterS3GatewayAnswersServiceUnavailableWhenNoNodeCanServe(t *testing.T) {
	c := startS3Cluster(t)
	ctx := t.Context()
	retry.SucceedsSoon(t, "CreateBucket through node a", func() error {
		_, err := c.sdk(c.a, "").CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("runs")})
		return err
	})
	if _, err := c.sdk(c.b, "").PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/x"),
		Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("PutObject through node b while node a is up: %v", err)
	}
	peerA, clientA := c.a.peer.Addr().String(), c.a.url
	c.a.shutdown()

	for _, method := range []string{http.MethodGet, http.MethodHead} {
		in := &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/x")}
		var u string
		if method == http.MethodGet {
			p, err := awss3.NewPresignClient(c.sdk(c.b, "")).PresignGetObject(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			u = p.URL
		} else {
			p, err := awss3.NewPresignClient(c.sdk(c.b, "")).PresignHeadObject(ctx, &awss3.HeadObjectInput{Bucket: in.Bucket, Key: in.Key})
			if err != nil {
				t.Fatal(err)
			}
			u = p.URL
		}
		req, _ := http.NewRequestWithContext(ctx, method, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/xml" || resp.Header.Get("x-amz-request-id") == "" {
			t.Fatalf("%s through node b with node a down: %d, Retry-After %q, Content-Type %q, request id %q; want 503, Retry-After, S3's XML",
				method, resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), resp.Header.Get("x-amz-request-id"))
		}
		if method == http.MethodGet && !bytes.Contains(body, []byte("<Code>ServiceUnavailable</Code>")) {
			t.Fatalf("GET through node b with node a down: %s; want S3's ServiceUnavailable", body)
		}
		for _, addr := range []string{peerA, clientA, strings.TrimPrefix(clientA, "http://"), "127.0.0.1"} {
			if bytes.Contains(body, []byte(addr)) || strings.Contains(fmt.Sprint(resp.Header), addr) {
				t.Fatalf("%s through node b with node a down names an address (%s): %v %s", method, addr, resp.Header, body)
			}
		}
	}
	if _, err := c.sdk(c.c, "").PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/y"),
		Body: strings.NewReader("y")}); s3ErrorCode(err) != "ServiceUnavailable" {
		t.Fatalf("PutObject through node c with node a down: %v, want ServiceUnavailable", err)
	}
}
