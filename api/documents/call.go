package documents

import (
	"bytes"
	"context"
	"net/http"
	"strings"
)

// Call serves one request of this surface in process, for another surface of the node
// (the cairn MCP profile, whose sessions are bound to one agent root): method, route
// (below Prefix, with its query) and body as on the wire; the principal is ctx's. It
// answers what ServeHTTP would, without the admission the caller's own surface already
// counted, when root is the owner's tenant; in another root the owner has no documents,
// so it answers as a root without any would (empty lists, NotFound, an origin that
// does not exist), by the same paths.
func (h *Handler) Call(ctx context.Context, root, method, route string, body []byte) (status int, answer []byte) {
	r, err := http.NewRequestWithContext(ctx, method, Prefix+strings.TrimPrefix(route, "/"), bytes.NewReader(body))
	if err != nil {
		e := notFound("route")
		return e.Status, mustJSON(e)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	h.serve(rec, r, false, root)
	return rec.status, bytes.TrimSpace(rec.body.Bytes())
}

// recorder is the http.ResponseWriter of Call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }
