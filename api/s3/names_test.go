package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/workbench/auth"
)

// signedDo sends method target (a path and query as sent, escaped) to srv signed with
// key's secret as the AWS SDK for Go v2 signs (its v4 signer, S3's unescaped path), with
// body and its SHA-256; it returns the answer and its body.
func signedDo(t *testing.T, srv *httptest.Server, key, method, target string, body []byte) (*http.Response, []byte) {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), method, srv.URL+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	r.Header.Set(headerContentSHA256, hash)
	return sendSigned(t, srv, key, r, hash)
}

// sendSigned signs r (its payload hash given) with key's secret and sends it to srv.
func sendSigned(t *testing.T, srv *httptest.Server, key string, r *http.Request, payloadHash string) (*http.Response, []byte) {
	t.Helper()
	signRequest(t, key, r, payloadHash)
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.URL, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp, answer
}

// signRequest signs r (its payload hash given) with key's secret as the AWS SDK for Go
// v2 signs (its v4 signer, S3's unescaped path).
func signRequest(t *testing.T, key string, r *http.Request, payloadHash string) {
	t.Helper()
	creds := aws.Credentials{AccessKeyID: key, SecretAccessKey: gatewayKeys[key].secret}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, r, payloadHash, "s3", "us-east-1", time.Now(),
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
}

// httpStatus is the HTTP status of an SDK error, 0 if none.
func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// TestAFolderMarkerReadsAsAMissingKey: a key Cairn cannot store as a path ("dir/", the
// folder marker awscli and rclone read, or "a//b") names no object, so a read answers
// NoSuchKey (a HEAD 404), a delete deletes nothing and succeeds, a copy from it is
// NoSuchKey, exactly as for a key never written; a write of a folder marker is refused
// saying why; listings with a delimiter still roll the folder up.
func TestAFolderMarkerReadsAsAMissingKey(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "runs")
	put(t, c, "runs", "dir/a.txt", []byte("a"))
	for _, key := range []string{"dir/", "dir", "a//b", "nothing/"} {
		_, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String(key)})
		if s3Code(err) != "NoSuchKey" || httpStatus(err) != http.StatusNotFound {
			t.Errorf("GET %q: %v, want 404 NoSuchKey", key, err)
		}
		_, err = c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("runs"), Key: aws.String(key)})
		if httpStatus(err) != http.StatusNotFound {
			t.Errorf("HEAD %q: %v, want 404", key, err)
		}
	}
	_, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("dir/"), VersionId: aws.String(strings.Repeat("0", 15) + "1" + strings.Repeat("ab", 8))})
	if s3Code(err) != "NoSuchVersion" {
		t.Errorf("GET dir/ ?versionId=: %v, want NoSuchVersion", err)
	}
	if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("nope"), Key: aws.String("dir/")}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("GET dir/ in a missing bucket: %v, want NoSuchBucket", err)
	}
	_, err = c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("runs"), Key: aws.String("copy"), CopySource: aws.String("runs/dir/")})
	if s3Code(err) != "NoSuchKey" {
		t.Errorf("a copy from dir/: %v, want NoSuchKey", err)
	}

	_, err = c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("runs"), Key: aws.String("empty/"), Body: bytes.NewReader(nil)})
	if s3Code(err) != "InvalidArgument" || httpStatus(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "folder marker") {
		t.Errorf("PUT of a folder marker: %v, want 400 InvalidArgument saying it is a folder marker", err)
	}

	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("runs"), Key: aws.String("dir/")}); err != nil {
		t.Errorf("DELETE dir/: %v, want success (nothing to delete)", err)
	}
	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("nope"), Key: aws.String("dir/")}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("DELETE dir/ in a missing bucket: %v, want NoSuchBucket", err)
	}
	del, err := c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: aws.String("runs"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("dir/")}}}})
	if err != nil || len(del.Deleted) != 1 || len(del.Errors) != 0 {
		t.Errorf("DeleteObjects of dir/: %+v %v, want it deleted (nothing to delete)", del, err)
	}
	if got, _ := getAll(t, c, "runs", "dir/a.txt"); string(got) != "a" {
		t.Fatalf("the object under dir/ after deleting the marker: %q", got)
	}

	top, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("runs"), Delimiter: aws.String("/")})
	if err != nil || len(top.CommonPrefixes) != 1 || aws.ToString(top.CommonPrefixes[0].Prefix) != "dir/" || len(top.Contents) != 0 {
		t.Fatalf("a listing with a delimiter: %+v %v, want the one prefix dir/", top, err)
	}
	in, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("runs"), Prefix: aws.String("dir/"), Delimiter: aws.String("/")})
	if err != nil || len(in.Contents) != 1 || aws.ToString(in.Contents[0].Key) != "dir/a.txt" {
		t.Fatalf("a listing of dir/: %+v %v, want dir/a.txt", in, err)
	}
}

