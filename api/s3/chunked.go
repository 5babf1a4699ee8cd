package s3

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// An aws-chunked body ("Signature calculations for the Authorization header: transferring
// payload in multiple chunks", Amazon S3 API Reference) is a run of chunks,
//
//	<hex size>[;chunk-signature=<64 hex>]\r\n<size bytes>\r\n
//
// ended by a chunk of size 0, then, when x-amz-trailer announced one, trailer lines
// (<name>:<value>\r\n, a signed trailer last x-amz-trailer-signature:<64 hex>\r\n) and an
// empty line. Each chunk's signature chains from the one before, starting at the
// request's: HMAC(key, "AWS4-HMAC-SHA256-PAYLOAD\n<time>\n<scope>\n<previous>\n<sha256 of
// the empty string>\n<sha256 of the chunk>"); the trailer's is over
// "AWS4-HMAC-SHA256-TRAILER\n<time>\n<scope>\n<previous>\n<sha256 of its lines>".

const (
	// maxChunkLine bounds a chunk header or trailer line, so a body cannot make the
	// reader buffer without end.
	maxChunkLine = 4096
	// maxTrailerLines bounds the trailer.
	maxTrailerLines = 16
)

// chunkedReader decodes an aws-chunked body, checking each chunk's signature (signed)
// as the chunk ends: the bytes of a chunk reach the caller before its signature is
// checked, and a bad one ends the read with an error instead of io.EOF, so a caller
// that publishes only at io.EOF never publishes them.
type chunkedReader struct {
	r       *bufio.Reader
	signed  bool
	s       Signed
	prev    string
	trailer string // the trailer header announced, "" if none
	left    int64  // bytes left in the current chunk
	sig     string // the current chunk's signature
	h       hash.Hash
	inChunk bool
	err     error
	decoded int64
	// trailerValue is the announced trailer's value, once read.
	trailerValue string
}

func newChunkedReader(body io.Reader, s Signed, trailer string) *chunkedReader {
	return &chunkedReader{
		r: bufio.NewReaderSize(body, 64<<10), signed: s.PayloadHash == StreamingSignedPayload || s.PayloadHash == StreamingSignedTrailer,
		s: s, prev: s.seed, trailer: trailer, h: sha256.New(),
	}
}

