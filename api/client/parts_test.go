package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// A Client's parts and an Admin send their requests through the transport their
// constructor and its WithAPIKey and WithRetry copies built: each call carries the key and
// is retried under the policy exactly as the Client's own calls are.
func TestPartsAndAdminSendTheKeyAndRetryAsTheirClient(t *testing.T) {
	for _, tt := range []struct {
		name string
		path string // the route the call must reach
		call func(ctx context.Context, base string) error
	}{
		{"Query.Find", "/v1/agents/a/find", func(ctx context.Context, base string) error {
			_, err := New(base, nil).WithAPIKey("k1").WithRetry(fastRetry).Query.Find(ctx, "a", FindRequest{})
			return err
		}},
		{"Proposals.List", "/v1/agents/a/workbenches/w/proposals", func(ctx context.Context, base string) error {
			_, err := New(base, nil).WithRetry(fastRetry).WithAPIKey("k1").Proposals.List(ctx, "a", "w", ProposalQuery{})
			return err
		}},
		{"Documents.List", "/api/workbench/documents", func(ctx context.Context, base string) error {
			_, err := New(base, nil).WithAPIKey("k1").WithRetry(fastRetry).Documents.List(ctx, 0, "")
			return err
		}},
		{"Admin.ListKeys", AdminKeysPath, func(ctx context.Context, base string) error {
			_, err := NewAdmin(base, nil).WithRetry(fastRetry).WithAPIKey("k1").ListKeys(ctx)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen []string // "<path> <Authorization>" of each request
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
				first := len(seen) == 1
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				if first {
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprint(w, `{"status":"error","code":"RoutingUnavailable","message":"no leader","retryable":true,"details":{}}`)
					return
				}
				fmt.Fprint(w, `{"status":"success"}`)
			}))
			t.Cleanup(srv.Close)
			if err := tt.call(t.Context(), srv.URL); err != nil {
				t.Fatalf("%s after one retryable answer: %v", tt.name, err)
			}
			mu.Lock()
			defer mu.Unlock()
			want := tt.path + " Bearer k1"
			if len(seen) != 2 || seen[0] != want || seen[1] != want {
				t.Fatalf("the server saw %q, want %q twice", seen, want)
			}
		})
	}
}
