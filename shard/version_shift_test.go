package shard

import (
	"context"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// importRoot moves agent's root from a scratch FSM whose versions run far ahead of the
// shard's log into s, the way a move's target takes it: after the finish the shard's
// version is its log index plus a shift.
func importRoot(t *testing.T, s *Shard, agent string) {
	t.Helper()
	ctx := context.Background()
	src := meta.New(meta.Options{})
	data, err := meta.EncodeCommand(meta.Header{TimeMs: 1_000_000}, meta.Put{Agent: agent, Workspace: "w", Path: "f",
		CreateWorkspace: true, Size: 1, Segments: []meta.Segment{{Size: 1, Inline: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := src.Apply(100_000, data); r.Err != nil {
		t.Fatal(r.Err)
	}
	ref := meta.MoveRef{Agent: agent, MoveID: "m1"}
	fdata, _ := meta.EncodeCommand(meta.Header{TimeMs: 1_000_001}, meta.MoveFence{MoveRef: ref})
	if r := src.Apply(100_001, fdata); r.Err != nil {
		t.Fatal(r.Err)
	}
	view := src.View()
	root, _ := view.Root(agent)
	mustOK := func(b meta.Body) {
		t.Helper()
		res, err := s.Propose(ctx, meta.Header{}, b)
		if err != nil || res.Err != nil {
			t.Fatalf("%T: %v %v", b, err, res.Err)
		}
	}
	mustOK(meta.MoveImportBegin{MoveRef: ref, RootUID: root.UID})
	var pos meta.MovePosition
	var chunks uint64
	var records int64
	for {
		c, err := view.Moves().Export(agent, pos, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.Records > 0 {
			mustOK(meta.MoveImportChunk{MoveRef: ref, Seq: chunks, Data: c.Data})
			chunks++
			records += c.Records
		}
		if c.Done {
			break
		}
		pos = c.Next
	}
	version, lists, seq := view.Moves().Counters()
	mustOK(meta.MoveImportFinish{MoveRef: ref, Chunks: chunks, Records: records, SourceVersion: version,
		SourceNextListID: lists, SourceSeq: seq})
	mustOK(meta.MoveImportConfirm{MoveRef: ref})
}

// A reader waiting for a version the shard has not applied yet wakes when the shard
// applies it, also once the shard's versions run ahead of its log index (a root moved in).
func TestWaitAppliedWakesByShiftedVersion(t *testing.T) {
	s := openReady(t, t.TempDir(), Config{})
	defer s.Close()
	importRoot(t, s, "moved")
	if v, idx := s.FSM().AppliedVersion(), s.Stats().AppliedIndex; v <= idx+1000 {
		t.Fatalf("version %d does not run ahead of the log index %d", v, idx)
	}
	next := s.FSM().AppliedVersion() + 1
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.WaitApplied(ctx, next)
	}()
	// Propose until the waiter is registered and woken; each proposal applies a version.
	for {
		res, err := s.Propose(context.Background(), meta.Header{}, put("g", "y"))
		if err != nil || res.Err != nil {
			t.Fatalf("propose: %v %v", err, res.Err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("waiting for version %d (applied %d): %v", next, s.FSM().AppliedVersion(), err)
			}
			// ReadViewAt of a version just written serves at once.
			v, err := s.ReadViewAt(context.Background(), res.Version)
			if err != nil || v.Version() < res.Version {
				t.Fatalf("ReadViewAt(%d): %v", res.Version, err)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
