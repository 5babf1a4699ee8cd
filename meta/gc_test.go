package meta

import (
	"bytes"
	"testing"
)

// blobDigest names a test blob.
func blobDigest(n byte) Digest { return Digest{0xb1, n} }

// putBlob publishes path as one non-inline segment of blob n (100 bytes).
func (h *applyHelper) putBlob(path string, n byte, fence uint64) Result {
	h.t.Helper()
	h.index++
	h.nowMs += 1000
	data, err := EncodeCommand(Header{TimeMs: h.nowMs, UploadFence: fence}, Put{Agent: "a", Workspace: "w", Path: path,
		CreateWorkspace: true, Size: 100, Digest: Digest{n}, Segments: []Segment{{Digest: blobDigest(n), Size: 100}}})
	if err != nil {
		h.t.Fatal(err)
	}
	return h.f.Apply(h.index, data)
}

// intent proposes a GCIntent with a grace of graceMs and a take-over age of 10 s.
func (h *applyHelper) intent(graceMs int64, cands ...GCCandidate) Result {
	h.t.Helper()
	r := h.do(GCIntent{Agent: "a", GraceMs: graceMs, TakeOverAfterMs: 10_000, Candidates: cands})
	if r.Err != nil {
		h.t.Fatalf("gc intent: %v", r.Err)
	}
	return r
}

func (h *applyHelper) ref(n byte) (BlobRef, bool) {
	v := h.f.View()
	root, ok := v.Root("a")
	if !ok {
		h.t.Fatal("no root")
	}
	return v.Shard().Blob(root.UID, blobDigest(n))
}

func accepted(r Result) int {
	if r.GC == nil {
		return 0
	}
	return len(r.GC.Accepted)
}

func zero(n byte) GCCandidate   { return GCCandidate{Digest: blobDigest(n)} }
func orphan(n byte) GCCandidate { return GCCandidate{Digest: blobDigest(n), Orphan: true} }

func TestGCIntentIsAcceptedOnlyAtZeroCountAndPastGrace(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	if r := h.intent(0, zero(1)); accepted(r) != 0 {
		t.Fatal("intent accepted on a referenced blob")
	}
	h.putBlob("f", 2, 0) // overwrite: blob 1 drops to zero references
	br, ok := h.ref(1)
	if !ok || br.Count != 0 || br.ZeroSinceMs != h.nowMs || br.Intent {
		t.Fatalf("record after overwrite: %+v %v", br, ok)
	}
	zeroSince := br.ZeroSinceMs
	if r := h.intent(5_000, zero(1)); accepted(r) != 0 { // 1 s after zero, grace 5 s
		t.Fatal("intent accepted inside the grace period")
	}
	for h.nowMs < zeroSince+5_000-1000 {
		h.do(Tick{})
	}
	r := h.intent(5_000, zero(1), zero(2), zero(9)) // exactly at zero since + grace
	if accepted(r) != 1 || r.GC.Accepted[0] != blobDigest(1) || r.GC.IntentVersion != r.Version {
		t.Fatalf("intent past grace: %+v", r.GC)
	}
	br, _ = h.ref(1)
	if !br.Intent || br.IntentVersion != r.Version || br.IntentAtMs != h.nowMs {
		t.Fatalf("record under intent: %+v", br)
	}
	if r := h.intent(0, zero(1)); accepted(r) != 0 {
		t.Fatal("a second intent was accepted on a blob already under intent")
	}
}

func TestPublishReferencingABlobUnderIntentIsRejected(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	gen := h.putBlob("f", 2, 0).Generation
	iv := h.intent(0, zero(1)).GC.IntentVersion
	before := snapshotBytes(t, h.f)
	r := h.putBlob("g", 1, 0)
	if r.Err == nil || r.Err.Code != CodeBlobDeleting {
		t.Fatalf("put of a blob under intent: %+v", r)
	}
	// The rejected put changed nothing but time and version.
	g := New(Options{History: pruneAtOnce})
	if err := g.Restore(before); err != nil {
		t.Fatal(err)
	}
	g.ApplyBody(h.index, Header{TimeMs: h.nowMs}, Tick{})
	if g.StateDigest() != h.f.StateDigest() {
		t.Fatal("a rejected publish changed state")
	}
	r = h.do(Append{Agent: "a", Workspace: "w", Path: "f", ExpectGeneration: gen,
		Segments: []Segment{{Digest: blobDigest(1), Size: 100}}, AppendedBytes: 100, NewSize: 200})
	if r.Err == nil || r.Err.Code != CodeBlobDeleting {
		t.Fatalf("append of a blob under intent: %+v", r)
	}
	r = h.do(Commit{Agent: "a", Workspace: "w", ExpectRevision: gen, Identity: hexID(1),
		ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3),
		Envelope: FileBody{Size: 100, Segments: []Segment{{Digest: blobDigest(1), Size: 100}}}})
	if r.Err == nil || r.Err.Code != CodeBlobDeleting {
		t.Fatalf("commit of an envelope under intent: %+v", r)
	}
	if r := h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(1), IntentVersion: iv}}}); accepted(r) != 1 {
		t.Fatalf("deletion: %+v", r)
	}
	if _, ok := h.ref(1); ok {
		t.Fatal("the record outlived its recorded deletion")
	}
	// Uploaded again after the deletion (fence past it), the blob publishes.
	if r := h.putBlob("g", 1, h.f.View().AppliedVersion()); r.Err != nil {
		t.Fatalf("put after the deletion: %v", r.Err)
	}
	if br, ok := h.ref(1); !ok || br.Count != 1 || br.Intent {
		t.Fatalf("record after re-publish: %+v %v", br, ok)
	}
}

