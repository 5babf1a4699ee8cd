package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairnstore/cairn/blob/blobtest"
)

// responseHeader is a header of the answer an SDK error came from ("" when none).
func responseHeader(err error, name string) string {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil {
		return ""
	}
	return re.Response.Header.Get(name)
}

// listedVersions pages ListObjectVersions by its markers with pages of pageSize and
// returns every item in order: "key@id" for a version, "key@id!" for a delete marker
// ("*" after either when it is the latest), "prefix/" for a common prefix. It fails on a
// page larger than pageSize and on an item listed twice. Items of one page come in the
// order of want (the listing expected), as the SDK keeps no order across their kinds.
func listedVersions(t *testing.T, c *awss3.Client, bucket, prefix, delimiter string, pageSize int32, want []string) []string {
	t.Helper()
	var got []string
	seen := map[string]bool{}
	keyMarker, idMarker := "", ""
	for range 500 {
		in := &awss3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(pageSize)}
		if delimiter != "" {
			in.Delimiter = aws.String(delimiter)
		}
		if keyMarker != "" {
			in.KeyMarker = aws.String(keyMarker)
		}
		if idMarker != "" {
			in.VersionIdMarker = aws.String(idMarker)
		}
		out, err := c.ListObjectVersions(context.Background(), in)
		if err != nil {
			t.Fatalf("ListObjectVersions %q %q after %q@%q: %v", prefix, delimiter, keyMarker, idMarker, err)
		}
		var page []string
		for _, v := range out.Versions {
			item := aws.ToString(v.Key) + "@" + aws.ToString(v.VersionId)
			if aws.ToBool(v.IsLatest) {
				item += "*"
			}
			if v.StorageClass != types.ObjectVersionStorageClassStandard || aws.ToString(v.ETag) == "" || v.Owner == nil {
				t.Fatalf("version %s: storage class %q, ETag %q, owner %v", item, v.StorageClass, aws.ToString(v.ETag), v.Owner)
			}
			page = append(page, item)
		}
		for _, m := range out.DeleteMarkers {
			item := aws.ToString(m.Key) + "@" + aws.ToString(m.VersionId) + "!"
			if aws.ToBool(m.IsLatest) {
				item += "*"
			}
			page = append(page, item)
		}
		for _, p := range out.CommonPrefixes {
			page = append(page, aws.ToString(p.Prefix))
		}
		if len(page) > int(pageSize) {
			t.Fatalf("a page of %d items for max-keys %d: %q", len(page), pageSize, page)
		}
		if pageSize > 1 {
			// The SDK splits a page into versions, markers and prefixes: put each back in
			// its place in want, the whole listing (which pages of 1 check item by item).
			rank := func(item string) int {
				if i := slices.Index(want, item); i >= 0 {
					return i
				}
				return len(want)
			}
			slices.SortStableFunc(page, func(a, b string) int { return rank(a) - rank(b) })
		}
		for _, item := range page {
			if seen[item] {
				t.Fatalf("%q listed twice", item)
			}
			seen[item] = true
		}
		got = append(got, page...)
		if !aws.ToBool(out.IsTruncated) {
			return got
		}
		keyMarker, idMarker = aws.ToString(out.NextKeyMarker), aws.ToString(out.NextVersionIdMarker)
	}
	t.Fatal("the listing never ended")
	return nil
}

