package ready_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/ready"
)

func TestWaitReturnsOnceTheEndpointIsLiveAndNotOffline(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("X-Minio-Server-Status", "offline")
		}
	}))
	defer srv.Close()
	if err := ready.Wait(t.Context(), srv.URL, nil, 10*time.Second, time.Millisecond); err != nil || calls.Load() != 3 {
		t.Fatalf("Wait: %v after %d calls, want nil after 3", err, calls.Load())
	}
}

func TestWaitEndsWhenTheProcessExitsOrTimeOutPasses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer srv.Close()
	exited := make(chan struct{})
	close(exited)
	if err := ready.Wait(t.Context(), srv.URL, exited, time.Minute, time.Millisecond); !errors.Is(err, ready.ErrExited) {
		t.Fatalf("Wait with the process gone: %v", err)
	}
	if err := ready.Wait(t.Context(), srv.URL, nil, 20*time.Millisecond, time.Millisecond); err == nil {
		t.Fatal("Wait on an endpoint that never answers 200 returned nil")
	}
}
