package meta

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"
)

// The secondary field index (docs/architecture.md#the-metadata-core "secondary indexes").
//
// state.index holds one key per (live file, field): every built-in field the file has and
// every writer-attached field. A key is
//
//	u64(incarnation) | field token | 0x00 | tag | value | path
//
// where the field token is one byte for a built-in field (indexFieldToken) and a writer's
// field's name otherwise, and tag and value are an order-preserving encoding of the field's value:
//
//   - 'n' numbers (int and float together): the 8-byte order-preserving encoding of the
//     value rounded to float64 (ints above 2^53 round to a neighbour; -0 becomes +0);
//   - 's' strings: the first indexStringBytes bytes, with 0x00 escaped as 0x00 0xFF and
//     terminated by 0x00 0x01, so byte order of keys is byte order of the (truncated)
//     values and a prefix of a value encodes to a prefix of its encoding;
//   - 'b' booleans: one byte, 0 or 1.
//
// The encoding is monotone but not injective (rounding, truncation): a ≤ b implies
// enc(a) ≤ enc(b), never the converse. So an index range is a superset of the files whose
// value lies in the predicate's range, and every candidate is checked against the exact
// predicate afterwards: results never depend on whether the index was used.
//
// Field names hold no 0x00 and start with a letter (ValidateFieldName), paths hold no
// 0x00 (ValidatePath), so the key of a file's field is unique and the path is the rest of the key after the value. A key
// is at most 8 + MaxFieldNameBytes + 2 + 2*indexStringBytes + 2 + MaxPathBytes bytes.
//
// The index describes the live state only (the head of every chain). It is derived data:
// never in a Raft snapshot, maintained by publish (indexFile) and rebuilt by Restore
// (rebuildIndex). Views at older versions scan the version chains instead.

// Index key tags.
const (
	indexTagNumber = 'n'
	indexTagString = 's'
	indexTagBool   = 'b'
)

// indexStringBytes bounds the bytes of a string value that go into an index key. Longer
// values share the key of their prefix; the exact check after the lookup tells them apart.
const indexStringBytes = 128

