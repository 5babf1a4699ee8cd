package meta

import (
	"bytes"
	"testing"
)

// A segment recorded before chunk formats existed has no key 4: it decodes as format 0.
func TestASegmentWithoutAChunkFormatDecodesAsFormatZero(t *testing.T) {
	legacy := struct {
		Digest Digest `cbor:"1,keyasint"`
		Size   int64  `cbor:"2,keyasint"`
	}{Digest{1}, 9 << 20}
	data, err := encMode.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	var sg Segment
	if err := decMode.Unmarshal(data, &sg); err != nil {
		t.Fatal(err)
	}
	if sg.Digest != (Digest{1}) || sg.Size != 9<<20 || sg.Inline != nil || sg.Chunking != 0 {
		t.Errorf("decoded %+v, want the digest and size with Chunking 0", sg)
	}
	// And format 0 still encodes without the key, as before.
	again, err := encMode.Marshal(sg)
	if err != nil || !bytes.Equal(again, data) {
		t.Errorf("a format-0 segment re-encodes to %x, was %x (%v)", again, data, err)
	}
}

// A file written in one format and appended to in another keeps both in its list, through
// the log and a snapshot.
func TestAFileListMixesChunkFormatsAcrossAnAppend(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	old := []Segment{{Digest: Digest{1}, Size: 5 << 20}, {Digest: Digest{2}, Size: 4 << 20}}
	r := h.do(Put{Agent: "a", Workspace: "w", Path: "big", CreateWorkspace: true, Size: 9 << 20, Digest: Digest{9}, Segments: old})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	appended := []Segment{{Digest: Digest{3}, Size: 8 << 20, Chunking: 1}, {Digest: Digest{4}, Size: 1 << 20, Chunking: 1}}
	r = h.do(Append{Agent: "a", Workspace: "w", Path: "big", ExpectGeneration: r.Generation, Segments: appended,
		AppendedBytes: 9 << 20, NewSize: 18 << 20, NewDigest: Digest{8}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	restored := restoredCopy(t, h.f, Options{})
	for name, f := range map[string]*FSM{"applied": h.f, "restored from a snapshot": restored} {
		v := f.View()
		e := v.mustFile(t, "w", "big")
		var got []uint8
		for _, sg := range e.Segments {
			got = append(got, sg.Chunking)
		}
		if len(got) != 4 || got[0] != 0 || got[1] != 0 || got[2] != 1 || got[3] != 1 {
			t.Errorf("%s: segment formats %v, want [0 0 1 1]", name, got)
		}
	}
}

// restoredCopy is a new FSM of opts restored from a snapshot of f.
func restoredCopy(t tb, f *FSM, opts Options) *FSM {
	t.Helper()
	var snap bytes.Buffer
	if _, err := f.Snapshot().WriteTo(&snap); err != nil {
		t.Fatalf("write the snapshot: %v", err)
	}
	restored := New(opts)
	if err := restored.Restore(&snap); err != nil {
		t.Fatalf("restore the snapshot: %v", err)
	}
	return restored
}
