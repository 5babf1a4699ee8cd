package host

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/control"
)

// logAppend is an append of one blob segment to root a's file path at generation gen,
// whose size was size.
func logAppend(path string, gen uint64, size int64, data string) meta.Append {
	return meta.Append{Agent: "a", Workspace: "w", Path: path, ExpectGeneration: gen,
		Segments:      []meta.Segment{{Digest: sha256.Sum256([]byte(data)), Size: int64(len(data))}},
		AppendedBytes: int64(len(data)), NewSize: size + int64(len(data)), NewDigest: sha256.Sum256([]byte(path + data))}
}

// appendLog writes root a's file path through node 0 and appends to it n times: every kept
// version carries the whole segment list, so its record encodes to about 20·n² bytes. It
// returns the file's generation and size.
func (c *moveCluster) appendLog(t *testing.T, path string, n int) (uint64, int64) {
	t.Helper()
	gen, size := c.mustWrite(t, 0, meta.Header{}, putBody("a", path, "head")).Generation, int64(4)
	for i := range n {
		data := fmt.Sprintf("line %d", i)
		gen = c.mustWrite(t, 0, meta.Header{}, logAppend(path, gen, size, data)).Generation
		size += int64(len(data))
	}
	return gen, size
}

// withNodeVersion makes node 0, which drives the moves, see node n2 publish cluster
// version v (a node of another release).
func (c *moveCluster) withNodeVersion(v int) {
	cs := c.hosts[0].cluster
	ns := maps.Clone(*cs.nodes.Load())
	info := ns["n2"]
	info.ClusterVersion = v
	ns["n2"] = info
	cs.storeNodes(ns)
}