// TestVersionsAreCairnsHistory is issue 28's acceptance: three PUTs and a DELETE are four
// versions listed, each readable by its versionId, the delete marker the latest.
func TestVersionsAreCairnsHistory(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "v")
	if got, err := c.GetBucketVersioning(ctx, &awss3.GetBucketVersioningInput{Bucket: aws.String("v")}); err != nil || got.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("GetBucketVersioning: %+v %v, want Enabled", got, err)
	}
	for status, want := range map[types.BucketVersioningStatus]string{types.BucketVersioningStatusEnabled: "", types.BucketVersioningStatusSuspended: "NotImplemented"} {
		_, err := c.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{Bucket: aws.String("v"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: status}})
		if s3Code(err) != want {
			t.Fatalf("PutBucketVersioning %s: %v, want %q", status, err, want)
		}
	}
	_, err := c.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{Bucket: aws.String("v"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled, MFADelete: types.MFADeleteEnabled}})
	if s3Code(err) != "NotImplemented" {
		t.Fatalf("PutBucketVersioning with MFA delete: %v, want NotImplemented", err)
	}

	const key = "outputs/model.bin"
	bodies := [][]byte{[]byte("first version"), payload(200 << 10), []byte("third")}
	var ids []string
	for _, b := range bodies {
		out, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("v"), Key: aws.String(key), Body: bytes.NewReader(b)})
		if err != nil || aws.ToString(out.VersionId) == "" {
			t.Fatalf("PutObject: %+v %v, want a version id", out, err)
		}
		ids = append(ids, aws.ToString(out.VersionId))
	}
	del, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("v"), Key: aws.String(key)})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) == "" {
		t.Fatalf("DeleteObject: %+v %v, want a delete marker with a version id", del, err)
	}
	marker := aws.ToString(del.VersionId)

	want := []string{key + "@" + marker + "!*", key + "@" + ids[2], key + "@" + ids[1], key + "@" + ids[0]}
	for _, size := range []int32{1, 3, 1000} {
		if got := listedVersions(t, c, "v", "", "", size, want); !slices.Equal(got, want) {
			t.Fatalf("ListObjectVersions in pages of %d:\n got  %q\n want %q", size, got, want)
		}
	}
	for i, id := range ids {
		got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("v"), Key: aws.String(key), VersionId: aws.String(id)})
		if err != nil {
			t.Fatalf("GetObject of version %d: %v", i, err)
		}
		b, _ := io.ReadAll(got.Body)
		if !bytes.Equal(b, bodies[i]) || aws.ToString(got.VersionId) != id {
			t.Fatalf("version %d reads %d bytes with version id %q, want %d bytes and %q", i, len(b), aws.ToString(got.VersionId), len(bodies[i]), id)
		}
		head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("v"), Key: aws.String(key), VersionId: aws.String(id)})
		if err != nil || aws.ToInt64(head.ContentLength) != int64(len(bodies[i])) || aws.ToString(head.ETag) != aws.ToString(got.ETag) {
			t.Fatalf("HeadObject of version %d: %+v %v", i, head, err)
		}
	}
	// Range and conditions work on a version as on the live object.
	rng, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("v"), Key: aws.String(key), VersionId: aws.String(ids[1]), Range: aws.String("bytes=1000-1999")})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rng.Body); !bytes.Equal(b, bodies[1][1000:2000]) {
		t.Fatalf("a range of version 1: %d bytes", len(b))
	}
	first, _ := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("v"), Key: aws.String(key), VersionId: aws.String(ids[0])})
	if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("v"), Key: aws.String(key), VersionId: aws.String(ids[2]), IfMatch: first.ETag}); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("If-Match with another version's ETag: %v, want PreconditionFailed", err)
	}

	// The delete marker: the key is gone (NoSuchKey), the marker's own id is not a body.
	_, err = c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("v"), Key: aws.String(key)})
	if s3Code(err) != "NoSuchKey" || responseHeader(err, deleteMarkerHeader) != "true" || responseHeader(err, versionHeader) != marker {
		t.Fatalf("GetObject of a deleted key: %v (delete marker %q, version %q), want NoSuchKey with the marker", err,
			responseHeader(err, deleteMarkerHeader), responseHeader(err, versionHeader))
	}
	_, err = c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("v"), Key: aws.String(key), VersionId: aws.String(marker)})
	if s3Code(err) != "MethodNotAllowed" || responseHeader(err, deleteMarkerHeader) != "true" {
		t.Fatalf("GetObject of the delete marker's version: %v, want MethodNotAllowed with x-amz-delete-marker", err)
	}

	// Version ids that name nothing here.
	put(t, c, "v", "input/other", []byte("o"))
	other, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("v"), Key: aws.String("input/other")})
	if err != nil || aws.ToString(other.VersionId) == "" {
		t.Fatalf("HeadObject: %+v %v, want a version id", other, err)
	}
	for name, tc := range map[string]struct{ key, id, code string }{
		"another key's version id":         {key, aws.ToString(other.VersionId), "NoSuchVersion"},
		"this key's id on another key":     {"input/other", ids[0], "NoSuchVersion"},
		"a version id of a key never here": {"input/never", ids[0], "NoSuchVersion"},
		"null":                             {key, "null", "NoSuchVersion"},
		"a malformed version id":           {key, "not-a-version", "InvalidArgument"},
		"an upper-case version id":         {key, strings.ToUpper(ids[0]), "InvalidArgument"},
	} {
		_, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("v"), Key: aws.String(tc.key), VersionId: aws.String(tc.id)})
		if s3Code(err) != tc.code {
			t.Errorf("GetObject with %s: %v, want %s", name, err, tc.code)
		}
	}

	// History is immutable: a version is never deleted, and the live object stays.
	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("v"), Key: aws.String("input/other"), VersionId: other.VersionId}); s3Code(err) != "NotImplemented" {
		t.Fatalf("DeleteObject of a version: %v, want NotImplemented", err)
	}
	dels, err := c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: aws.String("v"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("input/other"), VersionId: other.VersionId}}}})
	if err != nil || len(dels.Deleted) != 0 || len(dels.Errors) != 1 || aws.ToString(dels.Errors[0].Code) != "NotImplemented" {
		t.Fatalf("DeleteObjects of a version: %+v %v, want one NotImplemented", dels, err)
	}
	if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("v"), Key: aws.String("input/other")}); err != nil {
		t.Fatalf("the object after refused version deletes: %v", err)
	}
	dels, err = c.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: aws.String("v"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("input/other")}}}})
	if err != nil || len(dels.Deleted) != 1 || !aws.ToBool(dels.Deleted[0].DeleteMarker) || aws.ToString(dels.Deleted[0].DeleteMarkerVersionId) == "" {
		t.Fatalf("DeleteObjects: %+v %v, want a delete marker", dels, err)
	}

	// A copy names both versions.
	put(t, c, "v", "input/src", []byte("s"))
	cp, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("v"), Key: aws.String("input/dst"), CopySource: aws.String("v/input/src")})
	if err != nil || aws.ToString(cp.VersionId) == "" || aws.ToString(cp.CopySourceVersionId) == "" {
		t.Fatalf("CopyObject: %+v %v, want both version ids", cp, err)
	}
	if got, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("v"), Key: aws.String("input/dst")}); err != nil || aws.ToString(got.VersionId) != aws.ToString(cp.VersionId) {
		t.Fatalf("HeadObject of the copy: %+v %v, want version %s", got, err, aws.ToString(cp.VersionId))
	}
}

