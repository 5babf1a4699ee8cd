package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProbeReadsTheNodesAnswer(t *testing.T) {
	for _, tt := range []struct {
		name       string
		status     int
		body       string
		wantStatus string // "" when no *Health comes back
		notReady   bool
		wantCode   string // the *Error code, "" when none
	}{
		{"a live node answers ok", 200, `{"status":"ok"}`, "ok", false, ""},
		{"a ready node answers ready", 200, `{"status":"ready"}`, "ready", false, ""},
		{"a node that is not ready lists what fails", 503, `{"status":"not ready","failing":["blob store: timeout"]}`, "not ready", true, ""},
		{"a 503 envelope is an error, not readiness", 503, `{"status":"error","code":"RoutingUnavailable","message":"draining","retryable":true}`, "", false, "RoutingUnavailable"},
		{"a refused Host is an error", 403, `{"status":"error","code":"InvalidArguments","message":"Host"}`, "", false, "InvalidArguments"},
		{"a 200 that is no probe answer is an error", 200, `<html>`, "", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != ReadyPath {
					t.Errorf("got %s %s, want GET %s", r.Method, r.URL.Path, ReadyPath)
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			h, err := New(srv.URL, nil).Probe(t.Context(), ReadyPath)
			if got := ""; h != nil {
				got = h.Status
				if got != tt.wantStatus {
					t.Errorf("status %q, want %q", got, tt.wantStatus)
				}
			} else if tt.wantStatus != "" {
				t.Errorf("no answer, want status %q (err %v)", tt.wantStatus, err)
			}
			if errors.Is(err, ErrNotReady) != tt.notReady {
				t.Errorf("err %v, ErrNotReady wanted: %v", err, tt.notReady)
			}
			if tt.wantStatus != "" && !tt.notReady && err != nil {
				t.Errorf("err %v, want none", err)
			}
			if tt.wantStatus == "" && err == nil {
				t.Error("no error")
			}
			if tt.wantCode != "" && ErrorCode(err) != tt.wantCode {
				t.Errorf("code %q, want %q (err %v)", ErrorCode(err), tt.wantCode, err)
			}
		})
	}
}

func TestProbeDoesNotRetry(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"not ready","failing":["node: not serving"]}`)
	}))
	t.Cleanup(srv.Close)
	if _, err := New(srv.URL, nil).WithRetry(DefaultRetryPolicy()).Probe(t.Context(), ReadyPath); !errors.Is(err, ErrNotReady) {
		t.Fatalf("err %v, want ErrNotReady", err)
	}
	if calls != 1 {
		t.Errorf("%d requests, want 1", calls)
	}
}
