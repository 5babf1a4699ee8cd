package workbench_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func wantCode(t *testing.T, what string, err error, code string) *workbench.Error {
	t.Helper()
	var we *workbench.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
	return we
}

func putText(t *testing.T, svc *workbench.Service, path, text string) uint64 {
	t.Helper()
	r, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path, Body: strings.NewReader(text),
		ContentType: "application/json", CreateWorkbench: true})
	if err != nil {
		t.Fatal(err)
	}
	return r.Generation
}

func TestProposeAndDecideThroughTheService(t *testing.T) {
	for _, inline := range []int64{4096, 0} {
		svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: inline}).Service
		ctx := t.Context()
		base := putText(t, svc, "outputs/doc.json", `{"b":1,"a":[1,2]}`)
		in := workbench.ProposeInput{ID: "w", Path: "outputs/doc.json", BaseGeneration: &base, Text: ptr(`{"a":[1,2],"b":2}`),
			ContentType: ptr("application/json"), Reason: ptr("bump b"), RequestID: "req-1",
			Evidence: []workbench.EvidenceInput{{Kind: "file", Path: "outputs/doc.json", Generation: base}}}
		p, err := svc.Review.Propose(ctx, "a", in)
		if err != nil {
			t.Fatal(err)
		}
		id := p["proposal_id"].(string)
		if p["state"] != "pending" || p["stale"] != false || p["replayed"] != false || p["head_generation"] != base {
			t.Fatalf("proposal %v", p)
		}
		again, err := svc.Review.Propose(ctx, "a", in)
		if err != nil || again["proposal_id"] != id || again["replayed"] != true {
			t.Fatalf("retry %v %v", again, err)
		}
		other := in
		other.Text = ptr(`{"c":3}`)
		e := wantCode(t, "reused request id", func() error { _, err := svc.Review.Propose(ctx, "a", other); return err }(), workbench.CodeConflict)
		if e.Details["reason"] != "request_reused" || e.Retryable {
			t.Fatalf("details %v retryable %v", e.Details, e.Retryable)
		}
		got, err := svc.Tools.Proposals(ctx, "a", workbench.ProposalsInput{ID: "w", ProposalID: &id, IncludeBody: ptr(true)})
		if err != nil || got["text"] != `{"a":[1,2],"b":2}` {
			t.Fatalf("get %v %v", got, err)
		}
		// The proposal's diff against its base, as cairn_diff shows a file's.
		if d, ok := got["diff"].(map[string]any); !ok || d["text"] != true ||
			!strings.Contains(d["unified"].(string), "\n-{\"b\":1,\"a\":[1,2]}\n") || !strings.Contains(d["unified"].(string), "\n+{\"a\":[1,2],\"b\":2}\n") {
			t.Fatalf("diff against the base: %#v", got["diff"])
		}
		// An agent key that may write but not review proposes, never decides.
		agentCtx := auth.WithPrincipal(ctx, auth.Principal{ID: "agent-key", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}})
		e = wantCode(t, "decide without review", func() error {
			_, err := svc.Review.Decide(agentCtx, "a", workbench.DecideInput{ID: "w", ProposalID: id, Disposition: "accept", SubmissionID: "s1"})
			return err
		}(), workbench.CodePermissionDenied)
		if e.Details["scope"] != "review" {
			t.Fatalf("details %v", e.Details)
		}
		dec := workbench.DecideInput{ID: "w", ProposalID: id, Disposition: "accept", Reason: ptr("ok"), SubmissionID: "s1"}
		d, err := svc.Review.Decide(ctx, "a", dec)
		if err != nil {
			t.Fatal(err)
		}
		rb := d["readback"].(map[string]any)
		if d["state"] != "accepted" || rb["bytes_equal"] != true || rb["jcs_equal"] != true || rb["loaded"] != true {
			t.Fatalf("decision %v", d)
		}
		if body := string(readAll(t, svc, "outputs/doc.json")); body != `{"a":[1,2],"b":2}` {
			t.Fatalf("file after accept %q", body)
		}
		replay, err := svc.Review.Decide(ctx, "a", dec)
		if err != nil || replay["replayed"] != true || replay["result_generation"] != d["result_generation"] {
			t.Fatalf("replayed decision %v %v", replay, err)
		}
		// A second proposal on the old base: stale, refused with the head, then rejected.
		p2, err := svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/doc.json", BaseGeneration: &base,
			Text: ptr(`{"b":3}`), RequestID: "req-2"})
		if err != nil || p2["stale"] != true {
			t.Fatalf("second proposal %v %v", p2, err)
		}
		e = wantCode(t, "stale accept", func() error {
			_, err := svc.Review.Decide(ctx, "a", workbench.DecideInput{ID: "w", ProposalID: p2["proposal_id"].(string), Disposition: "accept", SubmissionID: "s2"})
			return err
		}(), workbench.CodeConflict)
		if e.Details["reason"] != "stale" || e.Details["head_generation"] != d["result_generation"] || e.Retryable {
			t.Fatalf("stale details %v", e.Details)
		}
		rej, err := svc.Review.Decide(ctx, "a", workbench.DecideInput{ID: "w", ProposalID: p2["proposal_id"].(string), Disposition: "reject", SubmissionID: "s3"})
		if err != nil || rej["state"] != "rejected" {
			t.Fatalf("reject %v %v", rej, err)
		}
		e = wantCode(t, "decide again", func() error {
			_, err := svc.Review.Decide(ctx, "a", workbench.DecideInput{ID: "w", ProposalID: id, Disposition: "reject", SubmissionID: "s4"})
			return err
		}(), workbench.CodeConflict)
		if e.Details["reason"] != "already_decided" || e.Details["state"] != "accepted" {
			t.Fatalf("already decided details %v", e.Details)
		}
		js, err := svc.Tools.Proposals(ctx, "a", workbench.ProposalsInput{ID: "w", Judgments: ptr(true), Path: ptr("outputs/doc.json")})
		if err != nil || len(js["judgments"].([]map[string]any)) != 2 {
			t.Fatalf("judgments %v %v", js, err)
		}
	}
}

