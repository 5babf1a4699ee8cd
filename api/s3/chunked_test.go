package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// sha256Hasher is a hash.Hash with the Close minio-go's streaming signer asks for.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// minioStreamed is a PUT whose body minio-go's signer cuts into signed chunks (64 KiB
// each), with a signed crc32c trailer when trailer is set.
func minioStreamed(t *testing.T, body []byte, trailer bool) *http.Request {
	t.Helper()
	r, err := http.NewRequest("PUT", "http://127.0.0.1:9000/bkt/streamed.bin", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if trailer {
		sum := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
		r.Trailer = http.Header{"x-amz-checksum-crc32c": {base64.StdEncoding.EncodeToString([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})}}
	}
	r = signer.StreamingSignV4(r, testKeyID, testSecret, "", "us-east-1", int64(len(body)), when, sha256Hasher{sha256.New()})
	wire, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(wire))
	return incoming(t, r)
}

func readBody(t *testing.T, r *http.Request) ([]byte, *Body, error) {
	t.Helper()
	s, err := at(when).Verify(r)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	b, _, err := s.Body(r)
	if err != nil {
		t.Fatalf("Body: %v", err)
	}
	got, err := io.ReadAll(b)
	return got, b, err
}

func TestSignedChunkedBodiesDecodeAndVerify(t *testing.T) {
	for _, size := range []int{0, 1, 64 << 10, 200<<10 + 3} {
		for _, trailer := range []bool{false, true} {
			body := payload(size)
			got, b, err := readBody(t, minioStreamed(t, body, trailer))
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("size %d trailer %v: %d bytes, %v", size, trailer, len(got), err)
			}
			if name, _, ok := b.Checksum(); trailer != ok || (ok && name != "crc32c") {
				t.Fatalf("size %d trailer %v: checksum %q %v", size, trailer, name, ok)
			}
		}
	}
}

func TestATamperedChunkedBodyEndsInAnError(t *testing.T) {
	body := payload(150 << 10)
	for _, tc := range []struct {
		name   string
		change func(wire []byte) []byte
		want   Code
	}{
		{"a data byte flipped", func(w []byte) []byte { w[len(w)/2] ^= 1; return w }, CodeSignatureDoesNotMatch},
		{"cut short", func(w []byte) []byte { return w[:len(w)-200] }, CodeIncompleteBody},
		{"a chunk signature changed", func(w []byte) []byte {
			i := bytes.Index(w, []byte("chunk-signature=")) + len("chunk-signature=")
			w[i] ^= 1
			return w
		}, CodeSignatureDoesNotMatch},
		{"a chunk size that is not hexadecimal", func(w []byte) []byte { w[0] = 'g'; return w }, CodeIncompleteBody},
		{"cut at a chunk boundary before the final chunk", func(w []byte) []byte {
			return w[:bytes.LastIndex(w, []byte("\r\n0;chunk-signature="))+2]
		}, CodeIncompleteBody},
		{"bytes after the final chunk", func(w []byte) []byte { return append(w, "junk"...) }, CodeIncompleteBody},
		{"the trailer's checksum changed", func(w []byte) []byte {
			i := bytes.Index(w, []byte("x-amz-checksum-crc32c:")) + len("x-amz-checksum-crc32c:")
			w[i] ^= 1
			return w
		}, CodeSignatureDoesNotMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := minioStreamed(t, body, true)
			wire, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(tc.change(wire)))
			_, _, err := readBody(t, r)
			if codeOf(err) != tc.want {
				t.Fatalf("reading: %v, want %s", err, tc.want)
			}
		})
	}
}

// recorder is a stand-in S3 endpoint for real clients: it verifies each request and
// answers a PUT with the checksum it computed, a GET with the last body stored.
type recorder struct {
	mu     sync.Mutex
	bodies map[string][]byte
	errs   []error
	// modes counts the payload hashes seen (a hex SHA-256 counts as "sha256").
	modes map[string]int
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(err error) {
		rec.mu.Lock()
		rec.errs = append(rec.errs, err)
		rec.mu.Unlock()
		WriteError(w, r, "test", err)
	}
	v := &Verifier{Secrets: testSecrets}
	s, err := v.Verify(r)
	if err != nil {
		fail(err)
		return
	}
	mode := s.PayloadHash
	if len(mode) == 64 {
		mode = "sha256"
	}
	rec.mu.Lock()
	rec.modes[mode]++
	rec.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		b, _, err := s.Body(r)
		if err != nil {
			fail(err)
			return
		}
		got, err := io.ReadAll(b)
		if err != nil {
			fail(err)
			return
		}
		rec.mu.Lock()
		rec.bodies[r.URL.Path] = got
		rec.mu.Unlock()
		if name, value, ok := b.Checksum(); ok {
			w.Header().Set(checksumHeaderPrefix+name, value)
		}
		w.Header().Set("ETag", `"`+sha256Hex(got)[:32]+`"`)
	case http.MethodGet:
		rec.mu.Lock()
		got := rec.bodies[r.URL.Path]
		rec.mu.Unlock()
		_, _ = w.Write(got)
	}
}

