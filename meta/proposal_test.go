package meta

import (
	"bytes"
	"testing"
	"time"
)

// propose makes a proposal of data for path at base with the given request id.
func (h *applyHelper) propose(path, requestID string, base uint64, data string, ev ...EvidenceRef) Result {
	h.t.Helper()
	return h.do(ProposalCreate{Agent: "a", Workspace: "w", Path: path, RequestID: requestID,
		ContentHash: digestOf([]byte(data + "\x00" + requestID)), BaseGeneration: base,
		Body:   FileBody{Size: int64(len(data)), Digest: digestOf([]byte(data)), ContentType: "text/plain", Segments: inlineSegs(data)},
		Reason: "because", Evidence: ev})
}

func (h *applyHelper) decide(id, disposition, submission string) Result {
	h.t.Helper()
	return h.do(ProposalDecide{Agent: "a", Workspace: "w", ID: id, Disposition: disposition, Reason: "looked at it",
		SubmissionID: submission, ContentHash: digestOf([]byte(disposition + submission))})
}

func mustOK(t *testing.T, what string, r Result) Result {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("%s: %v", what, r.Err)
	}
	return r
}

func wantConflict(t *testing.T, what string, r Result, reason string) *Error {
	t.Helper()
	if r.Err == nil || r.Err.Code != CodeConflict || r.Err.Reason != reason {
		t.Fatalf("%s: got %+v, want Conflict with reason %q", what, r.Err, reason)
	}
	return r.Err
}

func liveBody(t *testing.T, f *FSM, path string) *Entry {
	t.Helper()
	v := f.View()
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	e, err := v.File(ws, path)
	if err != nil {
		return nil
	}
	return e
}

func TestProposalAcceptPublishesTheProposedBytesAtTheBase(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	base := mustOK(t, "put", h.put("doc.md", "v1")).Generation
	p := mustOK(t, "propose", h.propose("doc.md", "r1", base, "v2", EvidenceRef{Kind: EvidenceFile, Path: "doc.md", Generation: base})).Proposal
	if p.State != ProposalPending || p.ID != ProposalID("a", "w", "doc.md", "r1") || len(p.Evidence) != 1 {
		t.Fatalf("proposal %+v", p)
	}
	if p.Evidence[0].Digest != digestOf([]byte("v1")) || p.Evidence[0].Size != 2 || p.ContextDigest != contextDigest(p.Evidence) {
		t.Fatalf("evidence not frozen: %+v", p.Evidence)
	}
	if e := liveBody(t, h.f, "doc.md"); e.Generation != base {
		t.Fatal("a pending proposal changed the file")
	}
	r := mustOK(t, "accept", h.decide(p.ID, DispositionAccept, "s1"))
	e := liveBody(t, h.f, "doc.md")
	if e.Generation != r.Generation || e.Digest != digestOf([]byte("v2")) || !bytes.Equal(e.Segments[0].Inline, []byte("v2")) || e.Proposal != p.ID {
		t.Fatalf("accepted entry %+v, result %+v", e, r)
	}
	j := r.Judgment
	if j == nil || j.ProposalID != p.ID || j.BaseGeneration != base || j.ResultGeneration != r.Generation ||
		j.Disposition != DispositionAccept || j.SubmissionID != "s1" || j.ContextDigest != p.ContextDigest || r.Proposal.State != ProposalAccepted {
		t.Fatalf("judgment %+v", j)
	}
	if byID, err := h.f.View().Proposals().ByID("a", p.ID); err != nil || byID.State != ProposalAccepted {
		t.Fatalf("by id: %v %v", byID, err)
	}
	if _, err := h.f.View().Proposals().ByID("a", "0123"); CodeOf(err) != CodeNotFound {
		t.Fatalf("unknown id: %v", err)
	}
	js, _, err := h.f.View().Proposals().Judgments("a", "w", "doc.md", 0, 10)
	if err != nil || len(js) != 1 || js[0].ProposalID != p.ID {
		t.Fatalf("judgments %v %v", js, err)
	}
}

