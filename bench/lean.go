package bench

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/cairnstore/cairn/api/client"
)

// leanStat is the stat scenario's lean lane (Config.LeanHTTP): HEADs over fasthttp's
// client, which keeps one connection per worker and allocates nothing per request, where
// api/client over net/http runs two goroutines per connection and parses every header
// into maps. It addresses the same URLs as api/client (client.FileURL) and checks what a
// stat must answer: 200 and the file's size.
type leanStat struct {
	hc        *fasthttp.HostClient
	server    string
	agent, wb string
	sizeBytes int64
	opTimeout time.Duration
}

// leanHostClient is a fasthttp client of server (an http:// URL, as Config.Validate
// requires) for workers concurrent requests: the lean lanes' transport.
func leanHostClient(server string, workers int) (*fasthttp.HostClient, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("lean HTTP: server %q: %w", server, err)
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return &fasthttp.HostClient{
		Addr:     u.Host,
		MaxConns: workers,
		// Its own dialer, not fasthttp's default one, which starts a goroutine that
		// lives as long as the process.
		Dial: func(addr string) (net.Conn, error) { return dialer.Dial("tcp", addr) },
		// A benchmark measures the server: no header normalization on either side.
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
	}, nil
}

// leanDeadline is when a lean lane's request gives up: ctx's deadline, else the
// operation timeout from now. fasthttp takes no context, so a cancelled ctx ends the wait
// only at that deadline.
func leanDeadline(ctx context.Context, opTimeout time.Duration) time.Time {
	if deadline, ok := ctx.Deadline(); ok {
		return deadline
	}
	return time.Now().Add(opTimeout)
}

// newLeanStat returns the stat scenario's lean lane for workers concurrent requests.
func newLeanStat(cfg Config, workers int) (*leanStat, error) {
	hc, err := leanHostClient(cfg.Server, workers)
	if err != nil {
		return nil, err
	}
	return &leanStat{
		hc:        hc,
		server:    cfg.Server,
		agent:     cfg.Agent,
		wb:        cfg.Workbench,
		sizeBytes: cfg.SizeBytes,
		opTimeout: cfg.OpTimeout,
	}, nil
}

// stat sends one HEAD of path and checks the answer; it gives up at leanDeadline.
func (l *leanStat) stat(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(client.FileURL(l.server, l.agent, l.wb, path))
	req.Header.SetMethod(fasthttp.MethodHead)
	if err := l.hc.DoDeadline(req, resp, leanDeadline(ctx, l.opTimeout)); err != nil {
		return fmt.Errorf("HEAD %s: %w", path, err)
	}
	if st := resp.StatusCode(); st != fasthttp.StatusOK {
		return fmt.Errorf("HEAD %s: status %d, want 200", path, st)
	}
	if n := resp.Header.ContentLength(); int64(n) != l.sizeBytes {
		return fmt.Errorf("HEAD %s: Content-Length %d, want the file's %d bytes", path, n, l.sizeBytes)
	}
	return nil
}

// close drops the lane's idle connections.
func (l *leanStat) close() { l.hc.CloseIdleConnections() }
