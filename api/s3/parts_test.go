package s3

import (
	"testing"

	"github.com/cairnstore/cairn/meta"
)

func TestPartsLayoutIsRecordedOnlyWhenItDescribesTheBytes(t *testing.T) {
	for _, tc := range []struct {
		sizes []int64
		want  bool
	}{
		{[]int64{10, 10, 3}, true},
		{[]int64{10, 10, 10}, true},
		{[]int64{10}, false},         // one part: no record
		{[]int64{10, 4, 3}, false},   // a middle part of another size
		{[]int64{10, 10, 11}, false}, // the last larger than the others
	} {
		if got := partsField(tc.sizes) != nil; got != tc.want {
			t.Errorf("partsField(%v) recorded: %v, want %v", tc.sizes, got, tc.want)
		}
	}
	fields := partsField([]int64{10, 10, 3})
	if l := layoutOf(fields, 23); l != (partsLayout{count: 3, size: 10}) {
		t.Fatalf("layout of 23 bytes: %+v", l)
	}
	for name, fs := range map[string]map[string]meta.FieldValue{
		"another size (the bytes changed since)": fields,
		"a malformed record":                     {fieldParts: meta.StringField("3/ten/23")},
		"a record of parts that do not add up":   {fieldParts: meta.StringField("2/10/23")},
		"no record":                              nil,
	} {
		size := int64(23)
		if name == "another size (the bytes changed since)" {
			size = 30
		}
		if l := layoutOf(fs, size); l != (partsLayout{count: 1, size: size}) {
			t.Errorf("%s: layout %+v, want one part", name, l)
		}
	}
}
