package server

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
)

// drainer counts the requests in flight on an http.Server, so that a shutdown can tell a
// request it had to cut from a connection that never sent one. http.Server.Shutdown
// treats a connection that has sent nothing yet as active for five seconds (a client's
// spare keep-alive dial looks like that), so with a shutdown timeout of five seconds or
// less it reports a deadline even when no request was in flight.
type drainer struct{ inflight atomic.Int64 }

// wrap counts h's requests.
func (d *drainer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.inflight.Add(1)
		defer d.inflight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// shutdown shuts srv down within ctx. When ctx ends first, the remaining connections are
// closed; the error is ctx's only if a request was still in flight then.
func (d *drainer) shutdown(ctx context.Context, srv *http.Server) error {
	err := srv.Shutdown(ctx)
	if err == nil {
		return nil
	}
	inflight := d.inflight.Load()
	srv.Close()
	if errors.Is(err, context.DeadlineExceeded) && inflight == 0 {
		return nil
	}
	return err
}
