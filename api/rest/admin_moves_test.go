package rest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/shard/control"
)

// fakeMover records moves, or answers StartMove with a fixed error.
type fakeMover struct {
	moves []control.RootMove
	err   error
}

func (f *fakeMover) StartMove(_ context.Context, root string, to int) (control.RootMove, error) {
	if f.err != nil {
		return control.RootMove{}, f.err
	}
	m := control.RootMove{ID: fmt.Sprintf("m%d", len(f.moves)+1), Root: root, Source: 0, Target: to,
		Step: control.MoveRequested, Started: time.Now(), Updated: time.Now()}
	f.moves = append(f.moves, m)
	return m, nil
}

func (f *fakeMover) Moves(context.Context) ([]control.RootMove, error) { return f.moves, f.err }

func TestAdminRootMovesStartsListsAndMapsEveryRefusal(t *testing.T) {
	serve := func(m rest.RootMover) string {
		opts := rest.Options{}
		if m != nil {
			opts.Moves = m
		}
		return serveAdmin(t, opts, "/v1/admin/cluster/root-moves")
	}
	f := &fakeMover{}
	u := serve(f)
	r := do(t, "POST", u, strings.NewReader(`{"root":"a","to":1}`))
	mv, _ := r.json["move"].(map[string]any)
	if r.status != 202 || r.json["status"] != "success" || mv["id"] != "m1" || mv["step"] != "requested" || mv["target"] != float64(1) || mv["ended"] != false {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	r = do(t, "GET", u, nil)
	if list, _ := r.json["moves"].([]any); r.status != 200 || len(list) != 1 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if r = do(t, "GET", u+"?id=m1", nil); r.status != 200 {
		t.Fatalf("list one: %d %s", r.status, r.body)
	}
	if one, _ := r.json["moves"].([]any); len(one) != 1 || one[0].(map[string]any)["lasting"] != nil {
		t.Fatalf("a move under way: %s, want no lasting", r.body)
	}
	f.moves = append(f.moves, control.RootMove{ID: "m2", Root: "b", Target: 1, Step: control.MoveRolledBack, Started: time.Now(),
		Updated: time.Now(), Reason: "shard 0 refused the move: a record encodes to more than a move chunk holds", Lasting: true})
	if r = do(t, "GET", u+"?id=m2", nil); r.status != 200 || !strings.Contains(string(r.body), `"lasting":true`) || !strings.Contains(string(r.body), `"ended":true`) {
		t.Fatalf("a lasting rollback: %d %s", r.status, r.body)
	}
	f.moves = f.moves[:1]
	expect(t, do(t, "GET", u+"?id=nope", nil), 404, "NotFound")
	for q, want := range map[string]int{"?root=a": 1, "?root=zz": 0, "?root=a&id=m1": 1} {
		r := do(t, "GET", u+q, nil)
		if list, _ := r.json["moves"].([]any); r.status != 200 || len(list) != want {
			t.Fatalf("list %s: %d %s, want %d moves", q, r.status, r.body, want)
		}
	}
	for q, field := range map[string]string{"?bogus=1": "bogus", "?id=": "id", "?root=": "root", "?id=m1&id=m2": "id"} {
		r := do(t, "GET", u+q, nil)
		expect(t, r, 400, "InvalidArguments")
		if d, _ := r.json["details"].(map[string]any); d["field"] != field || strings.Contains(q, "&") && d["rule"] != "duplicate_parameter" {
			t.Fatalf("list %s: %s, want field %s", q, r.body, field)
		}
	}
	expect(t, do(t, "PUT", u, strings.NewReader(`{}`)), 405, "InvalidArguments")
	// The embedded node has no cluster: 409 not_a_cluster on both methods.
	for _, method := range []string{"GET", "POST"} {
		r := do(t, method, serve(nil), strings.NewReader(`{"root":"a","to":1}`))
		if d, _ := r.json["details"].(map[string]any); r.status != 409 || d["reason"] != "not_a_cluster" {
			t.Fatalf("%s on the embedded node: %d %s", method, r.status, r.body)
		}
	}

	for _, tc := range []struct {
		name, body string
		err        error
		status     int
		code       string
		detail     string
	}{
		{"no root", `{"to":1}`, nil, 400, "InvalidArguments", "field=root"},
		{"a bad root name", `{"root":"a/b","to":1}`, nil, 400, "InvalidArguments", "field=root"},
		{"no shard", `{"root":"a"}`, nil, 400, "InvalidArguments", "field=to"},
		{"a negative shard", `{"root":"a","to":-1}`, nil, 400, "InvalidArguments", "field=to"},
		{"an unknown field", `{"root":"a","to":1,"from":0}`, nil, 400, "InvalidArguments", ""},
		{"an unknown shard", `{"root":"a","to":9}`, control.Refuse(control.ErrInvalidArgument, "shard 9 does not exist: the cluster has shards 0 to 1"), 400, "InvalidArguments", "field=to"},
		{"the same shard", `{"root":"a","to":0}`, control.Refuse(control.ErrInvalidArgument, "agent root \"a\" is on shard 0 already"), 400, "InvalidArguments", "field=to"},
		{"a root never written", `{"root":"a","to":1}`, control.Refuse(control.ErrRootNotPlaced, "agent root \"a\" has never been written"), 404, "NotFound", "field=root"},
		{"a move in progress", `{"root":"a","to":1}`, control.Refuse(control.ErrMoveInProgress, "agent root \"a\" is being moved already"), 409, "Conflict", "reason=move_in_progress"},
		{"a backup in progress", `{"root":"a","to":1}`, control.Refuse(control.ErrBackupInProgress, "backup b1 of the cluster is being taken"), 409, "Conflict", "reason=backup_in_progress"},
		{"an old node", `{"root":"a","to":1}`, &control.VersionError{Node: "n7", Version: 4, Need: control.MoveVersion, What: "moving a root"}, 409, "InvalidState", "node=n7"},
		{"etcd unavailable is retryable", `{"root":"a","to":1}`, fmt.Errorf("%w: down", control.ErrControlPlaneUnavailable), 503, "RoutingUnavailable", ""},
		{"an unexpected error is Internal", `{"root":"a","to":1}`, errors.New("control: etcd said no"), 500, "Internal", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", serve(&fakeMover{err: tc.err}), strings.NewReader(tc.body))
			expectRefusal(t, r, tc.status, tc.code, tc.detail, "control:")
		})
	}
}

