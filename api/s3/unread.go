package s3

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Bounds of what the gateway reads of a request's body after it answered the request with
// an error (answerError).
const (
	// maxDiscardBytes is the most it reads and discards: a refused XML document many times
	// its bound (a DeleteObjects of 50 MiB) is read to its end; a refused upload past it
	// (a PUT declared past MaxPutSize) is not.
	maxDiscardBytes = 64 << 20
	// discardTimeout is the longest it reads.
	discardTimeout = 10 * time.Second
)

// requestBody is a request's body as net/http gave it, recording whether the handler read
// from it and whether it ended (io.EOF).
type requestBody struct {
	io.ReadCloser
	read, ended atomic.Bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.ended.Store(true)
	}
	return n, err
}

// answerError answers err (WriteError) to r, whose body is body (nil when it has none);
// authenticated says whether r's signature verified.
//
// An error found before the body was read to its end — a length the body declares past
// its bound (MaxMessageLengthExceeded, EntityTooLarge), or anything else refused first —
// leaves the client still sending. net/http then closes the connection with bytes unread,
// which resets it, and a client that writes its whole body before it reads the answer
// (urllib3, under boto3 and the aws CLI, for a request without Expect: 100-continue)
// sees its write fail and never reads the answer. So an authenticated HTTP/1 request's
// answer goes out at once, with "Connection: close", and the gateway then reads on and
// discards what is left of the body, at most maxDiscardBytes within discardTimeout, as
// RFC 9112 §9.6 asks of a server that closes. A client that reads while it writes gets
// the answer at once and stops sending, ending the read. Nothing more is read of a
// request that did not authenticate (no byte a client the gateway does not know sends),
// of one that asked for 100 Continue and was never told to send its body, or over HTTP/2,
// whose streams end without closing the connection.
func answerError(w http.ResponseWriter, r *http.Request, body *requestBody, requestID string, err error, authenticated bool) {
	if !authenticated || body == nil || r.ProtoMajor != 1 || r.ContentLength == 0 || body.ended.Load() ||
		(strings.EqualFold(r.Header.Get("Expect"), "100-continue") && !body.read.Load()) {
		WriteError(w, r, requestID, err)
		return
	}
	ctl := http.NewResponseController(w)
	w.Header().Set("Connection", "close")
	// Reading the body after the answer's header: without this, net/http would read up
	// to 256 KiB of it before the header and make the rest unreadable.
	_ = ctl.EnableFullDuplex()
	WriteError(w, r, requestID, err)
	if ctl.Flush() != nil {
		return
	}
	if ctl.SetReadDeadline(time.Now().Add(discardTimeout)) != nil {
		return // no deadline to bound the read with: leave the rest unread
	}
	_, _ = io.CopyN(io.Discard, body, maxDiscardBytes)
}
