package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/internal/testclock"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// multipartGateway is a gateway whose parts may be as small as 1 KiB, on a clock the test
// moves, with bucket "runs" of root a.
func multipartGateway(t *testing.T, now func() time.Time) (func(key string) *awss3.Client, *Handler) {
	t.Helper()
	ds := blobtest.Dir(t)
	_, client, h := gatewayWith(t, ds, Config{MinPartSize: 1 << 10})
	if now != nil {
		h.multipart.clock = now
	}
	if _, err := client("AGENTA").CreateBucket(context.Background(), &awss3.CreateBucketInput{Bucket: aws.String("runs")}); err != nil {
		t.Fatal(err)
	}
	return client, h
}

func createUpload(t *testing.T, c *awss3.Client, bucket, key string) string {
	t.Helper()
	out, err := c.CreateMultipartUpload(context.Background(), &awss3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		ContentType: aws.String("application/x-checkpoint"), Metadata: map[string]string{"step": "1200"}})
	if err != nil {
		t.Fatalf("CreateMultipartUpload %s/%s: %v", bucket, key, err)
	}
	return aws.ToString(out.UploadId)
}

func uploadPart(t *testing.T, c *awss3.Client, bucket, key, id string, n int32, body []byte) types.CompletedPart {
	t.Helper()
	out, err := c.UploadPart(context.Background(), &awss3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(n), Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatalf("UploadPart %d: %v", n, err)
	}
	return types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag}
}

func complete(c *awss3.Client, bucket, key, id string, parts []types.CompletedPart, opts ...func(*awss3.CompleteMultipartUploadInput)) (*awss3.CompleteMultipartUploadOutput, error) {
	in := &awss3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}
	for _, o := range opts {
		o(in)
	}
	return c.CompleteMultipartUpload(context.Background(), in)
}

