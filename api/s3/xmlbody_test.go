package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAnXMLBodyPastItsBoundIsMaxMessageLengthExceeded: a request's XML document longer
// than its bound is S3's MaxMessageLengthExceeded, not MalformedXML, whether its length
// was declared (answered before a byte of the body is read) or its body is streamed
// without one (read only to the bound), and nothing it names is done.
func TestAnXMLBodyPastItsBoundIsMaxMessageLengthExceeded(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "xml")
	put(t, c, "xml", "input/keep", []byte("keep"))
	// A well-formed Delete document naming input/keep, longer than its bound only by the
	// whitespace inside it.
	deleteDoc := func(n int) []byte {
		head := `<Delete xmlns="` + xmlns + `"><Object><Key>input/keep</Key></Object>`
		return []byte(head + strings.Repeat(" ", n-len(head)-len("</Delete>")) + "</Delete>")
	}
	tooBig := func(what string, resp *http.Response, body []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>MaxMessageLengthExceeded</Code>") {
			t.Errorf("%s: %d %s, want 400 MaxMessageLengthExceeded", what, resp.StatusCode, body)
		}
	}

	resp, body := signedDo(t, srv, "AGENTA", http.MethodPost, "/xml?delete", deleteDoc(maxXMLBodyBytes))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a Delete document of exactly %d bytes: %d %s", maxXMLBodyBytes, resp.StatusCode, body)
	}
	put(t, c, "xml", "input/keep", []byte("keep"))

	resp, body = signedDo(t, srv, "AGENTA", http.MethodPost, "/xml?delete", deleteDoc(maxXMLBodyBytes+1))
	tooBig("a Delete document one byte past its bound", resp, body)

	// Streamed without a length (chunked transfer coding, UNSIGNED-PAYLOAD): the gateway
	// reads to its bound and stops.
	doc := deleteDoc(maxXMLBodyBytes + 64<<10)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/xml?delete", io.MultiReader(strings.NewReader(string(doc))))
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = -1
	r.Header.Set(headerContentSHA256, UnsignedPayload)
	resp, body = sendSigned(t, srv, "AGENTA", r, UnsignedPayload)
	tooBig("a Delete document streamed without a length", resp, body)

	// Declared past the bound: answered before any byte of the body is sent.
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	r, err = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/xml?delete", pr)
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = maxXMLBodyBytes + 1
	r.Header.Set(headerContentSHA256, UnsignedPayload)
	resp, body = sendSigned(t, srv, "AGENTA", r, UnsignedPayload)
	tooBig("a Delete document declared past its bound, never sent", resp, body)

	if got, _ := getAll(t, c, "xml", "input/keep"); string(got) != "keep" {
		t.Fatalf("the object a refused Delete named: %q", got)
	}

	id := createUpload(t, c, "xml", "input/big")
	complete := fmt.Sprintf(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part>%s</CompleteMultipartUpload>`,
		strings.Repeat(" ", maxCompleteBody))
	resp, body = signedDo(t, srv, "AGENTA", http.MethodPost, "/xml/input/big?uploadId="+url.QueryEscape(id), []byte(complete))
	tooBig("a CompleteMultipartUpload document past its bound", resp, body)

	config := `<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint>` + strings.Repeat(" ", maxBucketConfigBytes) + `</CreateBucketConfiguration>`
	resp, body = signedDo(t, srv, "AGENTA", http.MethodPut, "/xml2", []byte(config))
	tooBig("a CreateBucketConfiguration past its bound", resp, body)
	if _, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String("xml2")}); err == nil {
		t.Fatal("a CreateBucket refused for its body created the bucket")
	}
}

// TestAnXMLBodyOfAnotherDocumentIsMalformedXML: a CompleteMultipartUpload, Delete or
// VersioningConfiguration body whose root element is another one, or that goes on past
// its root, is MalformedXML, as on S3, and nothing it names is done: the upload stays
// incomplete, the object stays.
func TestAnXMLBodyOfAnotherDocumentIsMalformedXML(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	makeBucket(t, c, "xml")
	put(t, c, "xml", "input/keep", []byte("keep"))
	id := createUpload(t, c, "xml", "input/mp")
	part := uploadPart(t, c, "xml", "input/mp", id, 1, []byte("the only part"))
	parts := fmt.Sprintf(`<Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>`, aws.ToString(part.ETag))
	completePath := "/xml/input/mp?uploadId=" + url.QueryEscape(id)
	for _, tc := range []struct{ what, path, doc string }{
		{"a Complete of another root element", completePath, `<Foo>` + parts + `</Foo>`},
		{"a Complete followed by text", completePath, `<CompleteMultipartUpload>` + parts + `</CompleteMultipartUpload>garbage`},
		{"a Complete followed by a second root", completePath, `<CompleteMultipartUpload>` + parts + `</CompleteMultipartUpload><CompleteMultipartUpload/>`},
		{"a Delete of another root element", "/xml?delete", `<Remove><Object><Key>input/keep</Key></Object></Remove>`},
		{"a Delete followed by a second root", "/xml?delete", `<Delete><Object><Key>input/keep</Key></Object></Delete><Delete/>`},
		{"a VersioningConfiguration of another root element", "/xml?versioning", `<Versioning><Status>Enabled</Status></Versioning>`},
		{"a CreateBucketConfiguration of another root element", "/made", `<BucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></BucketConfiguration>`},
	} {
		method := http.MethodPost
		if tc.path == "/xml?versioning" || tc.path == "/made" {
			method = http.MethodPut
		}
		resp, body := signedDo(t, srv, "AGENTA", method, tc.path, []byte(tc.doc))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>MalformedXML</Code>") {
			t.Errorf("%s: %d %s, want 400 MalformedXML", tc.what, resp.StatusCode, body)
		}
	}
	if got, _ := getAll(t, c, "xml", "input/keep"); string(got) != "keep" {
		t.Errorf("the object a refused Delete named reads %q", got)
	}
	if _, err := c.HeadBucket(context.Background(), &awss3.HeadBucketInput{Bucket: aws.String("made")}); s3Code(err) != "NotFound" {
		t.Errorf("HEAD of the bucket a refused CreateBucket named: %v, want NotFound", err)
	}
	if _, err := c.HeadObject(context.Background(), &awss3.HeadObjectInput{Bucket: aws.String("xml"), Key: aws.String("input/mp")}); s3Code(err) != "NotFound" {
		t.Errorf("HEAD of the upload's key after refused Completes: %v, want NotFound", err)
	}
	// The well-formed documents, with a comment and white space around their root, still go through.
	resp, body := signedDo(t, srv, "AGENTA", http.MethodPost, completePath,
		[]byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n<!-- c -->\n<CompleteMultipartUpload xmlns=\""+xmlns+"\">"+parts+"</CompleteMultipartUpload>\n"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a well-formed Complete: %d %s", resp.StatusCode, body)
	}
	if got, _ := getAll(t, c, "xml", "input/mp"); string(got) != "the only part" {
		t.Errorf("the completed object reads %q", got)
	}
}
