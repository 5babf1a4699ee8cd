package s3

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// listedUploads lists bucket's uploads through c as "key upload-id" lines.
func listedUploads(t *testing.T, c *awss3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &awss3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	var got []string
	for _, u := range out.Uploads {
		got = append(got, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
	}
	return got
}

// TestAPrefixKeyUploadsByItsTargetKey: a key bound to outputs of root a starts, fills
// (UploadPart, UploadPartCopy of a whole source and of a range it can read), lists and
// completes an upload of a key inside its prefixes, and reads the object back; an upload
// of a key outside is AccessDenied and leaves no record, a copy source outside is
// NoSuchKey. The uploads of keys outside its prefixes (the root's key's of input, its
// own seen from a key bound to logs) are left out of ListMultipartUploads and answer
// every request naming their id as an id never issued (NoSuchUpload); the key of the
// whole root sees every upload.
func TestAPrefixKeyUploadsByItsTargetKey(t *testing.T) {
	client, h := multipartGateway(t, nil)
	root, outputs, logs := client("AGENTA"), client("OUTPUTS"), client("LOGS")
	ctx := context.Background()
	src := payload(3 << 10)
	put(t, root, "runs", "outputs/src.bin", src)
	put(t, root, "runs", "input/secret.bin", []byte("secret"))
	theirs := createUpload(t, root, "runs", "input/theirs.bin")
	files := uploadFiles(t, h)

	if _, err := outputs.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: aws.String("runs"), Key: aws.String("input/x.bin")}); s3Code(err) != "AccessDenied" {
		t.Fatalf("CreateMultipartUpload outside the prefixes: %v, want AccessDenied", err)
	}
	if n := uploadFiles(t, h); n != files {
		t.Fatalf("a refused CreateMultipartUpload left %d files, want %d", n, files)
	}

	const key = "outputs/run1/model.bin"
	id := createUpload(t, outputs, "runs", key)
	first := payload(2 << 10)
	p1 := uploadPart(t, outputs, "runs", key, id, 1, first)
	whole, err := outputs.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(2), CopySource: aws.String("runs/outputs/src.bin")})
	if err != nil {
		t.Fatalf("UploadPartCopy of a source inside the prefixes: %v", err)
	}
	ranged, err := outputs.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(3), CopySource: aws.String("runs/outputs/src.bin"), CopySourceRange: aws.String("bytes=10-19")})
	if err != nil {
		t.Fatalf("UploadPartCopy of a range inside the prefixes: %v", err)
	}
	for _, rng := range []*string{nil, aws.String("bytes=0-1")} {
		if _, err := outputs.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id),
			PartNumber: aws.Int32(4), CopySource: aws.String("runs/input/secret.bin"), CopySourceRange: rng}); s3Code(err) != "NoSuchKey" {
			t.Fatalf("UploadPartCopy of a source outside the prefixes (range %v): %v, want NoSuchKey", aws.ToString(rng), err)
		}
	}
	parts, err := outputs.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id)})
	if err != nil || len(parts.Parts) != 3 {
		t.Fatalf("ListParts: %v, %v; want 3 parts", parts, err)
	}
	if got, want := listedUploads(t, outputs, "runs"), []string{key + " " + id}; !slices.Equal(got, want) {
		t.Fatalf("ListMultipartUploads by the key bound to outputs: %v, want %v", got, want)
	}
	if got, want := listedUploads(t, root, "runs"), []string{"input/theirs.bin " + theirs, key + " " + id}; !slices.Equal(got, want) {
		t.Fatalf("ListMultipartUploads by the root's key: %v, want %v", got, want)
	}
	if got := listedUploads(t, logs, "runs"); len(got) != 0 {
		t.Fatalf("ListMultipartUploads by the key bound to logs: %v, want none", got)
	}

	// Uploads of keys outside the caller's prefixes, by their own key or the caller's, vs
	// an id never issued.
	const madeUp = "0123456789abcdef0123456789abcdef"
	hidden := []struct {
		c        *awss3.Client
		key, id  string
		describe string
	}{
		{outputs, "input/theirs.bin", theirs, "the root key's upload of input, by the key bound to outputs"},
		{outputs, "input/theirs.bin", madeUp, "an id never issued, by the key bound to outputs"},
		{logs, key, id, "the outputs upload, by the key bound to logs"},
		{logs, key, madeUp, "an id never issued, by the key bound to logs"},
	}
	for _, c := range hidden {
		_, lerr := c.c.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String(c.key), UploadId: aws.String(c.id)})
		_, uerr := c.c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: aws.String("runs"), Key: aws.String(c.key), UploadId: aws.String(c.id),
			PartNumber: aws.Int32(9), Body: bytes.NewReader([]byte("intruder"))})
		_, cerr := complete(c.c, "runs", c.key, c.id, []types.CompletedPart{p1})
		_, aerr := c.c.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"), Key: aws.String(c.key), UploadId: aws.String(c.id)})
		for op, err := range map[string]error{"ListParts": lerr, "UploadPart": uerr, "CompleteMultipartUpload": cerr, "AbortMultipartUpload": aerr} {
			if s3Code(err) != "NoSuchUpload" {
				t.Errorf("%s of %s: %v, want NoSuchUpload", op, c.describe, err)
			}
		}
	}
	if got, want := listedUploads(t, root, "runs"), []string{"input/theirs.bin " + theirs, key + " " + id}; !slices.Equal(got, want) {
		t.Fatalf("ListMultipartUploads by the root's key after the refused requests: %v, want %v", got, want)
	}

	done := []types.CompletedPart{p1, {PartNumber: aws.Int32(2), ETag: whole.CopyPartResult.ETag}, {PartNumber: aws.Int32(3), ETag: ranged.CopyPartResult.ETag}}
	if _, err := complete(outputs, "runs", key, id, done); err != nil {
		t.Fatalf("CompleteMultipartUpload by the key bound to outputs: %v", err)
	}
	want := bytes.Join([][]byte{first, src, src[10:20]}, nil)
	if got, _ := getAll(t, outputs, "runs", key); !bytes.Equal(got, want) {
		t.Fatalf("GetObject of the completed upload: %d bytes, want the %d bytes of its parts", len(got), len(want))
	}

	// It aborts an upload of its own.
	gone := createUpload(t, outputs, "runs", "outputs/aborted.bin")
	uploadPart(t, outputs, "runs", "outputs/aborted.bin", gone, 1, []byte("abort me"))
	if _, err := outputs.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"), Key: aws.String("outputs/aborted.bin"),
		UploadId: aws.String(gone)}); err != nil {
		t.Fatalf("AbortMultipartUpload by the key bound to outputs: %v", err)
	}
	if got, want := listedUploads(t, root, "runs"), []string{"input/theirs.bin " + theirs}; !slices.Equal(got, want) {
		t.Fatalf("ListMultipartUploads by the root's key at the end: %v, want %v", got, want)
	}
}
