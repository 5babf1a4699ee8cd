package s3

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// A root fenced for a move between shards refuses a PutObject with S3's retryable 503
// ServiceUnavailable (Retry-After); reads go on; once the fence lifts the write applies.
func TestPutObjectToAMovingRootIsServiceUnavailable(t *testing.T) {
	bs := blobtest.Dir(t)
	n := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 64, ReservedWorkbenches: map[string]string{UploadsWorkbench: Surface}}, bs)
	srv := httptest.NewTLSServer(NewHandler(n.Service, gatewayKeys, Config{}))
	t.Cleanup(srv.Close)
	var last *http.Response
	c := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		HTTPClient: recordingClient{srv.Client(), &last}, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AGENTA", "secret-a", "")})
	ctx := context.Background()
	makeBucket(t, c, "runs")
	put(t, c, "runs", "k", []byte("one"))
	ref := meta.MoveRef{Agent: "a", MoveID: "m1"}
	n.MustPropose(t, meta.MoveFence{MoveRef: ref})
	_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("runs"), Key: aws.String("k"), Body: bytes.NewReader([]byte("two"))})
	if s3Code(err) != string(CodeServiceUnavailable) || last == nil || last.Header.Get("Retry-After") == "" {
		t.Fatalf("PutObject to a fenced root: %v (Retry-After %q)", err, last.Header.Get("Retry-After"))
	}
	got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("runs"), Key: aws.String("k")})
	if err != nil {
		t.Fatalf("GetObject of a fenced root: %v", err)
	}
	got.Body.Close()
	n.MustPropose(t, meta.MoveLift{MoveRef: ref})
	put(t, c, "runs", "k", []byte("two"))
}

// recordingClient keeps the last response it received.
type recordingClient struct {
	hc   *http.Client
	last **http.Response
}

func (r recordingClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.hc.Do(req)
	*r.last = resp
	return resp, err
}
