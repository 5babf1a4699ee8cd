package server

import (
	"io"
	"net/http"
	"sync/atomic"
)

// closeUnread answers a request whose body the handler did not read to its end on a
// connection that then closes. Left alone, net/http reads up to 256 KiB of such a body
// before it sends the answer, to reuse the connection (and, for a body a handler wrapped
// in place, all of it): a client that declared a body and sends none — a refused upload
// that never got its 100 Continue, or a slow-loris — would hold the connection and get no
// answer at all. With "Connection: close" set before the answer's header, net/http sends
// the answer at once and closes.
//
// The handler gets a shallow copy of the request whose body records its end, so the
// server's own request keeps the body net/http gave it.
func closeUnread(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// HTTP/2 flow control bounds what a stream may hold unread, and there "Connection:
		// close" would end every stream of the connection.
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || r.ProtoMajor != 1 {
			h.ServeHTTP(w, r)
			return
		}
		body := &endBody{ReadCloser: r.Body}
		r = r.WithContext(r.Context())
		r.Body = body
		h.ServeHTTP(&closeUnreadWriter{ResponseWriter: w, body: body}, r)
	})
}

// endBody is a request body that records whether it was read to its end.
type endBody struct {
	io.ReadCloser
	ended atomic.Bool
}

func (b *endBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
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