// TestListObjectVersionsPagesWithoutRepeatsOrSkips lists keys that share prefixes across
// '/', deleted keys, a directory that holds only deleted keys and a deleted key that is
// now a prefix, in pages of several sizes from 1, with and without a delimiter, against
// the listing computed from the writes.
func TestListObjectVersionsPagesWithoutRepeatsOrSkips(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "p")
	history := map[string][]string{} // key → its versions' items, oldest first
	write := func(key string, n int) {
		for i := range n {
			out, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("p"), Key: aws.String(key), Body: strings.NewReader(fmt.Sprint(key, i))})
			if err != nil {
				t.Fatal(err)
			}
			history[key] = append(history[key], key+"@"+aws.ToString(out.VersionId))
		}
	}
	remove := func(key string) {
		out, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("p"), Key: aws.String(key)})
		if err != nil || !aws.ToBool(out.DeleteMarker) {
			t.Fatalf("DeleteObject %s: %+v %v", key, out, err)
		}
		history[key] = append(history[key], key+"@"+aws.ToString(out.VersionId)+"!")
	}
	write("input/a", 2)
	write("input/a-b", 1)
	write("input/a.c/x", 3)
	write("input/b/gone", 2)
	remove("input/b/gone") // input/b/ holds only a deleted key
	write("input/c/d/e", 1)
	write("input/c/d0", 2)
	remove("input/c/d0")
	write("input/c/d0", 1) // a key deleted and written again
	write("input/f", 1)
	remove("input/f")
	write("input/f/g", 1) // a deleted key whose name is now a prefix
	write("input/z", 1)
	keys := make([]string, 0, len(history))
	for k := range history {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	expected := func(prefix, delimiter string) []string {
		var out []string
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if i := strings.Index(k[len(prefix):], delimiter); delimiter != "" && i >= 0 {
				if p := k[:len(prefix)+i+1]; len(out) == 0 || out[len(out)-1] != p {
					out = append(out, p)
				}
				continue
			}
			h := history[k]
			for i := len(h) - 1; i >= 0; i-- {
				item := h[i]
				if i == len(h)-1 {
					item += "*"
				}
				out = append(out, item)
			}
		}
		return out
	}
	for _, prefix := range []string{"", "input/", "input/a", "input/c/", "input/b/", "input/f", "none/"} {
		for _, delim := range []string{"", "/"} {
			want := expected(prefix, delim)
			for _, size := range []int32{1, 2, 5, 1000} {
				if got := listedVersions(t, c, "p", prefix, delim, size, want); !slices.Equal(got, want) {
					t.Fatalf("prefix %q delimiter %q pages of %d:\n got  %q\n want %q", prefix, delim, size, got, want)
				}
			}
		}
	}
	// A version-id marker needs its key marker, and must be one of its versions.
	if _, err := c.ListObjectVersions(ctx, &awss3.ListObjectVersionsInput{Bucket: aws.String("p"), VersionIdMarker: aws.String("null")}); s3Code(err) != "InvalidArgument" {
		t.Fatalf("a version-id marker without a key marker: %v, want InvalidArgument", err)
	}
	if _, err := c.ListObjectVersions(ctx, &awss3.ListObjectVersionsInput{Bucket: aws.String("p"), KeyMarker: aws.String("input/a"),
		VersionIdMarker: aws.String("zz")}); s3Code(err) != "InvalidArgument" {
		t.Fatalf("a malformed version-id marker: %v, want InvalidArgument", err)
	}
	// EncodingType=url encodes keys and markers.
	out, err := c.ListObjectVersions(ctx, &awss3.ListObjectVersionsInput{Bucket: aws.String("p"), Prefix: aws.String("input/a-"),
		EncodingType: types.EncodingTypeUrl, KeyMarker: aws.String("input/a")})
	if err != nil || len(out.Versions) != 1 || aws.ToString(out.Versions[0].Key) != "input/a-b" {
		t.Fatalf("an URL-encoded listing: %+v %v", out, err)
	}
}