func TestProposalRetriesConverge(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	base := mustOK(t, "put", h.put("doc.md", "v1")).Generation
	first := mustOK(t, "propose", h.propose("doc.md", "r1", base, "v2")).Proposal
	again := mustOK(t, "propose again", h.propose("doc.md", "r1", base, "v2"))
	if !again.Replayed || again.Proposal.ID != first.ID || again.Proposal.CreatedVersion != first.CreatedVersion {
		t.Fatalf("retry %+v", again)
	}
	wantConflict(t, "same request id, other body", h.propose("doc.md", "r1", base, "v3"), ReasonRequestReused)
	acc := mustOK(t, "accept", h.decide(first.ID, DispositionAccept, "s1"))
	replay := mustOK(t, "accept again", h.decide(first.ID, DispositionAccept, "s1"))
	if !replay.Replayed || replay.Generation != acc.Generation || replay.Judgment.Version != acc.Judgment.Version {
		t.Fatalf("replayed decision %+v", replay)
	}
	wantConflict(t, "another submission", h.decide(first.ID, DispositionReject, "s2"), ReasonAlreadyDecided)
	wantConflict(t, "same submission, other content", h.decide(first.ID, DispositionReject, "s1"), ReasonSubmissionReused)
	if e := liveBody(t, h.f, "doc.md"); e.Generation != acc.Generation {
		t.Fatal("a replay wrote again")
	}
}

func TestProposalOnAStaleBaseIsRefusedAndMayBeRejected(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	base := mustOK(t, "put", h.put("doc.md", "v1")).Generation
	p1 := mustOK(t, "p1", h.propose("doc.md", "r1", base, "one")).Proposal
	p2 := mustOK(t, "p2", h.propose("doc.md", "r2", base, "two")).Proposal
	head := mustOK(t, "accept p1", h.decide(p1.ID, DispositionAccept, "s1")).Generation
	before := h.f.View()
	e := wantConflict(t, "accept p2", h.decide(p2.ID, DispositionAccept, "s2"), ReasonStale)
	if e.CurrentGeneration != head {
		t.Fatalf("conflict names generation %d, want the head %d", e.CurrentGeneration, head)
	}
	after := h.f.View()
	if got, _ := after.Proposals().Get("a", "w", p2.ID); got.State != ProposalPending || liveBody(t, h.f, "doc.md").Generation != head {
		t.Fatal("a stale accept changed something")
	}
	ws, _ := before.Workspace("a", "w")
	ws2, _ := after.Workspace("a", "w")
	if ws.Revision != ws2.Revision {
		t.Fatal("a stale accept moved the workbench revision")
	}
	r := mustOK(t, "reject p2", h.decide(p2.ID, DispositionReject, "s2"))
	if r.Proposal.State != ProposalRejected || r.Judgment.ResultGeneration != 0 || r.Generation != 0 {
		t.Fatalf("reject %+v", r)
	}
	// A base of 0 means "must not exist".
	p3 := mustOK(t, "p3", h.propose("doc.md", "r3", 0, "new")).Proposal
	wantConflict(t, "accept p3", h.decide(p3.ID, DispositionAccept, "s3"), ReasonStale)
	p4 := mustOK(t, "p4", h.propose("fresh.md", "r4", 0, "new")).Proposal
	mustOK(t, "accept p4", h.decide(p4.ID, DispositionAccept, "s4"))
}

func TestProposalSupersedeClosesThePendingOne(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	base := mustOK(t, "put", h.put("doc.md", "v1")).Generation
	p1 := mustOK(t, "p1", h.propose("doc.md", "r1", base, "one")).Proposal
	r := h.do(ProposalCreate{Agent: "a", Workspace: "w", Path: "doc.md", RequestID: "r2", BaseGeneration: base,
		Body: FileBody{Size: 3, Digest: digestOf([]byte("two")), Segments: inlineSegs("two")}, Supersedes: p1.ID})
	mustOK(t, "p2", r)
	if r.Superseded != p1.ID {
		t.Fatalf("superseded %q", r.Superseded)
	}
	old, _ := h.f.View().Proposals().Get("a", "w", p1.ID)
	if old.State != ProposalSuperseded || old.SupersededBy != r.Proposal.ID {
		t.Fatalf("old %+v", old)
	}
	wantConflict(t, "decide superseded", h.decide(p1.ID, DispositionAccept, "s"), ReasonAlreadyDecided)
	list, _, _ := h.f.View().Proposals().List("a", "w", ProposalFilter{State: ProposalPending}, 0, 10)
	if len(list) != 1 || list[0].ID != r.Proposal.ID {
		t.Fatalf("pending %v", list)
	}
}

