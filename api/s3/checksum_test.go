package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// checksumPut sends a PUT of body to /sum/key over HTTP, signed, with header's fields
// set as sent (an empty value too); it returns the status and the answer.
func checksumPut(t *testing.T, put func(r *http.Request, payloadHash string) (*http.Response, []byte), url, key string, body []byte, header http.Header) (int, string) {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPut, url+"/sum/"+key, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		r.Header[k] = v
	}
	r.Header.Set(headerContentSHA256, UnsignedPayload)
	resp, answer := put(r, UnsignedPayload)
	return resp.StatusCode, string(answer)
}

func crc32Of(b []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)))
}

// TestChecksumHeadersAreCheckedAsS3ChecksThem: x-amz-sdk-checksum-algorithm, when sent,
// names one of S3's algorithms (empty or unknown is InvalidRequest, even beside a checksum
// header, which S3 otherwise follows); an x-amz-checksum-* value that is not the base64 of
// a digest of its algorithm's length is InvalidRequest, and only a well-formed value the
// body does not match is BadDigest. Nothing refused is stored.
func TestChecksumHeadersAreCheckedAsS3ChecksThem(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "sum")
	body := []byte("the bytes sent")
	send := func(r *http.Request, payloadHash string) (*http.Response, []byte) {
		return sendSigned(t, srv, "AGENTA", r, payloadHash)
	}
	good := crc32Of(body)
	sha := map[string]string{"X-Amz-Checksum-Sha256": base64.StdEncoding.EncodeToString(make([]byte, 32))}
	for i, tc := range []struct {
		name   string
		header http.Header
		code   string
	}{
		{"an empty x-amz-sdk-checksum-algorithm beside a good checksum", http.Header{
			"X-Amz-Sdk-Checksum-Algorithm": {""}, "X-Amz-Checksum-Crc32": {good}}, "InvalidRequest"},
		{"an unknown x-amz-sdk-checksum-algorithm beside a good checksum", http.Header{
			"X-Amz-Sdk-Checksum-Algorithm": {"MD5"}, "X-Amz-Checksum-Crc32": {good}}, "InvalidRequest"},
		{"an empty x-amz-sdk-checksum-algorithm alone", http.Header{"X-Amz-Sdk-Checksum-Algorithm": {""}}, "InvalidRequest"},
		{"an unknown x-amz-sdk-checksum-algorithm alone", http.Header{"X-Amz-Sdk-Checksum-Algorithm": {"CRC33"}}, "InvalidRequest"},
		{"a crc32 that is not base64", http.Header{"X-Amz-Checksum-Crc32": {"not base64!"}}, "InvalidRequest"},
		{"an empty crc32", http.Header{"X-Amz-Checksum-Crc32": {""}}, "InvalidRequest"},
		{"a crc32 of 3 bytes", http.Header{"X-Amz-Checksum-Crc32": {"AAAA"}}, "InvalidRequest"},
		{"a crc32c of 8 bytes", http.Header{"X-Amz-Checksum-Crc32c": {"AAAAAAAAAAA="}}, "InvalidRequest"},
		{"a crc64nvme of 4 bytes", http.Header{"X-Amz-Checksum-Crc64nvme": {good}}, "InvalidRequest"},
		{"a sha1 of 4 bytes", http.Header{"X-Amz-Checksum-Sha1": {good}}, "InvalidRequest"},
		{"a sha256 of 4 bytes", http.Header{"X-Amz-Checksum-Sha256": {good}}, "InvalidRequest"},
		{"a well-formed crc32 of other bytes", http.Header{"X-Amz-Checksum-Crc32": {crc32Of([]byte("other"))}}, "BadDigest"},
		{"a well-formed sha256 of other bytes", http.Header{"X-Amz-Checksum-Sha256": {sha["X-Amz-Checksum-Sha256"]}}, "BadDigest"},
		{"a matching crc32 the SDK's algorithm names", http.Header{
			"X-Amz-Sdk-Checksum-Algorithm": {"CRC32"}, "X-Amz-Checksum-Crc32": {good}}, ""},
	} {
		key := fmt.Sprintf("input/%d", i)
		status, answer := checksumPut(t, send, srv.URL, key, body, tc.header)
		if tc.code == "" {
			if status != http.StatusOK {
				t.Fatalf("%s: %d %s, want 200", tc.name, status, answer)
			}
			continue
		}
		if status != http.StatusBadRequest || !strings.Contains(answer, "<Code>"+tc.code+"</Code>") {
			t.Errorf("%s: %d %s, want 400 %s", tc.name, status, answer, tc.code)
		}
		if _, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("sum"), Key: aws.String(key)}); s3Code(err) != "NotFound" {
			t.Errorf("%s: refused, yet HEAD answers %v", tc.name, err)
		}
	}
}

// TestAMalformedTrailingChecksumIsInvalidRequest: a checksum sent in an aws-chunked body's
// trailer is held to the same form as one in a header: InvalidRequest when it is no
// digest of its algorithm's length, BadDigest when a well-formed one does not match.
func TestAMalformedTrailingChecksumIsInvalidRequest(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	makeBucket(t, c, "sum")
	body := []byte("the bytes sent")
	for i, tc := range []struct {
		value, code string
	}{
		{"not base64!", "InvalidRequest"},
		{"AAAA", "InvalidRequest"},
		{crc32Of([]byte("other")), "BadDigest"},
		{crc32Of(body), ""},
	} {
		chunked := strconv.FormatInt(int64(len(body)), 16) + "\r\n" + string(body) + "\r\n0\r\nx-amz-checksum-crc32:" + tc.value + "\r\n\r\n"
		r, err := http.NewRequestWithContext(t.Context(), http.MethodPut, fmt.Sprintf("%s/sum/input/t%d", srv.URL, i), strings.NewReader(chunked))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Encoding", "aws-chunked")
		r.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(len(body)))
		r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
		r.Header.Set(headerContentSHA256, StreamingUnsignedTrailer)
		resp, answer := sendSigned(t, srv, "AGENTA", r, StreamingUnsignedTrailer)
		switch {
		case tc.code == "" && resp.StatusCode != http.StatusOK:
			t.Fatalf("trailer %q: %d %s, want 200", tc.value, resp.StatusCode, answer)
		case tc.code != "" && (resp.StatusCode != http.StatusBadRequest || !bytes.Contains(answer, []byte("<Code>"+tc.code+"</Code>"))):
			t.Errorf("trailer %q: %d %s, want 400 %s", tc.value, resp.StatusCode, answer, tc.code)
		}
	}
}
