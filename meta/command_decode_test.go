package meta

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The reference the hand-written command decoder (command_decode.go) must match:
// decodeCommandReflect, DecodeCommand through decMode alone, as it decoded every command
// before.

// sameValue reports whether a and b are equal as reflect.DeepEqual says, down to nil and
// empty slices and maps, except that floats are equal when their bits are (a NaN field
// value decodes to the same NaN both ways, which DeepEqual calls unequal).
func sameValue(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() || a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if w := b.MapIndex(k); !w.IsValid() || !sameValue(a.MapIndex(k), w) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	}
	return a.Interface() == b.Interface()
}

// sameDecoding fails t unless DecodeCommand and decodeCommandReflect answer data alike:
// equal headers and bodies, or errors of the same text.
func sameDecoding(t *testing.T, what string, data []byte) {
	t.Helper()
	h, b, err := DecodeCommand(data)
	wh, wb, werr := decodeCommandReflect(data)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("%s: %x: DecodeCommand: %v, decMode: %v", what, data, err, werr)
	}
	if !sameValue(reflect.ValueOf(&h).Elem(), reflect.ValueOf(&wh).Elem()) ||
		!sameValue(reflect.ValueOf(&b).Elem(), reflect.ValueOf(&wb).Elem()) {
		t.Fatalf("%s: %x: DecodeCommand decoded\n%#v\n%#v\ndecMode\n%#v\n%#v", what, data, h, b, wh, wb)
	}
}

// hotOp says whether the hand-written decoder decodes commands of op.
func hotOp(op Op) bool { return op == OpPut || op == OpAppend || op == OpDelete }

// TestHandDecoderMatchesReflection: for random commands of every op of the op table (one
// in four with no field empty, the others with fields empty, nil and empty, at every
// encoding edge), the hand-written decoder decodes every put, append and delete and no
// other op, and DecodeCommand answers their encodings and corruptions of them (a
// byte changed, inserted, dropped or cut off: 60 of each put, append and delete, 3 of
// the others) exactly as decMode does.
func TestHandDecoderMatchesReflection(t *testing.T) {
	f := &filler{r: rand.New(rand.NewPCG(10, 11))}
	r := rand.New(rand.NewPCG(12, 13))
	for _, d := range opDefs {
		for i := range 200 {
			f.full = i%4 == 0
			data, err := EncodeCommand(f.command(d))
			if err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			what := fmt.Sprintf("%s %d", d.name, i)
			if _, _, ok := decodeHotCommand(data); ok != hotOp(d.op) {
				t.Fatalf("%s: the hand-written decoder decodes it: %v, want %v", what, ok, hotOp(d.op))
			}
			sameDecoding(t, what, data)
			n := 3
			if hotOp(d.op) {
				n = 60
			}
			for j := range n {
				sameDecoding(t, fmt.Sprintf("%s, corruption %d", what, j), corrupt(r, data))
			}
		}
	}
}

// corrupt returns a copy of data with one byte changed, inserted or dropped, or cut short.
func corrupt(r *rand.Rand, data []byte) []byte {
	out := append([]byte(nil), data...)
	i := r.IntN(len(out))
	switch r.IntN(4) {
	case 0:
		out[i] = byte(r.IntN(256))
	case 1:
		i = r.IntN(len(out) + 1) // at the end too: a byte after the command
		out = append(out[:i], append([]byte{byte(r.IntN(256))}, out[i:]...)...)
	case 2:
		out = append(out[:i], out[i+1:]...)
	default:
		out = out[:i]
	}
	return out
}

// FuzzCommandDecoding: DecodeCommand answers arbitrary bytes exactly as decMode does:
// the same header and body, or an error of the same text.
func FuzzCommandDecoding(f *testing.F) {
	fl := &filler{r: rand.New(rand.NewPCG(14, 15))}
	for _, d := range opDefs {
		for i := range 4 {
			if i > 0 && !hotOp(d.op) {
				break
			}
			fl.full = i == 0
			data, err := EncodeCommand(fl.command(d))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxCommandBytes {
			return
		}
		sameDecoding(t, "command", data)
	})
}

// Items of the hand-built commands of TestHandDecoderEdges.
func cu(n uint64) []byte { return appendUintItem(nil, n) }
func ct(s string) []byte { return appendTextItem(nil, s) }
func cb(n int) []byte    { return appendStringBytesItem(nil, string(make([]byte, n))) }
func cx(h string) []byte { return []byte(h) }
func cm(kv ...[]byte) []byte {
	out := appendHead(nil, cborMap, uint64(len(kv)/2))
	for _, p := range kv {
		out = append(out, p...)
	}
	return out
}
func ca(items ...[]byte) []byte {
	out := appendHead(nil, cborArray, uint64(len(items)))
	for _, p := range items {
		out = append(out, p...)
	}
	return out
}

