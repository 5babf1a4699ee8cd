package meta

import (
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// doAs applies b as principal through surface.
func (h *applyHelper) doAs(principal, surface string, b Body) Result {
	h.t.Helper()
	h.index++
	h.nowMs += 1000
	data, err := EncodeCommand(Header{TimeMs: h.nowMs, Principal: principal, Surface: surface}, b)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.f.Apply(h.index, data)
}

func putBody(ws, path, data string) Put {
	return Put{Agent: "a", Workspace: ws, Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Digest: digestOf([]byte(data)), Segments: inlineSegs(data)}
}

// TestProducersAreRecordedFromTheCommand: every revision, the workbench, snapshot, commit
// and restore records name the principal and surface of the command that made them; a
// restore's revisions name the restore's producer whoever proposes its later steps.
func TestProducersAreRecordedFromTheCommand(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: Retention{Versions: 1, Age: time.Hour}})}
	alice := Producer{Principal: "alice", Surface: "rest/put"}
	bob := Producer{Principal: "bob", Surface: "mcp/workbench_append"}
	if r := h.doAs("alice", "rest/put", putBody("w", "f", "one")); r.Err != nil {
		t.Fatal(r.Err)
	}
	v := h.f.View()
	ws, _ := v.Workspace("a", "w")
	e, _ := v.File(ws, "f")
	if e.Producer != alice || ws.Producer != alice {
		t.Fatalf("after alice's put: entry %+v workbench %+v", e.Producer, ws.Producer)
	}
	r := h.doAs("bob", "mcp/workbench_append", Append{Agent: "a", Workspace: "w", Path: "f", ExpectGeneration: e.Generation,
		Segments: inlineSegs("+"), AppendedBytes: 1, NewSize: 4, NewDigest: digestOf([]byte("one+"))})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	v = h.f.View()
	ws, _ = v.Workspace("a", "w")
	e2, _ := v.File(ws, "f")
	if e2.Producer != bob || ws.Producer != bob {
		t.Fatalf("after bob's append: entry %+v workbench %+v", e2.Producer, ws.Producer)
	}
	// The older revision keeps its producer.
	old, _, _ := v.Lifecycle().VersionView(ws, e.Generation)
	if oe, _ := old.File(ws, "f"); oe == nil || oe.Producer != alice {
		t.Fatalf("the older revision: %+v", oe)
	}
	snap := h.doAs("bob", "mcp/workbench_snapshot", SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1}).Snapshot
	if want := (Producer{"bob", "mcp/workbench_snapshot"}); snap.Producer != want {
		t.Fatalf("snapshot producer %+v", snap.Producer)
	}
	ws, _ = h.f.View().Workspace("a", "w")
	cm := h.doAs("alice", "rest/commit", Commit{Agent: "a", Workspace: "w", ExpectRevision: ws.Revision, Identity: hexID(1),
		ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody("{}")})
	if want := (Producer{"alice", "rest/commit"}); cm.Err != nil || cm.Commit.Producer != want {
		t.Fatalf("commit: %+v", cm)
	}
	src, _ := h.f.View().Workspace("a", "w")
	restorer := Producer{"carol", "rest/restore"}
	begin := h.doAs("carol", "rest/restore", RestoreBegin{Agent: "a", OpID: hexID(9), Source: "w", SourceIncarnation: src.Incarnation,
		SnapshotID: snap.ID, Destination: "d"})
	if begin.Err != nil || begin.Restore.Producer != restorer {
		t.Fatalf("restore begin: %+v", begin)
	}
	// The node's own work (a worker resuming the restore) proposes the later steps.
	if r := h.do(RestoreCopy{Agent: "a", OpID: hexID(9), Limit: 10}); r.Err != nil || !r.Restore.CopyDone {
		t.Fatalf("copy: %+v", r)
	}
	fin := h.do(RestoreFinish{Agent: "a", OpID: hexID(9), Manifest: envBody(`{"r":1}`), Identity: hexID(2),
		ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody(`{"c":1}`)})
	if fin.Err != nil || fin.Commit.Producer != restorer {
		t.Fatalf("finish: %+v", fin)
	}
	v = h.f.View()
	dst, _ := v.Workspace("a", "d")
	for _, p := range []string{"f", RestoreManifestPath, RunManifestPath} {
		if de, _ := v.File(dst, p); de == nil || de.Producer != restorer {
			t.Fatalf("restored %s: %+v", p, de)
		}
	}
	if dst.Producer != restorer {
		t.Fatalf("restored workbench producer %+v", dst.Producer)
	}
	ret := h.doAs("alice", "mcp/workbench_snapshot_retire", SnapshotRetire{Agent: "a", Workspace: "w", ID: snap.ID})
	if want := (Producer{"alice", "mcp/workbench_snapshot_retire"}); ret.Err != nil || ret.Snapshot.RetiredBy != want || ret.Snapshot.Producer.Principal != "bob" {
		t.Fatalf("retire: %+v", ret)
	}
	// A snapshot of the state and a restore from it keep every producer.
	g := New(Options{History: Retention{Versions: 1, Age: time.Hour}})
	if err := g.Restore(snapshotBytes(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if g.StateDigest() != h.f.StateDigest() {
		t.Fatal("restored state differs")
	}
	gv := g.View()
	gws, _ := gv.Workspace("a", "w")
	if ge, _ := gv.File(gws, "f"); ge == nil || ge.Producer != bob {
		t.Fatalf("after restore: %+v", ge)
	}
}

// TestCommandsWithoutProducerDecodeEmpty: a command encoded before Header.Surface existed
// (format 1 without key 6) decodes with no surface, and its revision has no producer.
func TestCommandsWithoutProducerDecodeEmpty(t *testing.T) {
	type oldHeader struct {
		TimeMs    int64  `cbor:"1,keyasint"`
		RequestID string `cbor:"2,keyasint,omitempty"`
	}
	type oldEnvelope struct {
		Format uint16          `cbor:"1,keyasint"`
		Op     Op              `cbor:"2,keyasint"`
		Header oldHeader       `cbor:"3,keyasint"`
		Body   cbor.RawMessage `cbor:"4,keyasint"`
	}
	body, err := encMode.Marshal(putBody("w", "f", "x"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := encMode.Marshal(oldEnvelope{Format: 1, Op: OpPut, Header: oldHeader{TimeMs: 5}, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := DecodeCommand(data)
	if err != nil || h.Surface != "" || h.Principal != "" || !h.Producer().IsZero() {
		t.Fatalf("decoded %+v, %v", h, err)
	}
	f := New(Options{})
	if r := f.Apply(1, data); r.Err != nil {
		t.Fatal(r.Err)
	}
	v := f.View()
	ws, _ := v.Workspace("a", "w")
	e, _ := v.File(ws, "f")
	if !e.Producer.IsZero() || e.Producer.String() != "" {
		t.Fatalf("producer %+v", e.Producer)
	}
	// An entry without a producer encodes exactly as before producers existed.
	enc, err := encMode.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[int]cbor.RawMessage
	if err := decMode.Unmarshal(enc, &keys); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys[11]; ok {
		t.Fatalf("an empty producer is encoded: %x", enc)
	}
}

func TestProducerString(t *testing.T) {
	for _, c := range []struct {
		p    Producer
		want string
	}{
		{Producer{}, ""},
		{Producer{Principal: "k1"}, "k1"},
		{Producer{Surface: "rest/put"}, "via rest/put"},
		{Producer{Principal: "k1", Surface: "mcp/workbench_edit"}, "k1 via mcp/workbench_edit"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}