func getAll(t *testing.T, c *awss3.Client, bucket, key string) ([]byte, *awss3.GetObjectOutput) {
	t.Helper()
	out, err := c.GetObject(context.Background(), &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GetObject %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, out
}

// sha256ETag is the ETag of a body no Content-MD5 came with (objectETag).
func sha256ETag(b []byte) string {
	d := sha256.Sum256(b)
	return `"sha256-` + hex.EncodeToString(d[:]) + `"`
}

// uploadFiles counts the files of root a's UploadsWorkbench.
func uploadFiles(t *testing.T, h *Handler) int {
	t.Helper()
	view, ws, _, err := h.svc.Reads.ViewAt(context.Background(), "a", UploadsWorkbench, workbench.At{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	view.Files(ws, "", func(string, *meta.Entry) bool { n++; return true })
	return n
}

func TestMultipartUploadCompletesAsOneObject(t *testing.T) {
	client, h := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	id := createUpload(t, c, "runs", "outputs/ckpt.bin")
	bodies := [][]byte{payload(300 << 10), payload(200 << 10)[7:], []byte("the last part is small")}
	// Out of order, and part 2 uploaded twice: the second replaces the first.
	p3 := uploadPart(t, c, "runs", "outputs/ckpt.bin", id, 3, bodies[2])
	uploadPart(t, c, "runs", "outputs/ckpt.bin", id, 2, []byte(strings.Repeat("stale", 1000)))
	p1 := uploadPart(t, c, "runs", "outputs/ckpt.bin", id, 1, bodies[0])
	p2 := uploadPart(t, c, "runs", "outputs/ckpt.bin", id, 2, bodies[1])
	if aws.ToString(p2.ETag) != sha256ETag(bodies[1]) {
		t.Fatalf("part ETag %s, want the part's SHA-256", aws.ToString(p2.ETag))
	}
	// ListParts pages by part-number-marker.
	var listed []int32
	marker := ""
	for range 5 {
		out, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String("outputs/ckpt.bin"), UploadId: aws.String(id),
			MaxParts: aws.Int32(2), PartNumberMarker: aws.String(marker)})
		if err != nil {
			t.Fatalf("ListParts: %v", err)
		}
		for _, p := range out.Parts {
			listed = append(listed, aws.ToInt32(p.PartNumber))
			if want := int64(len(bodies[aws.ToInt32(p.PartNumber)-1])); aws.ToInt64(p.Size) != want {
				t.Fatalf("part %d listed with %d bytes, want %d", aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size), want)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		marker = aws.ToString(out.NextPartNumberMarker)
	}
	if fmt.Sprint(listed) != "[1 2 3]" {
		t.Fatalf("ListParts listed %v, want [1 2 3]", listed)
	}
	res, err := complete(c, "runs", "outputs/ckpt.bin", id, []types.CompletedPart{p1, p2, p3})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	whole := bytes.Join(bodies, nil)
	got, out := getAll(t, c, "runs", "outputs/ckpt.bin")
	if !bytes.Equal(got, whole) {
		t.Fatalf("GetObject: %d bytes, want the %d bytes of the parts in order", len(got), len(whole))
	}
	if aws.ToString(res.ETag) != sha256ETag(whole) || aws.ToString(out.ETag) != sha256ETag(whole) {
		t.Fatalf("ETag %s (complete) %s (get), want the whole body's SHA-256 %s", aws.ToString(res.ETag), aws.ToString(out.ETag), sha256ETag(whole))
	}
	if aws.ToString(out.ContentType) != "application/x-checkpoint" || out.Metadata["step"] != "1200" {
		t.Fatalf("Content-Type %q, metadata %v; want the ones CreateMultipartUpload named", aws.ToString(out.ContentType), out.Metadata)
	}
	if aws.ToString(res.VersionId) == "" || aws.ToString(res.VersionId) != aws.ToString(out.VersionId) {
		t.Fatalf("Complete answered version %q, GetObject reads %q", aws.ToString(res.VersionId), aws.ToString(out.VersionId))
	}
	// The object's ETag is a write's If-Match like any other.
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/ckpt.bin"), Body: strings.NewReader("v2"),
		IfMatch: res.ETag}); err != nil {
		t.Fatalf("PutObject If-Match the completed ETag: %v", err)
	}
	if _, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String("outputs/ckpt.bin"), UploadId: aws.String(id)}); s3Code(err) != "NoSuchUpload" {
		t.Fatalf("ListParts after Complete: %v, want NoSuchUpload", err)
	}
	// A Complete sent again (its first answer was lost) answers what the first did, and
	// publishes nothing more.
	again, err := complete(c, "runs", "outputs/ckpt.bin", id, []types.CompletedPart{p1, p2, p3})
	if err != nil || aws.ToString(again.ETag) != aws.ToString(res.ETag) || aws.ToString(again.VersionId) != aws.ToString(res.VersionId) {
		t.Fatalf("Complete again: %v (ETag %s, version %s), want the first answer (%s, %s)", err,
			aws.ToString(again.ETag), aws.ToString(again.VersionId), aws.ToString(res.ETag), aws.ToString(res.VersionId))
	}
	if got, _ := getAll(t, c, "runs", "outputs/ckpt.bin"); string(got) != "v2" {
		t.Fatalf("a Complete sent again published the parts again: the key reads %d bytes", len(got))
	}
	if n := uploadFiles(t, h); n != 1 {
		t.Fatalf("%d files of the upload left after Complete, want its record only", n)
	}
}

