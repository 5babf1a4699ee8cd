package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeMoveServer answers the root-moves route: a started move walks through steps, one
// per GET, and ends as last (a rollback for reason, lasting).
func fakeMoveServer(t *testing.T, steps []string, reason string) (*httptest.Server, *[]map[string]any) {
	var (
		mu    sync.Mutex
		posts []map[string]any
		gets  int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		move := func(step string) string {
			ended := step == "done" || step == "rolled_back"
			rs, lasting := "", false
			if step == "rolled_back" {
				rs, lasting = reason, true
			}
			return fmt.Sprintf(`{"id":"m1","root":"a","source":0,"target":1,"step":%q,"started":"2026-01-01T00:00:00Z",
				"updated":"2026-01-01T00:00:01Z","chunks":3,"records":120,"ended":%v,"reason":%q,"lasting":%v}`, step, ended, rs, lasting)
		}
		switch r.Method {
		case http.MethodPost:
			var in map[string]any
			_ = json.NewDecoder(r.Body).Decode(&in)
			posts = append(posts, in)
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"status":"success","move":%s}`, move("requested"))
		default:
			step := steps[min(gets, len(steps)-1)]
			gets++
			fmt.Fprintf(w, `{"status":"success","moves":[%s]}`, move(step))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &posts
}

func TestAdminRootMoveWaitsAndPrintsEachStep(t *testing.T) {
	srv, posts := fakeMoveServer(t, []string{"fenced", "copied", "switched", "done"}, "")
	out, _, err := execCairn(t, "admin", "root", "move", "a", "--to", "1", "--admin-server", srv.URL)
	if err != nil {
		t.Fatalf("admin root move: %v\n%s", err, out)
	}
	if len(*posts) != 1 || (*posts)[0]["root"] != "a" || (*posts)[0]["to"] != float64(1) {
		t.Fatalf("requests %v", *posts)
	}
	for _, want := range []string{"move m1: agent root a from shard 0 to shard 1\n", "step 1 of 8: requested\n",
		"step 3 of 8: fenced\n", "step 4 of 8: copied\n", "step 6 of 8: switched\n", "step 8 of 8: done\n",
		"moved: 120 records in 3 chunks in 1s\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q does not say %q", out, want)
		}
	}
	out, _, err = execCairn(t, "admin", "root", "moves", "--admin-server", srv.URL)
	if err != nil || !strings.Contains(out, "m1") || !strings.Contains(out, "8 done") {
		t.Fatalf("admin root moves: %v\n%s", err, out)
	}
}

func TestAdminRootMoveReportsARollbackAndBadInput(t *testing.T) {
	srv, _ := fakeMoveServer(t, []string{"fenced", "rolling_back", "rolled_back"}, "a shard had no leader during the move")
	out, errOut, err := execCairn(t, "admin", "root", "move", "a", "--to", "1", "--admin-server", srv.URL)
	if err == nil || !strings.Contains(errOut+err.Error(), "rolled back") {
		t.Fatalf("a rolled-back move: %v\n%s\n%s", err, out, errOut)
	}
	if code, _ := describeError(err); code != "MoveRolledBack" {
		t.Fatalf("code %s, want MoveRolledBack", code)
	}
	// The list says a rollback is lasting: the rebalancer leaves the root alone.
	out, _, err = execCairn(t, "admin", "root", "moves", "--admin-server", srv.URL)
	if err != nil || !strings.Contains(out, "rolled_back") || !strings.Contains(out, "(lasting: the rebalancer leaves the root alone for an hour) a shard had no leader") {
		t.Fatalf("admin root moves of a lasting rollback: %v\n%s", err, out)
	}
	if _, _, err := execCairn(t, "admin", "root", "move", "a", "--admin-server", srv.URL); err == nil {
		t.Fatal("a move without --to was sent")
	} else if code, _ := describeError(err); code != "InvalidArguments" {
		t.Fatalf("a move without --to: %s %v", code, err)
	}
}
