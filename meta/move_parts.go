package meta

import (
	"slices"
	"strconv"
)

// A record larger than a chunk (docs/architecture.md#moving-a-root): a path whose kept
// versions each carry their whole segment list can encode to more than MaxMoveChunkBytes
// (a file appended to a thousand times, ~7 MB). The exports of MoveView.Split carry such a
// record in parts: consecutive chunks that each hold only a byte range of its encoding
// (MoveExportChunk.Part, at most the chunk's bytes), the last of which counts the record;
// a position inside it says how many bytes went (MovePosition.Sent), and the next export
// encodes the record again from the same View and goes on from there. On the target,
// MoveImportChunk.Part stages the ranges in the import's move record (MoveRecord.Parts);
// the last one lands the record, checked whole as a chunk's records are, with what is
// derived from it. Until then nothing of the record is in the shard's tables: an abort
// drops the staged bytes with the move record, a finish is refused while they wait, and a
// chunk of records is refused between two parts.
//
// Memory: an export holds the record's encoding and one chunk; the import holds the
// record's bytes received so far (in the move record, so the Raft snapshot carries an
// import stopped between two parts) and, at the last part, the decoded record.

// MovePartsVersion is the cluster version of MoveImportChunk.Part: a replica of version 9
// decodes the chunk without the field and refuses its Data as malformed records, while a
// replica of 10 stages it. The driver asks for parts only once every node publishes it,
// and otherwise meets the export's refusal of a record larger than a chunk.
const MovePartsVersion = 10

// MovePart places a chunk's Data in the encoding of one record exported in parts: bytes
// Offset to Offset+len(Data) of Total.
type MovePart struct {
	Offset int64 `cbor:"1,keyasint"`
	Total  int64 `cbor:"2,keyasint"`
}

// MoveParts is the record an import received in parts so far: the first len(Data) bytes
// of an encoding of Total bytes.
type MoveParts struct {
	Total int64  `cbor:"1,keyasint"`
	Data  []byte `cbor:"2,keyasint"`
}

// Split returns mv whose exports (Export, ExportDelta) carry a record that encodes to more
// than the chunk's bytes in parts, instead of refusing it with ResourceExhausted (or, up to
// MaxMoveChunkBytes, sending it alone in a larger chunk): every chunk's Data is then at
// most the asked bytes. Only for a target whose every replica applies MovePartsVersion.
func (mv MoveView) Split() MoveView {
	mv.split = true
	return mv
}

// startChunk returns the chunker of an export of mv from position from, whose Sent it
// takes over (the walk resumes after from.After).
func (mv MoveView) startChunk(maxBytes int, from *MovePosition) (*chunker, error) {
	if from.Sent < 0 || from.Sent > 0 && !mv.split {
		return nil, invalidArg("position", "sent %d is not a position of this export", from.Sent)
	}
	c := newChunker(maxBytes)
	c.split, c.sent = mv.split, from.Sent
	from.Sent = 0
	return c, nil
}

// cut makes the chunk a part of the record just encoded alone into it (n bytes): its bytes
// from sent on, at most maxBytes of them. It reports whether this is the last part: the
// record is consumed, and counted.
func (c *chunker) cut(n int) bool {
	total := int64(n)
	if c.sent >= total {
		c.failed = invalidArg("position", "%d bytes of a record of %d were exported already", c.sent, total)
		return false
	}
	end := min(total, c.sent+int64(c.maxBytes))
	data := c.buf.Bytes()
	copy(data, data[c.sent:end])
	c.buf.Truncate(int(end - c.sent))
	c.part = &MovePart{Offset: c.sent, Total: total}
	if end < total {
		return false
	}
	c.records = 1
	return true
}

// stagePart takes chunk c's Data into m, the import's record: a chunk of records is
// returned as it is, whole; a part is appended to the staged bytes, and the record's whole
// encoding returned with the last one (whole), the staging cleared.
func stagePart(m *MoveRecord, c MoveImportChunk) (data []byte, whole bool, err *Error) {
	p := m.Parts
	var have int64
	if p != nil {
		have = int64(len(p.Data))
	}
	switch {
	case c.Part == nil && p == nil:
		return c.Data, true, nil
	case c.Part == nil:
		return nil, false, invalidArg("data", "holds records while %d of the %d bytes of a record in parts arrived", have, p.Total)
	case len(c.Data) == 0 || c.Part.Offset != have || p != nil && p.Total != c.Part.Total ||
		c.Part.Total-c.Part.Offset < int64(len(c.Data)):
		return nil, false, invalidArg("part", "chunk %d: bytes %d to %d of a record of %d do not follow the %d bytes that arrived",
			c.Seq, c.Part.Offset, c.Part.Offset+int64(len(c.Data)), c.Part.Total, have)
	}
	// Appending may reuse the capacity past the staged bytes, which only the staging
	// allocated (the command's bytes are clipped): a View sees only the bytes its record
	// holds, so nothing reachable from one changes.
	if p != nil {
		data = append(p.Data, c.Data...)
	} else {
		data = slices.Clip(c.Data)
	}
	if int64(len(data)) < c.Part.Total {
		m.Parts = &MoveParts{Total: c.Part.Total, Data: data}
		return nil, false, nil
	}
	m.Parts = nil
	return data, true, nil
}

// answer is m as a command's answer carries it: without the bytes of a record in parts.
func (m *MoveRecord) answer() *MoveRecord {
	if m == nil || m.Parts == nil {
		return m
	}
	c := *m
	c.Parts = &MoveParts{Total: m.Parts.Total}
	return &c
}

// partsPending is a finish's refusal while a record in parts is incomplete.
func partsPending(m *MoveRecord) *Error {
	return &Error{Code: CodeConflict, OperationID: m.MoveID,
		Message: "the import holds " + strconv.Itoa(len(m.Parts.Data)) + " of the " + strconv.FormatInt(m.Parts.Total, 10) +
			" bytes of a record in parts; its last part has not arrived"}
}
