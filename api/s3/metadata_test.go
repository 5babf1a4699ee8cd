package s3

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// TestMetadataIsTheFilesFields: x-amz-meta-* round-trips as the file's fields, fields
// written through the service are metadata, a PUT replaces the metadata, a copy keeps or
// replaces it, and what Cairn cannot keep is refused with nothing stored.
func TestMetadataIsTheFilesFields(t *testing.T) {
	ds := blobtest.Dir(t)
	svc, _, client := gatewayNode(t, ds)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "meta")
	want := map[string]string{"mtime": "1700000000.25", "s3cmd-attrs": "mode:33188/uid:1000"}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("outputs/a.txt"),
		Body: strings.NewReader("alpha"), Metadata: want}); err != nil {
		t.Fatalf("PutObject with metadata: %v", err)
	}
	head := func(key string) map[string]string {
		t.Helper()
		out, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("HeadObject %s: %v", key, err)
		}
		return out.Metadata
	}
	if got := head("outputs/a.txt"); !maps.Equal(got, want) {
		t.Fatalf("HeadObject metadata %v, want %v", got, want)
	}
	get, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("meta"), Key: aws.String("outputs/a.txt")})
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if !maps.Equal(get.Metadata, want) {
		t.Fatalf("GetObject metadata %v, want %v", get.Metadata, want)
	}

	pctx := auth.WithPrincipal(ctx, gatewayKeys["AGENTA"].p)
	f, err := svc.Reads.Open(pctx, "a", "meta", "outputs/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if f.Info.Fields["mtime"] != (meta.FieldValue{Kind: meta.FieldString, Str: "1700000000.25"}) {
		t.Fatalf("the service sees fields %v, want mtime as a string field", f.Info.Fields)
	}
	if _, err := svc.Writes.Write(pctx, workbench.WriteRequest{Agent: "a", Workbench: "meta", Path: "outputs/b.txt",
		Body: strings.NewReader("beta"), Fields: map[string]meta.FieldValue{
			"runs": {Kind: meta.FieldInt, Int: 3}, "ok": {Kind: meta.FieldBool, Bool: true}, "score": {Kind: meta.FieldFloat, Float: 0.5}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := head("outputs/b.txt"), map[string]string{"runs": "3", "ok": "true", "score": "0.5"}; !maps.Equal(got, want) {
		t.Fatalf("fields written through the service answer metadata %v, want %v", got, want)
	}

	// Copies keep the metadata, or take the request's with REPLACE.
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("meta"), Key: aws.String("outputs/kept.txt"),
		CopySource: aws.String("meta/outputs/a.txt")}); err != nil {
		t.Fatal(err)
	}
	if got := head("outputs/kept.txt"); !maps.Equal(got, want) {
		t.Fatalf("a copy's metadata %v, want the source's %v", got, want)
	}
	replaced := map[string]string{"stage": "final"}
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("meta"), Key: aws.String("outputs/a.txt"),
		CopySource: aws.String("meta/outputs/a.txt"), MetadataDirective: types.MetadataDirectiveReplace, Metadata: replaced}); err != nil {
		t.Fatalf("a copy onto itself replacing the metadata: %v", err)
	}
	if got := head("outputs/a.txt"); !maps.Equal(got, replaced) {
		t.Fatalf("after REPLACE the metadata is %v, want %v", got, replaced)
	}
	// A PUT replaces the metadata with its own (none).
	put(t, c, "meta", "outputs/a.txt", []byte("alpha 2"))
	if got := head("outputs/a.txt"); len(got) != 0 {
		t.Fatalf("a PUT without metadata left %v", got)
	}

	for name, md := range map[string]map[string]string{
		"a name Cairn cannot keep":    {"9lives": "x"},
		"the gateway's own namespace": {"s3.content-md5": "00"},
		"a value past a field's size": {"big": strings.Repeat("v", meta.MaxFieldStringBytes+1)},
	} {
		if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("outputs/refused"),
			Body: strings.NewReader("x"), Metadata: md}); s3Code(err) != "InvalidArgument" {
			t.Errorf("%s: PutObject answered %v, want InvalidArgument", name, err)
		}
	}
	large := map[string]string{}
	for i := 0; i < 3; i++ {
		large[string(rune('a'+i))] = strings.Repeat("v", 1000)
	}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("outputs/refused"),
		Body: strings.NewReader("x"), Metadata: large}); s3Code(err) != "MetadataTooLarge" {
		t.Errorf("3,000 bytes of metadata: PutObject answered %v, want MetadataTooLarge", err)
	}
	if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String("outputs/refused")}); s3Code(err) != "NotFound" {
		t.Errorf("a refused PUT stored something: HeadObject answered %v", err)
	}
}

