package meta

// MoveExportChunk is one bounded piece of a root's records, ready for a MoveImportChunk.
type MoveExportChunk struct {
	// Data is the records in the snapshot stream's encoding (CBOR records, one after the
	// other), at most the asked bytes except when a single record is larger (and the
	// export not Split), or a part of one record (Part).
	Data []byte
	// Records counts them.
	Records int64
	// Next is where the next chunk starts; Done says there is none.
	Next MovePosition
	Done bool
	// Part, in an export of MoveView.Split, says that Data is a range of the encoding of
	// one record that is larger than a chunk (move_parts.go); Records is 1 on its last
	// part, 0 before.
	Part *MovePart `cbor:",omitempty"`
}

// Export returns the records of agent's root after position from, up to maxBytes
// (0 or more than MaxMoveChunkBytes: MaxMoveChunkBytes) of them: the source's half of a
// move's copy (move.go). Equal views give equal chunks, and chunks from one View, each
// starting at the Next of the one before, hold every record of the root exactly once (the
// derived ones and the retention queue excepted: the import rebuilds them). Memory is
// one chunk, and the encoding of a record in parts.
//
// Errors: NotFound when the view does not hold the root; ResourceExhausted when a single
// record encodes to more than MaxMoveChunkBytes (a path whose kept versions carry many
// segments) unless mv is Split, whose export carries it in parts (move_parts.go);
// InvalidArguments for a position outside the tables.
func (mv MoveView) Export(agent string, from MovePosition, maxBytes int) (MoveExportChunk, error) {
	root, ok := mv.v.st.roots.Get(agent)
	if !ok {
		return MoveExportChunk{}, errorf(CodeNotFound, "agent root %q is not held here", agent)
	}
	if from.Table < 0 || from.Table > len(rootTables) {
		return MoveExportChunk{}, invalidArg("position", "table %d is outside 0..%d", from.Table, len(rootTables))
	}
	ch, err := mv.startChunk(maxBytes, &from)
	if err != nil {
		return MoveExportChunk{}, err
	}
	next, done := walkRoot(mv.v.st, spaceOf(mv.v.st, agent, root.UID), from, false, func(t *rootTable, _ string, rec snapRecord) bool {
		return ch.add(t, rec)
	})
	if ch.failed != nil {
		return MoveExportChunk{}, ch.failed
	}
	return ch.chunk(next, done), nil
}
