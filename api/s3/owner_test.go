package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ownerCalls are the operations S3 checks x-amz-expected-bucket-owner on, each as the SDK
// sends it with owner as ExpectedBucketOwner, on bucket: its object "input/keep" and the
// upload id of "input/new".
func ownerCalls(c *awss3.Client, bucket, owner, id string) map[string]func(context.Context) error {
	b, k, o := aws.String(bucket), aws.String("input/keep"), aws.String(owner)
	to, src := aws.String("input/new"), aws.String(bucket+"/input/keep")
	return map[string]func(context.Context) error{
		"HeadBucket": func(ctx context.Context) error {
			_, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
		"GetBucketLocation": func(ctx context.Context) error {
			_, err := c.GetBucketLocation(ctx, &awss3.GetBucketLocationInput{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
		"GetBucketVersioning": func(ctx context.Context) error {
			_, err := c.GetBucketVersioning(ctx, &awss3.GetBucketVersioningInput{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
		"PutBucketVersioning": func(ctx context.Context) error {
			_, err := c.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{Bucket: b, ExpectedBucketOwner: o,
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
			return err
		},
		"ListObjectsV2": func(ctx context.Context) error {
			_, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
		"ListObjects": func(ctx context.Context) error {
			_, err := c.ListObjects(ctx, &awss3.ListObjectsInput{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
		"ListObjectVersions": func(ctx context.Context) error {
			_, err := c.ListObjectVersions(ctx, &awss3.ListObjectVersionsInput{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
		"ListMultipartUploads": func(ctx context.Context) error {
			_, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
		"GetObject": func(ctx context.Context) error {
			out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: b, Key: k, ExpectedBucketOwner: o})
			if err == nil {
				out.Body.Close()
			}
			return err
		},
		"HeadObject": func(ctx context.Context) error {
			_, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: b, Key: k, ExpectedBucketOwner: o})
			return err
		},
		"PutObject": func(ctx context.Context) error {
			_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: b, Key: to, ExpectedBucketOwner: o, Body: strings.NewReader("new")})
			return err
		},
		"CopyObject": func(ctx context.Context) error {
			_, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: b, Key: to, CopySource: src, ExpectedBucketOwner: o})
			return err
		},
		"CreateMultipartUpload": func(ctx context.Context) error {
			_, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: b, Key: to, ExpectedBucketOwner: o})
			return err
		},
		"UploadPart": func(ctx context.Context) error {
			_, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: b, Key: to, UploadId: aws.String(id), PartNumber: aws.Int32(2),
				ExpectedBucketOwner: o, Body: strings.NewReader("part")})
			return err
		},
		"UploadPartCopy": func(ctx context.Context) error {
			_, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: b, Key: to, UploadId: aws.String(id), PartNumber: aws.Int32(3),
				CopySource: src, ExpectedBucketOwner: o})
			return err
		},
		"ListParts": func(ctx context.Context) error {
			_, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: b, Key: to, UploadId: aws.String(id), ExpectedBucketOwner: o})
			return err
		},
		"DeleteObjects": func(ctx context.Context) error {
			_, err := c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: b, ExpectedBucketOwner: o,
				Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: k}}}})
			return err
		},
		"DeleteObject": func(ctx context.Context) error {
			_, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: b, Key: k, ExpectedBucketOwner: o})
			return err
		},
		"CompleteMultipartUpload": func(ctx context.Context) error {
			_, err := c.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: b, Key: to, UploadId: aws.String(id), ExpectedBucketOwner: o,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(sha256ETag(payload(2 << 10)))}}}})
			return err
		},
		"AbortMultipartUpload": func(ctx context.Context) error {
			_, err := c.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: b, Key: to, UploadId: aws.String(id), ExpectedBucketOwner: o})
			return err
		},
		"DeleteBucket": func(ctx context.Context) error {
			_, err := c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: b, ExpectedBucketOwner: o})
			return err
		},
	}
}

