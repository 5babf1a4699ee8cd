package meta

import (
	"bytes"
	"strconv"
	"strings"
)

// A move's pre-copy (move.go): the driver copies the root's records from a View taken
// before the fence (the base), while the root still takes writes, then fences the root and
// ships only what changed since: ExportDelta compares the fenced View with the base
// and returns the records that are new or changed, and a deletion for each record the
// base held that is gone. The target applies them with MoveImportChunk.Delta: a record it
// holds already is replaced (what is derived from it with it), a deletion drops it. The
// write pause is then the delta's, not the root's.

// recMoveDeleted tags a deletion in a delta chunk: K is the key, N the tag of the table
// the record was in. Never a snapshot table's tag (mustSnapTables would refuse it).
const recMoveDeleted uint8 = 250

// ExportDelta returns, after position from, up to maxBytes of the records of agent's
// root that differ between base (a View of this shard taken earlier) and v: first each
// record v holds that base does not, or holds otherwise (table by table, in rootTables
// order), then a deletion for each record base holds that v does not. Chunks from one pair
// of Views, each starting at the Next of the one before, hold every difference exactly
// once; applied (MoveImportChunk with Delta) after an import of base's records, they leave
// the target with v's records. Unchanged records cost a comparison of pointers (records
// reachable from a View are never mutated), the others an encoding.
//
// Errors: those of Export, and InvalidState when base does not hold the same
// incarnation of the root (its uid differs).
func (mv MoveView) ExportDelta(agent string, base *View, from MovePosition, maxBytes int) (MoveExportChunk, error) {
	root, ok := mv.v.st.roots.Get(agent)
	if !ok {
		return MoveExportChunk{}, errorf(CodeNotFound, "agent root %q is not held here", agent)
	}
	broot, ok := base.st.roots.Get(agent)
	if !ok || broot.UID != root.UID {
		return MoveExportChunk{}, errorf(CodeInvalidState, "the pre-copy's view does not hold this incarnation of agent root %q", agent)
	}
	n := len(rootTables)
	if from.Table < 0 || from.Table > 2*n {
		return MoveExportChunk{}, invalidArg("position", "table %d is outside 0..%d", from.Table, 2*n)
	}
	ch, err := mv.startChunk(maxBytes, &from)
	if err != nil {
		return MoveExportChunk{}, err
	}
	if from.Table < n { // the records v holds that base does not, or holds otherwise
		next, done := walkRoot(mv.v.st, spaceOf(mv.v.st, agent, root.UID), from, false, func(t *rootTable, k string, rec snapRecord) bool {
			if old, ok := lookupRecord(base.st, t, k); ok && sameRecord(old, rec) {
				return true
			}
			return ch.add(t, rec)
		})
		if ch.failed != nil {
			return MoveExportChunk{}, ch.failed
		}
		if !done {
			return ch.chunk(next, false), nil
		}
		from = MovePosition{Table: n}
	}
	bpos := MovePosition{Table: from.Table - n, After: from.After}
	next, done := walkRoot(base.st, spaceOf(base.st, agent, broot.UID), bpos, false, func(t *rootTable, k string, _ snapRecord) bool {
		if _, ok := lookupRecord(mv.v.st, t, k); ok {
			return true
		}
		return ch.add(t, snapRecord{T: recMoveDeleted, K: []byte(k), N: int64(t.tag)})
	})
	if ch.failed != nil {
		return MoveExportChunk{}, ch.failed
	}
	next.Table += n
	return ch.chunk(next, done), nil
}

// lookupRecord returns the record at key k of table t in st.
func lookupRecord(st *state, t *rootTable, k string) (snapRecord, bool) {
	var out snapRecord
	found := false
	t.ascend(st, k, func(got string, rec snapRecord) bool {
		found = got == k
		out = rec
		return false
	})
	return out, found
}

