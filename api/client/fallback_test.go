package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// snapshotServer answers a workbench's snapshot and retire requests and records them;
// every other route is NotFound. refuse, when set, is the error a snapshot request gets;
// failRetire makes every retire an Internal error.
type snapshotServer struct {
	refuse     string
	failRetire bool

	mu      sync.Mutex
	taken   []map[string]any // the bodies of the snapshot requests
	retired []map[string]any // the bodies of the retire requests
}

func (s *snapshotServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
		writeError(w, 404, "NotFound", "no route", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/v1/agents/a/workbenches/w/snapshots":
		s.taken = append(s.taken, body)
		if s.refuse != "" {
			writeError(w, 403, s.refuse, "the API key lacks the workspace:write scope", map[string]any{"scope": "workspace:write"})
			return
		}
		writeJSON(w, 201, map[string]any{"snapshot_id": 40 + len(s.taken), "state": "alive", "ttl_days": body["ttl_days"]})
	case "/v1/agents/a/workbenches/w/snapshots/retire":
		s.retired = append(s.retired, body)
		if s.failRetire {
			writeError(w, 500, "Internal", "retire failed", nil)
			return
		}
		writeJSON(w, 200, map[string]any{"snapshot_id": body["snapshot_id"], "state": "retired", "retired": true})
	default:
		writeError(w, 404, "NotFound", "no route", nil)
	}
}

func TestFallBackToSnapshotReadsAtASnapshotOnlyWhenTheWorkbenchKeptChanging(t *testing.T) {
	fence := &Error{HTTPStatus: 409, Code: "ReadFenceChanged", Message: "changed", Retryable: true}
	keptChanging := fmt.Errorf("%w: %w", ErrWorkbenchKeptChanging, fence) // as RestartListing ends
	other := &Error{HTTPStatus: 404, Code: "NotFound"}
	tests := []struct {
		name       string
		at         SnapshotRef
		noFallback bool
		live       error // what the live run returns
		refuse     string
		failRetire bool
		cancel     bool // the context ends while the snapshot is read
		wantRuns   []SnapshotRef
		wantTaken  bool
		wantErr    func(error) bool
	}{
		{name: "a live read that succeeds takes no snapshot", live: nil,
			wantRuns: []SnapshotRef{{}}, wantErr: func(err error) bool { return err == nil }},
		{name: "another error is returned as it is", live: other,
			wantRuns: []SnapshotRef{{}}, wantErr: func(err error) bool { return errors.Is(err, other) }},
		{name: "without a fallback the listing fails", live: keptChanging, noFallback: true,
			wantRuns: []SnapshotRef{{}}, wantErr: func(err error) bool { return errors.Is(err, ErrWorkbenchKeptChanging) }},
		{name: "a read at the caller's snapshot takes none", at: SnapshotID(7), live: keptChanging,
			wantRuns: []SnapshotRef{SnapshotID(7)}, wantErr: func(err error) bool { return errors.Is(err, ErrWorkbenchKeptChanging) }},
		{name: "a workbench that kept changing is read at a snapshot, then retired", live: keptChanging,
			wantRuns: []SnapshotRef{{}, SnapshotID(41)}, wantTaken: true, wantErr: func(err error) bool { return err == nil }},
		{name: "a cancelled command still retires its snapshot", live: keptChanging, cancel: true,
			wantRuns: []SnapshotRef{{}, SnapshotID(41)}, wantTaken: true, wantErr: func(err error) bool { return errors.Is(err, context.Canceled) }},
		{name: "a retire that fails is reported, not an error of the read", live: keptChanging, failRetire: true,
			wantRuns: []SnapshotRef{{}, SnapshotID(41)}, wantTaken: true, wantErr: func(err error) bool { return err == nil }},
		{name: "a snapshot that cannot be taken leaves the fence error with the reason", live: keptChanging, refuse: "PermissionDenied",
			wantRuns: []SnapshotRef{{}}, wantErr: func(err error) bool {
				return errors.Is(err, ErrWorkbenchKeptChanging) && ErrorCode(err) == "ReadFenceChanged" &&
					strings.Contains(err.Error(), "taking one failed: PermissionDenied: the API key lacks the workspace:write scope")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &snapshotServer{refuse: tt.refuse, failRetire: tt.failRetire}
			srv := httptest.NewServer(s)
			t.Cleanup(srv.Close)
			c := New(srv.URL, nil)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var taken *Snapshot
			var notRetired error
			fb := &SnapshotFallback{
				Reason:     "test: a consistent listing",
				Taken:      func(s *Snapshot) { taken = s },
				NotRetired: func(_ *Snapshot, err error) { notRetired = err },
			}
			if tt.noFallback {
				fb = nil
			}
			var runs []SnapshotRef
			err := c.FallBackToSnapshot(ctx, "a", "w", tt.at, fb, func(at SnapshotRef) error {
				runs = append(runs, at)
				if len(runs) == 1 {
					return tt.live
				}
				if taken == nil || taken.SnapshotID != at.ID {
					t.Errorf("read at %v before Taken reported it (%+v)", at, taken)
				}
				if tt.cancel {
					cancel()
					return ctx.Err()
				}
				return nil
			})
			if !tt.wantErr(err) {
				t.Fatalf("error %v", err)
			}
			if len(runs) != len(tt.wantRuns) || (len(runs) == 2 && runs[1] != tt.wantRuns[1]) || runs[0] != tt.wantRuns[0] {
				t.Fatalf("read ran at %v, want %v", runs, tt.wantRuns)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			wantAsked := tt.wantTaken || tt.refuse != ""
			if (len(s.taken) == 1) != wantAsked || len(s.taken) > 1 {
				t.Fatalf("snapshot requests %v", s.taken)
			}
			if wantAsked && (s.taken[0]["ttl_days"] != float64(FallbackTTLDays) || s.taken[0]["reason"] != fb.Reason) {
				t.Fatalf("snapshot request %v, want lease %d and the reason", s.taken[0], FallbackTTLDays)
			}
			if (len(s.retired) == 1) != tt.wantTaken || len(s.retired) > 1 {
				t.Fatalf("retire requests %v", s.retired)
			}
			if tt.wantTaken && s.retired[0]["snapshot_id"] != float64(41) {
				t.Fatalf("retired %v, want snapshot 41", s.retired[0])
			}
			if (notRetired != nil) != tt.failRetire {
				t.Fatalf("NotRetired got %v", notRetired)
			}
		})
	}
}