// TestAnExpectedBucketOwnerOtherThanTheRootIsAccessDenied: every operation S3 checks
// x-amz-expected-bucket-owner on answers 403 AccessDenied, changing nothing, when the
// header (or a presigned URL's query) names any owner but the one the gateway presents
// (ListBuckets' Owner ID), and is served when it names that one; so is a copy's
// x-amz-source-expected-bucket-owner.
func TestAnExpectedBucketOwnerOtherThanTheRootIsAccessDenied(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	buckets, err := c.ListBuckets(ctx, &awss3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	me := aws.ToString(buckets.Owner.ID)
	put(t, c, "runs", "input/keep", []byte("kept"))
	id := createUpload(t, c, "runs", "input/new")
	uploadPart(t, c, "runs", "input/new", id, 1, payload(2<<10))
	for _, other := range []string{"b", "123456789012", ""} {
		for name, call := range ownerCalls(c, "runs", other, id) {
			err := call(ctx)
			if s3Code(err) != "AccessDenied" && !(name == "HeadBucket" || name == "HeadObject") || httpStatus(err) != http.StatusForbidden {
				t.Errorf("%s expecting owner %q: %v, want 403 AccessDenied", name, other, err)
			}
		}
	}
	if got, _ := getAll(t, c, "runs", "input/keep"); string(got) != "kept" {
		t.Fatalf("refused requests changed input/keep: %q", got)
	}
	if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/new")}); s3Code(err) != "NotFound" {
		t.Fatalf("refused requests wrote input/new: %v", err)
	}
	if ups := listedUploads(t, c, "runs"); len(ups) != 1 {
		t.Fatalf("refused requests left uploads %v, want the one", ups)
	}
	for _, copyCall := range []func(string) error{
		func(owner string) error {
			_, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/copy"),
				CopySource: aws.String("runs/input/keep"), ExpectedSourceBucketOwner: aws.String(owner)})
			return err
		},
		func(owner string) error {
			_, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String("input/new"), UploadId: aws.String(id),
				PartNumber: aws.Int32(4), CopySource: aws.String("runs/input/keep"), ExpectedSourceBucketOwner: aws.String(owner)})
			return err
		},
	} {
		if err := copyCall("b"); s3Code(err) != "AccessDenied" {
			t.Errorf("a copy expecting source owner b: %v, want AccessDenied", err)
		}
		if err := copyCall(me); err != nil {
			t.Errorf("a copy expecting its own source owner: %v", err)
		}
	}
	presigned, err := awss3.NewPresignClient(c).PresignGetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"),
		Key: aws.String("input/keep"), ExpectedBucketOwner: aws.String("b")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(presigned.URL, "expected-bucket-owner") {
		t.Fatalf("the presigned URL %s carries no expected owner in its query", presigned.URL)
	}
	r, err := http.NewRequestWithContext(ctx, presigned.Method, presigned.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range presigned.SignedHeader {
		r.Header[k] = v
	}
	resp, err := c.Options().HTTPClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(answer), "<Code>AccessDenied</Code>") {
		t.Fatalf("a presigned GET expecting owner b: %d %s, want 403 AccessDenied", resp.StatusCode, answer)
	}
	// Named rightly, every operation is served (DeleteBucket last, on an empty bucket).
	calls := ownerCalls(c, "runs", me, id)
	for _, name := range []string{"HeadBucket", "GetBucketLocation", "GetBucketVersioning", "PutBucketVersioning", "ListObjectsV2",
		"ListObjects", "ListObjectVersions", "ListMultipartUploads", "GetObject", "HeadObject", "ListParts", "UploadPart", "UploadPartCopy",
		"CompleteMultipartUpload", "PutObject", "CopyObject", "CreateMultipartUpload", "DeleteObjects", "DeleteObject"} {
		if err := calls[name](ctx); err != nil {
			t.Errorf("%s expecting its own owner %q: %v", name, me, err)
		}
	}
}

// TestAnExpectedBucketOwnerTellsNoOtherRootsBucketFromAMissingOne: whether or not the
// expected owner is the caller's, another root's bucket answers exactly as a bucket that
// does not exist (status, code and message) for every operation.
func TestAnExpectedBucketOwnerTellsNoOtherRootsBucketFromAMissingOne(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	a, b := client("AGENTA"), client("AGENTB")
	ctx := context.Background()
	makeBucket(t, b, "theirs")
	put(t, b, "theirs", "input/keep", []byte("theirs"))
	buckets, err := a.ListBuckets(ctx, &awss3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(bucket, owner, name string) string {
		err := ownerCalls(a, bucket, owner, "00000000000000000000000000000000")[name](ctx)
		var ae smithy.APIError
		if !errors.As(err, &ae) {
			return fmt.Sprint(err)
		}
		// The message may name the bucket as the request did; nothing else may differ.
		return fmt.Sprintf("%d %s %q", httpStatus(err), ae.ErrorCode(), strings.ReplaceAll(ae.ErrorMessage(), bucket, "<bucket>"))
	}
	for _, owner := range []string{"b", aws.ToString(buckets.Owner.ID)} {
		for name := range ownerCalls(a, "", owner, "") {
			missing, theirs := answer("nosuchbucket", owner, name), answer("theirs", owner, name)
			if missing != theirs || missing == "" {
				t.Errorf("%s expecting owner %q: another root's bucket answers %s, a missing one %s", name, owner, theirs, missing)
			}
		}
	}
	if got, _ := getAll(t, b, "theirs", "input/keep"); string(got) != "theirs" {
		t.Fatalf("root a's requests changed root b's object: %q", got)
	}
}