func malformed(format string, args ...any) error {
	return errorf(CodeIncompleteBody, "the aws-chunked body is malformed: "+format, args...)
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if !c.inChunk {
		if c.err = c.next(); c.err != nil {
			return 0, c.err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.decoded += int64(n)
	c.h.Write(p[:n])
	if c.left == 0 {
		if c.err = c.endChunk(); c.err != nil {
			return n, c.err
		}
	}
	if err == io.EOF {
		err = malformed("the body ended inside a chunk")
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// next reads a chunk header; at the final chunk it reads the trailer and ends with io.EOF.
func (c *chunkedReader) next() error {
	line, err := c.line()
	if errors.Is(err, io.EOF) {
		return malformed("the body ended before its final (zero-length) chunk")
	}
	if err != nil {
		return err
	}
	sizeHex, ext, hasExt := strings.Cut(line, ";")
	size, err := strconv.ParseInt(sizeHex, 16, 64)
	if err != nil || size < 0 || len(sizeHex) > 16 {
		return malformed("chunk size %q is not hexadecimal", sizeHex)
	}
	c.sig = ""
	if c.signed {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !hasExt || !ok || len(sig) != 64 {
			return malformed("a chunk needs ;chunk-signature=<64 hex digits>")
		}
		c.sig = sig
	}
	c.h.Reset()
	if size == 0 {
		if err := c.verifyChunk(); err != nil {
			return err
		}
		return c.readTrailer()
	}
	c.left, c.inChunk = size, true
	return nil
}

func (c *chunkedReader) endChunk() error {
	c.inChunk = false
	var crlf [2]byte
	if _, err := io.ReadFull(c.r, crlf[:]); err != nil || crlf != [2]byte{'\r', '\n'} {
		return malformed("a chunk's data must end with CRLF")
	}
	return c.verifyChunk()
}

func (c *chunkedReader) verifyChunk() error {
	if !c.signed {
		return nil
	}
	want := hex.EncodeToString(hmacSHA256(c.s.key, "AWS4-HMAC-SHA256-PAYLOAD\n"+c.s.time.Format(amzDateLayout)+"\n"+c.s.scope+"\n"+
		c.prev+"\n"+emptySHA256+"\n"+hex.EncodeToString(c.h.Sum(nil))))
	if !hmac.Equal([]byte(want), []byte(c.sig)) {
		return errorf(CodeSignatureDoesNotMatch, "a chunk's signature does not match the signature we calculated")
	}
	c.prev = c.sig
	return nil
}

// readTrailer reads the lines after the final chunk: the announced trailer, the
// trailer's signature (signed trailers), and empty lines, up to the empty line that
// follows what it needs or the body's end (a client may send no closing line). It keeps
// the announced trailer's value and checks the trailer's signature.
func (c *chunkedReader) readTrailer() error {
	var canonical bytes.Buffer
	trailerSig := ""
	signedTrailer := c.s.PayloadHash == StreamingSignedTrailer
	complete := func() bool {
		return (c.trailer == "" || c.trailerValue != "") && (!signedTrailer || trailerSig != "")
	}
	for i := 0; ; i++ {
		if i == maxTrailerLines {
			return malformed("more than %d trailer lines", maxTrailerLines)
		}
		line, err := c.line()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if line == "" {
			if complete() {
				break
			}
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return malformed("trailer line %q is not name:value", line)
		}
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		switch {
		case name == "x-amz-trailer-signature" && signedTrailer && trailerSig == "":
			trailerSig = value
		case name == c.trailer && c.trailerValue == "" && trailerSig == "":
			c.trailerValue = value
			canonical.WriteString(name + ":" + value + "\n")
		default:
			return malformed("trailer %q was not announced in x-amz-trailer, or comes twice", name)
		}
	}
	if c.trailer != "" && c.trailerValue == "" {
		return errorf(CodeIncompleteBody, "the body has no %s trailer, which x-amz-trailer announced", c.trailer)
	}
	if err := c.end(); err != nil {
		return err
	}
	if signedTrailer {
		sum := sha256.Sum256(canonical.Bytes())
		want := hex.EncodeToString(hmacSHA256(c.s.key, "AWS4-HMAC-SHA256-TRAILER\n"+c.s.time.Format(amzDateLayout)+"\n"+c.s.scope+"\n"+
			c.prev+"\n"+hex.EncodeToString(sum[:])))
		if !hmac.Equal([]byte(want), []byte(trailerSig)) {
			return errorf(CodeSignatureDoesNotMatch, "the trailer's signature does not match the signature we calculated")
		}
	}
	return io.EOF
}

// maxTrailingLineEnds bounds the line ends a client may send after the trailer (minio-go
// ends its trailer with two more CRLF than the format asks for).
const maxTrailingLineEnds = 8

// end checks that nothing but line ends follows the last chunk and its trailer.
func (c *chunkedReader) end() error {
	for i := 0; ; i++ {
		b, err := c.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return malformed("the body ended in error after its final chunk")
		}
		if (b != '\r' && b != '\n') || i == maxTrailingLineEnds {
			return malformed("bytes follow the final chunk")
		}
	}
}

// line reads one line of at most maxChunkLine bytes, without its line end.
func (c *chunkedReader) line() (string, error) {
	var b []byte
	for {
		frag, err := c.r.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxChunkLine {
			return "", malformed("a line is longer than %d bytes", maxChunkLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(b) == 0 {
			return "", io.EOF
		}
		if err != nil {
			return "", malformed("the body ended inside a line")
		}
		break
	}
	// CRLF as the format says; a bare LF too, as minio-go ends its trailer lines.
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return s, nil
}

// Body is the object's bytes of a verified request: an aws-chunked body decoded with its
// chunk and trailer signatures checked, and every digest the request promises (a hex
// x-amz-content-sha256, Content-MD5, an x-amz-checksum-* header or trailer) checked at
// the end. A mismatch or a short body ends the read with an *Error (BadDigest,
// XAmzContentSHA256Mismatch, SignatureDoesNotMatch, IncompleteBody) instead of io.EOF.
// size is the object's length, -1 when the client did not say.
func (s Signed) Body(r *http.Request) (body *Body, size int64, err error) {
	return s.body(r, false)
}

// ObjectBody is Body for a caller that hashes the bytes with SHA-256 itself (Cairn's
// write path, for the file's digest): the body's SHA-256 promises (a hex
// x-amz-content-sha256, x-amz-checksum-sha256) are not hashed a second time here. Its
// io.EOF means every other check passed; the caller must then call CheckSHA256 with its
// digest, and commit nothing unless it returns nil.
func (s Signed) ObjectBody(r *http.Request) (body *Body, size int64, err error) {
	return s.body(r, true)
}

func (s Signed) body(r *http.Request, callerHashes bool) (body *Body, size int64, err error) {
	e, err := newExpectations(r.Header, s.PayloadHash, callerHashes)
	if err != nil {
		return nil, 0, err
	}
	b := &Body{e: e, size: r.ContentLength}
	switch s.PayloadHash {
	case StreamingSignedPayload, StreamingSignedTrailer, StreamingUnsignedTrailer:
		if (s.PayloadHash == StreamingSignedPayload) != (e.trailer == "") {
			return nil, 0, errorf(CodeInvalidRequest, "x-amz-trailer goes with the *-TRAILER payloads, and only with them")
		}
		v := r.Header.Get("X-Amz-Decoded-Content-Length")
		if v == "" {
			return nil, 0, errorf(CodeMissingContentLength, "an aws-chunked body needs x-amz-decoded-content-length, the object's length")
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 0 {
			return nil, 0, errorf(CodeInvalidArgument, "x-amz-decoded-content-length must be a number of bytes")
		}
		b.size = n
		b.chunked = newChunkedReader(r.Body, s, e.trailer)
		b.r = b.chunked
	default:
		if e.trailer != "" {
			return nil, 0, errorf(CodeInvalidRequest, "x-amz-trailer needs an aws-chunked body (x-amz-content-sha256 STREAMING-…-TRAILER)")
		}
		b.r = r.Body
	}
	return b, b.size, nil
}

// Body reads a request's object bytes and checks them at the end (Signed.Body).
type Body struct {
	r       io.Reader
	chunked *chunkedReader
	e       *expectations
	size    int64
	read    int64
	err     error
}

func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	b.e.write(p[:n])
	b.read += int64(n)
	if b.size >= 0 && b.read > b.size {
		b.err = errorf(CodeIncompleteBody, "the body is longer than its declared length")
		return n, b.err
	}
	var e *Error
	switch {
	case err == io.EOF:
		err = b.finish()
	case err != nil && !errors.As(err, &e):
		// The connection broke or the client stopped sending: the request is incomplete,
		// a client error S3 answers 400, not a failure of the node.
		err = errorf(CodeIncompleteBody, "the body ended before it was whole: %d bytes read", b.read)
	}
	b.err = err
	return n, err
}

func (b *Body) finish() error {
	if b.size >= 0 && b.read != b.size {
		return errorf(CodeIncompleteBody, "you did not provide the number of bytes specified by the length")
	}
	if b.chunked != nil && b.e.trailer != "" {
		want, err := checksumWant(b.e.checksumName, []string{b.chunked.trailerValue}, "trailing header")
		if err != nil {
			return err
		}
		b.e.checksum.want = want
	}
	if err := b.e.check(); err != nil {
		return err
	}
	return io.EOF
}

// Err is the error that ended the read, nil while it goes on or after io.EOF: a caller
// whose consumer failed tells a refused body (an *Error) from its own failure with it.
func (b *Body) Err() error {
	if b.err == io.EOF {
		return nil
	}
	return b.err
}

// CheckSHA256 checks the body's SHA-256 promises against sum, the caller's SHA-256 of the
// bytes read, after io.EOF (ObjectBody): XAmzContentSHA256Mismatch or BadDigest when one
// differs. Nothing to check for a body from Body, or one that promised no SHA-256.
func (b *Body) CheckSHA256(sum [sha256.Size]byte) error {
	if b.e.known == nil {
		return nil
	}
	if err := b.e.checkSHA256(sum[:]); err != nil {
		b.err = err
		return err
	}
	return nil
}

// ContentMD5 is the MD5 of the body when the request sent Content-MD5 and the body ended
// matching it (io.EOF); ok is false otherwise. The gateway computes no MD5 it was not
// asked to check.
func (b *Body) ContentMD5() (sum []byte, ok bool) {
	if b.err != io.EOF || b.e.md5 == nil {
		return nil, false
	}
	return b.e.md5.h.Sum(nil), true
}

// Checksum is the flexible checksum of the bytes read (valid after io.EOF): name
// ("crc32", …) and base64 value; ok is false when the request named none.
func (b *Body) Checksum() (name, value string, ok bool) { return b.e.Checksum() }
