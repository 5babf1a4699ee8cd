package meta

// A path references, per segment list (Entry.ListID), the segments of the longest version
// it keeps of that list: so an append adds references for its new segments only, and
// dropping a version whose list a newer kept version extends changes nothing. account
// moves the counts when a path's chain changes from old to new, O(delta) in segments.
//
// What it moves is defined by listHeads: for each list in old or new, the head of the list
// in old (b) and in new (e); the segments of b past the common length are released and
// those of e past it are taken (all of b's when the list is gone, all of e's when it is
// new). A list whose head is the same entry in both moves nothing. The final state a count
// reaches depends only on which counts are touched and on each one's net change (ref sets
// ZeroSinceMs from the count it leaves), not on the order of the touches.
//
// listHeads builds two maps of the whole chain, which costs a path rewritten up to its
// retention cap (1,000 versions by default) ~200 µs and ~190 KB of garbage per write.
// accountDelta finds the same heads for the lists that changed only: a list whose entries
// are the same elements in both chains keeps its head and moves nothing, so it walks the
// two chains once in step by element version (both descending: a chain is newest first)
// to find the elements added and dropped, and then takes the heads of their lists alone.
// It hands the walk back to listHeads (accountHeads) when a chain is not strictly
// descending, when an entry has no list id (older logs: listHeads names such an entry by
// its position in the chain, so a shift moves its counts too), or when more lists changed
// than it tracks. TestAccountDeltaMatchesListHeads compares the two on random chains.

// listHeads returns, for each segment list a chain holds, its longest member: the
// segments the chain references through that list. Entries without a list id (older
// logs) are each a list of their own.
func listHeads(chain []version) map[uint64]*Entry {
	heads := make(map[uint64]*Entry) // a chain holds few lists: appends share theirs
	for i, el := range chain {
		if el.Entry == nil {
			continue
		}
		id := el.Entry.ListID
		if id == 0 {
			id = 1<<63 | uint64(i) // never a real list id
		}
		if h, ok := heads[id]; !ok || len(el.Entry.Segments) > len(h.Segments) {
			heads[id] = el.Entry
		}
	}
	return heads
}

// account moves the blob reference counts of one path from what chain old references to
// what chain new references (the rules above).
func (a *fileApplier) account(rootUID string, old, new []version) {
	ref := func(segs []Segment, delta int64) { a.ref(rootUID, segs, delta) }
	if !accountDelta(old, new, ref) {
		accountHeads(old, new, ref)
	}
}

// accountHeads moves the counts from old's list heads to new's, over every list.
func accountHeads(old, new []version, ref func([]Segment, int64)) {
	before, after := listHeads(old), listHeads(new)
	for id, b := range before {
		n := 0
		if e, ok := after[id]; ok {
			n = min(len(e.Segments), len(b.Segments))
		}
		ref(b.Segments[n:], -1)
	}
	for id, e := range after {
		n := 0
		if b, ok := before[id]; ok {
			n = min(len(e.Segments), len(b.Segments))
		}
		ref(e.Segments[n:], +1)
	}
}

// maxChangedLists is how many changed lists accountDelta tracks: a write changes one or
// two (its own, and the oldest version's when the cap drops it); a retention pass that
// drops many versions at once goes to accountHeads.
const maxChangedLists = 8

// accountDelta moves the same counts as accountHeads, touching the lists whose elements
// changed only, and reports whether it could; when it reports false it has moved nothing.
func accountDelta(old, new []version, ref func([]Segment, int64)) bool {
	var lists [maxChangedLists]uint64
	changed, moved := 0, false
	note := func(e *Entry) bool {
		moved = true
		if e == nil {
			return true // a tombstone references nothing, but shifts what follows it
		}
		if e.ListID == 0 {
			return false
		}
		for _, id := range lists[:changed] {
			if id == e.ListID {
				return true
			}
		}
		if changed == len(lists) {
			return false
		}
		lists[changed] = e.ListID
		changed++
		return true
	}
	for i, j := 0, 0; i < len(old) || j < len(new); {
		if i+1 < len(old) && old[i+1].Version >= old[i].Version || j+1 < len(new) && new[j+1].Version >= new[j].Version {
			return false
		}
		switch {
		case j == len(new) || i < len(old) && old[i].Version > new[j].Version:
			if !note(old[i].Entry) {
				return false
			}
			i++
		case i == len(old) || new[j].Version > old[i].Version:
			if !note(new[j].Entry) {
				return false
			}
			j++
		default: // the same element, or one replaced in place (a compaction)
			if old[i].Entry != new[j].Entry && !(note(old[i].Entry) && note(new[j].Entry)) {
				return false
			}
			i++
			j++
		}
	}
	if !moved {
		return true // the same elements: every head stays
	}
	// Even when no list changed (a tombstone came or went), the scans look for entries
	// without a list id, whose counts listHeads moves when their position shifts.
	var before, after [maxChangedLists]*Entry
	if !changedHeads(old, lists[:changed], before[:changed]) || !changedHeads(new, lists[:changed], after[:changed]) {
		return false
	}
	for k := range changed {
		b, e := before[k], after[k]
		n := 0
		if b != nil && e != nil {
			n = min(len(e.Segments), len(b.Segments))
		}
		if b != nil {
			ref(b.Segments[n:], -1)
		}
		if e != nil {
			ref(e.Segments[n:], +1)
		}
	}
	return true
}

// changedHeads sets heads[k] to the head of list lists[k] in chain as listHeads picks it
// (the first longest member; nil when the chain holds none), and reports false when an
// entry of chain has no list id.
func changedHeads(chain []version, lists []uint64, heads []*Entry) bool {
	for _, el := range chain {
		e := el.Entry
		if e == nil {
			continue
		}
		if e.ListID == 0 {
			return false
		}
		for k, id := range lists {
			if id == e.ListID {
				if heads[k] == nil || len(e.Segments) > len(heads[k].Segments) {
					heads[k] = e
				}
				break
			}
		}
	}
	return true
}