func TestMultipartRefusals(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	key := "outputs/x.bin"
	id := createUpload(t, c, "runs", key)
	p1 := uploadPart(t, c, "runs", key, id, 1, payload(4<<10))
	p2 := uploadPart(t, c, "runs", key, id, 2, []byte("small"))
	p3 := uploadPart(t, c, "runs", key, id, 3, payload(2<<10))
	bad := types.CompletedPart{PartNumber: p1.PartNumber, ETag: p2.ETag}
	missing := types.CompletedPart{PartNumber: aws.Int32(4), ETag: p1.ETag}
	for name, tc := range map[string]struct {
		parts []types.CompletedPart
		want  string
	}{
		"a wrong ETag":          {[]types.CompletedPart{bad, p2}, "InvalidPart"},
		"a missing part":        {[]types.CompletedPart{p1, missing}, "InvalidPart"},
		"parts out of order":    {[]types.CompletedPart{p3, p1}, "InvalidPartOrder"},
		"a small part not last": {[]types.CompletedPart{p1, p2, p3}, "EntityTooSmall"},
	} {
		if _, err := complete(c, "runs", key, id, tc.parts); s3Code(err) != tc.want {
			t.Errorf("Complete with %s: %v, want %s", name, err, tc.want)
		}
	}
	other := sha256.Sum256([]byte("other bytes"))
	if _, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(5), Body: strings.NewReader("these bytes"), ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(other[:]))}); s3Code(err) == "" {
		t.Error("UploadPart with a forged SHA-256 checksum succeeded")
	}
	if parts, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id)}); err != nil || len(parts.Parts) != 3 {
		t.Errorf("ListParts after a refused part: %v, %v; want the 3 parts before it", parts, err)
	}
	if _, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(10001), Body: strings.NewReader("x")}); s3Code(err) != "InvalidArgument" {
		t.Errorf("UploadPart number 10001: %v, want InvalidArgument", err)
	}
	for name, in := range map[string]*awss3.ListPartsInput{
		"an unknown upload id":         {Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(strings.Repeat("ab", 16))},
		"a malformed upload id":        {Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String("../../x")},
		"the upload id of another key": {Bucket: aws.String("runs"), Key: aws.String("outputs/y.bin"), UploadId: aws.String(id)},
	} {
		if _, err := c.ListParts(ctx, in); s3Code(err) != "NoSuchUpload" {
			t.Errorf("ListParts with %s: %v, want NoSuchUpload", name, err)
		}
	}
	// A key of another root: its bucket is missing; in a bucket of its own, the upload is.
	b := client("AGENTB")
	if _, err := b.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id)}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("ListParts by another root's key: %v, want NoSuchBucket", err)
	}
	makeBucket(t, b, "runs")
	if _, err := complete(b, "runs", key, id, []types.CompletedPart{p1}); s3Code(err) != "NoSuchUpload" {
		t.Errorf("Complete by another root's key in its own bucket: %v, want NoSuchUpload", err)
	}
	if _, err := b.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id)}); s3Code(err) != "NoSuchUpload" {
		t.Errorf("Abort by another root's key: %v, want NoSuchUpload", err)
	}
	// Abort removes the upload; the upload's own key completes nothing afterwards.
	if _, err := c.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"), Key: aws.String(key), UploadId: aws.String(id)}); err != nil {
		t.Fatalf("AbortMultipartUpload: %v", err)
	}
	if _, err := complete(c, "runs", key, id, []types.CompletedPart{p1}); s3Code(err) != "NoSuchUpload" {
		t.Errorf("Complete after Abort: %v, want NoSuchUpload", err)
	}
	if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("runs"), Key: aws.String(key)}); err == nil {
		t.Error("an aborted upload left an object")
	}
}

func TestUploadPartCopyMovesNoBytesForAWholeSource(t *testing.T) {
	hs, puts := blobtest.CountingPuts(t)
	_, client, _ := gatewayWith(t, hs, Config{MinPartSize: 1 << 10})
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "runs")
	src := payload(3 << 20)
	put(t, c, "runs", "input/src.bin", src)
	id := createUpload(t, c, "runs", "outputs/dst.bin")
	before := puts.Load()
	whole, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String("outputs/dst.bin"), UploadId: aws.String(id),
		PartNumber: aws.Int32(1), CopySource: aws.String("runs/input/src.bin")})
	if err != nil {
		t.Fatalf("UploadPartCopy: %v", err)
	}
	if puts.Load() != before {
		t.Fatalf("UploadPartCopy of a whole object wrote %d blobs, want none", puts.Load()-before)
	}
	ranged, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String("outputs/dst.bin"), UploadId: aws.String(id),
		PartNumber: aws.Int32(2), CopySource: aws.String("/runs/input/src.bin"), CopySourceRange: aws.String("bytes=1000-1999")})
	if err != nil {
		t.Fatalf("UploadPartCopy with a range: %v", err)
	}
	if _, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String("outputs/dst.bin"), UploadId: aws.String(id),
		PartNumber: aws.Int32(3), CopySource: aws.String("runs/input/src.bin"), CopySourceRange: aws.String("bytes=0-99999999")}); s3Code(err) != "InvalidArgument" {
		t.Fatalf("UploadPartCopy with a range past the source: %v, want InvalidArgument", err)
	}
	if _, err := c.UploadPartCopy(ctx, &awss3.UploadPartCopyInput{Bucket: aws.String("runs"), Key: aws.String("outputs/dst.bin"), UploadId: aws.String(id),
		PartNumber: aws.Int32(3), CopySource: aws.String("runs/input/src.bin"), CopySourceIfMatch: aws.String(`"nope"`)}); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("UploadPartCopy on a failed source condition: %v, want PreconditionFailed", err)
	}
	parts := []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: whole.CopyPartResult.ETag}, {PartNumber: aws.Int32(2), ETag: ranged.CopyPartResult.ETag}}
	if _, err := complete(c, "runs", "outputs/dst.bin", id, parts); err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	want := append(append([]byte{}, src...), src[1000:2000]...)
	if got, _ := getAll(t, c, "runs", "outputs/dst.bin"); !bytes.Equal(got, want) {
		t.Fatalf("GetObject: %d bytes, want %d", len(got), len(want))
	}
}

