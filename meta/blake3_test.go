package meta

import (
	"bytes"
	"reflect"
	"testing"
)

// legacySegment is Segment as a release before BLAKE3 digests decodes it (keys 1 to 4).
type legacySegment struct {
	Digest   Digest `cbor:"1,keyasint"`
	Size     int64  `cbor:"2,keyasint"`
	Inline   []byte `cbor:"3,keyasint,omitempty"`
	Chunking uint8  `cbor:"4,keyasint,omitempty"`
}

// A segment recorded before BLAKE3 digests has no key 5: it decodes with a zero Blake3
// (read verifies it by Digest) and re-encodes to the same bytes.
func TestASegmentWithoutABlake3DecodesAsNoneRecorded(t *testing.T) {
	data, err := encMode.Marshal(legacySegment{Digest: Digest{1}, Size: 9 << 20, Chunking: 1})
	if err != nil {
		t.Fatal(err)
	}
	var sg Segment
	if err := decMode.Unmarshal(data, &sg); err != nil {
		t.Fatal(err)
	}
	if sg.Digest != (Digest{1}) || sg.Size != 9<<20 || sg.Chunking != 1 || sg.Blake3 != (Blake3{}) {
		t.Errorf("decoded %+v, want the digest, size and format with a zero Blake3", sg)
	}
	again, err := encMode.Marshal(sg)
	if err != nil || !bytes.Equal(again, data) {
		t.Errorf("a segment without a BLAKE3 re-encodes to %x, was %x (%v)", again, data, err)
	}
}

// A release that does not know key 5 decodes a new segment as it always did: the key is
// skipped, every other field is the same.
func TestAnOlderReleaseDecodesASegmentWithABlake3WithoutIt(t *testing.T) {
	sg := Segment{Digest: Digest{2}, Size: 5 << 20, Chunking: 1, Blake3: Blake3{3}}
	data, err := encMode.Marshal(sg)
	if err != nil {
		t.Fatal(err)
	}
	var old legacySegment
	if err := decMode.Unmarshal(data, &old); err != nil {
		t.Fatalf("an older release fails to decode a segment with a BLAKE3: %v", err)
	}
	if !reflect.DeepEqual(old, legacySegment{Digest: Digest{2}, Size: 5 << 20, Chunking: 1}) {
		t.Errorf("an older release decodes %+v", old)
	}
}

// stripBlake3 is what a replica of an older release keeps of segs.
func stripBlake3(segs []Segment) []Segment {
	out := make([]Segment, len(segs))
	for i, sg := range segs {
		sg.Blake3 = Blake3{}
		out[i] = sg
	}
	return out
}