// TestAKeyPastS3sBoundIsKeyTooLongOnEveryRequest: S3 bounds a key at 1,024 bytes of
// UTF-8 (not characters); every request naming a longer one, in its path, its copy
// source or a DeleteObjects entry, is KeyTooLongError, and nothing is stored. A key of
// exactly 1,024 bytes is served.
func TestAKeyPastS3sBoundIsKeyTooLongOnEveryRequest(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "long")
	// 1,024 bytes: "in/" and 1,021 more, "ü" being two bytes of UTF-8.
	fits := "in/" + strings.Repeat(strings.Repeat("ü", 50)+"/", 10) + strings.Repeat("x", 11)
	if len(fits) != MaxKeyBytes {
		t.Fatalf("the test's key has %d bytes, want %d", len(fits), MaxKeyBytes)
	}
	put(t, c, "long", fits, []byte("fits"))
	if got, _ := getAll(t, c, "long", fits); string(got) != "fits" {
		t.Fatalf("a key of %d bytes reads %q", len(fits), got)
	}
	long := fits + "ü" // 1,026 bytes, 525 characters
	b, k := aws.String("long"), aws.String(long)
	calls := map[string]func() error{
		"PutObject": func() error {
			_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x")})
			return err
		},
		"GetObject": func() error {
			_, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: b, Key: k})
			return err
		},
		"DeleteObject": func() error {
			_, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: b, Key: k})
			return err
		},
		"CopyObject to it": func() error {
			_, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: b, Key: k, CopySource: aws.String("long/" + fits)})
			return err
		},
		"CopyObject from it": func() error {
			_, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: b, Key: aws.String("in/copy"), CopySource: aws.String("long/" + long)})
			return err
		},
		"CreateMultipartUpload": func() error {
			_, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: b, Key: k})
			return err
		},
		"UploadPart": func() error {
			_, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: b, Key: k, UploadId: aws.String("u"), PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
			return err
		},
		"UploadPartCopy from it": func() error {
			id := createUpload(t, c, "long", "in/target")
			_, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: b, Key: aws.String("in/target"), UploadId: aws.String(id), PartNumber: aws.Int32(1), CopySource: aws.String("long/" + long)})
			return err
		},
		"CompleteMultipartUpload": func() error {
			_, err := complete(c, "long", long, "u", []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(`"x"`)}})
			return err
		},
		"AbortMultipartUpload": func() error {
			_, err := c.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: aws.String("u")})
			return err
		},
		"ListParts": func() error {
			_, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: b, Key: k, UploadId: aws.String("u")})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); s3Code(err) != "KeyTooLongError" || httpStatus(err) != http.StatusBadRequest {
			t.Errorf("%s naming a key of %d bytes: %v, want 400 KeyTooLongError", name, len(long), err)
		}
	}
	_, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: b, Key: k})
	if httpStatus(err) != http.StatusBadRequest {
		t.Errorf("HeadObject naming a key of %d bytes: %v, want 400", len(long), err)
	}
	del, err := c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: k}, {Key: aws.String(fits)}}}})
	if err != nil || len(del.Errors) != 1 || aws.ToString(del.Errors[0].Code) != "KeyTooLongError" || aws.ToString(del.Errors[0].Key) != long ||
		len(del.Deleted) != 1 || aws.ToString(del.Deleted[0].Key) != fits {
		t.Fatalf("DeleteObjects of a key too long and one that fits: %+v %v, want KeyTooLongError for the long one only", del, err)
	}
	listed, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: b})
	if err != nil || len(listed.Contents) != 0 {
		t.Fatalf("the bucket after refused requests: %+v %v, want it empty", listed.Contents, err)
	}
}

// TestCreateBucketFollowsS3sNamingRules: a bucket CreateBucket makes is one every S3
// client can name; a name S3 refuses is InvalidBucketName and creates nothing, while a
// workbench made over REST under Cairn's wider rules is still served by its name.
func TestCreateBucketFollowsS3sNamingRules(t *testing.T) {
	ds := blobtest.Dir(t)
	svc, _, client := gatewayNode(t, ds)
	c := client("AGENTA")
	ctx := context.Background()
	// (A name ending in --x-s3, which S3 also refuses, makes the SDK open an S3 Express
	// session instead of sending the request.)
	refused := []string{"Runs", "my_bucket", "a.b", "-abc", "abc-", strings.Repeat("a", 64),
		"xn--abc", "sthree-abc", "amzn-s3-demo-abc", "abc-s3alias", "abc--ol-s3", "abc--table-s3"}
	for _, name := range refused {
		_, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)})
		if s3Code(err) != "InvalidBucketName" || httpStatus(err) != http.StatusBadRequest {
			t.Errorf("CreateBucket %q: %v, want 400 InvalidBucketName", name, err)
		}
	}
	accepted := []string{"runs-2024", strings.Repeat("a", 63), "b", "3d", "a--b"}
	for _, name := range accepted {
		if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("CreateBucket %q: %v", name, err)
		}
	}
	list, err := c.ListBuckets(ctx, &awss3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range list.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(accepted))
	if !slices.Equal(names, want) {
		t.Fatalf("ListBuckets: %q, want only %q", names, want)
	}

	if _, err := svc.Lifecycle.CreateWorkbench(auth.WithPrincipal(ctx, gatewayKeys["AGENTA"].p), "a", "Main_WB", ""); err != nil {
		t.Fatal(err)
	}
	put(t, c, "Main_WB", "input/x", []byte("x"))
	if got, _ := getAll(t, c, "Main_WB", "input/x"); string(got) != "x" {
		t.Fatalf("an object of a workbench made over REST: %q", got)
	}
}