func TestCompleteIfNoneMatchPublishesOnce(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	const racers = 8
	ids := make([]string, racers)
	parts := make([][]types.CompletedPart, racers)
	for i := range ids {
		ids[i] = createUpload(t, c, "runs", "outputs/once.bin")
		parts[i] = []types.CompletedPart{uploadPart(t, c, "runs", "outputs/once.bin", ids[i], 1, []byte(fmt.Sprintf("racer %d", i)))}
	}
	var ok, refused atomic.Int32
	winner := make(chan int, racers)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := complete(c, "runs", "outputs/once.bin", ids[i], parts[i], func(in *awss3.CompleteMultipartUploadInput) { in.IfNoneMatch = aws.String("*") })
			switch {
			case err == nil:
				ok.Add(1)
				winner <- i
			case s3Code(err) == "PreconditionFailed":
				refused.Add(1)
			default:
				t.Errorf("racer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != racers-1 {
		t.Fatalf("%d completes published and %d were refused, want 1 and %d", ok.Load(), refused.Load(), racers-1)
	}
	won := <-winner
	loser := (won + 1) % racers
	if got, _ := getAll(t, c, "runs", "outputs/once.bin"); string(got) != fmt.Sprintf("racer %d", won) {
		t.Fatalf("the object holds %q, want the winner's", got)
	}
	// A refused complete keeps its upload: If-Match on a stale ETag is refused, on the
	// current one it replaces the object.
	ifMatch := func(etag string) func(*awss3.CompleteMultipartUploadInput) {
		return func(in *awss3.CompleteMultipartUploadInput) { in.IfMatch = aws.String(etag) }
	}
	if _, err := complete(c, "runs", "outputs/once.bin", ids[loser], parts[loser], ifMatch(sha256ETag([]byte("stale")))); s3Code(err) != "PreconditionFailed" {
		t.Fatalf("Complete If-Match a stale ETag: %v, want PreconditionFailed", err)
	}
	if _, err := complete(c, "runs", "outputs/once.bin", ids[loser], parts[loser], ifMatch(sha256ETag([]byte(fmt.Sprintf("racer %d", won))))); err != nil {
		t.Fatalf("Complete If-Match the current ETag: %v", err)
	}
	if got, _ := getAll(t, c, "runs", "outputs/once.bin"); string(got) != fmt.Sprintf("racer %d", loser) {
		t.Fatalf("the object holds %q after Complete If-Match, want racer %d's", got, loser)
	}
}

func TestListMultipartUploadsPages(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	keys := []string{"input/b", "input/a", "outputs/c", "input/a", "input/d/e"}
	want := map[string]int{}
	for _, k := range keys {
		createUpload(t, c, "runs", k)
		want[k]++
	}
	var got []string
	in := &awss3.ListMultipartUploadsInput{Bucket: aws.String("runs"), MaxUploads: aws.Int32(2)}
	for range 10 {
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			t.Fatalf("ListMultipartUploads: %v", err)
		}
		for _, u := range out.Uploads {
			got = append(got, aws.ToString(u.Key))
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	if fmt.Sprint(got) != "[input/a input/a input/b input/d/e outputs/c]" {
		t.Fatalf("uploads listed %v, want every upload once, by key", got)
	}
	out, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String("runs"), Prefix: aws.String("input/"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 3 || len(out.CommonPrefixes) != 1 || aws.ToString(out.CommonPrefixes[0].Prefix) != "input/d/" {
		t.Fatalf("with prefix and delimiter: %d uploads, prefixes %v; want 3 and input/d/", len(out.Uploads), out.CommonPrefixes)
	}
	// max-uploads=0 asks for an empty page: it is not truncated (as ListObjectsV2's
	// max-keys=0 answers), since it could name no marker to go on from and a client
	// following it would ask for the same page forever.
	out, err = c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String("runs"), MaxUploads: aws.Int32(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 0 || aws.ToBool(out.IsTruncated) {
		t.Fatalf("max-uploads=0: %d uploads, truncated %v, next key marker %q; want an empty page, not truncated",
			len(out.Uploads), aws.ToBool(out.IsTruncated), aws.ToString(out.NextKeyMarker))
	}
	if _, err := client("AGENTB").ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String("runs")}); s3Code(err) != "NoSuchBucket" {
		t.Fatalf("ListMultipartUploads by another root's key: %v, want NoSuchBucket", err)
	}
}

func TestExpiredUploadsAreReclaimed(t *testing.T) {
	clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client, h := multipartGateway(t, clock.Now)
	c := client("AGENTA")
	ctx := context.Background()
	old := createUpload(t, c, "runs", "outputs/old.bin")
	uploadPart(t, c, "runs", "outputs/old.bin", old, 1, payload(4<<10))
	uploadPart(t, c, "runs", "outputs/old.bin", old, 2, payload(1<<10))
	clock.Advance(DefaultUploadDeadline - time.Hour)
	fresh := createUpload(t, c, "runs", "outputs/fresh.bin")
	uploadPart(t, c, "runs", "outputs/fresh.bin", fresh, 1, []byte("fresh"))
	if n := uploadFiles(t, h); n != 5 {
		t.Fatalf("%d upload files, want 5 (two records, three parts)", n)
	}
	clock.Advance(2 * time.Hour) // the first upload is past its deadline, the second is not
	if _, err := c.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String("outputs/old.bin"), UploadId: aws.String(old)}); s3Code(err) != "NoSuchUpload" {
		t.Fatalf("ListParts of an expired upload: %v, want NoSuchUpload", err)
	}
	// The sweep runs as the node, without a request's principal.
	n, err := h.multipart.reclaim(ctx)
	if err != nil || n != 1 {
		t.Fatalf("reclaim: %d, %v; want 1 upload removed", n, err)
	}
	if n := uploadFiles(t, h); n != 2 {
		t.Fatalf("%d upload files after the sweep, want the fresh upload's 2", n)
	}
	if _, err := complete(c, "runs", "outputs/fresh.bin", fresh, []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(sha256ETag([]byte("fresh")))}}); err != nil {
		t.Fatalf("Complete of the fresh upload after the sweep: %v", err)
	}
	// A lazy reclaim: listing the bucket's uploads aborts the expired ones first.
	late := createUpload(t, c, "runs", "outputs/late.bin")
	clock.Advance(DefaultUploadDeadline + time.Minute)
	out, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String("runs")})
	if err != nil || len(out.Uploads) != 0 {
		t.Fatalf("ListMultipartUploads after the deadline: %v, %v; want none", out, err)
	}
	if n := uploadFiles(t, h); n != 0 {
		t.Fatalf("%d upload files of %s left after a listing past its deadline, want none", n, late)
	}
}