// TestETagIsTheCheckedMD5OrTheSHA256: a PUT whose Content-MD5 was checked has that MD5 as
// its ETag, everywhere an ETag is answered and as a condition; any other body has
// "sha256-<hex>", never 32 hex digits a client would take for an MD5 it could check.
func TestETagIsTheCheckedMD5OrTheSHA256(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "etag")
	body := "a body whose MD5 the client sends"
	sum := md5.Sum([]byte(body))
	wantMD5 := `"` + hex.EncodeToString(sum[:]) + `"`
	out, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("etag"), Key: aws.String("input/md5"),
		Body: strings.NewReader(body), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.ETag); got != wantMD5 {
		t.Fatalf("PUT with Content-MD5: ETag %s, want %s", got, wantMD5)
	}
	plain := "a body sent without Content-MD5"
	sha := sha256.Sum256([]byte(plain))
	wantSHA := `"sha256-` + hex.EncodeToString(sha[:]) + `"`
	out, err = c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("etag"), Key: aws.String("input/plain"), Body: strings.NewReader(plain)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.ETag); got != wantSHA {
		t.Fatalf("PUT without Content-MD5: ETag %s, want %s", got, wantSHA)
	}

	for key, want := range map[string]string{"input/md5": wantMD5, "input/plain": wantSHA} {
		get, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("etag"), Key: aws.String(key), IfMatch: aws.String(want)})
		if err != nil {
			t.Fatalf("GET %s If-Match its ETag: %v", key, err)
		}
		io.Copy(io.Discard, get.Body)
		get.Body.Close()
		if aws.ToString(get.ETag) != want {
			t.Errorf("GET %s: ETag %s, want %s", key, aws.ToString(get.ETag), want)
		}
	}
	list, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("etag")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		if want := map[string]string{"input/md5": wantMD5, "input/plain": wantSHA}[aws.ToString(o.Key)]; aws.ToString(o.ETag) != want {
			t.Errorf("listed %s with ETag %s, want %s", aws.ToString(o.Key), aws.ToString(o.ETag), want)
		}
	}
	// The MD5 ETag is the write's condition too, and a copy of the same bytes keeps it.
	cp, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("etag"), Key: aws.String("input/copy"),
		CopySource: aws.String("etag/input/md5"), CopySourceIfMatch: aws.String(wantMD5)})
	if err != nil {
		t.Fatalf("CopyObject with the MD5 ETag as its source condition: %v", err)
	}
	if got := aws.ToString(cp.CopyObjectResult.ETag); got != wantMD5 {
		t.Fatalf("the copy's ETag %s, want the source's %s", got, wantMD5)
	}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("etag"), Key: aws.String("input/md5"),
		Body: strings.NewReader("replaced"), IfMatch: aws.String(wantMD5)}); err != nil {
		t.Fatalf("If-Match with the MD5 ETag: %v", err)
	}
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("etag"), Key: aws.String("input/md5"),
		Body: strings.NewReader("again"), IfMatch: aws.String(wantMD5)}); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("If-Match with the replaced object's MD5 ETag: %v, want PreconditionFailed", err)
	}
}

