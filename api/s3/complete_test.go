package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/internal/testclock"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// versionsOf lists the versions of one key, newest first.
func versionsOf(t *testing.T, c *awss3.Client, bucket, key string) []types.ObjectVersion {
	t.Helper()
	out, err := c.ListObjectVersions(context.Background(), &awss3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var vs []types.ObjectVersion
	for _, v := range out.Versions {
		if aws.ToString(v.Key) == key {
			vs = append(vs, v)
		}
	}
	return vs
}

// TestAnUploadIsCompletedOnce: Completes of one upload racing each other publish one
// version, and every one that succeeds answers that version; a Complete racing an Abort:
// one of them wins, never both.
func TestAnUploadIsCompletedOnce(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	id := createUpload(t, c, "runs", "outputs/once.bin")
	parts := []types.CompletedPart{uploadPart(t, c, "runs", "outputs/once.bin", id, 1, payload(2<<10)),
		uploadPart(t, c, "runs", "outputs/once.bin", id, 2, []byte("tail"))}
	const racers = 8
	answers := make([]*awss3.CompleteMultipartUploadOutput, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = complete(c, "runs", "outputs/once.bin", id, parts)
		}()
	}
	wg.Wait()
	vs := versionsOf(t, c, "runs", "outputs/once.bin")
	if len(vs) != 1 {
		t.Fatalf("%d racing Completes of one upload published %d versions, want 1", racers, len(vs))
	}
	for i, err := range errs {
		switch {
		case err == nil && aws.ToString(answers[i].VersionId) != aws.ToString(vs[0].VersionId):
			t.Fatalf("a Complete answered version %s, the key has %s", aws.ToString(answers[i].VersionId), aws.ToString(vs[0].VersionId))
		case err != nil && s3Code(err) != "OperationAborted":
			t.Fatalf("a Complete that lost the race: %v, want OperationAborted", err)
		}
	}

	for round := range 4 {
		key := "outputs/aborted-or-not.bin"
		before := len(versionsOf(t, c, "runs", key))
		id := createUpload(t, c, "runs", key)
		parts := []types.CompletedPart{uploadPart(t, c, "runs", key, id, 1, []byte("only part"))}
		var completeErr, abortErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, completeErr = complete(c, "runs", key, id, parts)
		}()
		go func() {
			defer wg.Done()
			_, abortErr = c.AbortMultipartUpload(context.Background(), &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"),
				Key: aws.String(key), UploadId: aws.String(id)})
		}()
		wg.Wait()
		if (completeErr == nil) == (abortErr == nil) {
			t.Fatalf("round %d: Complete %v and Abort %v: want exactly one to win", round, completeErr, abortErr)
		}
		published := len(versionsOf(t, c, "runs", key)) > before
		if published != (completeErr == nil) {
			t.Fatalf("round %d: Complete %v, Abort %v, yet a version was published: %v", round, completeErr, abortErr, published)
		}
		if completeErr == nil {
			continue
		}
		if s3Code(completeErr) != "NoSuchUpload" {
			t.Fatalf("round %d: a Complete that lost to an Abort: %v, want NoSuchUpload", round, completeErr)
		}
	}
}