func TestUploadsWorkbenchIsNoBucket(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	id := createUpload(t, c, "runs", "outputs/x.bin")
	uploadPart(t, c, "runs", "outputs/x.bin", id, 1, []byte("part"))
	buckets, err := c.ListBuckets(ctx, &awss3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets.Buckets {
		if aws.ToString(b.Name) == UploadsWorkbench {
			t.Fatalf("ListBuckets lists %s", UploadsWorkbench)
		}
	}
	u := aws.String(UploadsWorkbench)
	partKey := aws.String("runs/" + id + "/00001")
	if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: u}); s3Code(err) != "InvalidBucketName" {
		t.Errorf("CreateBucket %s: %v, want InvalidBucketName", UploadsWorkbench, err)
	}
	if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: u, Key: partKey}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("GetObject of a part: %v, want NoSuchBucket", err)
	}
	if _, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: u}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("ListObjectsV2: %v, want NoSuchBucket", err)
	}
	if _, err := c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: u}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("DeleteBucket: %v, want NoSuchBucket", err)
	}
	if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: u, Key: partKey}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("DeleteObject of a part: %v, want NoSuchBucket", err)
	}
	if _, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("runs"), Key: aws.String("input/stolen"),
		CopySource: aws.String(UploadsWorkbench + "/runs/" + id + "/00001")}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("CopyObject from a part: %v, want NoSuchBucket", err)
	}
	var status int
	if _, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: u}); err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) {
			status = re.HTTPStatusCode()
		}
	}
	if status != http.StatusNotFound {
		t.Errorf("HeadBucket %s: status %d, want 404", UploadsWorkbench, status)
	}
}

