package ready

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrExited: the process exited before it answered.
var ErrExited = errors.New("the process exited before it was ready")

// Wait polls url every poll until it answers 200 without "X-Minio-Server-Status: offline"
// (MinIO sends it while its object layer starts, when S3 calls still fail with 503), and
// returns nil; ErrExited when exited is closed first; an error naming the url after
// timeout or when ctx ends.
func Wait(ctx context.Context, url string, exited <-chan struct{}, timeout, poll time.Duration) error {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && resp.Header.Get("X-Minio-Server-Status") != "offline" {
				return nil
			}
		}
		select {
		case <-exited:
			return ErrExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready at %s within %v", url, timeout)
		}
	}
}
