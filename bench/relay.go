package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// ServeRelay serves the relay baseline (BaselineRelay) on ln until ctx ends: every request
// is passed to target, the object store's URL, and its answer streamed back, and nothing
// else happens — no hashing, chunking, compression or metadata. Run as a process of its
// own (`cairn bench relay`), it is the floor of any server that moves every byte between
// its clients and the same object store on the same machine: what Cairn's object path is
// compared with besides raw minio-go (BENCHMARKS.md). The Host header passes unchanged,
// so the client's SigV4 signature, computed for the relay's address, still verifies.
func ServeRelay(ctx context.Context, ln net.Listener, target string) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("relay target %q: want http://host:port or https://host[:port]", target)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	tr.DisableCompression = true
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // the signature covers the host the client signed for
		},
		Transport: tr,
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		case <-done:
		}
	}()
	err = srv.Serve(ln)
	close(done)
	tr.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