// claimUpload leaves upload id of bucket runs claimed by a Complete of parts, as the
// gateway owner (multipart.owner) does before it publishes.
func claimUpload(t *testing.T, h *Handler, id string, parts []types.CompletedPart, owner string) {
	t.Helper()
	sctx := workbench.WithSurface(auth.WithPrincipal(context.Background(), gatewayKeys["AGENTA"].p), Surface)
	recordPath := "runs/" + id + "/" + recordFile
	f, err := h.svc.Reads.Open(sctx, "a", UploadsWorkbench, recordPath)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.Reader(sctx, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	rc.Close()
	var rec uploadRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	in := completeRequest{}
	for _, p := range parts {
		in.Parts = append(in.Parts, struct {
			PartNumber int    `xml:"PartNumber"`
			ETag       string `xml:"ETag"`
		}{int(aws.ToInt32(p.PartNumber)), aws.ToString(p.ETag)})
	}
	rec.Completing = &completingUpload{ClaimMs: h.multipart.clock().UnixMilli(), Parts: partsKey(in), Owner: owner}
	claim, _ := json.Marshal(rec)
	if _, err := h.svc.Writes.Write(sctx, workbench.WriteRequest{Agent: "a", Workbench: UploadsWorkbench, Path: recordPath,
		Body: bytes.NewReader(claim), ContentType: "application/json"}); err != nil {
		t.Fatal(err)
	}
}

// cutOffComplete leaves upload id of key in the state a crash between a Complete's publish
// and its bookkeeping leaves: the record claimed, then the object published with the
// upload's id (in that order, as a Complete does). It returns the published version's
// ETag and version id, as HEAD answers them right after.
func cutOffComplete(t *testing.T, c *awss3.Client, h *Handler, key, id string, parts []types.CompletedPart, body []byte) (etag, version string) {
	t.Helper()
	ctx := context.Background()
	sctx := workbench.WithSurface(auth.WithPrincipal(ctx, gatewayKeys["AGENTA"].p), Surface)
	claimUpload(t, h, id, parts, "")
	path, err := objectPath(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Writes.Write(sctx, workbench.WriteRequest{Agent: "a", Workbench: "runs", Path: path, Body: bytes.NewReader(body),
		ContentType: "application/octet-stream", Fields: map[string]meta.FieldValue{fieldUpload: meta.StringField(id)}}); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("runs"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(head.ETag), aws.ToString(head.VersionId)
}

// uploadsListed returns the upload ids ListMultipartUploads lists in bucket runs.
func uploadsListed(t *testing.T, c *awss3.Client) []string {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &awss3.ListMultipartUploadsInput{Bucket: aws.String("runs")})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range out.Uploads {
		ids = append(ids, aws.ToString(u.UploadId))
	}
	return ids
}

// TestACompleteCutOffAfterItPublishedDoesNotPublishAgain: a Complete that a crash cut
// off between publishing and recording it leaves its claim in the record; retried after
// other writers replaced the object — more times than any fixed window of versions, and
// after the claim went stale — it answers what it published and does not publish the
// parts again over the newer object; and it finishes what the crash cut off: the upload
// is no longer listed, an Abort finds no upload, its parts are gone.
func TestACompleteCutOffAfterItPublishedDoesNotPublishAgain(t *testing.T) {
	clock := testclock.New(time.Now())
	client, h := multipartGateway(t, clock.Now)
	c := client("AGENTA")
	const key = "outputs/cut.bin"
	id := createUpload(t, c, "runs", key)
	parts := []types.CompletedPart{uploadPart(t, c, "runs", key, id, 1, []byte("the upload's bytes"))}
	etag, version := cutOffComplete(t, c, h, key, id, parts, []byte("the upload's bytes"))
	const newer = 70
	for i := range newer {
		put(t, c, "runs", key, []byte(fmt.Sprintf("a newer object %d", i)))
	}
	clock.Advance(claimTimeout + time.Second)
	again, err := complete(c, "runs", key, id, parts)
	if err != nil {
		t.Fatalf("the retried Complete: %v", err)
	}
	if aws.ToString(again.VersionId) != version || aws.ToString(again.ETag) != etag {
		t.Fatalf("the retried Complete answered version %s %s, want the one it published: %s %s", aws.ToString(again.VersionId),
			aws.ToString(again.ETag), version, etag)
	}
	if got, _ := getAll(t, c, "runs", key); string(got) != fmt.Sprintf("a newer object %d", newer-1) {
		t.Fatalf("the retried Complete published its parts again over the newer object: the key reads %q", got)
	}
	if n := len(versionsOf(t, c, "runs", key)); n != newer+1 {
		t.Fatalf("the key has %d versions, want %d (the upload's, the newer puts)", n, newer+1)
	}
	if ids := uploadsListed(t, c); len(ids) != 0 {
		t.Errorf("the completed upload is still listed: %v", ids)
	}
	if _, err := c.AbortMultipartUpload(context.Background(), &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"),
		Key: aws.String(key), UploadId: aws.String(id)}); s3Code(err) != "NoSuchUpload" {
		t.Errorf("aborting the completed upload: %v, want NoSuchUpload", err)
	}
	if n := uploadFiles(t, h); n != 1 {
		t.Errorf("%d files left of the completed upload, want 1 (its record)", n)
	}
}

// TestTheSweepFinishesACompleteCutOffAfterItPublished: nobody sends the Complete again;
// once its claim is stale, the sweep records the upload as completed and removes its
// parts, and an Abort of a stale claim finishes it the same way.
func TestTheSweepFinishesACompleteCutOffAfterItPublished(t *testing.T) {
	clock := testclock.New(time.Now())
	client, h := multipartGateway(t, clock.Now)
	c := client("AGENTA")
	swept := createUpload(t, c, "runs", "outputs/swept.bin")
	cutOffComplete(t, c, h, "outputs/swept.bin", swept, []types.CompletedPart{uploadPart(t, c, "runs", "outputs/swept.bin", swept, 1, []byte("s"))}, []byte("s"))
	aborted := createUpload(t, c, "runs", "outputs/aborted.bin")
	cutOffComplete(t, c, h, "outputs/aborted.bin", aborted, []types.CompletedPart{uploadPart(t, c, "runs", "outputs/aborted.bin", aborted, 1, []byte("a"))}, []byte("a"))
	if _, err := c.AbortMultipartUpload(context.Background(), &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"),
		Key: aws.String("outputs/aborted.bin"), UploadId: aws.String(aborted)}); s3Code(err) != "NoSuchUpload" {
		t.Errorf("aborting an upload whose Complete published: %v, want NoSuchUpload", err)
	}
	if ids := uploadsListed(t, c); len(ids) != 1 || ids[0] != swept {
		t.Fatalf("uploads listed before the sweep: %v, want only %s (the Abort finished the other)", ids, swept)
	}
	if _, err := h.multipart.reclaim(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ids := uploadsListed(t, c); len(ids) != 1 {
		t.Fatalf("a fresh claim was settled by the sweep: %v listed, want it left to its Complete", ids)
	}
	clock.Advance(claimTimeout + time.Second)
	if _, err := h.multipart.reclaim(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ids := uploadsListed(t, c); len(ids) != 0 {
		t.Errorf("after the sweep the upload whose Complete published is still listed: %v", ids)
	}
	if n := uploadFiles(t, h); n != 2 {
		t.Errorf("%d files left of the two completed uploads, want 2 (their records)", n)
	}
}

// TestAStaleClaimWhoseOutcomeRetentionHidIsNeverPublishedAgain: when history retention
// has let go of every version written since a stale claim, its Complete cannot be told to
// have published or not; sent again, it does not publish the parts over the newer object
// but removes the upload and answers NoSuchUpload.
func TestAStaleClaimWhoseOutcomeRetentionHidIsNeverPublishedAgain(t *testing.T) {
	clock := testclock.New(time.Now())
	client, h := multipartGateway(t, clock.Now)
	c := client("AGENTA")
	sctx := workbench.WithSurface(auth.WithPrincipal(context.Background(), gatewayKeys["AGENTA"].p), Surface)
	if _, err := h.svc.Lifecycle.SetRetention(sctx, "a", meta.Retention{Versions: 1, MaxVersions: 1}); err != nil {
		t.Fatal(err)
	}
	const key = "outputs/pruned.bin"
	id := createUpload(t, c, "runs", key)
	parts := []types.CompletedPart{uploadPart(t, c, "runs", key, id, 1, []byte("old parts"))}
	cutOffComplete(t, c, h, key, id, parts, []byte("old parts"))
	put(t, c, "runs", key, []byte("newer"))
	put(t, c, "runs", key, []byte("newest"))
	clock.Advance(claimTimeout + time.Second)
	if _, err := complete(c, "runs", key, id, parts); s3Code(err) != "NoSuchUpload" {
		t.Fatalf("completing a stale claim whose outcome retention hid: %v, want NoSuchUpload", err)
	}
	if got, _ := getAll(t, c, "runs", key); string(got) != "newest" {
		t.Fatalf("the key reads %q after the Complete, want the newest object", got)
	}
	if ids := uploadsListed(t, c); len(ids) != 0 {
		t.Errorf("the upload is still listed: %v", ids)
	}
}

// TestAnUploadDoesNotOutliveItsBucket: an upload started in a bucket that was deleted and
// created again is not listed, cannot be completed, and is reclaimed.
func TestAnUploadDoesNotOutliveItsBucket(t *testing.T) {
	client, h := multipartGateway(t, nil)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "emp")
	id := createUpload(t, c, "emp", "z")
	parts := []types.CompletedPart{uploadPart(t, c, "emp", "z", id, 1, []byte("q"))}
	if _, err := c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String("emp")}); err != nil {
		t.Fatalf("DeleteBucket with an upload in progress: %v", err)
	}
	makeBucket(t, c, "emp")
	out, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String("emp")})
	if err != nil || len(out.Uploads) != 0 {
		t.Fatalf("the bucket created again lists uploads %v (%v), want none", out, err)
	}
	if _, err := complete(c, "emp", "z", id, parts); s3Code(err) != "NoSuchUpload" {
		t.Fatalf("completing the deleted bucket's upload: %v, want NoSuchUpload", err)
	}
	if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("emp"), Key: aws.String("z")}); s3Code(err) != "NotFound" {
		t.Fatalf("the deleted bucket's upload was published: %v", err)
	}
	if n := uploadFiles(t, h); n != 0 {
		t.Fatalf("%d files of the deleted bucket's upload left after a listing of the bucket, want none", n)
	}
}