// A root holding a file whose record encodes to more than two move chunks moves once every
// node imports records in parts. While a node publishes cluster version 9 the move rolls
// back with the export's refusal, recorded as lasting (the rebalancer leaves the root
// alone for a while), and the root stays writable on its shard. Once every node publishes
// 10 the pre-copy and the delta carry the record in parts, and every node reads on the
// target every version of the file, each body at its generation; the next append's
// compare-and-swap takes the moved generation.
func TestALongFileMovesInPartsOnceEveryNodeImportsThem(t *testing.T) {
	c := newMoveCluster(t)
	ctx := t.Context()
	const appends = 700
	gen, size := c.appendLog(t, "log", appends)
	from, err := c.hosts[0].placement.Resolve(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	to := 1 - from

	c.withNodeVersion(meta.MovePartsVersion - 1)
	m, err := c.plane.StartMove(ctx, "a", to, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := c.waitMove(t, m.ID)
	if got.Step != control.MoveRolledBack || !got.Lasting || !strings.Contains(got.Reason, "more than a move chunk holds") {
		t.Fatalf("the move while a node runs version %d ended as %+v, want rolled back, lasting, the export's refusal",
			meta.MovePartsVersion-1, got)
	}
	gen = c.mustWrite(t, 1, meta.Header{}, logAppend("log", gen, size, "after the rollback")).Generation
	if s, err := c.hosts[1].placement.Refresh(ctx, "a"); err != nil || s != from {
		t.Fatalf("the root's shard after the rollback: %d %v, want %d", s, err, from)
	}

	c.withNodeVersion(meta.ClusterVersion)
	if got := c.moveAgainUntilDone(t, "a", to, 3); got.Chunks < 3 {
		t.Fatalf("the move ended as %+v, want done in at least 3 chunks", got)
	}
	for i := range c.hosts {
		v, ws := c.rootView(t, i, "a")
		if !v.Shard().HoldsRoot("a") {
			t.Fatalf("node %d reads the root from a shard that does not hold it", i)
		}
		e, err := v.File(ws, "log")
		if err != nil || e.Generation != gen || len(e.Segments) != appends+2 {
			t.Fatalf("node %d reads the log as %v, want generation %d", i, err, gen)
		}
		n := 0
		for before := uint64(0); ; {
			vs, more, err := v.History().Versions(ws, "log", before, meta.MaxHistoryLimit)
			if err != nil {
				t.Fatal(err)
			}
			for _, fv := range vs {
				at, err := v.History().FileAt(ws, "log", fv.Version)
				if err != nil || at.Entry.Generation != fv.Version || len(at.Entry.Segments) != appends+2-n {
					t.Fatalf("node %d reads the log at generation %d as %+v %v", i, fv.Version, at, err)
				}
				n++
			}
			if !more {
				break
			}
			before = vs[len(vs)-1].Version
		}
		if n != appends+2 {
			t.Fatalf("node %d lists %d versions of the log, want %d", i, n, appends+2)
		}
	}
	core, err := c.hosts[2].For("a")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := core.Propose(ctx, meta.Header{}, logAppend("log", gen-1, size, "stale")); err != nil || meta.CodeOf(res.Err) != meta.CodeConflict {
		t.Fatalf("an append at an older generation after the move: %+v %v, want Conflict", res.Err, err)
	}
	if res := c.mustWrite(t, 2, meta.Header{}, logAppend("log", gen, size+int64(len("after the rollback")), "moved")); res.Generation <= gen {
		t.Fatalf("an append after the move: generation %d, not above %d", res.Generation, gen)
	}
}

// moveAgainUntilDone moves root to shard target, starting the move again, at most tries
// times in all, while it rolls back because a leader of the source or the target changed
// during the copy (as 4 MiB parts under the race detector on a loaded machine make
// likely), as the rebalancer or an operator would. Any other ending is final. It returns
// the move that ended done, failing t otherwise.
func (c *moveCluster) moveAgainUntilDone(t *testing.T, root string, target, tries int) control.RootMove {
	t.Helper()
	var got control.RootMove
	for range tries {
		m, err := c.plane.StartMove(t.Context(), root, target, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got = c.waitMove(t, m.ID)
		if got.Step != control.MoveRolledBack || got.Lasting || !passingRollback(got.Reason) {
			break
		}
		t.Logf("the move rolled back (%s); starting it again", got.Reason)
	}
	if got.Step != control.MoveDone || got.Lasting {
		t.Fatalf("the move ended as %+v, want done", got)
	}
	return got
}

// passingRollback reports whether a rollback's reason is a leader change (moveFailure).
func passingRollback(reason string) bool {
	return strings.Contains(reason, "leader changed during the copy") || strings.Contains(reason, "had no leader during the move")
}

// An export over the peer port (the driver's node does not lead the source) carries a
// record in parts as one in process does: each answer's position says how many bytes of
// the record went, and the next request goes on from there, to the last part. The position
// once lost its count on the wire, and the copy sent the record's first bytes again.
func TestAnExportOverThePeerPortCarriesARecordInParts(t *testing.T) {
	c := newMoveCluster(t)
	c.appendLog(t, "log", 700)
	id, err := c.hosts[0].placement.Resolve(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	// An election during the export loses its view; the export starts again, as a move
	// would, under another move id.
	for try := range 3 {
		driver := (c.shardLeader(t, id) + 1) % len(c.hosts)
		if err := c.exportInParts(t, driver, id, fmt.Sprintf("m%d", try)); !errors.Is(err, errExportViewLost) {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("the source's leader changed during each of 3 exports")
}

// exportInParts pulls move id's pre-copy of root a's records from shard through node
// driver up to the last part of its first record, checking each part's bytes follow the
// ones before.
func (c *moveCluster) exportInParts(t *testing.T, driver, shard int, id string) error {
	req := exportRequest{Agent: "a", MoveID: id, PreCopy: true, Parts: true}
	var sent int64
	for parts := 0; ; parts++ {
		rep, err := c.hosts[driver].mover.exportStep(t.Context(), shard, req)
		if err != nil {
			return err
		}
		p := rep.Chunk.Part
		if p == nil || p.Offset != sent {
			return fmt.Errorf("part %d from node %d: %+v, want bytes from %d", parts, driver, p, sent)
		}
		sent += int64(len(rep.Chunk.Data))
		if rep.Chunk.Records == 1 {
			if sent != p.Total || parts < 2 {
				return fmt.Errorf("the last part (%d) ends at %d of %d", parts, sent, p.Total)
			}
			return nil
		}
		if rep.Chunk.Next.Sent != sent {
			return fmt.Errorf("part %d's answer resumes at byte %d, want %d", parts, rep.Chunk.Next.Sent, sent)
		}
		req.From, req.View = rep.Chunk.Next, rep.Version
	}
}