// sameRecord reports whether a and b, records of one table at one key, hold the same
// value: the same pointers (records are never mutated) or, failing that, the same
// encoding.
func sameRecord(a, b snapRecord) bool {
	if a.T == b.T && a.Root == b.Root && a.Workspace == b.Workspace && a.Path == b.Path && a.Dir == b.Dir &&
		a.Blob == b.Blob && a.Dedupe == b.Dedupe && a.N == b.N && bytes.Equal(a.S, b.S) && a.Snap == b.Snap &&
		a.Commit == b.Commit && a.Restore == b.Restore && a.Backup == b.Backup && a.Usage == b.Usage &&
		a.Quota == b.Quota && a.Retention == b.Retention && a.Proposal == b.Proposal && a.Move == b.Move &&
		sameFeed(a.Feed, b.Feed) {
		return true
	}
	ea, erra := encMode.Marshal(a)
	eb, errb := encMode.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ea, eb)
}

func sameFeed(a, b *feedRecord) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case a.Event != b.Event:
		return false
	case a.Floor == nil || b.Floor == nil:
		return a.Floor == b.Floor
	}
	return *a.Floor == *b.Floor
}

// chunker encodes the records of one export chunk, up to a bound.
type chunker struct {
	buf      bytes.Buffer
	enc      interface{ Encode(any) error }
	maxBytes int
	records  int64
	failed   error
	// split: a record of more than maxBytes goes in parts (move_parts.go); sent is how
	// many bytes of the first record offered went in parts before (MovePosition.Sent);
	// part is the part the chunk holds, alone (nil: none).
	split bool
	sent  int64
	part  *MovePart
}

func newChunker(maxBytes int) *chunker {
	if maxBytes <= 0 || maxBytes > MaxMoveChunkBytes {
		maxBytes = MaxMoveChunkBytes
	}
	c := &chunker{maxBytes: maxBytes}
	c.enc = encMode.NewEncoder(&c.buf)
	return c
}

// add encodes rec (of table t) into the chunk; false, consuming nothing, once the chunk is
// full or on a failure (failed).
func (c *chunker) add(t *rootTable, rec snapRecord) bool {
	if c.part != nil {
		return false // a part travels alone
	}
	mark := c.buf.Len()
	if err := c.enc.Encode(rec); err != nil {
		c.failed = err
		return false
	}
	switch n := c.buf.Len() - mark; {
	case c.sent > 0 || c.split && n > c.maxBytes && c.records == 0: // alone in the chunk
		return c.cut(n)
	case n > MaxMoveChunkBytes && !c.split:
		c.failed = &Error{Code: CodeResourceExhausted, Quota: "move_chunk_bytes", Limit: MaxMoveChunkBytes, Requested: int64(n),
			Message: "a record of table " + strconv.Quote(t.name) + " encodes to " + strconv.Itoa(n) + " bytes, more than a move chunk holds"}
		c.buf.Truncate(mark)
		return false
	case c.buf.Len() > c.maxBytes && c.records > 0:
		c.buf.Truncate(mark) // the next chunk starts with it
		return false
	}
	c.records++
	return true
}

// chunk is the chunk encoded, whose successor starts at next (after the bytes of a record
// in parts that it holds, unless they were the last).
func (c *chunker) chunk(next MovePosition, done bool) MoveExportChunk {
	if c.part != nil && c.records == 0 {
		next.Sent = c.part.Offset + int64(c.buf.Len())
	}
	return MoveExportChunk{Data: c.buf.Bytes(), Records: c.records, Next: next, Done: done, Part: c.part}
}

// deletedOfRoot reports whether a deletion of key k from the table tagged tag names a
// record an export of agent's root (uid) holds.
func deletedOfRoot(tag uint8, k, agent, uid string) bool {
	switch tag {
	case recRoot:
		return false // a delta never drops the root: both views hold it
	case recFeed:
		return k == agent || strings.HasPrefix(k, agent+"\x00")
	}
	return recordOfRoot(snapRecord{T: tag, K: []byte(k)}, agent, uid)
}