func TestProposalEvidenceMustExist(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	base := mustOK(t, "put", h.put("doc.md", "v1")).Generation
	for i, tc := range []struct {
		name  string
		ev    EvidenceRef
		code  Code
		field string
	}{
		{"a generation the path never had", EvidenceRef{Kind: EvidenceFile, Path: "doc.md", Generation: base + 100}, CodeNotFound, "evidence[0].generation"},
		{"a missing file", EvidenceRef{Kind: EvidenceFile, Path: "nope", Generation: base}, CodeNotFound, "evidence[0].generation"},
		{"a missing snapshot", EvidenceRef{Kind: EvidenceSnapshot, SnapshotID: 9}, CodeSnapshotNotFound, "evidence[0].snapshot_id"},
		{"a missing commit", EvidenceRef{Kind: EvidenceCommit, Commit: "abc"}, CodeNotFound, "evidence[0].commit"},
		{"a missing workbench", EvidenceRef{Kind: EvidenceFile, Workspace: "other", Path: "doc.md", Generation: base}, CodeNotFound, "evidence[0].workbench"},
		{"a feed position the feed never held", EvidenceRef{Kind: EvidenceFeed, Position: "99999.0"}, CodeInvalidArguments, "evidence[0].position"},
		{"an unknown kind", EvidenceRef{Kind: "gossip"}, CodeInvalidArguments, "evidence[0].kind"},
	} {
		r := h.propose("doc.md", "r"+string(rune('a'+i)), base, "v2", tc.ev)
		if r.Err == nil || r.Err.Code != tc.code || r.Err.Field != tc.field {
			t.Errorf("%s: got %+v, want %s naming %s", tc.name, r.Err, tc.code, tc.field)
		}
	}
	if list, _, _ := h.f.View().Proposals().List("a", "w", ProposalFilter{}, 0, 10); len(list) != 0 {
		t.Fatalf("a refused proposal was kept: %v", list)
	}
	snap := mustOK(t, "mint", h.do(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1})).Snapshot
	p := mustOK(t, "with snapshot", h.propose("doc.md", "ok", base, "v2", EvidenceRef{Kind: EvidenceSnapshot, SnapshotID: snap.ID})).Proposal
	if p.Evidence[0].Version != snap.ReadVersion || p.Evidence[0].Ref.Workspace != "w" {
		t.Fatalf("snapshot evidence %+v", p.Evidence[0])
	}
}

// TestProposalEvidenceHoldsHistoryUntilReleased: a file version named as evidence stays
// readable at its version after it is superseded, until the proposal's retention ends.
func TestProposalEvidenceHoldsHistoryUntilReleased(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{ProposalRetention: time.Minute, History: pruneAtOnce})}
	g1 := mustOK(t, "put", h.put("ctx.txt", "context")).Generation
	mustOK(t, "doc", h.put("doc.md", "v1"))
	base := liveBody(t, h.f, "doc.md").Generation
	p := mustOK(t, "propose", h.propose("doc.md", "r1", base, "v2", EvidenceRef{Kind: EvidenceFile, Path: "ctx.txt", Generation: g1})).Proposal
	mustOK(t, "overwrite ctx", h.put("ctx.txt", "changed"))
	readAt := func() bool {
		v, err := h.f.View().At(g1)
		if err != nil {
			t.Fatal(err)
		}
		ws, _ := v.Workspace("a", "w")
		e, err := v.File(ws, "ctx.txt")
		return err == nil && e.Generation == g1
	}
	if !readAt() {
		t.Fatal("the evidence version was pruned while the proposal is kept")
	}
	mustOK(t, "reject", h.decide(p.ID, DispositionReject, "s1"))
	for i := 0; i < 70; i++ { // a minute of ticks past the decision
		h.do(Tick{})
	}
	if _, err := h.f.View().Proposals().Get("a", "w", p.ID); CodeOf(err) != CodeNotFound {
		t.Fatalf("decided proposal past retention: %v", err)
	}
	if readAt() {
		t.Fatal("the evidence version outlived the proposal")
	}
}