// TestALongCompleteIsKeptAlive: a Complete that publishes for longer than
// CompleteKeepAlive (here: stalled reading a part back) answers 200 at once and
// whitespace until its result, so no client read timeout cuts it; the result follows in
// the body.
func TestALongCompleteIsKeptAlive(t *testing.T) {
	ds := blobtest.Dir(t)
	hs := &blobtest.Hooked{Store: ds}
	srv, client, _ := gatewayWith(t, hs, Config{MinPartSize: 1 << 10, CompleteKeepAlive: 10 * time.Millisecond})
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "slow")
	id := createUpload(t, c, "slow", "outputs/slow.bin")
	first, second := payload(4<<10), payload(3 << 10)[1:]
	parts := []types.CompletedPart{uploadPart(t, c, "slow", "outputs/slow.bin", id, 1, first), uploadPart(t, c, "slow", "outputs/slow.bin", id, 2, second)}
	resume := make(chan struct{})
	release := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(release)
	// The Compose reads part 2 back (one segment) to hash it: it stalls there.
	secondKey := blob.Digest(sha256.Sum256(second))
	hs.Set(func(h *blobtest.Hooks) {
		h.OnGet = func(k blob.Key) {
			if k.Digest == secondKey {
				<-resume
			}
		}
	})
	doc := "<CompleteMultipartUpload>"
	for _, p := range parts {
		doc += fmt.Sprintf("<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", aws.ToInt32(p.PartNumber), aws.ToString(p.ETag))
	}
	doc += "</CompleteMultipartUpload>"
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/slow/outputs/slow.bin?uploadId="+id, strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(doc))
	r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	creds := aws.Credentials{AccessKeyID: "AGENTA", SecretAccessKey: gatewayKeys["AGENTA"].secret}
	if err := v4.NewSigner().SignHTTP(ctx, creds, r, hex.EncodeToString(sum[:]), "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(r) // the 200 comes while the publish is stalled
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a stalled Complete answered %d, want 200 at once", resp.StatusCode)
	}
	head := make([]byte, len(xml.Header)+2)
	if _, err := io.ReadFull(resp.Body, head); err != nil || string(head) != xml.Header+"  " {
		t.Fatalf("a stalled Complete's body starts %q (%v), want the XML declaration and spaces", head, err)
	}
	release()
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ETag string `xml:"ETag"`
	}
	if err := xml.Unmarshal([]byte(strings.TrimSpace(string(rest))), &res); err != nil || res.ETag != sha256ETag(append(first, second...)) {
		t.Fatalf("the result after the spaces: %q (%v), want the object's ETag %s", rest, err, sha256ETag(append(first, second...)))
	}
	if got, _ := getAll(t, c, "slow", "outputs/slow.bin"); !bytes.Equal(got, append(first, second...)) {
		t.Fatalf("the object reads %d bytes, want the parts' %d", len(got), len(first)+len(second))
	}
}

