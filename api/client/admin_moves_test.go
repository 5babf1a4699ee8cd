package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRootMovesStartAndListThroughTheAdminRoute(t *testing.T) {
	var posted map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != AdminRootMovesPath {
			t.Errorf("path %s", r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			if err := json.NewDecoder(r.Body).Decode(&posted); err != nil {
				t.Error(err)
			}
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"status":"success","move":{"id":"m1","root":"a","source":0,"target":1,"step":"requested",
				"started":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z","chunks":0,"records":0,"ended":false}}`)
		case r.URL.Query().Get("id") == "gone":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"status":"error","code":"InvalidState","message":"not a cluster","details":{"reason":"not_a_cluster"},"retryable":false}`)
		default:
			fmt.Fprint(w, `{"status":"success","moves":[{"id":"m1","root":"a","source":0,"target":1,"step":"done",
				"started":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:01Z","chunks":2,"records":40,"ended":true}]}`)
		}
	}))
	t.Cleanup(srv.Close)
	c := NewAdmin(srv.URL, nil)
	m, err := c.StartRootMove(t.Context(), "a", 1)
	if err != nil || m.ID != "m1" || m.Step != "requested" || m.Target != 1 {
		t.Fatalf("StartRootMove: %+v %v", m, err)
	}
	if posted["root"] != "a" || posted["to"] != float64(1) {
		t.Fatalf("request body %v", posted)
	}
	list, err := c.RootMoves(t.Context(), "m1")
	if err != nil || len(list) != 1 || !list[0].Done() || !list[0].Ended || list[0].Records != 40 {
		t.Fatalf("RootMoves: %+v %v", list, err)
	}
	if _, err := c.RootMoves(t.Context(), "gone"); !errors.Is(err, ErrNotCluster) {
		t.Fatalf("an embedded node's answer: %v, want ErrNotCluster", err)
	}
}