// TestPendingProposalBlobsAreNotCollected: a pending proposal's non-inline segment holds a
// reference, so GCIntent refuses it; once the proposal expires the blob is collectable.
func TestPendingProposalBlobsAreNotCollected(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{ProposalPendingTTL: time.Minute})}
	mustOK(t, "put", h.putBlob("doc.md", 1, 0))
	base := liveBody(t, h.f, "doc.md").Generation
	seg := Segment{Digest: blobDigest(2), Size: 100}
	p := mustOK(t, "propose", h.do(ProposalCreate{Agent: "a", Workspace: "w", Path: "doc.md", RequestID: "r1", BaseGeneration: base,
		Body: FileBody{Size: 100, Digest: Digest{2}, Segments: []Segment{seg}}})).Proposal
	if br, ok := h.ref(2); !ok || br.Count != 1 {
		t.Fatalf("proposal blob ref %+v %v", br, ok)
	}
	for i := 0; i < 30; i++ {
		h.do(Tick{})
	}
	if r := h.intent(0, zero(2), orphan(2)); accepted(r) != 0 {
		t.Fatal("the collector took a pending proposal's blob")
	}
	for i := 0; i < 40; i++ {
		h.do(Tick{})
	}
	if _, err := h.f.View().Proposals().Get("a", "w", p.ID); CodeOf(err) != CodeNotFound {
		t.Fatalf("pending proposal past its TTL: %v", err)
	}
	if br, _ := h.ref(2); br.Count != 0 {
		t.Fatalf("expired proposal still references its blob: %+v", br)
	}
	if r := h.intent(0, zero(2)); accepted(r) != 1 {
		t.Fatal("an expired proposal's blob is not collectable")
	}
}

// TestAcceptedProposalBlobStaysWithTheFile: after accept the file references the blob;
// when the proposal goes the blob stays referenced by the file.
func TestAcceptedProposalBlobStaysWithTheFile(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{ProposalRetention: time.Minute, History: pruneAtOnce})}
	seg := Segment{Digest: blobDigest(3), Size: 100}
	mustOK(t, "create workbench", h.do(CreateWorkspace{Agent: "a", Name: "w"}))
	p := mustOK(t, "propose", h.do(ProposalCreate{Agent: "a", Workspace: "w", Path: "new.bin", RequestID: "r1",
		Body: FileBody{Size: 100, Digest: Digest{3}, Segments: []Segment{seg}}})).Proposal
	mustOK(t, "accept", h.decide(p.ID, DispositionAccept, "s"))
	if br, _ := h.ref(3); br.Count != 2 {
		t.Fatalf("refs after accept %+v, want the file's and the proposal's", br)
	}
	for i := 0; i < 70; i++ {
		h.do(Tick{})
	}
	if br, _ := h.ref(3); br.Count != 1 {
		t.Fatalf("refs after the proposal went %+v, want the file's", br)
	}
}

// A decided proposal counts against its root's history retention: kept as long as the
// root keeps history by age (here 3 minutes), not only Options.ProposalRetention (1), and
// then it goes with its blob reference.
func TestDecidedProposalsAreKeptForTheRootsRetention(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{ProposalRetention: time.Minute, History: pruneAtOnce})}
	mustOK(t, "create workbench", h.do(CreateWorkspace{Agent: "a", Name: "w"}))
	mustOK(t, "root retention", h.do(SetRetention{Agent: "a", Retention: Retention{Versions: 1, Age: 3 * time.Minute}}))
	seg := Segment{Digest: blobDigest(4), Size: 100}
	p := mustOK(t, "propose", h.do(ProposalCreate{Agent: "a", Workspace: "w", Path: "r.bin", RequestID: "r1",
		Body: FileBody{Size: 100, Digest: Digest{4}, Segments: []Segment{seg}}})).Proposal
	mustOK(t, "reject", h.decide(p.ID, DispositionReject, "s"))
	kept := func() bool { _, err := h.f.View().Proposals().Get("a", "w", p.ID); return err == nil }
	for range 120 { // 2 minutes of command time: past ProposalRetention, within the root's Age
		h.do(Tick{})
	}
	if !kept() {
		t.Fatal("a decided proposal went after Options.ProposalRetention although its root keeps 3 minutes of history")
	}
	for range 70 {
		h.do(Tick{})
	}
	if kept() {
		t.Fatal("a decided proposal outlived its root's retention")
	}
	if br, _ := h.ref(4); br.Count != 0 {
		t.Fatalf("refs after the proposal went %+v, want none", br)
	}
}