// TestAnotherRootsVersionsAnswerAsAMissingBucket: a key of another agent root gets
// exactly what a missing bucket gets, whatever version id it sends.
func TestAnotherRootsVersionsAnswerAsAMissingBucket(t *testing.T) {
	_, client := gateway(t)
	ctx := context.Background()
	a, b := client("AGENTA"), client("AGENTB")
	makeBucket(t, a, "private")
	out, err := a.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("private"), Key: aws.String("input/secret"), Body: strings.NewReader("s")})
	if err != nil {
		t.Fatal(err)
	}
	id := out.VersionId
	calls := map[string]func(bucket string) error{
		"GetObject with a version id": func(bucket string) error {
			_, err := b.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("input/secret"), VersionId: id})
			return err
		},
		"GetObject with a version id of no version": func(bucket string) error {
			_, err := b.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("input/secret"), VersionId: aws.String("null")})
			return err
		},
		"ListObjectVersions": func(bucket string) error {
			_, err := b.ListObjectVersions(ctx, &awss3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
			return err
		},
		"GetBucketVersioning": func(bucket string) error {
			_, err := b.GetBucketVersioning(ctx, &awss3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
			return err
		},
		"PutBucketVersioning": func(bucket string) error {
			_, err := b.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{Bucket: aws.String(bucket),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
			return err
		},
	}
	for name, call := range calls {
		theirs, missing := call("private"), call("missing")
		if s3Code(theirs) != "NoSuchBucket" || s3Code(missing) != "NoSuchBucket" {
			t.Errorf("%s: another root's bucket %v, a missing one %v; want NoSuchBucket for both", name, theirs, missing)
		}
	}
}

// TestCopyObjectCopiesANamedVersion: x-amz-copy-source ?versionId= copies that version
// (S3's way to bring an old version back), moving no byte; a delete marker cannot be
// copied, and a version id of another key names none.
func TestCopyObjectCopiesANamedVersion(t *testing.T) {
	hs, puts := blobtest.CountingPuts(t)
	_, client := gatewayOn(t, hs)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "vc")
	old := payload(300 << 10)
	first, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("vc"), Key: aws.String("outputs/m"), Body: bytes.NewReader(old)})
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "vc", "outputs/m", []byte("the newer version"))
	del, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("vc"), Key: aws.String("outputs/m")})
	if err != nil {
		t.Fatal(err)
	}
	before := puts.Load()
	out, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("vc"), Key: aws.String("outputs/m"),
		CopySource: aws.String("vc/outputs/m?versionId=" + aws.ToString(first.VersionId))})
	if err != nil {
		t.Fatalf("CopyObject of the first version onto the deleted key: %v", err)
	}
	if aws.ToString(out.CopySourceVersionId) != aws.ToString(first.VersionId) || aws.ToString(out.CopyObjectResult.ETag) != aws.ToString(first.ETag) {
		t.Fatalf("the copy: source version %s, ETag %s; want %s, %s", aws.ToString(out.CopySourceVersionId),
			aws.ToString(out.CopyObjectResult.ETag), aws.ToString(first.VersionId), aws.ToString(first.ETag))
	}
	if after := puts.Load(); after != before {
		t.Fatalf("copying a version stored %d blobs, want none", after-before)
	}
	get, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("vc"), Key: aws.String("outputs/m")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(get.Body)
	get.Body.Close()
	if !bytes.Equal(b, old) {
		t.Fatalf("the key reads %d bytes after the copy, want the first version's %d", len(b), len(old))
	}
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("vc"), Key: aws.String("outputs/n"),
		CopySource: aws.String("vc/outputs/m?versionId=" + aws.ToString(del.VersionId))}); s3Code(err) != "InvalidRequest" {
		t.Fatalf("copying a delete marker: %v, want InvalidRequest", err)
	}
	put(t, c, "vc", "outputs/other", []byte("other"))
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("vc"), Key: aws.String("outputs/n"),
		CopySource: aws.String("vc/outputs/other?versionId=" + aws.ToString(first.VersionId))}); s3Code(err) != "NoSuchVersion" {
		t.Fatalf("copying with another key's version id: %v, want NoSuchVersion", err)
	}
}