func TestBoundKeyReachesOnlyItsBucketsUploads(t *testing.T) {
	gatewayKeys["BOUND"] = struct {
		secret string
		p      auth.Principal
	}{"secret-bound", auth.Principal{ID: "kbound", Tenant: "a", Workspace: "runs", Scopes: auth.Scopes}}
	t.Cleanup(func() { delete(gatewayKeys, "BOUND") })
	client, _ := multipartGateway(t, nil)
	a, bound := client("AGENTA"), client("BOUND")
	ctx := context.Background()
	makeBucket(t, a, "other")
	elsewhere := createUpload(t, a, "other", "outputs/x.bin")
	// The bound key uploads in its bucket.
	id := createUpload(t, bound, "runs", "outputs/x.bin")
	p := uploadPart(t, bound, "runs", "outputs/x.bin", id, 1, []byte("bound"))
	if _, err := complete(bound, "runs", "outputs/x.bin", id, []types.CompletedPart{p}); err != nil {
		t.Fatalf("Complete by a key bound to the bucket: %v", err)
	}
	// It reaches no other bucket's uploads, by bucket or by upload id.
	if _, err := bound.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String("other")}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("ListMultipartUploads of another bucket: %v, want NoSuchBucket", err)
	}
	if _, err := bound.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("other"), Key: aws.String("outputs/x.bin"), UploadId: aws.String(elsewhere)}); s3Code(err) != "NoSuchBucket" {
		t.Errorf("ListParts in another bucket: %v, want NoSuchBucket", err)
	}
	if _, err := bound.ListParts(ctx, &awss3.ListPartsInput{Bucket: aws.String("runs"), Key: aws.String("outputs/x.bin"), UploadId: aws.String(elsewhere)}); s3Code(err) != "NoSuchUpload" {
		t.Errorf("ListParts of another bucket's upload through its own: %v, want NoSuchUpload", err)
	}
}

func TestTransferManagerUploadsInParts(t *testing.T) {
	client, h := multipartGateway(t, nil)
	c := client("AGENTA")
	body := payload(5<<20 + 12345)
	tm := transfermanager.New(c, func(o *transfermanager.Options) {
		o.PartSizeBytes, o.MultipartUploadThreshold, o.Concurrency = 1<<20, 1<<20, 3
	})
	res, err := tm.UploadObject(context.Background(), &transfermanager.UploadObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/tm.bin"),
		Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatalf("UploadObject: %v", err)
	}
	if aws.ToString(res.UploadID) == "" {
		t.Fatal("the transfer manager did not upload in parts: the test would prove nothing")
	}
	got, out := getAll(t, c, "runs", "outputs/tm.bin")
	if !bytes.Equal(got, body) || aws.ToString(out.ETag) != sha256ETag(body) {
		t.Fatalf("GetObject: %d bytes, ETag %s; want %d bytes, %s", len(got), aws.ToString(out.ETag), len(body), sha256ETag(body))
	}
	if n := uploadFiles(t, h); n != 1 {
		t.Fatalf("%d upload files left, want the completed upload's record only", n)
	}
}

