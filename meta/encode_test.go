package meta

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// The references the hand-written encoders (encode.go) must match byte for byte: the
// reflection encoder, encMode, as the snapshot writer and EncodeCommand used it before.

// encodeCommandReflect is EncodeCommand through encMode alone.
func encodeCommandReflect(h Header, b Body) ([]byte, error) {
	raw, err := encMode.Marshal(b)
	if err != nil {
		return nil, err
	}
	return encMode.Marshal(envelope{Format: CommandFormat, Op: b.Op(), Header: h, Body: raw})
}

// writeFormatReflect is Snapshot.writeFormat through encMode alone.
func writeFormatReflect(s *Snapshot, format uint16) ([]byte, error) {
	var buf bytes.Buffer
	enc := encMode.NewEncoder(&buf)
	st := s.st
	if err := enc.Encode(snapHeader{Format: format, Version: st.version, NowMs: st.nowMs,
		NextRootUID: st.nextRootUID, NextIncarnation: st.nextIncarnation, Seq: st.seq, NextListID: st.nextListID,
		VersionShift: st.shift}); err != nil {
		return nil, err
	}
	var err error
	for _, t := range snapTables {
		if format < t.since {
			continue
		}
		t.write(st, func(k string, rec *snapRecord) bool {
			r := *rec
			r.K = []byte(k)
			err = enc.Encode(r)
			return err == nil
		})
		if err != nil {
			return nil, err
		}
	}
	err = enc.Encode(snapRecord{T: recEnd})
	return buf.Bytes(), err
}

// filler sets values of any type at random through reflection, reaching every exported
// field, with the edges of the CBOR encoding: integers at the boundaries of each head
// size and at their type's limits, strings and byte strings of 0, 23, 24, 255 and 256
// bytes, nil and empty slices, maps and pointers, zero and non-zero arrays, the float
// special values. In full mode nothing is zero, so no omitempty field is left out.
type filler struct {
	r    *rand.Rand
	full bool
}

var (
	edgeUints = []uint64{0, 1, 23, 24, 255, 256, math.MaxUint16, math.MaxUint16 + 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, math.MaxUint64}
	edgeInts  = []int64{0, 1, 23, 24, 255, 256, 65536, math.MaxInt32, math.MaxInt64, -1, -24, -25, -256, -257, -65537, math.MinInt32, math.MinInt64}
	edgeLens  = []int{0, 1, 23, 24, 255, 256, 1024}
	edgeFloat = []float64{0, 1.5, -2, 0.1, 65504, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64}
)

// maxFillDepth is how deep a filler goes (a struct's field, a pointer's or a slice's
// element each one level): deep enough for a segment of a chain element's entry in a
// snapshot record.
const maxFillDepth = 10

func (f *filler) pick(n int) int { return f.r.IntN(n) }

// empty says whether to leave a value at its zero (never in full mode).
func (f *filler) empty() bool { return !f.full && f.r.IntN(3) == 0 }

func (f *filler) length() int {
	n := edgeLens[f.pick(len(edgeLens))]
	if n == 0 && f.full {
		n = 1 + f.pick(30)
	}
	return n
}

func (f *filler) text() string {
	n := f.length()
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString([]string{"a", "z/", "é", "0", "\x00", "世"}[f.pick(6)])
	}
	return sb.String()
}

// command returns a header and a body of op d, both filled by fill (every field when
// f.full), the header first.
func (f *filler) command(d opDef) (Header, Body) {
	var h Header
	f.fill(reflect.ValueOf(&h).Elem(), 0)
	v := reflect.New(reflect.TypeOf(d.body())).Elem()
	f.fill(v, 0)
	return h, v.Interface().(Body)
}

func (f *filler) fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(f.full || f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		for {
			n := edgeInts[f.pick(len(edgeInts))]
			if f.r.IntN(4) == 0 {
				n = f.r.Int64() >> f.pick(64)
			}
			if !v.OverflowInt(n) && (n != 0 || !f.full) {
				v.SetInt(n)
				return
			}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		for {
			n := edgeUints[f.pick(len(edgeUints))]
			if f.r.IntN(4) == 0 {
				n = f.r.Uint64() >> f.pick(64)
			}
			if !v.OverflowUint(n) && (n != 0 || !f.full) {
				v.SetUint(n)
				return
			}
		}
	case reflect.Float32, reflect.Float64:
		x := edgeFloat[f.pick(len(edgeFloat))]
		if x == 0 && f.full {
			x = 3
		}
		v.SetFloat(x)
	case reflect.String:
		v.SetString(f.text())
	case reflect.Array:
		if f.empty() {
			return
		}
		for i := range v.Len() {
			f.fill(v.Index(i), depth+1)
		}
	case reflect.Slice:
		switch {
		case f.empty() || depth > maxFillDepth:
			return // nil
		case !f.full && f.r.IntN(4) == 0:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		n := 1 + f.pick(3)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			n = f.length()
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		switch {
		case f.empty() || depth > maxFillDepth:
			return
		case !f.full && f.r.IntN(4) == 0:
			v.Set(reflect.MakeMap(v.Type()))
			return
		}
		m := reflect.MakeMap(v.Type())
		for range 1 + f.pick(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k, depth+1)
			f.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if f.empty() || depth > maxFillDepth {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), depth+1)
			}
		}
	}
}

