package meta

import (
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// A move position whose key holds bytes that are not UTF-8 (a big-endian counter) survives
// every decoder of the package and a plain one, inside a move record as a snapshot or an
// answer carries it; a position encoded with a text key (before the byte encoding) still
// decodes.
func TestMovePositionWithBinaryKeyRoundTrips(t *testing.T) {
	pos := MovePosition{Table: 3, After: "a\x00" + u64(0xff00_00ff_fe00_0001)}
	rec := MoveRecord{Agent: "a", MoveID: "m", State: MoveReleasing, Walk: pos}
	data, err := encMode.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	for name, dm := range map[string]cbor.DecMode{"commands": decMode, "snapshots": snapDecMode} {
		var got MoveRecord
		if err := dm.Unmarshal(data, &got); err != nil || got.Walk != pos {
			t.Fatalf("%s decoder: %+v %v, want %+v", name, got.Walk, err, pos)
		}
	}
	var plain Result
	res, _ := encMode.Marshal(Result{Move: &rec})
	if err := cbor.Unmarshal(res, &plain); err != nil || plain.Move == nil || plain.Move.Walk != pos {
		t.Fatalf("a result decoded by a default decoder: %+v %v", plain.Move, err)
	}
	old, _ := encMode.Marshal(struct {
		Table int    `cbor:"1,keyasint,omitempty"`
		After string `cbor:"2,keyasint,omitempty"`
	}{2, "agent\x00k"})
	var back MovePosition
	if err := decMode.Unmarshal(old, &back); err != nil || back != (MovePosition{Table: 2, After: "agent\x00k"}) {
		t.Fatalf("a text-encoded position: %+v %v", back, err)
	}
	again, _ := encMode.Marshal(pos)
	if first, _ := encMode.Marshal(pos); string(first) != string(again) {
		t.Fatal("the encoding is not deterministic")
	}
}

// The hand codec carries every field of MovePosition: each one, set alone and all
// together, survives an encoding and a decoding by the package's decoders and a default
// one (an export over the peer port once lost Sent, and a copy resumed a record in parts
// from its first byte). A field added to MovePosition without the codec fails here.
func TestMovePositionCodecCarriesEveryField(t *testing.T) {
	nonZero := func(f reflect.Value) {
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1<<33 + 7)
		case reflect.String:
			f.SetString("a\x00\xff")
		default:
			t.Fatalf("no non-zero value for a field of kind %s: extend this test and the codec", f.Kind())
		}
	}
	typ := reflect.TypeFor[MovePosition]()
	var all MovePosition
	cases := map[string]MovePosition{}
	for i := range typ.NumField() {
		var one MovePosition
		nonZero(reflect.ValueOf(&one).Elem().Field(i))
		nonZero(reflect.ValueOf(&all).Elem().Field(i))
		cases[typ.Field(i).Name] = one
	}
	cases["every field"] = all
	for name, pos := range cases {
		data, err := cbor.Marshal(pos)
		if err != nil {
			t.Fatal(err)
		}
		for dname, dm := range map[string]cbor.DecMode{"commands": decMode, "snapshots": snapDecMode} {
			var got MovePosition
			if err := dm.Unmarshal(data, &got); err != nil || got != pos {
				t.Errorf("%s: the %s decoder: %+v %v, want %+v", name, dname, got, err, pos)
			}
		}
		var got MovePosition
		if err := cbor.Unmarshal(data, &got); err != nil || got != pos {
			t.Errorf("%s: a default decoder: %+v %v, want %+v", name, got, err, pos)
		}
	}
}