// indexFile updates the secondary index when the live entry of path in incarnation inc
// changes from old to e (either may be nil).
//
// A new file's keys share one allocation (indexKeys). When a file changes, the keys that
// stay keep the strings the tree holds, and the keys that come are packed into an
// allocation of their own, so the index never holds the copies of the keys that stayed.
func (s *state) indexFile(inc uint64, path string, old, e *Entry) {
	if old == e {
		return
	}
	after := indexKeys(inc, path, e)
	if old == nil {
		for _, k := range after {
			s.index.Set(k, struct{}{})
		}
		return
	}
	before := indexKeys(inc, path, old)
	// Both are sorted: delete what goes, add what comes, leave what stays.
	added := make([]string, 0, len(after))
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || i < len(before) && before[i] < after[j]:
			s.index.Delete(before[i])
			i++
		case i == len(before) || after[j] < before[i]:
			added = append(added, after[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(added) < len(after) {
		added = packStrings(added)
	}
	for _, k := range added {
		s.index.Set(k, struct{}{})
	}
}

// packStrings returns ss as substrings of one new string.
func packStrings(ss []string) []string {
	n := 0
	for _, k := range ss {
		n += len(k)
	}
	var b strings.Builder
	b.Grow(n)
	for _, k := range ss {
		b.WriteString(k)
	}
	all, out, start := b.String(), make([]string, len(ss)), 0
	for i, k := range ss {
		out[i] = all[start : start+len(k)]
		start += len(k)
	}
	return out
}

// rebuildIndex recomputes the secondary index from the live paths (after a restore).
func (s *state) rebuildIndex() {
	s.index.Clear()
	s.paths.Scan(func(key string, rec *pathRecord) bool {
		if e := rec.live(); e != nil {
			inc := binary.BigEndian.Uint64([]byte(key[:incarnationKeySize]))
			for _, k := range indexKeys(inc, keyPath(key), e) {
				s.index.Set(k, struct{}{})
			}
		}
		return true
	})
}

// indexKeys returns the sorted index keys of the fields of e at path (none for nil). The
// keys are substrings of one string: one allocation per file, not one per field. They
// are assembled in a pooled buffer (indexScratch), so that string is the only copy.
func indexKeys(inc uint64, path string, e *Entry) []string {
	if e == nil {
		return nil
	}
	sc := indexScratchPool.Get().(*indexScratch)
	sc.buf, sc.ends = sc.buf[:0], sc.ends[:0]
	// forEachField's fields, in its order; a built-in field's token is its index + 1
	// (indexFieldToken), taken here without the map.
	for i, name := range builtinFields {
		if sc.addFormatted(inc, builtinTokens[i:i+1], name, e, path) {
			continue
		}
		if v, ok := fileField(path, e, name); ok {
			sc.add(inc, builtinTokens[i:i+1], v, path)
		}
	}
	for name, v := range e.Fields {
		sc.add(inc, indexFieldToken(name), v, path)
	}
	all := string(sc.buf)
	keys := make([]string, len(sc.ends))
	start := 0
	for i, end := range sc.ends {
		keys[i] = all[start:end]
		start = end
	}
	if cap(sc.buf) <= maxIndexScratchBytes {
		indexScratchPool.Put(sc)
	}
	slices.Sort(keys)
	return keys
}

// indexScratch is where indexKeys assembles a file's keys: buf holds them end to end,
// ends[i] is where key i ends, raw holds the value addFormatted formats.
type indexScratch struct {
	buf  []byte
	ends []int
	raw  []byte
}

var indexScratchPool = sync.Pool{New: func() any { return new(indexScratch) }}

// maxIndexScratchBytes bounds the buffer a scratch keeps in the pool: a file with many
// long fields leaves its larger one to the garbage collector.
const maxIndexScratchBytes = 64 << 10

// builtinTokens holds the built-in fields' tokens in builtinFields order: byte i+1 at i.
var builtinTokens = func() string {
	b := make([]byte, len(builtinFields))
	for i := range b {
		b[i] = byte(i + 1)
	}
	return string(b)
}()

// add appends the key of field token with value v at path.
func (sc *indexScratch) add(inc uint64, token string, v FieldValue, path string) {
	sc.buf = append(append(binary.BigEndian.AppendUint64(sc.buf, inc), token...), 0x00)
	sc.buf = append(appendIndexValue(sc.buf, v), path...)
	sc.ends = append(sc.ends, len(sc.buf))
}

// addFormatted appends the key of built-in field name if it is one whose string value
// fileField formats (updated_at, digest, producer), formatting the value into sc.raw
// rather than a new string, and reports whether name was one of them (true also for a
// producer the file lacks, which has no key).
func (sc *indexScratch) addFormatted(inc uint64, token, name string, e *Entry, path string) bool {
	switch name {
	case ArtifactUpdatedAt:
		sc.raw = appendUpdatedAt(sc.raw[:0], e.ModifiedAtMs)
	case ArtifactDigest:
		sc.raw = appendDigestURI(sc.raw[:0], e.Digest)
	case ArtifactProducer:
		if e.Producer.IsZero() {
			return true
		}
		sc.raw = e.Producer.appendString(sc.raw[:0])
	default:
		return false
	}
	sc.buf = append(append(binary.BigEndian.AppendUint64(sc.buf, inc), token...), 0x00)
	sc.buf = append(appendIndexString(sc.buf, sc.raw), path...)
	sc.ends = append(sc.ends, len(sc.buf))
	return true
}

// indexFieldBase is the key prefix of every index key of field name in incarnation inc.
func indexFieldBase(inc uint64, name string) string {
	return u64(inc) + indexFieldToken(name) + "\x00"
}

// indexFieldToken is what stands for field name in its index keys: one byte below any
// field name's first (a lower-case letter, ValidateFieldName) for a built-in field, its
// index in builtinFields plus one, so the eleven built-in fields cost a byte a key instead
// of up to 27; a writer's field's name itself.
func indexFieldToken(name string) string {
	if t, ok := builtinFieldTokens[name]; ok {
		return t
	}
	return name
}

var builtinFieldTokens = func() map[string]string {
	m := make(map[string]string, len(builtinFields))
	for i, name := range builtinFields {
		m[name] = string([]byte{byte(i + 1)})
	}
	return m
}()

// appendIndexValue appends the tag and the order-preserving encoding of v.
func appendIndexValue(b []byte, v FieldValue) []byte {
	switch v.Kind {
	case FieldInt, FieldFloat:
		f, _ := v.Number()
		return appendOrderedFloat(append(b, indexTagNumber), f)
	case FieldString:
		return appendIndexString(b, v.Str)
	case FieldBool:
		if v.Bool {
			return append(b, indexTagBool, 1)
		}
		return append(b, indexTagBool, 0)
	}
	return b
}

// appendIndexString appends the tag and the encoding of string value s (appendIndexValue
// of a FieldString), from a string or its bytes.
func appendIndexString[S ~string | ~[]byte](b []byte, s S) []byte {
	return append(appendEscaped(append(b, indexTagString), truncateIndexString(s)), 0x00, 0x01)
}

func truncateIndexString[S ~string | ~[]byte](s S) S {
	if len(s) > indexStringBytes {
		return s[:indexStringBytes]
	}
	return s
}

// appendOrderedFloat appends 8 bytes whose byte order is the numeric order of f.
func appendOrderedFloat(b []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0 and +0 are equal: one encoding
	}
	bits := math.Float64bits(f)
	if bits&(1<<63) != 0 {
		bits = ^bits
	} else {
		bits |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(b, bits)
}

// appendEscaped appends s with 0x00 escaped as 0x00 0xFF (no terminator).
func appendEscaped[S ~string | ~[]byte](b []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0x00, 0xFF)
		} else {
			b = append(b, s[i])
		}
	}
	return b
}

