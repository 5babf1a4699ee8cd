package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// closeUnread answers a request whose body the handler did not read to its end on a
// connection that then closes. Left alone, net/http reads up to 256 KiB of such a body
// before it sends the answer, to reuse the connection (and, for a body a handler wrapped
// in place, all of it): a client that declared a body and sends none — a refused upload
// that never got its 100 Continue, or a slow-loris — would hold the connection and get no
// answer at all. With "Connection: close" set before the answer's header, net/http sends
// the answer at once and closes; and once the handler has returned, the connection's
// read deadline is set grace from then (the node's body rate window: as long as a body
// being read may stall), so that net/http's own drain of the rest of the body ends for a
// client that never sends it, while a client still sending a small body finishes it and
// reads the answer (closing with its bytes unread would reset the connection, and the
// client would see a broken pipe instead of the answer). A larger body, which net/http
// does not read, is read and dropped by a lingering close after the answer is sent
// (lingerClose), within the same window, unless the client waits for "100 Continue".
//
// It also answers a client that half-closes its connection once it has sent its whole
// request (shutdown(SHUT_WR), as `nc -N` and some HTTP/1.0 clients do): net/http ends a
// request's context when it reads the end of the connection after the body, which would
// cancel a write whose every byte has arrived and answer 500, or 503 OutcomeUnknown for
// one already applied. A request with a body gets a context that ends with the
// connection's only until the body has ended (untilBodyEnds), and a request without one
// that is not a GET or HEAD (a DELETE, an empty file) one that the connection's end never
// ends; after that, the work the request asked for finishes within the write path's own
// deadlines and is answered, or its answer fails to reach a client that has gone. A GET or
// HEAD keeps net/http's context: long-lived answers (the change feed, MCP's stream) stop
// waiting when their client leaves, so a client that half-closes before reading such an
// answer may see it cut short.
//
// The handler gets a shallow copy of the request whose body records its end, so the
// server's own request keeps the body net/http gave it.
func closeUnread(h http.Handler, grace time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// HTTP/2 flow control bounds what a stream may hold unread, and there "Connection:
		// close" would end every stream of the connection; the end of a stream's request
		// does not end its context.
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || r.ProtoMajor != 1 {
			if r.ProtoMajor == 1 && r.Method != http.MethodGet && r.Method != http.MethodHead {
				// A write without a body (a DELETE, an empty file) has arrived whole.
				ended := &endBody{}
				ended.ended.Store(true)
				ctx, stop := untilBodyEnds(r.Context(), ended)
				defer stop()
				r = r.WithContext(ctx)
			}
			h.ServeHTTP(w, r)
			return
		}
		body := &endBody{ReadCloser: r.Body, remaining: r.ContentLength}
		ctx, stop := untilBodyEnds(r.Context(), body)
		defer stop()
		r = r.WithContext(ctx)
		r.Body = body
		h.ServeHTTP(&closeUnreadWriter{ResponseWriter: w, body: body}, r)
		if !body.ended.Load() {
			// After the handler, net/http still reads what is left of a body under 256
			// KiB, before the answer when the handler wrote none and after it otherwise,
			// to reuse the connection, with no deadline: a client that declared a body and
			// never sends it would hold the connection (a slot of the node's caps) for
			// good. The deadline ends that read after grace; a client still sending its
			// body meets it and then reads the answer.
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(grace))
			if lingers(r) {
				lingerClose(rc, body)
			}
		}
	})
}

// drainedByServer is how much of an unread body net/http reads itself after the handler
// (its maxPostHandlerReadBytes, 256 KiB) before it closes the connection.
const drainedByServer = 256 << 10

// lingers reports whether a body the handler left unread is one net/http would not read
// to its end, from a client that may still be sending it: a declared length over what
// net/http reads itself, or a chunked body, from a client that did not ask for "100
// Continue" (one that did sends no body after a final answer).
func lingers(r *http.Request) bool {
	if r.ContentLength >= 0 && r.ContentLength <= drainedByServer {
		return false
	}
	return !strings.EqualFold(r.Header.Get("Expect"), "100-continue")
}