// TestACompleteRacingAWriteIsNotAKeyClash: a Complete without a condition racing a
// PutObject of its key, or an UploadPart of one of its parts, loses its own
// compare-and-swap at most; it is answered as that: published after all (last writer
// wins), or InvalidPart for a part that changed — never InvalidArgument, the answer for a
// key that clashes with a path, which no SDK retries.
func TestACompleteRacingAWriteIsNotAKeyClash(t *testing.T) {
	client, _ := multipartGateway(t, nil)
	c := client("AGENTA")
	for round := range 12 {
		key := fmt.Sprintf("outputs/race-%d.bin", round)
		put(t, c, "runs", key, []byte("before"))
		id := createUpload(t, c, "runs", key)
		parts := []types.CompletedPart{uploadPart(t, c, "runs", key, id, 1, payload(2<<10)), uploadPart(t, c, "runs", key, id, 2, []byte("tail"))}
		var completeErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, completeErr = complete(c, "runs", key, id, parts)
		}()
		go func() {
			defer wg.Done()
			if round%2 == 0 {
				put(t, c, "runs", key, []byte("a racing put"))
				return
			}
			if _, err := c.UploadPart(context.Background(), &awss3.UploadPartInput{Bucket: aws.String("runs"), Key: aws.String(key),
				UploadId: aws.String(id), PartNumber: aws.Int32(2), Body: bytes.NewReader([]byte("another tail"))}); err != nil &&
				s3Code(err) != "NoSuchUpload" {
				t.Errorf("round %d: the racing UploadPart: %v", round, err)
			}
		}()
		wg.Wait()
		switch code := s3Code(completeErr); {
		case completeErr == nil:
		case round%2 == 1 && code == "InvalidPart":
		default:
			t.Errorf("round %d: a Complete racing a write of its key or a part: %v", round, completeErr)
		}
	}
}

