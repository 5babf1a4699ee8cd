package server

import (
	"testing"

	"github.com/cairnstore/cairn/workbench/auth"
)

// TestAuthProposalsNeedTheReviewScopeToDecide: a key that may write root a proposes, but
// deciding needs the review scope: the write-only key's decision is 403 PermissionDenied
// naming it, and the proposal stays pending; the admin key (every scope) decides.
func TestAuthProposalsNeedTheReviewScopeToDecide(t *testing.T) {
	m := newMatrix(t)
	const wb = "/v1/agents/a/workbenches/w"
	mustReply(t, "admin: put", m.on(t, m.full, keyAdmin, "PUT", wb+"/files/outputs/doc.md", "v1"), 201)
	p := mustReply(t, "write-only key proposes", m.on(t, m.full, keyWO, "POST", wb+"/proposals", `{"path":"outputs/doc.md","text":"v2","request_id":"r1"}`), 201)
	id, _ := p.json["proposal_id"].(string)
	denied := mustReply(t, "write-only key decides", m.on(t, m.full, keyWO, "POST", wb+"/proposals/"+id+"/decision", `{"disposition":"accept","submission_id":"s1"}`), 403)
	if want := permissionDenied(m.ids[keyWO], "review proposals of", auth.ScopeReview); string(denied.body) != want {
		t.Fatalf("write-only key's decision: %s, want %s", denied.body, want)
	}
	if got := mustReply(t, "admin: proposal", m.on(t, m.full, keyAdmin, "GET", wb+"/proposals/"+id, ""), 200); got.json["state"] != "pending" {
		t.Fatalf("after a refused decision: %v", got.json)
	}
	if got := mustReply(t, "admin decides", m.on(t, m.full, keyAdmin, "POST", wb+"/proposals/"+id+"/decision", `{"disposition":"accept","submission_id":"s1"}`), 200); got.json["state"] != "accepted" {
		t.Fatalf("admin's decision: %v", got.json)
	}
	if got := mustReply(t, "admin: file", m.on(t, m.full, keyAdmin, "GET", wb+"/files/outputs/doc.md", ""), 200); string(got.body) != "v2" {
		t.Fatalf("file after accept: %q", got.body)
	}
}