func TestPartWithContentMD5HasItsMD5AsETag(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	id := createUpload(t, c, "runs", "outputs/md5.bin")
	body := payload(3 << 10)
	sum := md5.Sum(body)
	out, err := c.UploadPart(context.Background(), &awss3.UploadPartInput{Bucket: aws.String("runs"), Key: aws.String("outputs/md5.bin"), UploadId: aws.String(id),
		PartNumber: aws.Int32(1), Body: bytes.NewReader(body), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
	if err != nil {
		t.Fatalf("UploadPart with Content-MD5: %v", err)
	}
	if want := `"` + hex.EncodeToString(sum[:]) + `"`; aws.ToString(out.ETag) != want {
		t.Fatalf("part ETag %s, want its MD5 %s", aws.ToString(out.ETag), want)
	}
	if _, err := complete(c, "runs", "outputs/md5.bin", id, []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: out.ETag}}); err != nil {
		t.Fatalf("Complete naming the part by its MD5: %v", err)
	}
	if got, _ := getAll(t, c, "runs", "outputs/md5.bin"); !bytes.Equal(got, body) {
		t.Fatalf("GetObject: %d bytes, want %d", len(got), len(body))
	}
}

// TestObjectsAreReadPartByPart: GET ?partNumber= serves a completed upload's parts (the
// transfer manager's default download reads them so) with x-amz-mp-parts-count, and an
// object put whole as its one part; a part past the last is InvalidPartNumber, a part
// number beside a Range InvalidRequest.
func TestObjectsAreReadPartByPart(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	body := payload(5<<20 + 12345)
	tm := transfermanager.New(c, func(o *transfermanager.Options) {
		o.PartSizeBytes, o.MultipartUploadThreshold, o.Concurrency = 1<<20, 1<<20, 3
	})
	if _, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/parts.bin"),
		Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("UploadObject: %v", err)
	}
	out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/parts.bin"), PartNumber: aws.Int32(6)})
	if err != nil {
		t.Fatalf("GetObject part 6: %v", err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if aws.ToInt32(out.PartsCount) != 6 || !bytes.Equal(got, body[5<<20:]) ||
		aws.ToString(out.ContentRange) != fmt.Sprintf("bytes %d-%d/%d", 5<<20, len(body)-1, len(body)) {
		t.Fatalf("part 6: %d bytes, parts count %d, range %s; want the last %d bytes of 6 parts",
			len(got), aws.ToInt32(out.PartsCount), aws.ToString(out.ContentRange), len(body)-5<<20)
	}
	file := filepath.Join(t.TempDir(), "parts.bin")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.DownloadObject(ctx, &transfermanager.DownloadObjectInput{Bucket: aws.String("runs"), Key: aws.String("outputs/parts.bin"), WriterAt: f}); err != nil {
		t.Fatalf("DownloadObject by parts: %v", err)
	}
	f.Close()
	if got, _ := os.ReadFile(file); !bytes.Equal(got, body) {
		t.Fatalf("the transfer manager downloaded %d bytes, want the %d uploaded", len(got), len(body))
	}
	for _, tc := range []struct {
		key   string
		part  int32
		rng   string
		code  string
		whole bool
	}{
		{"outputs/parts.bin", 7, "", "InvalidPartNumber", false},
		{"outputs/parts.bin", 1, "bytes=0-9", "InvalidRequest", false},
		{"outputs/whole.bin", 1, "", "", true},
		{"outputs/whole.bin", 2, "", "InvalidPartNumber", false},
	} {
		if tc.key == "outputs/whole.bin" {
			put(t, c, "runs", tc.key, body[:4096])
		}
		in := &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String(tc.key), PartNumber: aws.Int32(tc.part)}
		if tc.rng != "" {
			in.Range = aws.String(tc.rng)
		}
		out, err := c.GetObject(ctx, in)
		if s3Code(err) != tc.code {
			t.Fatalf("%s part %d (range %q): %v, want %q", tc.key, tc.part, tc.rng, err, tc.code)
		}
		if tc.whole {
			got, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if !bytes.Equal(got, body[:4096]) || out.PartsCount != nil {
				t.Fatalf("part 1 of an object put whole: %d bytes, parts count %v; want the whole object, no count", len(got), out.PartsCount)
			}
		}
	}
}

