package meta

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// Compaction thresholds (docs/architecture.md#the-write-path): a live file whose segment list has grown to at
// least CompactMinSegments segments and ends in a small segment is a compaction
// candidate; runs of segments smaller than CompactSmallSegmentBytes are rolled up.
const (
	CompactMinSegments       = 32
	CompactSmallSegmentBytes = 1 << 20
)

// Compact replaces the segments [Start, End) of a live file with Replacement, which holds
// the same bytes in fewer segments. It applies only while those segments are unchanged
// (RangeDigest = SegmentsDigest of them): so it never loses to, or blocks, concurrent
// appends, which only add segments after End. The file's digest, size, generation and
// revision do not change; nothing visible changes but the segment layout.
type Compact struct {
	Agent       string    `cbor:"1,keyasint"`
	Workspace   string    `cbor:"2,keyasint"`
	Path        string    `cbor:"3,keyasint"`
	Start       int       `cbor:"4,keyasint"`
	End         int       `cbor:"5,keyasint"`
	RangeDigest Digest    `cbor:"6,keyasint"`
	Replacement []Segment `cbor:"7,keyasint"`
}

func (Compact) Op() Op { return OpCompact }

// SegmentsDigest identifies a run of segments: SHA-256 over each segment's digest and
// size. Inline bytes are covered by their digest.
func SegmentsDigest(segs []Segment) Digest {
	h := sha256.New()
	var n [8]byte
	for _, sg := range segs {
		h.Write(sg.Digest[:])
		binary.BigEndian.PutUint64(n[:], uint64(sg.Size))
		h.Write(n[:])
	}
	var d Digest
	copy(d[:], h.Sum(nil))
	return d
}

// compactable reports whether a live entry is a compaction candidate, in O(1).
func compactable(e *Entry) bool {
	if e == nil {
		return false
	}
	n := len(e.Segments)
	return n >= CompactMinSegments && e.Segments[n-1].Size < CompactSmallSegmentBytes
}

func (a *fileApplier) compact(c Compact) Result {
	ws, err := a.target(c.Agent, c.Workspace, c.Path, false)
	if err != nil {
		return Result{Err: err}
	}
	s := a.st
	key := pathKey(ws.Incarnation, c.Path)
	rec, cur := a.current(ws, c.Path)
	if cur == nil {
		return Result{Err: errorf(CodeNotFound, "the file does not exist")}
	}
	if c.Start < 0 || c.End <= c.Start || c.End > len(cur.Segments) {
		return Result{Err: &Error{Code: CodeConflict, Message: "the segment range [" + strconv.Itoa(c.Start) + ", " + strconv.Itoa(c.End) + ") is not in the file any more"}}
	}
	old := cur.Segments[c.Start:c.End]
	if SegmentsDigest(old) != c.RangeDigest {
		return Result{Err: &Error{Code: CodeConflict, Message: "the segments to compact changed"}}
	}
	var oldSize int64
	for _, sg := range old {
		oldSize += sg.Size
	}
	if err := validateSegments("replacement", c.Replacement, oldSize); err != nil {
		return Result{Err: err}
	}
	if len(c.Replacement) == 0 || len(c.Replacement) >= len(old) {
		return Result{Err: invalidArg("replacement", "must hold the range in fewer segments (%d for %d)", len(c.Replacement), len(old))}
	}
	if err := a.checkPublishable(c.Agent, c.Replacement); err != nil {
		return Result{Err: err}
	}
	root, _ := s.roots.Get(c.Agent)
	segs := make([]Segment, 0, len(cur.Segments)-len(old)+len(c.Replacement))
	segs = append(append(append(segs, cur.Segments[:c.Start]...), c.Replacement...), cur.Segments[c.End:]...)
	ne := *cur
	ne.Segments = segs
	ne.ListID = s.newListID()
	chain := make([]version, len(rec.Chain))
	copy(chain, rec.Chain)
	chain[0].Entry = &ne // same version, same bytes: readers at any version see the same body
	a.storeChain(root.UID, key, chain)
	return Result{Generation: ne.Generation, Size: ne.Size, Digest: ne.Digest, RootUID: root.UID}
}

// CompactionCandidate is a live file whose segment list is worth compacting.
type CompactionCandidate struct {
	Agent, Workspace, Path string
	Entry                  *Entry
}

// CompactionCandidates returns up to limit live files with long segment lists ending in
// small segments, in key order after the path key after ("" = from the start), and the
// key to continue after.
func (sv ShardView) CompactionCandidates(after string, limit int) (out []CompactionCandidate, next string) {
	incs := map[uint64]*Workspace{}
	sv.v.st.workspaces.Scan(func(_ string, ws *Workspace) bool {
		if ws.State == WorkspaceVisible {
			incs[ws.Incarnation] = ws
		}
		return true
	})
	sv.v.st.compactable.Ascend(after, func(k string, _ struct{}) bool {
		if k <= after {
			return true
		}
		if len(out) == limit {
			return false
		}
		next = k
		ws := incs[binaryU64(k[:incarnationKeySize])]
		rec, ok := sv.v.st.paths.Get(k)
		if ws == nil || !ok || rec.live() == nil {
			return true
		}
		out = append(out, CompactionCandidate{Agent: ws.Agent, Workspace: ws.Name, Path: keyPath(k), Entry: rec.live()})
		return true
	})
	if len(out) < limit {
		next = ""
	}
	return out, next
}

// trackCompactable keeps the candidate set in step with a path's live entry.
func (s *state) trackCompactable(key string, live *Entry) {
	if live != nil && compactable(live) {
		s.compactable.Set(key, struct{}{})
	} else {
		s.compactable.Delete(key)
	}
}
