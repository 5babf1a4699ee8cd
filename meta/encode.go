package meta

import (
	"encoding/binary"
	"math"
)

// The hand-written CBOR encoders of the hot records: a snapshot's path chains, change-feed
// events, directory counters and blob references (snapshot_encode.go) and the put, append
// and delete commands (command_encode.go). Each appends exactly the bytes encMode
// (cbor.CoreDetEncOptions, command.go) writes for the same value through reflection, at a
// fraction of the CPU: the snapshot stream and the command log are persistent and
// replicated, so a single byte of difference would break "equal states write equal bytes"
// and a reader of an older release. The rules they follow are those of the struct tags:
//
//   - a struct is a map whose keys are the keyasint numbers in ascending order (the core
//     deterministic order of small unsigned keys), with the omitempty fields left out when
//     empty: 0, false, "", a nil or empty slice or map, a nil pointer, a struct whose
//     fields are all omitempty and empty (Producer); a fixed-size byte array is never
//     empty (Digest under omitempty is always written) but is left out under omitzero
//     when all its bytes are zero (Segment.Blake3);
//   - integers take the shortest head, a negative one major type 1; strings are text
//     strings, []byte and [32]byte byte strings; a nil slice or map that is written is
//     null, an empty one an empty array;
//   - a value whose rules go further (floats of a FieldValue, the maps of Entry.Fields,
//     the rarer records) is encoded by encMode itself and appended: a CBOR item's bytes do
//     not depend on what contains it.
//
// TestHandEncodersMatchReflection and the fuzz targets FuzzSnapRecordEncoding and
// FuzzCommandEncoding compare them with encMode on every field of every type they
// cover, so a field added to one of these types fails a test until its encoder writes it.
// The commands they write are read back by hand as well (command_decode.go).

// CBOR major types (RFC 8949 §3.1), shifted into a head's first byte, and the simple
// values the encoders write.
const (
	cborUint  byte = 0 << 5
	cborNeg   byte = 1 << 5
	cborBytes byte = 2 << 5
	cborText  byte = 3 << 5
	cborArray byte = 4 << 5
	cborMap   byte = 5 << 5
	cborFalse byte = 0xf4
	cborTrue  byte = 0xf5
	cborNull  byte = 0xf6
)

// appendHead appends a CBOR head of major type major and argument n in its shortest form.
func appendHead(b []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(b, major|byte(n))
	case n <= math.MaxUint8:
		return append(b, major|24, byte(n))
	case n <= math.MaxUint16:
		return append(b, major|25, byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, major|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, major|27), n)
}

func appendUintItem(b []byte, n uint64) []byte { return appendHead(b, cborUint, n) }

func appendIntItem(b []byte, n int64) []byte {
	if n < 0 {
		return appendHead(b, cborNeg, uint64(^n)) // -1-n
	}
	return appendHead(b, cborUint, uint64(n))
}

func appendTextItem(b []byte, s string) []byte {
	return append(appendHead(b, cborText, uint64(len(s))), s...)
}

// appendBytesItem appends p as a byte string; a nil p is null, as for a []byte field
// without omitempty.
func appendBytesItem(b []byte, p []byte) []byte {
	if p == nil {
		return append(b, cborNull)
	}
	return append(appendHead(b, cborBytes, uint64(len(p))), p...)
}

// appendStringBytesItem appends s as a byte string (a []byte field set from a string).
func appendStringBytesItem(b []byte, s string) []byte {
	return append(appendHead(b, cborBytes, uint64(len(s))), s...)
}

func appendBoolItem(b []byte, v bool) []byte {
	if v {
		return append(b, cborTrue)
	}
	return append(b, cborFalse)
}

// appendDigestItem appends a 32-byte digest (Digest, Blake3) as a byte string.
func appendDigestItem(b []byte, d *[32]byte) []byte {
	return append(append(b, cborBytes|24, 32), d[:]...)
}

// appendReflected appends v as encMode encodes it: the encoders' way out for the values
// they leave to the library.
func appendReflected(b []byte, v any) ([]byte, error) {
	p, err := encMode.Marshal(v)
	return append(b, p...), err
}

// mapHead is the head of a map being appended: openMap reserves it, key appends the key of
// the next entry (keyasint numbers, ascending) and close writes the number of entries
// into it. Every map the encoders write has fewer than 24 entries, so its head is one
// byte.
type mapHead struct {
	at, n int
}

func openMap(b []byte) ([]byte, mapHead) {
	at := len(b)
	return append(b, cborMap), mapHead{at: at}
}

func (m *mapHead) key(b []byte, k uint8) []byte {
	m.n++
	return appendHead(b, cborUint, uint64(k))
}

func (m *mapHead) close(b []byte) []byte {
	b[m.at] = cborMap | byte(m.n)
	return b
}

// appendProducer appends p; a zero Producer is the empty map (where its field is
// omitempty, the caller leaves it out).
func appendProducerCBOR(b []byte, p *Producer) []byte {
	b, m := openMap(b)
	if p.Principal != "" {
		b = appendTextItem(m.key(b, 1), p.Principal)
	}
	if p.Surface != "" {
		b = appendTextItem(m.key(b, 2), p.Surface)
	}
	return m.close(b)
}

func appendSegmentCBOR(b []byte, s *Segment) []byte {
	b, m := openMap(b)
	b = appendDigestItem(m.key(b, 1), (*[32]byte)(&s.Digest))
	b = appendIntItem(m.key(b, 2), s.Size)
	if len(s.Inline) > 0 {
		b = appendBytesItem(m.key(b, 3), s.Inline)
	}
	if s.Chunking != 0 {
		b = appendUintItem(m.key(b, 4), uint64(s.Chunking))
	}
	if s.Blake3 != (Blake3{}) {
		b = appendDigestItem(m.key(b, 5), (*[32]byte)(&s.Blake3))
	}
	return m.close(b)
}

// appendSegments appends a segment list: null when nil (the fields that hold one are not
// omitempty).
func appendSegmentsCBOR(b []byte, segs []Segment) []byte {
	if segs == nil {
		return append(b, cborNull)
	}
	b = appendHead(b, cborArray, uint64(len(segs)))
	for i := range segs {
		b = appendSegmentCBOR(b, &segs[i])
	}
	return b
}

func appendEntryCBOR(b []byte, e *Entry) ([]byte, error) {
	b, m := openMap(b)
	b = appendUintItem(m.key(b, 1), e.Generation)
	b = appendIntItem(m.key(b, 2), e.Size)
	b = appendDigestItem(m.key(b, 3), (*[32]byte)(&e.Digest))
	b = appendTextItem(m.key(b, 4), e.ContentType)
	if e.Executable {
		b = appendBoolItem(m.key(b, 5), true)
	}
	b = appendSegmentsCBOR(m.key(b, 6), e.Segments)
	if len(e.HashState) > 0 {
		b = appendBytesItem(m.key(b, 7), e.HashState)
	}
	b = appendIntItem(m.key(b, 8), e.ModifiedAtMs)
	if len(e.Fields) > 0 {
		var err error
		if b, err = appendReflected(m.key(b, 9), e.Fields); err != nil {
			return b, err
		}
	}
	if e.ListID != 0 {
		b = appendUintItem(m.key(b, 10), e.ListID)
	}
	if !e.Producer.IsZero() {
		b = appendProducerCBOR(m.key(b, 11), &e.Producer)
	}
	if e.Proposal != "" {
		b = appendTextItem(m.key(b, 12), e.Proposal)
	}
	return m.close(b), nil
}
