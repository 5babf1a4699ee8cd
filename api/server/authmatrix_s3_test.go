package server

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	s3gw "github.com/cairnstore/cairn/api/s3"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/internal/httpcall"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
)

// TestAuthPrefixKeyOverTheS3Gateway is the prefix-bound column of the S3 gateway: the S3
// credential of a key bound to root a's outputs lists and reads only its prefixes; a GET
// of an object outside them answers byte for byte as a GET of a missing key (NoSuchKey),
// a PUT there is AccessDenied as S3 refuses a write a policy forbids, and nothing is
// written; the credential of the same key once expired is refused exactly as an access
// key id the node never issued (InvalidAccessKeyId). A multipart upload is refused
// outside the prefixes and completes inside them through the AWS SDK for Go v2, the
// object read back byte for byte; a key of the same root bound to other prefixes sees
// none of those uploads, and every request naming one answers byte for byte as a request
// naming an upload id never issued (NoSuchUpload).
func TestAuthPrefixKeyOverTheS3Gateway(t *testing.T) {
	now := time.Now()
	mk := func(spec auth.KeySpec) (auth.Key, string) {
		k, token, err := auth.NewKey(spec, now)
		if err != nil {
			t.Fatal(err)
		}
		return k, token
	}
	admin, adminToken := mk(auth.KeySpec{Name: "operator", AllAgents: true, Scopes: auth.Scopes})
	bound := auth.KeySpec{Name: "a's outputs", Agents: []string{"a"}, Prefixes: []string{"outputs/"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, S3: true}
	prefix, _ := mk(bound)
	expired, _ := mk(bound)
	expired.ExpiresAt = now.Add(-time.Minute)
	logs, _ := mk(auth.KeySpec{Name: "a's logs", Agents: []string{"a"}, Prefixes: []string{"logs/"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, S3: true})
	n := serveKeyed(t, "s3", []auth.Key{admin, prefix, expired, logs}, func(c *ops.Config) { c.S3Gateway.Listen = freeport.Addr(t) })
	m := &matrix{authz: map[string]string{keyAdmin: "Bearer " + adminToken}}
	const w = "/v1/agents/a/workbenches/w/files/"
	for _, f := range []string{"input/secret.txt", "outputs/mine.txt"} {
		mustReply(t, "admin: put "+f, m.on(t, n, keyAdmin, "PUT", w+f, f), 201)
	}

	s3 := func(k auth.Key, method, target, body string) reply {
		t.Helper()
		req := httpcall.New(t, method, n.s3URL+target, strings.NewReader(body))
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		creds, err := credentials.NewStaticCredentialsProvider(auth.S3AccessKeyID(k.ID), k.S3Secret, "").Retrieve(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := v4.NewSigner().SignHTTP(t.Context(), creds, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		a := httpcall.Do(t, req)
		b := a.Body
		// Each answer carries its own request id, in a header and in an error's body.
		id := a.Header.Get("X-Amz-Request-Id")
		a.Header.Del("X-Amz-Request-Id")
		if id != "" {
			b = []byte(strings.ReplaceAll(string(b), id, "REQUEST-ID"))
		}
		return reply{status: a.Status, header: a.Header, body: b}
	}

	if got := mustReply(t, "prefix: get inside", s3(prefix, "GET", "/w/outputs/mine.txt", ""), 200); string(got.body) != "outputs/mine.txt" {
		t.Errorf("its own object: %q", got.body)
	}
	hidden, missing := s3(prefix, "GET", "/w/input/secret.txt", ""), s3(prefix, "GET", "/w/input/absent.txt", "")
	missing.body = []byte(strings.ReplaceAll(string(missing.body), "absent", "secret"))
	sameReply(t, "GET of an object outside the prefixes vs a missing one", hidden, missing)
	if !strings.Contains(string(hidden.body), "<Code>NoSuchKey</Code>") {
		t.Errorf("GET outside: %d %s", hidden.status, hidden.body)
	}
	head, headMissing := s3(prefix, "HEAD", "/w/input/secret.txt", ""), s3(prefix, "HEAD", "/w/input/absent.txt", "")
	sameReply(t, "HEAD of an object outside the prefixes vs a missing one", head, headMissing)
	list := mustReply(t, "prefix: list", s3(prefix, "GET", "/w?list-type=2", ""), 200)
	if s := string(list.body); !strings.Contains(s, "<Key>outputs/mine.txt</Key>") || strings.Contains(s, "secret") || strings.Contains(s, "input") {
		t.Errorf("its listing: %s", s)
	}

	put, putMissing := s3(prefix, "PUT", "/w/input/secret.txt", "mine now"), s3(prefix, "PUT", "/w/input/absent.txt", "mine now")
	putMissing.body = []byte(strings.ReplaceAll(string(putMissing.body), "absent", "secret"))
	sameReply(t, "PUT outside the prefixes: an existing object vs a missing one", put, putMissing)
	if put.status != http.StatusForbidden || !strings.Contains(string(put.body), "<Code>AccessDenied</Code>") {
		t.Errorf("PUT outside the prefixes: %d %s", put.status, put.body)
	}
	mustReply(t, "prefix: put inside", s3(prefix, "PUT", "/w/outputs/new.txt", "new"), 200)
	if got := mustReply(t, "admin: get outside", m.on(t, n, keyAdmin, "GET", w+"input/secret.txt", ""), 200); string(got.body) != "input/secret.txt" {
		t.Errorf("the object outside after the refused PUT: %q", got.body)
	}
	mustReply(t, "admin: get the refused new object", m.on(t, n, keyAdmin, "GET", w+"input/absent.txt", ""), 404)

	// A multipart upload of an object outside the prefixes is refused at its start.
	if up := s3(prefix, "POST", "/w/input/multi.bin?uploads", ""); up.status != http.StatusForbidden || !strings.Contains(string(up.body), "<Code>AccessDenied</Code>") {
		t.Errorf("a multipart upload outside the prefixes: %d %s", up.status, up.body)
	}
	s3MultipartInsidePrefixes(t, n.s3URL, prefix, logs, s3)

	// The expired key's credential vs one the node never issued (an id of the same form).
	unknown := expired
	unknown.ID = strings.Repeat("0", len(expired.ID))
	for _, target := range []string{"/w/outputs/mine.txt", "/w?list-type=2"} {
		got, want := s3(expired, "GET", target, ""), s3(unknown, "GET", target, "")
		sameReply(t, "an expired key's S3 credential vs an unknown one: GET "+target, got, want)
		if got.status != http.StatusForbidden || !strings.Contains(string(got.body), "<Code>InvalidAccessKeyId</Code>") {
			t.Errorf("an expired key's S3 credential: %d %s", got.status, got.body)
		}
	}
}

// s3MultipartInsidePrefixes: the credential of mine, a key bound to root a's outputs,
// completes a multipart upload of w/outputs/multi.bin through the AWS SDK for Go v2 and
// reads the object back byte for byte. While the upload is open, the credential of
// other, a key of root a bound to other prefixes, lists none of it, and ListParts,
// UploadPart, CompleteMultipartUpload and AbortMultipartUpload naming its id answer byte
// for byte as the same requests naming an id never issued: NoSuchUpload.
func s3MultipartInsidePrefixes(t *testing.T, url string, mine, other auth.Key, s3 func(auth.Key, string, string, string) reply) {
	t.Helper()
	ctx := t.Context()
	c := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(auth.S3AccessKeyID(mine.ID), mine.S3Secret, "")})
	const key = "outputs/multi.bin"
	created, err := c.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: aws.String("w"), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("CreateMultipartUpload inside the prefixes: %v", err)
	}
	id := aws.ToString(created.UploadId)
	bodies := [][]byte{bytes.Repeat([]byte("first part "), s3gw.DefaultMinPartSize/11+1), []byte("the last part")}
	var parts []types.CompletedPart
	for i, b := range bodies {
		out, err := c.UploadPart(ctx, &awss3.UploadPartInput{Bucket: aws.String("w"), Key: aws.String(key), UploadId: created.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(b)})
		if err != nil {
			t.Fatalf("UploadPart %d inside the prefixes: %v", i+1, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	if listed, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String("w")}); err != nil ||
		len(listed.Uploads) != 1 || aws.ToString(listed.Uploads[0].UploadId) != id {
		t.Fatalf("ListMultipartUploads by the key that started the upload: %v, %v; want the upload", listed, err)
	}

	// The other key's view of the open upload.
	list := mustReply(t, "other prefixes: list uploads", s3(other, "GET", "/w?uploads", ""), 200)
	if b := string(list.body); strings.Contains(b, id) || strings.Contains(b, "multi") || strings.Contains(b, "<Upload>") {
		t.Errorf("ListMultipartUploads by a key bound to other prefixes: %s", b)
	}
	const madeUp = "0123456789abcdef0123456789abcdef"
	complete := `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + aws.ToString(parts[0].ETag) + `</ETag></Part></CompleteMultipartUpload>`
	for _, q := range []struct{ method, query, body string }{
		{"GET", "", ""},
		{"PUT", "&partNumber=3", "intruder"},
		{"POST", "", complete},
		{"DELETE", "", ""},
	} {
		what := q.method + " " + key + "?uploadId=…" + q.query + " by a key bound to other prefixes"
		got := s3(other, q.method, "/w/"+key+"?uploadId="+id+q.query, q.body)
		want := s3(other, q.method, "/w/"+key+"?uploadId="+madeUp+q.query, q.body)
		sameReply(t, what+": the upload vs an id never issued", got, want)
		if got.status != http.StatusNotFound || !strings.Contains(string(got.body), "<Code>NoSuchUpload</Code>") {
			t.Errorf("%s: %d %s", what, got.status, got.body)
		}
	}

	if _, err := c.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{Bucket: aws.String("w"), Key: aws.String(key), UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("CompleteMultipartUpload inside the prefixes: %v", err)
	}
	got, err := s3Read(ctx, c, "w", key)
	if want := bytes.Join(bodies, nil); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GetObject of the completed upload: %d bytes (%v), want the %d bytes of the parts", len(got), err, len(want))
	}
}
