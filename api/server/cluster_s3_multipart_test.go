package server

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairnstore/cairn/api/s3"
	"github.com/cairnstore/cairn/internal/retry"
)

// A multipart upload's requests may reach any node: nodes without a replica forward them,
// bodies included, and the object completes as one.
func TestClusterS3MultipartUploadThroughEveryNode(t *testing.T) {
	c := startS3Cluster(t)
	ctx := t.Context()
	const bucket, key = "mp", "outputs/model.bin"
	retry.SucceedsSoon(t, "CreateBucket through node b (no replica)", func() error {
		_, err := c.sdk(c.b, "").CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)})
		if err != nil && s3ErrorCode(err) != "ServiceUnavailable" {
			t.Fatalf("CreateBucket through node b: %v", err)
		}
		return err
	})
	created, err := c.sdk(c.b, "").CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("CreateMultipartUpload through node b: %v", err)
	}
	bodies := [][]byte{bytes.Repeat([]byte("first part "), s3.DefaultMinPartSize/11+1), []byte("the last part")}
	var parts []types.CompletedPart
	for i, n := range []*testClusterNode{c.c, c.b} {
		out, err := c.sdk(n, "").UploadPart(ctx, &awss3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: created.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(bodies[i])})
		if err != nil {
			t.Fatalf("UploadPart %d through a node without a replica: %v", i+1, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	listed, err := c.sdk(c.a, "").ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: created.UploadId})
	if err != nil || len(listed.Parts) != 2 {
		t.Fatalf("ListParts through node a: %v, %v; want 2 parts", listed, err)
	}
	if _, err := c.sdk(c.c, "").CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		UploadId: created.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("CompleteMultipartUpload through node c: %v", err)
	}
	got, err := s3Read(ctx, c.sdk(c.b, ""), bucket, key)
	if want := bytes.Join(bodies, nil); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GetObject through node b: %d bytes (%v), want the %d bytes of the parts", len(got), err, len(want))
	}
}