func TestReferencingAgainBeforeIntentCancelsCandidacy(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	h.putBlob("f", 2, 0)
	h.putBlob("g", 1, 0) // blob 1 is referenced again
	for i := 0; i < 5; i++ {
		h.do(Tick{})
	}
	if r := h.intent(1000, zero(1)); accepted(r) != 0 {
		t.Fatal("intent accepted on a blob referenced again")
	}
	h.putBlob("g", 3, 0) // zero again: the grace starts over
	if r := h.intent(3000, zero(1)); accepted(r) != 0 {
		t.Fatal("intent accepted before the restarted grace ended")
	}
	h.do(Tick{})
	h.do(Tick{})
	if r := h.intent(3000, zero(1)); accepted(r) != 1 {
		t.Fatal("intent refused after the restarted grace")
	}
}

func TestDeletionIsRecordedOnlyForRecordsUnderTheNamedIntent(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	h.putBlob("f", 2, 0)
	h.putBlob("g", 3, 0)
	h.putBlob("g", 4, 0) // blobs 1 and 3 at zero; only 1 goes under intent
	iv := h.intent(0, zero(1)).GC.IntentVersion
	r := h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{
		{Digest: blobDigest(1), IntentVersion: iv + 1}, // a stale or foreign sweep's token
		{Digest: blobDigest(3), IntentVersion: iv},     // zero count but not under intent
		{Digest: blobDigest(2), IntentVersion: iv},     // referenced
		{Digest: blobDigest(7), IntentVersion: iv},     // unknown
	}})
	if r.Err != nil || accepted(r) != 0 {
		t.Fatalf("deletion recorded for records not under the named intent: %+v %v", r.GC, r.Err)
	}
	root, _ := h.f.View().Root("a")
	if root.BlobsDeletedVersion != 0 {
		t.Fatalf("BlobsDeletedVersion %d after a deletion that removed nothing", root.BlobsDeletedVersion)
	}
	for _, n := range []byte{1, 2, 3} {
		if _, ok := h.ref(n); !ok {
			t.Fatalf("record of blob %d removed", n)
		}
	}
	r = h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(1), IntentVersion: iv}}})
	if accepted(r) != 1 {
		t.Fatalf("deletion under the named intent: %+v", r.GC)
	}
	if root, _ := h.f.View().Root("a"); root.BlobsDeletedVersion != r.Version {
		t.Fatalf("BlobsDeletedVersion %d, want %d", root.BlobsDeletedVersion, r.Version)
	}
	if r := h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(1), IntentVersion: iv}}}); accepted(r) != 0 {
		t.Fatal("a duplicate deletion was applied twice")
	}
}

func TestOrphanIntentOnlyForDigestsWithoutARecord(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	h.putBlob("f", 2, 0) // 1: record at zero; 2: referenced
	r := h.intent(0, orphan(1), orphan(2), orphan(5))
	if accepted(r) != 1 || r.GC.Accepted[0] != blobDigest(5) {
		t.Fatalf("orphan intent: %+v", r.GC)
	}
	br, ok := h.ref(5)
	if !ok || !br.Intent || br.Count != 0 {
		t.Fatalf("orphan record: %+v %v", br, ok)
	}
	if r := h.putBlob("g", 5, 0); r.Err == nil || r.Err.Code != CodeBlobDeleting {
		t.Fatalf("a writer publishing an orphan under intent: %+v", r.Err)
	}
	if r := h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(5), IntentVersion: r.GC.IntentVersion}}}); accepted(r) != 1 {
		t.Fatal("orphan deletion not recorded")
	}
	if _, ok := h.ref(5); ok {
		t.Fatal("orphan record left behind")
	}
}