// TestChecksumsAreAnsweredOnRead: the flexible checksum a PUT sent is answered on a whole
// GET or HEAD that asks for it (the SDK checks the bytes against it), of a copy too, and
// not on a range or for a body sent without one.
func TestChecksumsAreAnsweredOnRead(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "sums")
	for _, alg := range []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha256} {
		key := "outputs/" + strings.ToLower(string(alg))
		out, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("sums"), Key: aws.String(key),
			Body: strings.NewReader("checked with " + string(alg)), ChecksumAlgorithm: alg})
		if err != nil {
			t.Fatal(err)
		}
		sent := aws.ToString(out.ChecksumCRC32C) + aws.ToString(out.ChecksumSHA256)
		if sent == "" {
			t.Fatalf("%s: the PUT answered no checksum", alg)
		}
		if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("sums"), Key: aws.String(key + "-copy"),
			CopySource: aws.String("sums/" + key)}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{key, key + "-copy"} {
			get, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("sums"), Key: aws.String(k), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(get.Body); err != nil {
				t.Fatalf("%s: reading with the checksum checked: %v", k, err)
			}
			get.Body.Close()
			if got := aws.ToString(get.ChecksumCRC32C) + aws.ToString(get.ChecksumSHA256); got != sent {
				t.Fatalf("%s: GET answered checksum %q, the PUT %q", k, got, sent)
			}
			head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("sums"), Key: aws.String(k), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(head.ChecksumCRC32C) + aws.ToString(head.ChecksumSHA256); got != sent {
				t.Fatalf("%s: HEAD answered checksum %q, the PUT %q", k, got, sent)
			}
		}
		ranged, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), Range: aws.String("bytes=0-3"),
			ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatalf("a ranged GET asking for checksums: %v", err)
		}
		ranged.Body.Close()
		if got := aws.ToString(ranged.ChecksumCRC32C) + aws.ToString(ranged.ChecksumSHA256); got != "" {
			t.Fatalf("a ranged GET answered the whole object's checksum %q", got)
		}
	}
}

// TestAReadThatServesNoObjectAnswersNoChecksum: a GET asking for checksums whose answer is
// a 304, a 412 or a 416 carries no x-amz-checksum-* header: the body is an error document
// or nothing, and a client that checks the body it gets against the header (boto3) fails
// on it instead of reporting the error.
func TestAReadThatServesNoObjectAnswersNoChecksum(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "sums")
	out, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("sums"), Key: aws.String("outputs/a.txt"),
		Body: strings.NewReader("checked"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		in     awss3.GetObjectInput
		status int
	}{
		{"If-Match of another ETag", awss3.GetObjectInput{IfMatch: aws.String(`"other"`)}, http.StatusPreconditionFailed},
		{"If-None-Match of its ETag", awss3.GetObjectInput{IfNoneMatch: out.ETag}, http.StatusNotModified},
		{"a part it does not have", awss3.GetObjectInput{PartNumber: aws.Int32(2)}, http.StatusRequestedRangeNotSatisfiable},
	} {
		in := tc.in
		in.Bucket, in.Key, in.ChecksumMode = aws.String("sums"), aws.String("outputs/a.txt"), types.ChecksumModeEnabled
		_, err := c.GetObject(ctx, &in)
		var re *awshttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != tc.status {
			t.Fatalf("%s: got %v, want status %d", tc.name, err, tc.status)
		}
		for name := range re.Response.Header {
			if strings.HasPrefix(strings.ToLower(name), "x-amz-checksum-") {
				t.Fatalf("%s: the %d answer carries %s: %q", tc.name, tc.status, name, re.Response.Header.Get(name))
			}
		}
	}
	got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("sums"), Key: aws.String("outputs/a.txt"),
		IfMatch: out.ETag, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if aws.ToString(got.ChecksumCRC32) != aws.ToString(out.ChecksumCRC32) {
		t.Fatalf("a GET whose condition held answered checksum %q, the PUT %q", aws.ToString(got.ChecksumCRC32), aws.ToString(out.ChecksumCRC32))
	}
}

// TestMetadataValuesAreStoredAsSent: a signed header's canonical value (for the signature)
// has its runs of spaces made one, but what is stored is the value as sent: an
// x-amz-meta-* value or a Content-Type with runs of spaces reads back unchanged.
func TestMetadataValuesAreStoredAsSent(t *testing.T) {
	_, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "ws")
	meta := map[string]string{"note": "two  spaces", "runs": "x   y"}
	const contentType = "text/plain;  charset=utf-8"
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("ws"), Key: aws.String("outputs/a.txt"),
		Body: strings.NewReader("a"), Metadata: meta, ContentType: aws.String(contentType)}); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("ws"), Key: aws.String("outputs/a.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(head.Metadata, meta) {
		t.Errorf("metadata read back %q, want %q as sent", head.Metadata, meta)
	}
	if got := aws.ToString(head.ContentType); got != contentType {
		t.Errorf("Content-Type read back %q, want %q as sent", got, contentType)
	}
}