// The FSM never judges a BLAKE3: a log whose segments carry them and the same log as an
// older release decodes it (without them) answer every command alike and hold the same
// files but for the BLAKE3, which survives puts, appends, restores through a snapshot.
func TestTheFSMAppliesALogAlikeWithAndWithoutBlake3Digests(t *testing.T) {
	big := []Segment{{Digest: Digest{1}, Size: 5 << 20, Chunking: 1, Blake3: Blake3{11}}, {Digest: Digest{2}, Size: 4 << 20, Chunking: 1, Blake3: Blake3{12}}}
	more := []Segment{{Digest: Digest{3}, Size: 1 << 20, Blake3: Blake3{13}}}
	log := func(segs func([]Segment) []Segment) []Body {
		return []Body{
			Put{Agent: "a", Workspace: "w", Path: "big", CreateWorkspace: true, Size: 9 << 20, Digest: Digest{9}, Segments: segs(big)},
			Append{Agent: "a", Workspace: "w", Path: "big", ExpectGeneration: 1, Segments: segs(more), AppendedBytes: 1 << 20, NewSize: 10 << 20, NewDigest: Digest{8}},
			Put{Agent: "a", Workspace: "w", Path: "copy", Size: 10 << 20, Digest: Digest{8}, Segments: segs(append(append([]Segment(nil), big...), more...))},
			Put{Agent: "a", Workspace: "w", Path: "big", Cond: CondIfGeneration, IfGeneration: 99, Size: 1 << 20, Digest: Digest{7}, Segments: segs(more)},
		}
	}
	withSums := &applyHelper{t: t, f: New(Options{})}
	without := &applyHelper{t: t, f: New(Options{})}
	newLog, oldLog := log(func(s []Segment) []Segment { return s }), log(stripBlake3)
	for i := range newLog {
		a, b := withSums.do(newLog[i]), without.do(oldLog[i])
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("command %d: answered %+v with BLAKE3 digests, %+v without", i, a, b)
		}
		if failed, last := a.Err != nil, i == len(newLog)-1; failed != last {
			t.Fatalf("command %d: error %v (only the last, a put at a wrong generation, fails)", i, a.Err)
		}
	}
	restored := restoredCopy(t, withSums.f, Options{})
	want := map[string][]Segment{"big": append(append([]Segment(nil), big...), more...), "copy": append(append([]Segment(nil), big...), more...)}
	for path, segs := range want {
		for name, f := range map[string]*FSM{"applied": withSums.f, "restored from a snapshot": restored, "applied without": without.f} {
			e := liveBody(t, f, path)
			if e == nil {
				t.Fatalf("%s, %s: no live file", path, name)
			}
			wantSegs := segs
			if f == without.f {
				wantSegs = stripBlake3(segs)
			}
			if !reflect.DeepEqual(e.Segments, wantSegs) {
				t.Errorf("%s, %s: segments %+v, want %+v", path, name, e.Segments, wantSegs)
			}
		}
	}
}

// FuzzSegmentCBOR: every segment survives its CBOR encoding (a zero Blake3 leaves key 5
// out, any other is kept whole), and bytes that decode as a segment re-encode to a
// segment that decodes to the same value.
func FuzzSegmentCBOR(f *testing.F) {
	f.Add([]byte{1}, int64(3), []byte("abc"), uint8(0), []byte{})
	f.Add([]byte{2, 3}, int64(9<<20), []byte(nil), uint8(1), bytes.Repeat([]byte{7}, 32))
	f.Add([]byte{}, int64(-1), []byte{}, uint8(255), []byte{0, 0, 1})
	f.Fuzz(func(t *testing.T, digest []byte, size int64, inline []byte, chunking uint8, sum []byte) {
		sg := Segment{Size: size, Inline: inline, Chunking: chunking}
		copy(sg.Digest[:], digest)
		copy(sg.Blake3[:], sum)
		if len(inline) == 0 {
			sg.Inline = nil // omitempty: an empty inline slice is not kept
		}
		data, err := encMode.Marshal(sg)
		if err != nil {
			t.Fatal(err)
		}
		var got Segment
		if err := decMode.Unmarshal(data, &got); err != nil {
			t.Fatalf("decoding %x: %v", data, err)
		}
		if !reflect.DeepEqual(got, sg) {
			t.Fatalf("round trip %+v -> %+v", sg, got)
		}
		var keys map[int]any
		if err := decMode.Unmarshal(data, &keys); err != nil {
			t.Fatal(err)
		}
		if _, has := keys[5]; has == (sg.Blake3 == Blake3{}) {
			t.Fatalf("key 5 present: %v, for the Blake3 %x", has, sg.Blake3)
		}
		// Arbitrary bytes as input: whatever decodes as a segment re-encodes stably.
		var again Segment
		if err := decMode.Unmarshal(append(bytes.Clone(digest), sum...), &again); err != nil {
			return
		}
		if len(again.Inline) == 0 {
			again.Inline = nil // an empty array or string decodes to an empty slice, which omitempty drops
		}
		data2, err := encMode.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		var third Segment
		if err := decMode.Unmarshal(data2, &third); err != nil || !reflect.DeepEqual(third, again) {
			t.Fatalf("re-encoded %+v decodes to %+v (%v)", again, third, err)
		}
	})
}
