package rest_test

import (
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
)

// TestRequireDistinctReviewerRefusesTheProposersDecision: on a node that requires a
// distinct reviewer, the proposer's accept and reject of its own proposal are 403
// PermissionDenied with details.reason "self_review" and change nothing; another
// reviewer's accept publishes it. Without the setting the proposer may decide.
func TestRequireDistinctReviewerRefusesTheProposersDecision(t *testing.T) {
	for _, require := range []bool{true, false} {
		s := newAttribServer(t, workbench.Config{RequireDistinctReviewer: require}, rest.Options{})
		post := func(who, target, body string) response {
			t.Helper()
			return do(t, "POST", s.URL+wb+target, strings.NewReader(body), "Content-Type", "application/json", asHeader, who)
		}
		expect(t, do(t, "PUT", s.URL+wb, nil, asHeader, "alice"), 201, "")
		p := post("alice", "/proposals", `{"path":"outputs/plan.md","text":"v1","request_id":"r1"}`)
		expect(t, p, 201, "")
		id := p.json["proposal_id"].(string)
		accept := `{"disposition":"accept","submission_id":"s1"}`
		if !require {
			expect(t, post("alice", "/proposals/"+id+"/decision", accept), 200, "")
			continue
		}
		for _, body := range []string{accept, `{"disposition":"reject","submission_id":"s2"}`} {
			r := post("alice", "/proposals/"+id+"/decision", body)
			expect(t, r, 403, workbench.CodePermissionDenied)
			if r.json["details"].(map[string]any)["reason"] != workbench.ReasonSelfReview || r.json["retryable"] != false {
				t.Fatalf("self-review: %s", r.body)
			}
		}
		if g := do(t, "GET", s.URL+wb+"/proposals/"+id, nil, asHeader, "bob"); g.json["state"] != "pending" {
			t.Fatalf("after refused self-reviews: %s", g.body)
		}
		expect(t, do(t, "GET", s.URL+wb+"/files/outputs/plan.md", nil, asHeader, "bob"), 404, "NotFound")
		d := post("bob", "/proposals/"+id+"/decision", accept)
		expect(t, d, 200, "")
		if d.json["state"] != "accepted" {
			t.Fatalf("bob's accept: %s", d.body)
		}
	}
}