// indexKeyPath returns the path of an index key whose field base (indexFieldBase) is
// baseLen bytes long.
func indexKeyPath(key string, baseLen int) (string, bool) {
	if len(key) <= baseLen {
		return "", false
	}
	rest := key[baseLen+1:]
	switch key[baseLen] {
	case indexTagNumber:
		if len(rest) < 8 {
			return "", false
		}
		return rest[8:], true
	case indexTagBool:
		if len(rest) < 1 {
			return "", false
		}
		return rest[1:], true
	case indexTagString:
		// The escaped value holds 0x00 only before 0xFF; the first 0x00 0x01 ends it.
		for i := 0; i+1 < len(rest); i++ {
			if rest[i] == 0 {
				if rest[i+1] == 0x01 {
					return rest[i+2:], true
				}
				i++
			}
		}
	}
	return "", false
}

// keyRange is a half-open range [lo, hi) of index keys; hi "" is unbounded.
type keyRange struct{ lo, hi string }

// prefixRange is the range of every key that starts with p.
func prefixRange(p string) keyRange { return keyRange{lo: p, hi: prefixEnd(p)} }

// prefixEnd returns the least string greater than every string with prefix p ("" when
// there is none).
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xFF {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// indexable reports whether a predicate can take its candidates from the index.
func (p *pred) indexable() bool {
	switch p.op {
	case PredEq, PredIn, PredPrefix, PredGt, PredGte, PredLt, PredLte, PredExists:
		return true
	}
	return false
}

// indexRanges returns the key ranges of incarnation inc that hold every file matching p
// (a superset: candidates are checked exactly afterwards). p must be indexable.
func (p *pred) indexRanges(inc uint64) []keyRange {
	base := indexFieldBase(inc, p.field)
	value := func(v FieldValue) string { return string(appendIndexValue([]byte(base), v)) }
	tagged := func(v FieldValue) string { return string(appendIndexValue([]byte(base), v)[:len(base)+1]) }
	switch p.op {
	case PredExists:
		return []keyRange{prefixRange(base)}
	case PredEq:
		return []keyRange{prefixRange(value(p.val))}
	case PredIn:
		out := make([]keyRange, 0, len(p.vals))
		seen := make(map[string]bool, len(p.vals))
		for _, v := range p.vals {
			if k := value(v); !seen[k] {
				seen[k] = true
				out = append(out, prefixRange(k))
			}
		}
		return out
	case PredPrefix:
		esc := appendEscaped([]byte(base+string(indexTagString)), truncateIndexString(p.val.Str))
		return []keyRange{prefixRange(string(esc))}
	case PredGt, PredGte:
		return []keyRange{{lo: value(p.val), hi: prefixEnd(tagged(p.val))}}
	case PredLt, PredLte:
		return []keyRange{{lo: tagged(p.val), hi: prefixEnd(value(p.val))}}
	}
	return nil
}

// countRange counts the keys in r, stopping at limit.
func (s *state) countRange(r keyRange, limit int64) int64 {
	var n int64
	if limit <= 0 {
		return 0
	}
	s.index.Ascend(r.lo, func(key string, _ struct{}) bool {
		if r.hi != "" && key >= r.hi {
			return false
		}
		n++
		return n < limit
	})
	return n
}

// rangePaths appends the paths of the keys in r, whose field base is baseLen bytes long.
func (s *state) rangePaths(r keyRange, baseLen int, out []string) []string {
	s.index.Ascend(r.lo, func(key string, _ struct{}) bool {
		if r.hi != "" && key >= r.hi {
			return false
		}
		if p, ok := indexKeyPath(key, baseLen); ok {
			out = append(out, p)
		}
		return true
	})
	return out
}

// hasPathPrefix reports whether path lies in the subtree dir: dir itself or below it,
// component-wise ("a" holds "a" and "a/x", not "ab"). dir "" holds everything.
func hasPathPrefix(path, dir string) bool {
	if dir == "" {
		return true
	}
	return strings.HasPrefix(path, dir) && (len(path) == len(dir) || path[len(dir)] == '/')
}