// lingerClose sends the answer the handler wrote (its "Connection: close" is set) and
// then reads and drops the rest of the body until it ends or the read deadline passes (a
// lingering close): a client that writes its whole body before it reads its answer
// (Python's http.client, many scripts) then finishes writing and reads the answer, where a
// connection closed with its bytes unread would be reset under its write. It costs the
// reading of a body nobody uses, for at most the body rate window.
func lingerClose(rc *http.ResponseController, body *endBody) {
	if err := rc.Flush(); err != nil {
		return // the client has gone
	}
	buf := lingerBufs.Get().(*[]byte)
	defer lingerBufs.Put(buf)
	for {
		if _, err := body.Read(*buf); err != nil {
			return
		}
	}
}

// lingerBufs recycles the buffers lingerClose reads dropped bytes into.
var lingerBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// untilBodyEnds returns a context with parent's values that parent's end cancels only
// while body has not ended, and the function that releases it.
//
// A read of the body that fails as parent ends (the read deadline of the minimum body
// rate, a connection reset) ends the context before the read returns, as net/http ends
// parent before its read returns: so a handler that sees the read's error finds the
// context ended, as it always did, and not a moment later in whatever it does next.
func untilBodyEnds(parent context.Context, body *endBody) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	body.failed = func() {
		if parent.Err() != nil {
			cancel(context.Cause(parent))
		}
	}
	release := context.AfterFunc(parent, func() {
		// A read in progress may be taking the body's end, and net/http starts watching
		// the connection inside that read: wait for it to say whether the body ended.
		body.reading.Lock()
		ended := body.ended.Load()
		body.reading.Unlock()
		if !ended {
			cancel(context.Cause(parent))
		}
	})
	return ctx, func() { release(); cancel(nil) }
}

// endBody is a request body that records whether it was read to its end: its io.EOF, or
// its last declared byte (remaining counts down a declared length; -1 when none was),
// which a handler reads before net/http's body answers io.EOF and starts watching the
// connection. net/http starts that watcher inside the read that takes the body's end (its
// last declared byte, or a chunked body's io.EOF), so a half-close already waiting can end
// the parent before the read returns here: reading is held across a read and its
// bookkeeping, and the parent's end waits for it before it looks at ended.
type endBody struct {
	io.ReadCloser
	remaining int64
	ended     atomic.Bool
	reading   sync.Mutex
	failed    func() // called on a read error other than io.EOF (untilBodyEnds)
}

func (b *endBody) Read(p []byte) (int, error) {
	b.reading.Lock()
	defer b.reading.Unlock()
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.failed != nil {
		b.failed()
	}
	if b.remaining > 0 {
		if b.remaining -= int64(n); b.remaining <= 0 {
			b.ended.Store(true)
		}
	}
	if err == io.EOF {
		b.ended.Store(true)
	}
	return n, err
}

// closeUnreadWriter sets "Connection: close" on an answer sent before its request's body
// ended.
type closeUnreadWriter struct {
	http.ResponseWriter
	body  *endBody
	wrote bool
}

func (c *closeUnreadWriter) header() {
	if !c.wrote {
		c.wrote = true
		if !c.body.ended.Load() {
			c.ResponseWriter.Header().Set("Connection", "close")
		}
	}
}

func (c *closeUnreadWriter) WriteHeader(code int) {
	if code >= 200 {
		c.header()
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *closeUnreadWriter) Write(p []byte) (int, error) {
	c.header()
	return c.ResponseWriter.Write(p)
}

// ReadFrom hands src to the response's own ReadFrom (sendfile from a file).
func (c *closeUnreadWriter) ReadFrom(src io.Reader) (int64, error) {
	c.header()
	if rf, ok := c.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{c.ResponseWriter}, src)
}

func (c *closeUnreadWriter) Flush() {
	c.header()
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *closeUnreadWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