// sameBytes fails t when the hand-written encoding got differs from the reflection
// encoder's want, showing both in diagnostic notation.
func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		g, _ := cbor.Diagnose(got)
		w, _ := cbor.Diagnose(want)
		t.Fatalf("%s: the hand-written encoding differs from encMode's:\n got %x\n     %s\nwant %x\n     %s", what, got, g, want, w)
	}
}

// TestHandEncodersMatchReflection: the snapshot records and the commands the hand-written
// encoders write are byte for byte those encMode writes, for values that reach every
// field of every type (one in four with no field empty) and every encoding edge, for
// every op of the op table and for whole snapshot streams of every format with every
// table populated.
func TestHandEncodersMatchReflection(t *testing.T) {
	t.Run("snapshot records", func(t *testing.T) {
		f := &filler{r: rand.New(rand.NewPCG(1, 2))}
		for i := range 3000 {
			f.full = i%4 == 0
			var rec snapRecord
			f.fill(reflect.ValueOf(&rec).Elem(), 0)
			got, err := appendSnapRecord(nil, &rec, string(rec.K))
			if err != nil {
				t.Fatal(err)
			}
			want, err := encMode.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			sameBytes(t, fmt.Sprintf("record %d", i), got, want)
		}
	})
	t.Run("commands of every op", func(t *testing.T) {
		f := &filler{r: rand.New(rand.NewPCG(3, 4))}
		for _, d := range opDefs {
			for i := range 300 {
				f.full = i%4 == 0
				h, b := f.command(d)
				got, err := EncodeCommand(h, b)
				if err != nil {
					t.Fatalf("%s: %v", d.name, err)
				}
				want, err := encodeCommandReflect(h, b)
				if err != nil {
					t.Fatal(err)
				}
				sameBytes(t, fmt.Sprintf("%s %d", d.name, i), got, want)
			}
		}
	})
	t.Run("snapshot streams", func(t *testing.T) {
		for seed := range uint64(8) {
			s := &Snapshot{st: randomState(t, rand.New(rand.NewPCG(seed, 5)))}
			for format := uint16(1); format <= SnapshotFormat; format++ {
				var got bytes.Buffer
				if _, err := s.writeFormat(&got, format); err != nil {
					t.Fatal(err)
				}
				want, err := writeFormatReflect(s, format)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("seed %d, format %d: %d bytes written, the reflection encoder writes %d; first difference at byte %d",
						seed, format, got.Len(), len(want), firstDifference(got.Bytes(), want))
				}
			}
		}
	})
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// randomState is a state with records of random values in every snapshot table (read
// in through each table's reader, so each is one the table keeps) and random counters.
func randomState(t *testing.T, r *rand.Rand) *state {
	f := &filler{r: r}
	st := newState()
	f.fill(reflect.ValueOf(&st.version).Elem(), 0)
	f.fill(reflect.ValueOf(&st.nowMs).Elem(), 0)
	f.fill(reflect.ValueOf(&st.nextRootUID).Elem(), 0)
	f.fill(reflect.ValueOf(&st.nextIncarnation).Elem(), 0)
	f.fill(reflect.ValueOf(&st.seq).Elem(), 0)
	f.fill(reflect.ValueOf(&st.nextListID).Elem(), 0)
	f.fill(reflect.ValueOf(&st.shift).Elem(), 0)
	for _, tab := range snapTables {
		for i := range 12 {
			f.full = i%3 == 0
			// A random record of every field: the reader takes the table's own. One in
			// three leaves it nil, which the reader refuses: draw again.
			for attempt := 0; ; attempt++ {
				var rec snapRecord
				f.fill(reflect.ValueOf(&rec).Elem(), 0)
				rec.T = tab.tag
				rec.K = fmt.Appendf(nil, "%s-%d", f.text(), i)
				keepable(&rec, f)
				if tab.read(st, rec) {
					break
				}
				if attempt == 20 {
					t.Fatalf("table %s refused 20 random records: randomState does not know what the table keeps", tab.name)
				}
			}
		}
	}
	return st
}

// keepable adjusts a random record to what its table's reader keeps.
func keepable(rec *snapRecord, f *filler) {
	switch rec.T {
	case recUsage, recQuota, recRetentionPolicy:
		rec.K = bytes.ReplaceAll(rec.K, []byte{0}, []byte("_"))
	}
	switch rec.T {
	case recHold, recMoveInc:
		rec.N = 1 + rec.N&math.MaxInt32
	case recRetention:
		rec.S = append(rec.S, 'x')
	case recRetentionPolicy:
		rec.Retention = &Retention{Versions: 1 + f.pick(5), MaxVersions: 10, Age: time.Duration(f.pick(1000)) * time.Minute}
	case recMove:
		if rec.Move == nil {
			rec.Move = &MoveRecord{}
		}
		rec.Move.Agent = string(rec.K)
	case recFeed:
		if rec.Feed == nil {
			rec.Feed = &feedRecord{}
		}
		if e := rec.Feed.Event; e != nil {
			rec.K = []byte(feedKey(e.Agent, e.Position))
		} else if rec.Feed.Floor == nil {
			rec.Feed.Floor = &FeedPosition{Version: 7}
		}
	}
}
