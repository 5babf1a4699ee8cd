package workbench_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
)

func wantGenerationNotFound(t *testing.T, what string, err error) {
	t.Helper()
	var e *workbench.Error
	if !errors.As(err, &e) || e.Code != workbench.CodeNotFound || e.Details["field"] != "generation" {
		t.Fatalf("%s: %v, want NotFound naming generation", what, err)
	}
}

// TestHistoryPagesNewestFirstAndReadsEveryRetainedGeneration: under the default
// retention every version of a file is listed newest first (a delete as a tombstone),
// pages continue through signed cursors bound to their arguments, and every listed body
// opens at its generation with its bytes.
func TestHistoryPagesNewestFirstAndReadsEveryRetainedGeneration(t *testing.T) {
	svc, _ := newService(t, 0)
	ctx := t.Context()
	bodies := map[uint64]string{}
	var gens []uint64
	write := func(body string) {
		res, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt",
			Body: strings.NewReader(body), CreateWorkbench: true})
		if err != nil {
			t.Fatal(err)
		}
		bodies[res.Generation] = body
		gens = append(gens, res.Generation)
	}
	write("one")
	write("two")
	del, err := svc.Writes.Delete(ctx, "a", "w", "outputs/r.txt", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	gens = append(gens, del)
	write("three")

	var got []workbench.HistoryVersion
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := svc.Review.History(ctx, workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt", Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Versions...)
		if page.NextCursor == "" {
			break
		}
		if pages > len(gens) {
			t.Fatal("paging does not end")
		}
		cursor = page.NextCursor
	}
	if len(got) != len(gens) {
		t.Fatalf("%d versions listed, want %d: %+v", len(got), len(gens), got)
	}
	for i, v := range got {
		want := gens[len(gens)-1-i]
		if v.Generation != want || v.Tombstone != (want == del) {
			t.Fatalf("row %d: %+v, want generation %d (tombstone %v)", i, v, want, want == del)
		}
		if v.Tombstone {
			continue
		}
		f, err := svc.Reads.OpenGeneration(ctx, "a", "w", "outputs/r.txt", v.Generation)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.ReadAll(ctx, 1<<20)
		if err != nil || string(b) != bodies[v.Generation] || f.Info.Generation != v.Generation || f.Info.Digest != v.Digest {
			t.Fatalf("generation %d reads %q %v, want %q", v.Generation, b, err, bodies[v.Generation])
		}
		st, err := svc.Reads.StatGeneration(ctx, "a", "w", "outputs/r.txt", v.Generation)
		if err != nil || st.File.Generation != v.Generation || st.File.Size != int64(len(bodies[v.Generation])) {
			t.Fatalf("stat at %d: %+v %v", v.Generation, st, err)
		}
	}
	_, err = svc.Reads.OpenGeneration(ctx, "a", "w", "outputs/r.txt", del)
	wantGenerationNotFound(t, "a delete's generation", err)
	_, err = svc.Reads.OpenGeneration(ctx, "a", "w", "outputs/r.txt", gens[len(gens)-1]+100)
	wantGenerationNotFound(t, "an unknown generation", err)

	first, err := svc.Review.History(ctx, workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		req  workbench.HistoryRequest
	}{
		{"another path", workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/other.txt", Cursor: first.NextCursor}},
		{"a forged cursor", workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt", Cursor: first.NextCursor + "x"}},
		{"a limit beyond the bound", workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt", Limit: workbench.MaxHistoryLimit + 1}},
	} {
		_, err := svc.Review.History(ctx, tt.req)
		var e *workbench.Error
		if !errors.As(err, &e) || e.Code != workbench.CodeInvalidArguments {
			t.Fatalf("%s: %v, want InvalidArguments", tt.name, err)
		}
	}
}

// TestAVersionRetentionReleasesIsCollectedAndARetainedOneIsNot: with a root keeping two
// versions, the third write releases the first body: a sweep deletes its blob and its
// generation no longer reads (NotFound naming generation), while the second body's blob
// stays and reads back at its generation.
func TestAVersionRetentionReleasesIsCollectedAndARetainedOneIsNot(t *testing.T) {
	n := newGCNode(t)
	// The node's default (this node prunes at once) applies to a root that does not exist.
	if r, err := n.svc.Lifecycle.Retention(t.Context(), "a"); err != nil || !r.Default || r.Retention.Versions != 1 {
		t.Fatalf("retention of a root that does not exist: %+v %v", r, err)
	}
	if _, err := n.svc.Lifecycle.SetRetention(t.Context(), "a", meta.Retention{Versions: 2}); err != nil {
		t.Fatal(err)
	}
	g1 := n.write(t, "f", "first body").Generation
	g2 := n.write(t, "f", "second body").Generation
	n.write(t, "f", "third body")
	n.sweepUntil(t, worker.GCOptions{Grace: time.Millisecond}, func(r worker.GCReport) bool { return r.Deleted > 0 })
	if n.stored(t, "first body") {
		t.Fatal("the body retention released is still stored")
	}
	if !n.stored(t, "second body") {
		t.Fatal("the retained body was collected")
	}
	_, err := n.svc.Reads.OpenGeneration(t.Context(), "a", "w", "f", g1)
	wantGenerationNotFound(t, "the released generation", err)
	f, err := n.svc.Reads.OpenGeneration(t.Context(), "a", "w", "f", g2)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := f.ReadAll(t.Context(), 1<<20); err != nil || string(b) != "second body" {
		t.Fatalf("the retained generation reads %q %v", b, err)
	}
}

// TestHistoryNamesTheProposalThatPublishedAVersion: a version an accepted proposal
// published carries the proposal's id in its history row; a direct write carries none.
func TestHistoryNamesTheProposalThatPublishedAVersion(t *testing.T) {
	svc, _ := newService(t, 0)
	ctx := t.Context()
	if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/doc.md",
		Body: strings.NewReader("v1"), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	text := "v2"
	p, err := svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/doc.md", Text: &text, RequestID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	id := p["proposal_id"].(string)
	if _, err := svc.Review.Decide(ctx, "a", workbench.DecideInput{ID: "w", ProposalID: id, Disposition: "accept", SubmissionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Review.History(ctx, workbench.HistoryRequest{Agent: "a", Workbench: "w", Path: "outputs/doc.md"})
	if err != nil || len(res.Versions) != 2 || res.Versions[0].Proposal != id || res.Versions[1].Proposal != "" {
		t.Fatalf("history %+v %v, want the newest version made by proposal %s", res.Versions, err, id)
	}
	rows := svc.Tools.HistoryResultJSON("a", "w", res)["versions"].([]map[string]any)
	if rows[0]["proposal"] != id || rows[1]["proposal"] != nil {
		t.Fatalf("rendered rows %v", rows)
	}
}
