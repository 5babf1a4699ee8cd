package meta

import (
	"iter"
	"math"
	"unicode/utf8"
)

// The hand-written decoder of the put, append and delete commands, the commands of every
// write, which every replica decodes (DecodeCommand). It reads exactly the shape
// appendCommand writes and nothing else: a definite-length map of the known keyasint keys
// in ascending order, every head in its shortest form, every value of the kind its field
// is written as (a text string for a string, a 32-byte byte string for a digest, null or
// an array of segment maps for a segment list), nothing after the envelope. On any other
// input (an unknown or repeated key, a longer head than needed, an indefinite length, a
// tag, a float where an integer belongs, a value out of its field's range, invalid UTF-8,
// another op or format) it reports !ok, and DecodeCommand decodes through decMode as
// before: on every input the two answer alike, with values equal down to nil and empty
// slices (TestHandDecoderMatchesReflection, FuzzCommandDecoding).
//
// A byte string (an inline segment, a hash state) is copied out of data, as decMode
// copies it: the FSM keeps inline bytes in its state for as long as the file lives, and
// data is the Raft log entry's, whose buffer the decoder does not own.

// fieldsDecMode decodes a Put's Fields, the one value the hand-written decoder leaves to
// the library: decMode's options with fewer nesting levels, so that a value it accepts is
// one decMode accepts nested in an envelope and a body (the canonical one has two).
var fieldsDecMode = commandDecMode(4)

// decodeHotCommand decodes data when it is a put, append or delete command in the shape
// appendCommand writes; ok is false for any other input, which it leaves to decMode.
func decodeHotCommand(data []byte) (h Header, b Body, ok bool) {
	r := cborReader{b: data}
	if r.mapLen() != 4 || r.key(0) != 1 {
		return Header{}, nil, false
	}
	if f := r.uint(); f == 0 || f > CommandFormat || r.key(1) != 2 {
		return Header{}, nil, false
	}
	op := r.uint()
	if r.key(2) != 3 {
		return Header{}, nil, false
	}
	r.header(&h)
	if r.key(3) != 4 {
		return Header{}, nil, false
	}
	switch op {
	case uint64(OpPut):
		var p Put
		r.putBody(&p)
		b = p
	case uint64(OpAppend):
		var a Append
		r.appendBody(&a)
		b = a
	case uint64(OpDelete):
		var d Delete
		r.deleteBody(&d)
		b = d
	default:
		return Header{}, nil, false
	}
	if r.bad || r.p != len(data) {
		return Header{}, nil, false
	}
	return h, b, true
}

// cborReader reads CBOR items of the canonical shape from b at p. The first item that is
// not of the expected shape sets bad; every read after it returns a zero value, so a
// decoder checks bad once, at the end.
type cborReader struct {
	b   []byte
	p   int
	bad bool
}

func (r *cborReader) fail() { r.bad = true }

// head reads a head of major type major with a definite argument in its shortest form.
func (r *cborReader) head(major byte) uint64 {
	if r.bad || r.p >= len(r.b) || r.b[r.p]&0xe0 != major {
		r.fail()
		return 0
	}
	ai := r.b[r.p] & 0x1f
	r.p++
	if ai < 24 {
		return uint64(ai)
	}
	var size int
	var least uint64
	switch ai {
	case 24:
		size, least = 1, 24
	case 25:
		size, least = 2, math.MaxUint8+1
	case 26:
		size, least = 4, math.MaxUint16+1
	case 27:
		size, least = 8, math.MaxUint32+1
	default: // reserved, or an indefinite length
		r.fail()
		return 0
	}
	if len(r.b)-r.p < size {
		r.fail()
		return 0
	}
	var n uint64
	for _, c := range r.b[r.p : r.p+size] {
		n = n<<8 | uint64(c)
	}
	r.p += size
	if n < least {
		r.fail()
		return 0
	}
	return n
}

// mapLen reads the head of a map.
func (r *cborReader) mapLen() uint64 { return r.head(cborMap) }

// keys reads a map's head and yields each entry's key (key: ascending), the caller
// reading its value; it stops once r has failed, at a key or in the caller's value.
func (r *cborReader) keys() iter.Seq[uint8] {
	return func(yield func(uint8) bool) {
		var k uint8
		for range r.mapLen() {
			if k = r.key(k); r.bad || !yield(k) || r.bad {
				return
			}
		}
	}
}

// key reads the key of a map entry, which must be greater than the previous one, last (0
// before the first: keyasint keys start at 1).
func (r *cborReader) key(last uint8) uint8 {
	k := r.head(cborUint)
	if k <= uint64(last) || k > math.MaxUint8 {
		r.fail()
		return 0
	}
	return uint8(k)
}

func (r *cborReader) uint() uint64 { return r.head(cborUint) }

func (r *cborReader) uint8() uint8 {
	n := r.head(cborUint)
	if n > math.MaxUint8 {
		r.fail()
	}
	return uint8(n)
}

// int reads an integer of either sign that fits an int64.
func (r *cborReader) int() int64 {
	if r.bad || r.p >= len(r.b) {
		r.fail()
		return 0
	}
	if r.b[r.p]&0xe0 == cborNeg {
		n := r.head(cborNeg)
		if n > math.MaxInt64 {
			r.fail()
		}
		return -1 - int64(n)
	}
	n := r.head(cborUint)
	if n > math.MaxInt64 {
		r.fail()
	}
	return int64(n)
}