func TestProposeAnEditResolvesAgainstTheHead(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	ctx := t.Context()
	base := putText(t, svc, "outputs/notes.txt", "alpha beta gamma")
	p, err := svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/notes.txt",
		Edit: &workbench.ProposalEdit{OldString: "beta", NewString: "BETA"}, RequestID: "e1"})
	if err != nil || p["base_generation"] != base {
		t.Fatalf("edit proposal %v %v", p, err)
	}
	id := p["proposal_id"].(string)
	got, _ := svc.Tools.Proposals(ctx, "a", workbench.ProposalsInput{ID: "w", ProposalID: &id, IncludeBody: ptr(true)})
	if got["text"] != "alpha BETA gamma" {
		t.Fatalf("resolved edit %v", got["text"])
	}
	if body := string(readAll(t, svc, "outputs/notes.txt")); body != "alpha beta gamma" {
		t.Fatal("a pending edit proposal changed the file")
	}
	old := base - 1
	wantCode(t, "edit at another base", func() error {
		_, err := svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/notes.txt", BaseGeneration: &old,
			Edit: &workbench.ProposalEdit{OldString: "beta", NewString: "x"}, RequestID: "e2"})
		return err
	}(), workbench.CodeConflict)
	wantCode(t, "no match", func() error {
		_, err := svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/notes.txt",
			Edit: &workbench.ProposalEdit{OldString: "delta", NewString: "x"}, RequestID: "e3"})
		return err
	}(), workbench.CodeNoMatch)
	// An edit of a path that holds no file says so, rather than comparing generations.
	e := wantCode(t, "edit of a missing file", func() error {
		_, err := svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/absent.txt",
			Edit: &workbench.ProposalEdit{OldString: "beta", NewString: "x"}, RequestID: "e4"})
		return err
	}(), workbench.CodeConflict)
	if e.Message != "an edit applies to an existing file: the path has no file" || e.Details["head_generation"] != uint64(0) {
		t.Errorf("edit of a missing file: %q %v", e.Message, e.Details)
	}
}

func TestProposalListPagesWithSignedCursors(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	ctx := t.Context()
	putText(t, svc, "outputs/x", "x")
	for _, r := range []string{"r1", "r2", "r3"} {
		if _, err := svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/y", BaseGeneration: ptr(uint64(0)), Text: ptr(r), RequestID: r}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := svc.Tools.Proposals(ctx, "a", workbench.ProposalsInput{ID: "w", Limit: ptr(2)})
	if err != nil || len(page["proposals"].([]workbench.Result)) != 2 || page["next_cursor"] == nil {
		t.Fatalf("first page %v %v", page, err)
	}
	next, err := svc.Tools.Proposals(ctx, "a", workbench.ProposalsInput{ID: "w", Limit: ptr(2), Cursor: ptr(page["next_cursor"].(string))})
	if err != nil || len(next["proposals"].([]workbench.Result)) != 1 || next["next_cursor"] != nil {
		t.Fatalf("second page %v %v", next, err)
	}
	wantCode(t, "cursor with another filter", func() error {
		_, err := svc.Tools.Proposals(ctx, "a", workbench.ProposalsInput{ID: "w", State: ptr("pending"), Cursor: ptr(page["next_cursor"].(string))})
		return err
	}(), workbench.CodeInvalidArguments)
}

// TestJCSRFC8785Vectors checks the canonicalization against the vectors published with
// RFC 8785 (testdata/jcs: input and expected output per file).
func TestJCSRFC8785Vectors(t *testing.T) {
	jcsVectors(t)
}