func TestProposalsPerRootAreBounded(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{ProposalsMaxPerRoot: 2})}
	mustOK(t, "put", h.put("doc.md", "v1"))
	mustOK(t, "p1", h.propose("doc.md", "r1", 0, "x"))
	mustOK(t, "p2", h.propose("doc.md", "r2", 0, "y"))
	r := h.propose("doc.md", "r3", 0, "z")
	if r.Err == nil || r.Err.Code != CodeResourceExhausted || r.Err.Quota != QuotaProposals || r.Err.Limit != 2 {
		t.Fatalf("third proposal: %+v", r.Err)
	}
}

func TestProposalsSurviveSnapshotRestore(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	base := mustOK(t, "put", h.put("doc.md", "v1")).Generation
	p1 := mustOK(t, "p1", h.propose("doc.md", "r1", base, "one", EvidenceRef{Kind: EvidenceFile, Path: "doc.md", Generation: base})).Proposal
	mustOK(t, "p2", h.propose("doc.md", "r2", base, "two"))
	mustOK(t, "accept", h.decide(p1.ID, DispositionAccept, "s1"))
	var buf bytes.Buffer
	if _, err := h.f.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if got := formatFor(h.f.st); got != 3 {
		t.Fatalf("format %d with proposals, want 3", got)
	}
	g := New(Options{})
	if err := g.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if h.f.StateDigest() != g.StateDigest() {
		t.Fatal("restored state differs")
	}
	for _, f := range []*FSM{h.f, g} {
		list, _, _ := f.View().Proposals().List("a", "w", ProposalFilter{}, 0, 10)
		js, _, _ := f.View().Proposals().Judgments("a", "w", "", 0, 10)
		if len(list) != 2 || len(js) != 1 || js[0].ProposalID != p1.ID {
			t.Fatalf("listing after restore: %d proposals, %d judgments", len(list), len(js))
		}
	}
	// Both replicas keep deciding alike.
	h2 := &applyHelper{t: t, f: g, index: h.index, nowMs: h.nowMs}
	p2 := ProposalID("a", "w", "doc.md", "r2")
	r1, r2 := h.decide(p2, DispositionReject, "s2"), h2.decide(p2, DispositionReject, "s2")
	if r1.Err != nil || r2.Err != nil || h.f.StateDigest() != g.StateDigest() {
		t.Fatalf("replicas diverged: %v %v", r1.Err, r2.Err)
	}
}

func TestProposalsListPagesAndFilters(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	mustOK(t, "put", h.put("a.md", "v1"))
	var ids []string
	for i, path := range []string{"a.md", "b.md", "a.md", "c.md"} {
		ids = append(ids, mustOK(t, "propose", h.propose(path, "r"+string(rune('0'+i)), 0, "x")).Proposal.ID)
	}
	v := h.f.View()
	page, more, _ := v.Proposals().List("a", "w", ProposalFilter{}, 0, 3)
	if len(page) != 3 || !more || page[0].ID != ids[0] {
		t.Fatalf("first page %d more=%v", len(page), more)
	}
	rest, more, _ := v.Proposals().List("a", "w", ProposalFilter{}, page[2].CreatedVersion, 3)
	if len(rest) != 1 || more || rest[0].ID != ids[3] {
		t.Fatalf("second page %d more=%v", len(rest), more)
	}
	onA, _, _ := v.Proposals().List("a", "w", ProposalFilter{Path: "a.md"}, 0, 10)
	if len(onA) != 2 || onA[0].ID != ids[0] || onA[1].ID != ids[2] {
		t.Fatalf("path filter %d", len(onA))
	}
	if _, _, err := v.Proposals().List("a", "nope", ProposalFilter{}, 0, 10); CodeOf(err) != CodeNotFound {
		t.Fatalf("missing workbench: %v", err)
	}
}