// content reads the head of a string of major type major and returns its bytes, which
// alias r.b.
func (r *cborReader) content(major byte) []byte {
	n := r.head(major)
	if r.bad || n > uint64(len(r.b)-r.p) {
		r.fail()
		return nil
	}
	s := r.b[r.p : r.p+int(n)]
	r.p += int(n)
	return s
}

// text reads a text string of valid UTF-8.
func (r *cborReader) text() string {
	s := r.content(cborText)
	if !utf8.Valid(s) {
		r.fail()
		return ""
	}
	return string(s)
}

// byteString reads a byte string into a new slice (empty, not nil, for an empty string).
func (r *cborReader) byteString() []byte {
	s := r.content(cborBytes)
	if r.bad {
		return nil
	}
	return append(make([]byte, 0, len(s)), s...)
}

// digest reads a 32-byte byte string into d.
func (r *cborReader) digest(d *[32]byte) {
	if r.bad || len(r.b)-r.p < 34 || r.b[r.p] != cborBytes|24 || r.b[r.p+1] != 32 {
		r.fail()
		return
	}
	copy(d[:], r.b[r.p+2:r.p+34])
	r.p += 34
}

func (r *cborReader) boolean() bool {
	if r.bad || r.p >= len(r.b) || (r.b[r.p] != cborFalse && r.b[r.p] != cborTrue) {
		r.fail()
		return false
	}
	r.p++
	return r.b[r.p-1] == cborTrue
}

// segments reads a segment list: null is nil, an array a slice of its length.
func (r *cborReader) segments() []Segment {
	if !r.bad && r.p < len(r.b) && r.b[r.p] == cborNull {
		r.p++
		return nil
	}
	n := r.head(cborArray)
	// Every segment takes at least a byte; decMode's bound is MaxSegmentsPerCommand+1.
	if r.bad || n > uint64(len(r.b)-r.p) || n > MaxSegmentsPerCommand {
		r.fail()
		return nil
	}
	segs := make([]Segment, n)
	for i := range segs {
		r.segment(&segs[i])
		if r.bad {
			return nil
		}
	}
	return segs
}

func (r *cborReader) segment(s *Segment) {
	for k := range r.keys() {
		switch k {
		case 1:
			r.digest((*[32]byte)(&s.Digest))
		case 2:
			s.Size = r.int()
		case 3:
			s.Inline = r.byteString()
		case 4:
			s.Chunking = r.uint8()
		case 5:
			r.digest((*[32]byte)(&s.Blake3))
		default:
			r.fail()
		}
	}
}

func (r *cborReader) header(h *Header) {
	for k := range r.keys() {
		switch k {
		case 1:
			h.TimeMs = r.int()
		case 2:
			h.RequestID = r.text()
		case 3:
			h.Principal = r.text()
		case 4:
			r.digest((*[32]byte)(&h.RequestHash))
		case 5:
			h.UploadFence = r.uint()
		case 6:
			h.Surface = r.text()
		default:
			r.fail()
		}
	}
}

func (r *cborReader) putBody(p *Put) {
	for k := range r.keys() {
		switch k {
		case 1:
			p.Agent = r.text()
		case 2:
			p.Workspace = r.text()
		case 3:
			p.Path = r.text()
		case 4:
			p.CreateWorkspace = r.boolean()
		case 5:
			p.Cond = Condition(r.uint8())
		case 6:
			p.IfGeneration = r.uint()
		case 7:
			p.Size = r.int()
		case 8:
			r.digest((*[32]byte)(&p.Digest))
		case 9:
			p.ContentType = r.text()
		case 10:
			p.Executable = r.boolean()
		case 11:
			p.Segments = r.segments()
		case 12:
			p.HashState = r.byteString()
		case 13:
			p.Fields = r.fields()
		case 14:
			p.MaxWorkbenchFiles = r.int()
		default:
			r.fail()
		}
	}
}

// fields reads a Put's Fields through fieldsDecMode (the floats of a FieldValue follow
// rules of their own).
func (r *cborReader) fields() map[string]FieldValue {
	if r.bad || r.p >= len(r.b) || r.b[r.p]&0xe0 != cborMap {
		r.fail()
		return nil
	}
	var f map[string]FieldValue
	rest, err := fieldsDecMode.UnmarshalFirst(r.b[r.p:], &f)
	if err != nil {
		r.fail()
		return nil
	}
	r.p = len(r.b) - len(rest)
	return f
}

func (r *cborReader) appendBody(a *Append) {
	for k := range r.keys() {
		switch k {
		case 1:
			a.Agent = r.text()
		case 2:
			a.Workspace = r.text()
		case 3:
			a.Path = r.text()
		case 4:
			a.CreateWorkspace = r.boolean()
		case 5:
			a.ExpectGeneration = r.uint()
		case 6:
			a.Segments = r.segments()
		case 7:
			a.AppendedBytes = r.int()
		case 8:
			a.NewSize = r.int()
		case 9:
			r.digest((*[32]byte)(&a.NewDigest))
		case 10:
			a.NewHashState = r.byteString()
		case 11:
			a.ContentType = r.text()
		case 12:
			a.Executable = r.boolean()
		case 13:
			a.InlineMaxBytes = r.int()
		default:
			r.fail()
		}
	}
}

func (r *cborReader) deleteBody(d *Delete) {
	for k := range r.keys() {
		switch k {
		case 1:
			d.Agent = r.text()
		case 2:
			d.Workspace = r.text()
		case 3:
			d.Path = r.text()
		case 4:
			d.IfGeneration = r.uint()
		default:
			r.fail()
		}
	}
}