// serveAdmin serves the admin handler of a node with opts and returns the URL of path on
// it.
func serveAdmin(t *testing.T, opts rest.Options, path string) string {
	t.Helper()
	s := httptest.NewServer(rest.NewHandler(nil, opts).Admin())
	t.Cleanup(s.Close)
	return s.URL + path
}

// expectRefusal checks an admin route's refusal: its status and code, the detail
// "key=value" ("" for none checked), a message naming none of the packages (their
// prefixes, as "control:"), and Retry-After on a 503.
func expectRefusal(t *testing.T, r response, status int, code, detail string, packages ...string) {
	t.Helper()
	if r.status != status || r.json["code"] != code {
		t.Fatalf("%d %s, want %d %s", r.status, r.body, status, code)
	}
	if k, v, ok := strings.Cut(detail, "="); ok {
		d, _ := r.json["details"].(map[string]any)
		if fmt.Sprint(d[k]) != v {
			t.Fatalf("details.%s = %v, want %s: %s", k, d[k], v, r.body)
		}
	}
	msg, _ := r.json["message"].(string)
	for _, p := range packages {
		if strings.Contains(msg, p) {
			t.Fatalf("the message names a package: %s", r.body)
		}
	}
	if status == 503 && r.header.Get("Retry-After") == "" {
		t.Fatalf("a 503 without Retry-After")
	}
}
