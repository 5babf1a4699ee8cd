package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAPutWhoseSHA256PromiseFailsStoresNothing: the write path's SHA-256 of the body is
// what checks a PUT's x-amz-content-sha256 and x-amz-checksum-sha256 (the gateway does not
// hash the bytes again), so a body that does not match either is refused with S3's code
// and no version is published, while a matching one is stored and its checksum answered.
func TestAPutWhoseSHA256PromiseFailsStoresNothing(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "sha")
	body := bytes.Repeat([]byte("the bytes sent "), 20000) // 300 KB: segments in the object store
	other := sha256.Sum256([]byte("other bytes"))
	same := sha256.Sum256(body)
	send := func(key, payloadHash string, header http.Header) (*http.Response, string) {
		t.Helper()
		r, err := http.NewRequest(http.MethodPut, srv.URL+"/sha/"+key, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			r.Header[k] = v
		}
		r.Header.Set("X-Amz-Content-Sha256", payloadHash)
		creds := aws.Credentials{AccessKeyID: "AGENTA", SecretAccessKey: gatewayKeys["AGENTA"].secret}
		if err := v4.NewSigner().SignHTTP(ctx, creds, r, payloadHash, "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for _, tc := range []struct {
		name, key, payloadHash string
		header                 http.Header
		status                 int
		code                   string
	}{
		{"a payload hash of other bytes", "input/forged-payload", hex.EncodeToString(other[:]), nil, http.StatusBadRequest, "XAmzContentSHA256Mismatch"},
		{"a SHA-256 checksum of other bytes", "input/forged-checksum", UnsignedPayload,
			http.Header{"X-Amz-Checksum-Sha256": {base64.StdEncoding.EncodeToString(other[:])}}, http.StatusBadRequest, "BadDigest"},
		{"both matching", "input/kept", hex.EncodeToString(same[:]),
			http.Header{"X-Amz-Checksum-Sha256": {base64.StdEncoding.EncodeToString(same[:])}}, http.StatusOK, ""},
	} {
		resp, answer := send(tc.key, tc.payloadHash, tc.header)
		if resp.StatusCode != tc.status || !strings.Contains(answer, "<Code>"+tc.code+"</Code>") && tc.code != "" {
			t.Fatalf("%s: status %d, want %d %s:\n%s", tc.name, resp.StatusCode, tc.status, tc.code, answer)
		}
		head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("sha"), Key: aws.String(tc.key)})
		if tc.code != "" {
			if s3Code(err) != "NotFound" {
				t.Fatalf("%s: refused, yet HEAD answers %v", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: HEAD: %v", tc.name, err)
		}
		if want := `"sha256-` + hex.EncodeToString(same[:]) + `"`; aws.ToString(head.ETag) != want {
			t.Fatalf("%s: ETag %s, want %s", tc.name, aws.ToString(head.ETag), want)
		}
		if got := resp.Header.Get("X-Amz-Checksum-Sha256"); got != base64.StdEncoding.EncodeToString(same[:]) {
			t.Fatalf("%s: the PUT answered x-amz-checksum-sha256 %q", tc.name, got)
		}
	}
}

// TestAnEmptyBodyThatAskedForA100ContinueClosesItsConnection: botocore sends Expect:
// 100-continue with an empty body too, gets no 100 Continue, and then misreads the next
// answer on the same connection; the gateway closes such a connection after answering,
// and keeps every other one open.
func TestAnEmptyBodyThatAskedForA100ContinueClosesItsConnection(t *testing.T) {
	srv, client := gateway(t)
	ctx := context.Background()
	if _, err := client("AGENTA").CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("expect")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body  string
		close bool
	}{{"", true}, {"not empty", false}} {
		r, err := http.NewRequest(http.MethodPut, srv.URL+"/expect/input/x", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Expect", "100-continue")
		sum := sha256.Sum256([]byte(tc.body))
		r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		creds := aws.Credentials{AccessKeyID: "AGENTA", SecretAccessKey: gatewayKeys["AGENTA"].secret}
		if err := v4.NewSigner().SignHTTP(ctx, creds, r, hex.EncodeToString(sum[:]), "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close != tc.close {
			t.Fatalf("a PUT of %d bytes with Expect: 100-continue: status %d, connection closed %v; want 200, %v",
				len(tc.body), resp.StatusCode, resp.Close, tc.close)
		}
	}
}

// TestRequestsRefusedBeforeTheirBodyAreAnsweredAtOnce: a PUT declaring more than S3's
// 5 GiB is EntityTooLarge before a byte of its body is sent (the client sends none
// here, and gets its answer), and an empty x-amz-copy-source is no copy and no PUT.
func TestRequestsRefusedBeforeTheirBodyAreAnsweredAtOnce(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	makeBucket(t, c, "big")
	pr, pw := io.Pipe() // a body that never comes
	t.Cleanup(func() { pw.Close() })
	r, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/big/input/huge", pr)
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = MaxPutSize + 1
	r.Header.Set("X-Amz-Content-Sha256", UnsignedPayload)
	creds := aws.Credentials{AccessKeyID: "AGENTA", SecretAccessKey: gatewayKeys["AGENTA"].secret}
	if err := v4.NewSigner().SignHTTP(ctx, creds, r, UnsignedPayload, "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatalf("a PUT of %d bytes sent no body and got no answer: %v", r.ContentLength, err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "<Code>EntityTooLarge</Code>") {
		t.Fatalf("a PUT of %d bytes: %d %s, want 400 EntityTooLarge", r.ContentLength, resp.StatusCode, answer)
	}
	put(t, c, "big", "input/kept", []byte("kept"))
	r, err = http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/big/input/kept", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header["X-Amz-Copy-Source"] = []string{""}
	sum := sha256.Sum256(nil)
	r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	if err := v4.NewSigner().SignHTTP(ctx, creds, r, hex.EncodeToString(sum[:]), "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if resp, err = srv.Client().Do(r); err != nil {
		t.Fatal(err)
	}
	answer, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "<Code>InvalidArgument</Code>") {
		t.Fatalf("an empty x-amz-copy-source: %d %s, want 400 InvalidArgument", resp.StatusCode, answer)
	}
	if got, _ := getAll(t, c, "big", "input/kept"); string(got) != "kept" {
		t.Fatalf("an empty x-amz-copy-source replaced the object with %q", got)
	}
}
