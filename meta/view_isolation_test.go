package meta

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
)

// A View is an O(1) copy-on-write copy of the state (doc.go), read by any number of
// goroutines while applies go on. That rests on tidwall/btree's Map.Copy (v1.8.2,
// map.go: IsoCopy gives both trees new isolation ids; a write copies every node whose id
// is not its tree's, isoLoad; reads never write a node), and on Cairn's own rule that
// records reachable from a View are replaced, never changed. This test checks the
// guarantee itself, not the call: one View and one Snapshot, taken before thousands of
// applies that split, rebalance and empty B-tree nodes, are read by several goroutines
// during the applies (run it with -race) and must answer exactly what they answered
// before.
func TestAViewReadsTheSameStateWhileAppliesRewriteTheTrees(t *testing.T) {
	const files = 1500
	h := &applyHelper{t: t, f: New(Options{})}
	for i := range files {
		if r := h.put(fmt.Sprintf("d/f%05d", i), fmt.Sprint("v0-", i)); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	v := h.f.View()
	snap := h.f.Snapshot()
	want, wantSnap := viewFingerprint(t, v), snapshotFingerprint(t, snap)

	done := make(chan struct{})
	errs := make(chan error, 8)
	var readers sync.WaitGroup
	for r := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for pass := 0; ; pass++ {
				var got string
				if r == 0 {
					got = snapshotFingerprint(t, snap)
				} else {
					got = viewFingerprint(t, v)
				}
				if (r == 0 && got != wantSnap) || (r != 0 && got != want) {
					errs <- fmt.Errorf("reader %d, pass %d: the state behind the view changed under it", r, pass)
					return
				}
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}

	// Replace every other file, delete a contiguous run (nodes merge and empty), and add
	// new paths between and after the old ones (nodes split).
	for i := 0; i < files; i += 2 {
		h.put(fmt.Sprintf("d/f%05d", i), fmt.Sprint("v1-", i))
	}
	for i := files / 4; i < files*3/4; i++ {
		if r := h.do(Delete{Agent: "a", Workspace: "w", Path: fmt.Sprintf("d/f%05d", i)}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	for i := range files {
		h.put(fmt.Sprintf("d/f%05d-new", i), "new")
	}
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := viewFingerprint(t, v); got != want {
		t.Error("after the applies, the view answers another state")
	}
	if got := snapshotFingerprint(t, snap); got != wantSnap {
		t.Error("after the applies, the snapshot writes another state")
	}
	if viewFingerprint(t, h.f.View()) == want {
		t.Fatal("the live view did not change: the test applied nothing")
	}
}

// viewFingerprint lists every file of workbench a/w in v with its generation, size and
// digest, through both the path tree (Files) and the directory listing (List).
func viewFingerprint(t *testing.T, v *View) string {
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Error(err)
		return ""
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d files %d bytes\n", ws.Files, ws.Bytes)
	v.Files(ws, "", func(path string, e *Entry) bool {
		fmt.Fprintf(&b, "%s %d %d %x\n", path, e.Generation, e.Size, e.Digest)
		return true
	})
	for after := ""; ; {
		ents, more, err := v.List(ws, "d", after, 500)
		if err != nil {
			t.Error(err)
			return ""
		}
		for _, e := range ents {
			fmt.Fprintf(&b, "list %s %d\n", e.Name, e.Entry.Generation)
			after = e.Name
		}
		if !more {
			return b.String()
		}
	}
}

// snapshotFingerprint is the SHA-256 of the stream snap writes.
func snapshotFingerprint(t *testing.T, snap *Snapshot) string {
	h := sha256.New()
	if _, err := snap.WriteTo(h); err != nil {
		t.Error(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