// TestPendingProposalIsInvisibleToReads: the proposal's body never reaches the path,
// listings, the index or search.
func TestPendingProposalIsInvisibleToReads(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	mustOK(t, "put", h.put("doc.md", "v1"))
	before := h.f.View()
	mustOK(t, "propose new path", h.propose("secret.md", "r1", 0, "pending-bytes"))
	after := h.f.View()
	ws, _ := after.Workspace("a", "w")
	if _, err := after.File(ws, "secret.md"); CodeOf(err) != CodeNotFound {
		t.Fatalf("proposed path is readable: %v", err)
	}
	entries, _, _ := after.List(ws, "", "", 100)
	if len(entries) != 1 || entries[0].Name != "doc.md" {
		t.Fatalf("listing shows %v", entries)
	}
	if before.st.index.Len() != after.st.index.Len() || before.st.paths.Len() != after.st.paths.Len() {
		t.Fatal("a proposal touched the path records or the secondary index")
	}
}

func TestProposalSupersedeMayMoveToAnotherPath(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	mustOK(t, "put", h.put("readme", "x"))
	p1 := mustOK(t, "p1", h.propose("drafts/a", "r1", 0, "one")).Proposal
	r := h.do(ProposalCreate{Agent: "a", Workspace: "w", Path: "packs/a", RequestID: "r2",
		Body: FileBody{Size: 3, Digest: digestOf([]byte("two")), Segments: inlineSegs("two")}, Supersedes: p1.ID})
	mustOK(t, "revision at another path", r)
	if r.Superseded != p1.ID || r.Proposal.Path != "packs/a" {
		t.Fatalf("superseded %q, path %q", r.Superseded, r.Proposal.Path)
	}
	mustOK(t, "accept the revision", h.decide(r.Proposal.ID, DispositionAccept, "s"))
	if _, err := h.f.View().File(h.ws(), "drafts/a"); CodeOf(err) != CodeNotFound {
		t.Fatalf("the superseded proposal's path was written: %v", err)
	}
	// Another workbench's proposal cannot be superseded.
	mustOK(t, "other workbench", h.do(CreateWorkspace{Agent: "a", Name: "w2"}))
	r = h.do(ProposalCreate{Agent: "a", Workspace: "w2", Path: "x", RequestID: "r3",
		Body: FileBody{Size: 1, Digest: digestOf([]byte("x")), Segments: inlineSegs("x")}, Supersedes: r.Proposal.ID})
	if r.Err == nil || r.Err.Code != CodeNotFound || r.Err.Field != "supersedes" {
		t.Fatalf("cross-workbench supersede: %+v", r.Err)
	}
}

func TestProposalAcceptWithExpectRevisionNeedsAnUnchangedWorkbench(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	mustOK(t, "put", h.put("packs/other", "v1"))
	p := mustOK(t, "p", h.propose("packs/mine", "r1", 0, "mine")).Proposal
	rev := h.ws().Revision
	// Proposing and rejecting publish nothing: the revision stays.
	q := mustOK(t, "q", h.propose("packs/third", "r2", 0, "third")).Proposal
	mustOK(t, "reject q", h.decide(q.ID, DispositionReject, "sq"))
	if h.ws().Revision != rev {
		t.Fatalf("a proposal changed the workbench's revision: %d, was %d", h.ws().Revision, rev)
	}
	mustOK(t, "another file changes", h.put("packs/other", "v2"))
	r := h.do(ProposalDecide{Agent: "a", Workspace: "w", ID: p.ID, Disposition: DispositionAccept, SubmissionID: "s1", ExpectRevision: rev})
	if r.Err == nil || r.Err.Code != CodeConflict || r.Err.Reason != ReasonStale {
		t.Fatalf("accept against an old revision: %+v", r.Err)
	}
	if _, err := h.f.View().File(h.ws(), "packs/mine"); CodeOf(err) != CodeNotFound {
		t.Fatalf("a refused accept wrote the file: %v", err)
	}
	if got, _ := h.f.View().Proposals().Get("a", "w", p.ID); got.State != ProposalPending {
		t.Fatalf("a refused accept decided the proposal: %s", got.State)
	}
	r = h.do(ProposalDecide{Agent: "a", Workspace: "w", ID: p.ID, Disposition: DispositionAccept, SubmissionID: "s2", ExpectRevision: h.ws().Revision})
	mustOK(t, "accept against the current revision", r)
}

// ws returns workbench "w" of root "a" as the FSM holds it now.
func (h *applyHelper) ws() *Workspace {
	h.t.Helper()
	w, err := h.f.View().Workspace("a", "w")
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}
