package host

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// A forwarded command's failure says what a retry may do: nothing applied (not the
// leader, an older release, a refused command) or the outcome is unknown (the leader was
// reached and did not answer).
func TestAForwardedCommandsFailureSaysWhetherItMayHaveApplied(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		check   func(error) bool
		legacy  bool
	}{
		{"the peer does not lead", func(w http.ResponseWriter, r *http.Request) { writePeerError(w, shard.ErrNotLeader) },
			func(err error) bool { return errors.Is(err, shard.ErrNotLeader) }, false},
		{"the peer timed out committing", func(w http.ResponseWriter, r *http.Request) { writePeerError(w, shard.ErrTimeout) },
			func(err error) bool { return errors.Is(err, shard.ErrTimeout) }, false},
		{"the peer's disk is full", func(w http.ResponseWriter, r *http.Request) { writePeerError(w, shard.ErrStorageFull) },
			func(err error) bool { return errors.Is(err, shard.ErrStorageFull) }, false},
		{"the peer refused the command", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(peerErrorHeader, "invalid")
			http.Error(w, "bad command", http.StatusBadRequest)
		}, func(err error) bool {
			var pe *peerAnswerError
			return errors.As(err, &pe) && !errors.Is(err, shard.ErrTimeout) && !errors.Is(err, shard.ErrNotLeader)
		}, false},
		{"the peer is an older release", http.NotFound,
			func(err error) bool { return errors.Is(err, shard.ErrNotLeader) }, true},
		{"the peer hung up after the command was sent", func(w http.ResponseWriter, r *http.Request) {
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
		}, func(err error) bool { return errors.Is(err, shard.ErrTimeout) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			p := &peerClient{client: srv.Client()}
			addr := strings.TrimPrefix(srv.URL, "http://")
			_, err := p.propose(t.Context(), addr, 0, meta.Header{}, meta.Tick{})
			if err == nil || !tt.check(err) {
				t.Fatalf("propose: %v", err)
			}
			if got := p.isLegacy(addr); got != tt.legacy {
				t.Fatalf("taken for an older release: %v, want %v", got, tt.legacy)
			}
		})
	}
}