func TestALeftoverIntentIsTakenOverOnlyWhenOld(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	h.putBlob("f", 2, 0)
	first := h.intent(0, zero(1)).GC.IntentVersion
	take := GCCandidate{Digest: blobDigest(1), TakeOverVersion: first}
	if r := h.intent(0, take); accepted(r) != 0 { // 1 s old, take-over after 10 s
		t.Fatal("a young intent was taken over")
	}
	if r := h.intent(0, GCCandidate{Digest: blobDigest(1), TakeOverVersion: first + 1}); accepted(r) != 0 {
		t.Fatal("an intent was taken over under the wrong version")
	}
	for i := 0; i < 8; i++ {
		h.do(Tick{})
	}
	r := h.intent(0, take)
	if accepted(r) != 1 {
		t.Fatal("an old intent was not taken over")
	}
	second := r.GC.IntentVersion
	if r := h.intent(0, take); accepted(r) != 0 {
		t.Fatal("an intent was taken over twice under one version")
	}
	if r := h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(1), IntentVersion: first}}}); accepted(r) != 0 {
		t.Fatal("the deposed sweep recorded a deletion")
	}
	if r := h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(1), IntentVersion: second}}}); accepted(r) != 1 {
		t.Fatal("the sweep that took over could not record the deletion")
	}
}

func TestUploadFenceRejectsBlobsWithoutRecordsDeletedAfterIt(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	h.putBlob("f", 2, 0)
	h.putBlob("keep", 3, 0)
	fence := h.f.View().AppliedVersion() // a writer reads this, then finds blob 1 stored
	iv := h.intent(0, zero(1)).GC.IntentVersion
	h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(1), IntentVersion: iv}}})
	if r := h.putBlob("g", 1, fence); r.Err == nil || r.Err.Code != CodeBlobDeleting {
		t.Fatalf("a publish uploaded before a deletion: %+v", r.Err)
	}
	if r := h.putBlob("g", 3, fence); r.Err != nil {
		t.Fatalf("a blob with a live record is safe whatever the fence: %v", r.Err)
	}
	if r := h.putBlob("h", 9, h.f.View().AppliedVersion()); r.Err != nil {
		t.Fatalf("a publish uploaded after the deletion: %v", r.Err)
	}
	if r := h.putBlob("i", 1, 0); r.Err != nil {
		t.Fatalf("an unfenced publish only meets the intent check: %v", r.Err)
	}
}

func TestGCCommandsValidateTheirArguments(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	if r := h.do(GCIntent{Agent: "nobody", TakeOverAfterMs: 1, Candidates: []GCCandidate{zero(1)}}); r.Err == nil || r.Err.Code != CodeNotFound {
		t.Fatalf("intent in a missing root: %+v", r.Err)
	}
	h.putBlob("f", 1, 0)
	for name, b := range map[string]Body{
		"an intent without candidates":        GCIntent{Agent: "a", TakeOverAfterMs: 1},
		"an intent with a negative grace":     GCIntent{Agent: "a", GraceMs: -1, TakeOverAfterMs: 1, Candidates: []GCCandidate{zero(1)}},
		"an intent without a take-over age":   GCIntent{Agent: "a", Candidates: []GCCandidate{zero(1)}},
		"an intent over the batch bound":      GCIntent{Agent: "a", TakeOverAfterMs: 1, Candidates: make([]GCCandidate, MaxGCBatch+1)},
		"a deletion without blobs":            GCDeleted{Agent: "a"},
		"a deletion with an invalid agent id": GCDeleted{Agent: "-", Blobs: []GCBlob{{}}},
	} {
		if r := h.do(b); r.Err == nil || r.Err.Code != CodeInvalidArguments {
			t.Errorf("%s: %+v", name, r.Err)
		}
	}
}

func snapshotBytes(t *testing.T, f *FSM) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	if _, err := f.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func TestGCStateSurvivesSnapshotAndRestore(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	h.putBlob("f", 2, 0)
	h.putBlob("g", 3, 0)
	h.putBlob("g", 4, 0)
	iv := h.intent(0, zero(1), orphan(8)).GC.IntentVersion
	h.intent(0, zero(3))
	h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(3), IntentVersion: iv + 1}}})
	g := New(Options{History: pruneAtOnce})
	if err := g.Restore(snapshotBytes(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if g.StateDigest() != h.f.StateDigest() {
		t.Fatal("restored state differs")
	}
	v := g.View()
	root, _ := v.Root("a")
	if root.BlobsDeletedVersion != h.index {
		t.Fatalf("BlobsDeletedVersion %d after restore, want %d", root.BlobsDeletedVersion, h.index)
	}
	var intents []BlobRef
	v.Shard().Blobs(root.UID, func(b BlobRef) bool {
		if b.Intent {
			intents = append(intents, b)
		}
		return true
	})
	if len(intents) != 2 || intents[0].Digest != blobDigest(1) || intents[1].Digest != blobDigest(8) || intents[0].IntentVersion != iv {
		t.Fatalf("intents after restore: %+v", intents)
	}
	// The restored replica finishes the sweep exactly like the original.
	h.f = g
	if r := h.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: blobDigest(1), IntentVersion: iv}, {Digest: blobDigest(8), IntentVersion: iv}}}); accepted(r) != 2 {
		t.Fatalf("deletion on the restored replica: %+v", r.GC)
	}
	if r := h.putBlob("h", 1, 0); r.Err != nil {
		t.Fatal(r.Err)
	}
}
