package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/internal/retry"
)

// httpDo sends one request under ctx and returns status and body (status 0 and the error
// text when the request itself failed).
func httpDo(ctx context.Context, method, url string, body []byte) (int, []byte) {
	req, _ := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func wantObjectUnavailable(code int, body []byte) error {
	var e struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}
	if code != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || e.Code != "ObjectUnavailable" || !e.Retryable {
		return fmt.Errorf("got %d %s, want 503 ObjectUnavailable retryable", code, body)
	}
	return nil
}

func TestAStalledObjectStoreAnswers503AndMakesTheNodeNotReady(t *testing.T) {
	srv := s3test.Start(t)
	cfg := s3Config(t, srv, s3test.Bucket(), "")
	cfg.BlobTimeout = 2 * time.Second
	_, base := serveNodeWith(t, cfg, testCreds)
	file := base + "/v1/agents/a/workbenches/w/files/input/"
	if code, b := httpDo(t.Context(), http.MethodPut, file+"before", randomBody(64<<10)); code != http.StatusCreated {
		t.Fatalf("put before the stall: %d %s", code, b)
	}

	srv.Pause() // SIGSTOP: connections are accepted, nothing answers
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	// The answers must come well within the bound; the bound is the test's, not a timing
	// assertion (the time is logged).
	for _, tc := range []struct {
		name, method, path string
		body               []byte
	}{
		{"a write of a new body", http.MethodPut, file + "during", bytes.Repeat([]byte("d"), 64<<10)},
		{"a read of a stored body", http.MethodGet, file + "before", nil},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		start := time.Now()
		code, b := httpDo(ctx, tc.method, tc.path, tc.body)
		cancel()
		if err := wantObjectUnavailable(code, b); err != nil {
			t.Errorf("%s while the object store is stalled: %v", tc.name, err)
		}
		t.Logf("%s while the object store is stalled answered %d in %v", tc.name, code, time.Since(start))
	}
	retry.SucceedsSoon(t, "/readyz reports the stalled object store", func() error {
		code, b := httpDo(t.Context(), http.MethodGet, base+"/readyz", nil)
		if code != http.StatusServiceUnavailable || !bytes.Contains(b, []byte("blob store")) {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})

	srv.Resume()
	resumed = true
	retry.SucceedsSoon(t, "/readyz is ready again", func() error {
		if code, b := httpDo(t.Context(), http.MethodGet, base+"/readyz", nil); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
	retry.SucceedsSoon(t, "a write succeeds again", func() error {
		if code, b := httpDo(t.Context(), http.MethodPut, file+"after", randomBody(64<<10)); code != http.StatusCreated {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
}
