package s3

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestAWriteIfMatchOfAMissingKeyIsNoSuchKey: as on S3 (Amazon S3 User Guide, "Conditional
// writes"), a write with If-Match whose key has no current object — never written, or
// deleted (its current version a delete marker) — fails 404 NoSuchKey, not 412, for
// PutObject, CompleteMultipartUpload and CopyObject alike, and stores nothing; a missing
// bucket, or another root's, is NoSuchBucket as for any write.
func TestAWriteIfMatchOfAMissingKeyIsNoSuchKey(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	etag := aws.String(sha256ETag([]byte("anything")))
	put(t, c, "runs", "input/gone", []byte("anything"))
	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/gone")}); err != nil {
		t.Fatal(err)
	}
	put(t, c, "runs", "input/src", []byte("source"))
	makeBucket(t, client("AGENTB"), "theirs")
	putIfMatch := func(bucket, key string) error {
		_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: strings.NewReader("new"), IfMatch: etag})
		return err
	}
	for _, tc := range []struct {
		name, bucket, key, code string
	}{
		{"a key never written", "runs", "input/never", "NoSuchKey"},
		{"a deleted key", "runs", "input/gone", "NoSuchKey"},
		{"a missing bucket", "nobucket", "input/never", "NoSuchBucket"},
		{"another root's bucket", "theirs", "input/never", "NoSuchBucket"},
	} {
		err := putIfMatch(tc.bucket, tc.key)
		if s3Code(err) != tc.code || httpStatus(err) != http.StatusNotFound {
			t.Errorf("PUT If-Match on %s: %v, want 404 %s", tc.name, err, tc.code)
		}
	}
	for _, key := range []string{"input/never", "input/gone"} {
		if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("runs"), Key: aws.String(key)}); s3Code(err) != "NotFound" {
			t.Fatalf("a refused PUT If-Match stored %s: %v", key, err)
		}
	}
	id := createUpload(t, c, "runs", "outputs/never.bin")
	parts := []types.CompletedPart{uploadPart(t, c, "runs", "outputs/never.bin", id, 1, []byte("one part"))}
	_, err := complete(c, "runs", "outputs/never.bin", id, parts, func(in *awss3.CompleteMultipartUploadInput) { in.IfMatch = etag })
	if s3Code(err) != "NoSuchKey" || httpStatus(err) != http.StatusNotFound {
		t.Fatalf("Complete If-Match on a key never written: %v, want 404 NoSuchKey", err)
	}
	if _, err := complete(c, "runs", "outputs/never.bin", id, parts); err != nil {
		t.Fatalf("the upload a refused Complete If-Match left: %v", err)
	}
	_, err = c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/copied"),
		CopySource: aws.String("runs/input/src"), IfMatch: etag})
	if s3Code(err) != "NoSuchKey" || httpStatus(err) != http.StatusNotFound {
		t.Fatalf("CopyObject If-Match on a missing destination: %v, want 404 NoSuchKey", err)
	}
}