// TestPartsOfDifferentSizesAreReadPartByPart: an upload whose parts are not all of one
// size (a middle part larger than the first, the last larger than the others) is read
// part by part too, each part its own bytes, with the parts count.
func TestPartsOfDifferentSizesAreReadPartByPart(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	const key = "outputs/uneven.bin"
	bodies := [][]byte{payload(2 << 10), payload(3 << 10)[1:], payload(2 << 10), payload(5 << 10)}
	id := createUpload(t, c, "runs", key)
	var parts []types.CompletedPart
	for i, b := range bodies {
		parts = append(parts, uploadPart(t, c, "runs", key, id, int32(i+1), b))
	}
	if _, err := complete(c, "runs", key, id, parts); err != nil {
		t.Fatal(err)
	}
	for i, want := range bodies {
		out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String(key), PartNumber: aws.Int32(int32(i + 1))})
		if err != nil {
			t.Fatalf("GetObject part %d: %v", i+1, err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, want) || aws.ToInt32(out.PartsCount) != int32(len(bodies)) {
			t.Fatalf("part %d: %d bytes, parts count %d; want its %d bytes of %d parts", i+1, len(got), aws.ToInt32(out.PartsCount), len(want), len(bodies))
		}
	}
	if _, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String(key), PartNumber: aws.Int32(5)}); s3Code(err) != "InvalidPartNumber" {
		t.Fatalf("part 5 of 4: %v, want InvalidPartNumber", err)
	}
}

// TestAPartStillArrivingWhenItsUploadIsAbortedIsNotLeftBehind: an UploadPart whose body is
// still arriving when an Abort removes its upload answers NoSuchUpload, and no file of
// the upload stays behind (the Abort removed the parts there were, before this one
// existed). Before, the part answered 200 and stayed, a file of an upload no request
// names, until the next sweep of its bucket.
func TestAPartStillArrivingWhenItsUploadIsAbortedIsNotLeftBehind(t *testing.T) {
	ds := blobtest.Dir(t)
	srv, client, h := gatewayWith(t, ds, Config{MinPartSize: 1 << 10})
	c := client("AGENTA")
	makeBucket(t, c, "runs")
	const key = "outputs/aborted.bin"
	id := createUpload(t, c, "runs", key)
	uploadPart(t, c, "runs", key, id, 1, []byte("a part before the abort"))

	body := payload(256 << 10)
	pr, pw := io.Pipe()
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/runs/"+key+"?partNumber=2&uploadId="+id, pr)
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = int64(len(body))
	r.Header.Set(headerContentSHA256, UnsignedPayload)
	// With Expect: 100-continue the client sends the body only once the gateway reads it,
	// which it does after it found the upload open: the Abort below comes while the part
	// is being written.
	r.Header.Set("Expect", "100-continue")
	signRequest(t, "AGENTA", r, UnsignedPayload)
	transport := srv.Client().Transport.(*http.Transport).Clone()
	transport.ExpectContinueTimeout = time.Minute
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := (&http.Client{Transport: transport}).Do(r)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, b, err}
	}()
	if _, err := pw.Write(body[:1<<10]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AbortMultipartUpload(context.Background(), &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"),
		Key: aws.String(key), UploadId: aws.String(id)}); err != nil {
		t.Fatalf("aborting the upload while a part arrives: %v", err)
	}
	if _, err := pw.Write(body[1<<10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.status != http.StatusNotFound || !strings.Contains(string(a.body), "<Code>NoSuchUpload</Code>") {
		t.Errorf("the part that arrived while its upload was aborted: %d %s, want 404 NoSuchUpload", a.status, a.body)
	}
	if n := uploadFiles(t, h); n != 0 {
		t.Errorf("%d files of the aborted upload left behind, want none", n)
	}
}
