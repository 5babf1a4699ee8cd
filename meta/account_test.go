package meta

import (
	"math/rand/v2"
	"testing"
)

// TestAccountDeltaMatchesListHeads: on random chains and random changes of them (versions
// added in front, dropped anywhere, replaced in place as a compaction does, entries of
// older logs without a list id, chains out of order), accountDelta touches exactly the
// counts accountHeads touches, each by the same net change, whenever it does not hand the
// walk back; and it takes most of the cases itself.
func TestAccountDeltaMatchesListHeads(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	var pool [10]Digest
	for i := range pool {
		pool[i][0] = byte(i + 1)
	}
	segment := func() Segment {
		if rng.IntN(3) == 0 {
			return Segment{Size: 1, Inline: []byte{1}}
		}
		return Segment{Size: 1, Digest: pool[rng.IntN(len(pool))]}
	}
	// lists holds each list's segments; a member covers a prefix of them, as appends do,
	// or (one in eight) segments of its own, which no write makes but the rules define.
	lists := map[uint64][]Segment{}
	entry := func() *Entry {
		if rng.IntN(10) == 0 {
			return nil // a tombstone
		}
		id := uint64(rng.IntN(5))
		if rng.IntN(20) != 0 && id == 0 {
			id = 1 + uint64(rng.IntN(4))
		}
		segs := lists[id]
		for len(segs) < 4 {
			segs = append(segs, segment())
		}
		lists[id] = segs
		n := 1 + rng.IntN(len(segs))
		own := segs[:n:n]
		if rng.IntN(8) == 0 {
			own = []Segment{segment(), segment()}[:1+rng.IntN(2)]
		}
		return &Entry{ListID: id, Segments: own}
	}
	record := func(touched map[Digest]int64) func([]Segment, int64) {
		return func(segs []Segment, delta int64) {
			for _, sg := range segs {
				if !sg.IsInline() {
					touched[sg.Digest] += delta
				}
			}
		}
	}
	took := 0
	const cases = 20000
	for c := range cases {
		var old []version
		v := uint64(1000)
		for range rng.IntN(12) {
			v -= 1 + uint64(rng.IntN(3))
			old = append(old, version{Version: v, Entry: entry()})
		}
		var next []version
		top := uint64(1000)
		for range rng.IntN(3) { // written in front
			top += 1 + uint64(rng.IntN(3))
			next = append([]version{{Version: top, Entry: entry()}}, next...)
		}
		for _, el := range old {
			switch rng.IntN(6) {
			case 0: // dropped
			case 1: // replaced in place
				next = append(next, version{Version: el.Version, Entry: entry()})
			default:
				next = append(next, el)
			}
		}
		if rng.IntN(25) == 0 && len(next) > 1 { // out of order
			k := rng.IntN(len(next) - 1)
			next[k], next[k+1] = next[k+1], next[k]
		}
		want, got := map[Digest]int64{}, map[Digest]int64{}
		accountHeads(old, next, record(want))
		if !accountDelta(old, next, record(got)) {
			if len(got) != 0 {
				t.Fatalf("case %d: accountDelta handed the walk back after touching %v", c, got)
			}
			continue
		}
		took++
		if len(got) != len(want) {
			t.Fatalf("case %d: accountDelta touched %v, accountHeads %v\nold %s\nnew %s", c, got, want, chainString(old), chainString(next))
		}
		for d, n := range want {
			if m, ok := got[d]; !ok || m != n {
				t.Fatalf("case %d: count %x: accountDelta %d (touched %v), accountHeads %d\nold %s\nnew %s", c, d[:1], m, ok, n, chainString(old), chainString(next))
			}
		}
	}
	if took < cases/2 {
		t.Fatalf("accountDelta took %d of %d cases; want most", took, cases)
	}
}

func chainString(chain []version) string {
	s := ""
	for _, el := range chain {
		if el.Entry == nil {
			s += "[v" + itoa(el.Version) + " tombstone] "
			continue
		}
		s += "[v" + itoa(el.Version) + " list " + itoa(el.Entry.ListID) + ":"
		for _, sg := range el.Entry.Segments {
			if sg.IsInline() {
				s += " i"
			} else {
				s += " " + itoa(uint64(sg.Digest[0]))
			}
		}
		s += "] "
	}
	return s
}

func itoa(n uint64) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