func TestTheAWSSDKsUploadsVerifyWithEveryChecksum(t *testing.T) {
	for _, tls := range []bool{false, true} {
		rec := &recorder{bodies: map[string][]byte{}, modes: map[string]int{}}
		srv := httptest.NewUnstartedServer(rec)
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		defer srv.Close()
		client := awss3.New(awss3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, HTTPClient: srv.Client(),
			Credentials: credentials.NewStaticCredentialsProvider(testKeyID, testSecret, ""), RetryMaxAttempts: 1,
		})
		for _, alg := range []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c,
			types.ChecksumAlgorithmCrc64nvme, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256} {
			body := payload(100<<10 + 17)
			key := "dir/a b+ü~" + string(alg) + ".bin"
			_, err := client.PutObject(context.Background(), &awss3.PutObjectInput{
				Bucket: aws.String("bkt"), Key: aws.String(key), Body: bytes.NewReader(body), ChecksumAlgorithm: alg,
			})
			if err != nil {
				t.Fatalf("tls %v, checksum %q: PutObject: %v (server saw %v)", tls, alg, err, rec.errs)
			}
			if got := rec.bodies["/bkt/"+key]; !bytes.Equal(got, body) {
				t.Fatalf("tls %v, checksum %q: the server read %d bytes, want %d", tls, alg, len(got), len(body))
			}
		}
		// Over TLS the SDK streams the body with its checksum in a trailer; over plain HTTP
		// it signs the body's SHA-256.
		if want := map[bool]string{false: "sha256", true: StreamingUnsignedTrailer}[tls]; rec.modes[want] == 0 {
			t.Fatalf("tls %v: the SDK's uploads came as %v, none as %s", tls, rec.modes, want)
		}
		presigned, err := awss3.NewPresignClient(client).PresignGetObject(context.Background(),
			&awss3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/a b+ü~.bin")},
			awss3.WithPresignExpires(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Get(presigned.URL)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(got, payload(100<<10+17)) {
			t.Fatalf("tls %v: presigned GET: %d, %d bytes (server saw %v)", tls, resp.StatusCode, len(got), rec.errs)
		}
	}
}

func TestAChunkedBodyNeedsItsDecodedLengthAndAShortBodyIsIncomplete(t *testing.T) {
	r := minioStreamed(t, payload(1000), false)
	r.Header.Del("X-Amz-Decoded-Content-Length")
	s, err := at(when).Verify(r)
	if err == nil {
		_, _, err = s.Body(r)
	}
	// The header is signed: dropping it fails the signature, or, were it unsigned, the body.
	if c := codeOf(err); c != CodeSignatureDoesNotMatch && c != CodeMissingContentLength {
		t.Fatalf("no x-amz-decoded-content-length: %v", err)
	}
	short := sdkSigned(t, "PUT", "http://127.0.0.1:9000/bkt/k", []byte("0123456789"), nil, when)
	short.Body = io.NopCloser(io.MultiReader(strings.NewReader("01234"), iotest.ErrReader(io.ErrUnexpectedEOF)))
	if _, _, err := readBody(t, short); codeOf(err) != CodeIncompleteBody {
		t.Fatalf("a body cut short: %v, want IncompleteBody", err)
	}
}

func TestAnUploadWhoseChecksumHeaderIsWrongIsBadDigest(t *testing.T) {
	r := sdkSigned(t, "PUT", "http://127.0.0.1:9000/bkt/k", []byte("body"),
		http.Header{"X-Amz-Checksum-Crc32": {base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 1})}}, when)
	if _, _, err := readBody(t, r); codeOf(err) != CodeBadDigest {
		t.Fatalf("reading: %v, want BadDigest", err)
	}
	r = sdkSigned(t, "PUT", "http://127.0.0.1:9000/bkt/k", []byte("body"),
		http.Header{"X-Amz-Checksum-Crc32": {"AAAAAQ=="}, "X-Amz-Checksum-Sha1": {"AAAAAQ=="}}, when)
	s, err := at(when).Verify(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Body(r); codeOf(err) != CodeInvalidRequest || !strings.Contains(err.Error(), "single") {
		t.Fatalf("two checksum headers: %v, want InvalidRequest", err)
	}
}

// FuzzChunkedReader: whatever the body, decoding ends (in an error or io.EOF) without a
// panic and never yields more bytes than the body holds.
func FuzzChunkedReader(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), false)
	f.Add([]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"), true)
	f.Add([]byte("ffffffffffffffff\r\n"), false)
	f.Add([]byte(strings.Repeat("a", 5000)), true)
	f.Fuzz(func(t *testing.T, wire []byte, trailer bool) {
		s := Signed{PayloadHash: StreamingUnsignedTrailer}
		name := ""
		if trailer {
			name = "x-amz-checksum-crc32"
		}
		c := newChunkedReader(bytes.NewReader(wire), s, name)
		n, _ := io.Copy(io.Discard, io.LimitReader(c, int64(len(wire))+1))
		if n > int64(len(wire)) {
			t.Fatalf("decoded %d bytes from %d", n, len(wire))
		}
	})
}
