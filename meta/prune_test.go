package meta

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// checkRefcounts recomputes every blob reference count from the retained chains and
// compares it with the maintained counts.
func checkRefcounts(f *FSM) error {
	st := f.Snapshot().st
	want := map[string]int64{}
	rootOf := map[uint64]string{}
	st.workspaces.Scan(func(_ string, ws *Workspace) bool {
		r, _ := st.roots.Get(ws.Agent)
		rootOf[ws.Incarnation] = r.UID
		return true
	})
	st.paths.Scan(func(k string, rec *pathRecord) bool {
		uid := rootOf[binaryU64(k[:8])]
		// A path references, per segment list, the segments of the longest version it
		// keeps of that list; check first that versions of one list share its prefix.
		for i, el := range rec.Chain {
			for _, older := range rec.Chain[i+1:] {
				if el.Entry != nil && older.Entry != nil && el.Entry.ListID != 0 && el.Entry.ListID == older.Entry.ListID {
					if len(older.Entry.Segments) > len(el.Entry.Segments) {
						panic(fmt.Sprintf("path %q: an older version of list %d is longer", keyPath(k), el.Entry.ListID))
					}
					for j := range older.Entry.Segments {
						if older.Entry.Segments[j].Digest != el.Entry.Segments[j].Digest {
							panic(fmt.Sprintf("path %q: versions of list %d differ at segment %d", keyPath(k), el.Entry.ListID, j))
						}
					}
				}
			}
		}
		for _, e := range listHeads(rec.Chain) {
			for _, sg := range e.Segments {
				if !sg.IsInline() {
					want[blobKey(uid, sg.Digest)]++
				}
			}
		}
		return true
	})
	var err error
	st.blobs.Scan(func(k string, br blobRef) bool {
		if br.Count != want[k] {
			err = fmt.Errorf("blob %x: count %d, want %d", k, br.Count, want[k])
			return false
		}
		if br.Count == 0 && br.ZeroSinceMs == 0 {
			err = fmt.Errorf("blob %x: count 0 without zero-since time", k)
			return false
		}
		delete(want, k)
		return true
	})
	for k, n := range want {
		if n != 0 && err == nil {
			err = fmt.Errorf("blob %x: %d references but no count", k, n)
		}
	}
	return err
}

// pruneAtOnce is the history retention of the tests written before history was kept:
// superseded versions go at once unless a hold needs them.
var pruneAtOnce = Retention{Versions: 1}

// TestPruningKeepsLiveStateAndRefcounts: with superseded versions pruned at once, live
// reads still match the model, reference counts match the retained chains, and once the
// retention window passes every tombstone, dedupe record and change-feed event is gone.
func TestPruningKeepsLiveStateAndRefcounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel()
		m.retentionMs = time.Minute.Milliseconds()
		opts := Options{RetentionWindow: time.Minute, FeedRetention: time.Minute, RetentionBatch: 1 << 20, History: pruneAtOnce}
		f := New(opts)
		n := rapid.IntRange(1, 150).Draw(t, "n")
		var index uint64
		for i := 0; i < n; i++ {
			h, b := genHeader(t, m), genBody(t, m)
			index++
			want := m.apply(index, h, b)
			if err := sameAnswer(f.ApplyBody(index, h, b), want); err != nil {
				t.Fatalf("command %d %T: %v", i, b, err)
			}
			if err := checkRefcounts(f); err != nil {
				t.Fatalf("after command %d: %v", i, err)
			}
		}
		view := f.View()
		for ws := range m.workspaces {
			agent, name, _ := cutSlash(ws)
			w, err := view.Workspace(agent, name)
			if err != nil {
				t.Fatal(err)
			}
			for p, e := range m.files(ws, index) {
				got, err := view.File(w, p)
				if err != nil || got.Generation != e.Generation {
					t.Fatalf("%s %s: got %v %v, want generation %d", ws, p, got, err, e.Generation)
				}
			}
			if info := view.dirInfo(w.Incarnation, ""); info.Files != int64(len(m.files(ws, index))) || info.Files != w.Files {
				t.Fatalf("%s: top counts %+v / workspace %d, model %d files", ws, info, w.Files, len(m.files(ws, index)))
			}
		}
		// Past the retention window, history and dedupe records are gone.
		f.ApplyBody(index+1, Header{TimeMs: m.nowMs + 2*time.Minute.Milliseconds()}, Tick{})
		st := f.Snapshot().st
		st.paths.Scan(func(k string, rec *pathRecord) bool {
			if len(rec.Chain) != 1 || rec.Chain[0].Entry == nil {
				t.Fatalf("path %q keeps %d versions (live %v) past retention", keyPath(k), len(rec.Chain), rec.live() != nil)
			}
			return true
		})
		if st.dedupe.Len() != 0 || st.dedupeOrder.Len() != 0 || st.dedupeCount.Len() != 0 || st.retention.Len() != 0 || st.feed.events.Len() != 0 {
			t.Fatalf("retention left dedupe=%d order=%d count=%d queue=%d feed=%d", st.dedupe.Len(), st.dedupeOrder.Len(), st.dedupeCount.Len(), st.retention.Len(), st.feed.events.Len())
		}
		if err := checkRefcounts(f); err != nil {
			t.Fatal(err)
		}
	})
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