// TestAClaimOfAnEarlierRunOfTheNodeIsTakenOverAtOnce: a Complete that a crash cut off
// before it published leaves its claim. The node, started again (a gateway with the same
// Instance), runs no Complete of that claim, so a Complete sent again publishes at once
// and an Abort aborts at once, instead of both answering OperationAborted (which S3
// clients do not retry) until the claim is claimTimeout old. A fresh claim of another
// node, or of this run, still holds.
func TestAClaimOfAnEarlierRunOfTheNodeIsTakenOverAtOnce(t *testing.T) {
	ds := blobtest.Dir(t)
	n := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 64, ReservedWorkbenches: map[string]string{UploadsWorkbench: Surface}}, ds)
	cfg := Config{MinPartSize: 1 << 10, Instance: "node-1"}
	crashed, restarted := NewHandler(n.Service, gatewayKeys, cfg), NewHandler(n.Service, gatewayKeys, cfg)
	cfg.Instance = "node-2"
	other := NewHandler(n.Service, gatewayKeys, cfg)
	_, client := serveGateway(t, restarted)
	c := client("AGENTA")
	makeBucket(t, c, "runs")
	claimed := func(key, owner string) (string, []types.CompletedPart) {
		id := createUpload(t, c, "runs", key)
		parts := []types.CompletedPart{uploadPart(t, c, "runs", key, id, 1, []byte("the parts of "+key))}
		claimUpload(t, restarted, id, parts, owner)
		return id, parts
	}
	id, parts := claimed("outputs/retried.bin", crashed.multipart.owner)
	if _, err := complete(c, "runs", "outputs/retried.bin", id, parts); err != nil {
		t.Fatalf("a Complete sent again after the node restarted: %v, want it published", err)
	}
	if got, _ := getAll(t, c, "runs", "outputs/retried.bin"); string(got) != "the parts of outputs/retried.bin" {
		t.Fatalf("the retried Complete published %q", got)
	}
	id, _ = claimed("outputs/aborted.bin", crashed.multipart.owner)
	if _, err := c.AbortMultipartUpload(context.Background(), &awss3.AbortMultipartUploadInput{Bucket: aws.String("runs"),
		Key: aws.String("outputs/aborted.bin"), UploadId: aws.String(id)}); err != nil {
		t.Fatalf("an Abort after the node restarted: %v, want the upload aborted", err)
	}
	for _, owner := range []string{other.multipart.owner, restarted.multipart.owner, ""} {
		key := "outputs/held" + strings.ReplaceAll(owner, "/", "-") + ".bin"
		id, parts := claimed(key, owner)
		if _, err := complete(c, "runs", key, id, parts); s3Code(err) != "OperationAborted" {
			t.Errorf("a Complete of an upload a live Complete claimed (owner %q): %v, want OperationAborted", owner, err)
		}
	}
	if ids := uploadsListed(t, c); len(ids) != 3 {
		t.Errorf("uploads listed: %v, want the three still claimed", ids)
	}
}