// nested is n arrays, each holding the next, around 1.
func nested(n int) []byte {
	out := cu(1)
	for range n {
		out = ca(out)
	}
	return out
}

// TestHandDecoderEdges: DecodeCommand answers commands at the edges of the canonical
// shape as decMode does: values at the limits of their fields and just past them, empty
// and null where the encoder leaves a field out, heads longer than needed, indefinite
// lengths, tags, floats, digests of the wrong length, keys out of order, repeated or
// unknown, other formats and ops, and Fields nested up to decMode's limit and past it.
func TestHandDecoderEdges(t *testing.T) {
	hdr := cm(cu(1), cu(5), cu(4), cb(32))
	cmd := func(format, op uint64, h, body []byte) []byte {
		return cm(cu(1), cu(format), cu(2), cu(op), cu(3), h, cu(4), body)
	}
	put := func(kv ...[]byte) []byte {
		return cmd(1, uint64(OpPut), hdr, cm(append([][]byte{cu(1), ct("a"), cu(2), ct("w"), cu(3), ct("p")}, kv...)...))
	}
	seg := func(kv ...[]byte) []byte { return put(cu(11), ca(cm(append([][]byte{cu(1), cb(32)}, kv...)...))) }
	field := func(v []byte) []byte { return put(cu(13), cm(ct("f"), v)) }
	cases := map[string][]byte{
		"a canonical put":             put(cu(7), cu(3), cu(8), cb(32), cu(9), ct("t"), cu(11), cx("\xf6")),
		"an empty hash state":         put(cu(12), cb(0)),
		"a hash state":                put(cu(12), cb(5)),
		"a condition of 255":          put(cu(5), cu(255)),
		"a condition of 256":          put(cu(5), cu(256)),
		"a generation of 2^64-1":      put(cu(6), cu(math.MaxUint64)),
		"a negative generation":       put(cu(6), cx("\x20")),
		"a size of MaxInt64":          put(cu(7), cu(math.MaxInt64)),
		"a size of MaxInt64+1":        put(cu(7), cu(math.MaxInt64+1)),
		"a size of MinInt64":          put(cu(7), appendHead(nil, cborNeg, math.MaxInt64)),
		"a size below MinInt64":       put(cu(7), appendHead(nil, cborNeg, math.MaxInt64+1)),
		"a size as a float":           put(cu(7), cx("\xf9\x3c\x00")),
		"a size under a tag":          put(cu(7), cx("\xc1\x01")),
		"create false":                put(cu(4), cx("\xf4")),
		"create true":                 put(cu(4), cx("\xf5")),
		"executable false":            put(cu(10), cx("\xf4")),
		"create null":                 put(cu(4), cx("\xf6")),
		"create as 1":                 put(cu(4), cu(1)),
		"a digest of 31 bytes":        put(cu(8), cb(31)),
		"a digest of 33 bytes":        put(cu(8), cb(33)),
		"a digest of 0 bytes":         put(cu(8), cb(0)),
		"a text with a long head":     put(cu(9), cx("\x78\x01t")),
		"an indefinite text":          put(cu(9), cx("\x7f\x61t\xff")),
		"a text of invalid UTF-8":     put(cu(9), cx("\x61\xff")),
		"a text as bytes":             put(cu(9), cb(1)),
		"null segments":               put(cu(11), cx("\xf6")),
		"no segments":                 put(cu(11), ca()),
		"an indefinite segment list":  put(cu(11), cx("\x9f\xff")),
		"an empty segment":            put(cu(11), ca(cm())),
		"an empty inline segment":     seg(cu(2), cu(0), cu(3), cb(0)),
		"an inline segment":           seg(cu(2), cu(3), cu(3), cb(3)),
		"a chunking of 256":           seg(cu(4), cu(256)),
		"a segment's blake3":          seg(cu(5), cb(32)),
		"a segment's unknown key":     seg(cu(6), cu(1)),
		"a segment's keys unordered":  put(cu(11), ca(cm(cu(2), cu(1), cu(1), cb(32)))),
		"keys unordered":              cmd(1, uint64(OpPut), hdr, cm(cu(2), ct("w"), cu(1), ct("a"))),
		"a repeated key":              cmd(1, uint64(OpPut), hdr, cm(cu(1), ct("w"), cu(1), ct("a"))),
		"an unknown key":              put(cu(15), cu(1)),
		"a files cap":                 put(cu(14), cu(4)),
		"a files cap of 0":            put(cu(14), cu(0)),
		"a negative files cap":        put(cu(14), cx("\x20")),
		"a files cap of MaxInt64+1":   put(cu(14), cu(math.MaxInt64+1)),
		"a files cap as text":         put(cu(14), ct("4")),
		"a files cap then a key":      put(cu(14), cu(4), cu(15), cu(1)),
		"a text key":                  put(ct("1"), ct("a")),
		"a map with a long head":      cmd(1, uint64(OpPut), hdr, append(cx("\xb8\x01"), append(cu(1), ct("a")...)...)),
		"an indefinite map":           cmd(1, uint64(OpPut), hdr, append(cx("\xbf"), append(append(cu(1), ct("a")...), 0xff)...)),
		"an empty put":                cmd(1, uint64(OpPut), hdr, cm()),
		"an empty header":             cmd(1, uint64(OpDelete), cm(), cm()),
		"a header's unknown key":      cmd(1, uint64(OpDelete), cm(cu(7), cu(1)), cm()),
		"a full header":               cmd(1, uint64(OpDelete), cm(cu(1), cx("\x20"), cu(2), ct("r"), cu(3), ct("p"), cu(4), cb(32), cu(5), cu(9), cu(6), ct("s")), cm()),
		"format 0":                    cmd(0, uint64(OpDelete), hdr, cm()),
		"format 2":                    cmd(2, uint64(OpDelete), hdr, cm()),
		"op 0":                        cmd(1, 0, hdr, cm()),
		"a tick":                      cmd(1, uint64(OpTick), hdr, cm()),
		"op 259":                      cmd(1, 259, hdr, cm()),
		"a body that is not a map":    cmd(1, uint64(OpDelete), hdr, ca()),
		"a delete":                    cmd(1, uint64(OpDelete), hdr, cm(cu(1), ct("a"), cu(4), cu(24))),
		"an append":                   cmd(1, uint64(OpAppend), hdr, cm(cu(6), ca(), cu(10), cb(2), cu(13), cx("\x38\x63"))),
		"an envelope of 3 keys":       cm(cu(1), cu(1), cu(2), cu(uint64(OpDelete)), cu(4), cm()),
		"an envelope of 5 keys":       cm(cu(1), cu(1), cu(2), cu(uint64(OpDelete)), cu(3), hdr, cu(4), cm(), cu(5), cu(0)),
		"a byte after the envelope":   append(cmd(1, uint64(OpDelete), hdr, cm()), 0),
		"an envelope cut short":       cmd(1, uint64(OpDelete), hdr, cm())[:20],
		"null fields":                 put(cu(13), cx("\xf6")),
		"empty fields":                put(cu(13), cm()),
		"a string field":              field(cm(cu(1), cu(1), cu(2), ct("v"))),
		"a float field":               field(cm(cu(1), cu(3), cu(4), cx("\xfb\x3f\xf8\x00\x00\x00\x00\x00\x00"))),
		"a NaN field":                 field(cm(cu(1), cu(3), cu(4), cx("\xf9\x7e\x00"))),
		"a field's unknown key":       field(cm(cu(1), cu(2), cu(9), cu(3))),
		"repeated field names":        put(cu(13), cm(ct("f"), cm(), ct("f"), cm())),
		"fields under a tag":          put(cu(13), cx("\xc0\xa0")),
		"a field nested 11 deep":      field(cm(cu(9), nested(11))),
		"a field nested 12 deep":      field(cm(cu(9), nested(12))),
		"a field nested 13 deep":      field(cm(cu(9), nested(13))),
		"a field nested 14 deep":      field(cm(cu(9), nested(14))),
		"fields followed by more":     put(cu(13), cm(), cu(14), cu(1)),
		"fields at the end cut short": put(cu(13), cm(ct("f"), cm(cu(1), cu(1))))[:60],
	}
	for name, data := range cases {
		sameDecoding(t, name, data)
	}
	// The canonical ones are decoded by hand, not left to decMode.
	for _, name := range []string{"a canonical put", "a hash state", "a files cap", "a delete", "an append", "a full header", "a NaN field", "an inline segment"} {
		if _, _, ok := decodeHotCommand(cases[name]); !ok {
			t.Fatalf("%s: the hand-written decoder leaves it to decMode", name)
		}
	}
}
