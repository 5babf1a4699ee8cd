package rest_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench/auth"
)

// placedMover is a mover whose cluster holds the roots of placed: a move of another root
// is refused as control.Plane.StartMove refuses it (never written).
type placedMover struct {
	fakeMover
	placed map[string]bool
}

func (f *placedMover) StartMove(ctx context.Context, root string, to int) (control.RootMove, error) {
	if !f.placed[root] {
		return control.RootMove{}, control.NeverWritten(root)
	}
	return f.fakeMover.StartMove(ctx, root, to)
}

// serveAdminAs serves the admin handler of a node with mover m to the principal p (what
// the authentication middleware resolves from an admin key) and returns the URL of the
// root-moves route.
func serveAdminAs(t *testing.T, m rest.RootMover, p auth.Principal) string {
	t.Helper()
	h := rest.NewHandler(nil, rest.Options{Moves: m}).Admin()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(s.Close)
	return s.URL + "/v1/admin/cluster/root-moves"
}

// TestAdminRootMovesAnswerAnotherTenantsRootAsAMissingOne: an admin key of root a (admin
// scope, --agent a) neither moves nor sees root b, which another tenant holds: moving b
// answers byte for byte what moving a root never written answers, and records nothing;
// the listing leaves b's moves out, and b's move by id is as unknown as a made-up id. A
// key of one workbench of a may not move a (the whole root).
func TestAdminRootMovesAnswerAnotherTenantsRootAsAMissingOne(t *testing.T) {
	adminOfA := auth.Principal{ID: "k-a", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeAdmin}}
	held := &placedMover{placed: map[string]bool{"a": true, "b": true}}
	held.moves = []control.RootMove{{ID: "ma", Root: "a", Target: 1, Step: control.MoveDone},
		{ID: "mb", Root: "b", Target: 1, Step: control.MoveDone}}
	u := serveAdminAs(t, held, adminOfA)
	missing := serveAdminAs(t, &placedMover{placed: map[string]bool{"a": true}}, auth.Local)

	other := do(t, "POST", u, strings.NewReader(`{"root":"b","to":1}`))
	never := do(t, "POST", missing, strings.NewReader(`{"root":"b","to":1}`))
	if other.status != 404 || other.status != never.status || !bytes.Equal(other.body, never.body) {
		t.Fatalf("moving another tenant's root: %d %s; a root never written: %d %s", other.status, other.body, never.status, never.body)
	}
	if len(held.moves) != 2 {
		t.Fatalf("a refused move was recorded: %+v", held.moves)
	}
	if r := do(t, "POST", u, strings.NewReader(`{"root":"a","to":1}`)); r.status != 202 {
		t.Fatalf("moving the key's own root: %d %s", r.status, r.body)
	}

	r := do(t, "GET", u, nil)
	if list, _ := r.json["moves"].([]any); r.status != 200 || len(list) != 2 || strings.Contains(string(r.body), `"b"`) {
		t.Fatalf("listing: %d %s, want a's two moves and none of b's", r.status, r.body)
	}
	byID := do(t, "GET", u+"?id=mb", nil)
	unknown := do(t, "GET", u+"?id=mz", nil)
	if byID.status != 404 || string(bytes.ReplaceAll(byID.body, []byte("mb"), []byte("mz"))) != string(unknown.body) {
		t.Fatalf("b's move by id: %d %s; an unknown id: %d %s", byID.status, byID.body, unknown.status, unknown.body)
	}
	if r := do(t, "GET", u+"?root=b", nil); strings.Contains(string(r.body), "mb") {
		t.Fatalf("listing of root b: %s", r.body)
	}

	oneWorkbench := adminOfA
	oneWorkbench.Workbench = "w"
	r = do(t, "POST", serveAdminAs(t, held, oneWorkbench), strings.NewReader(`{"root":"a","to":1}`))
	expectRefusal(t, r, 403, "PermissionDenied", "field=root")
}
