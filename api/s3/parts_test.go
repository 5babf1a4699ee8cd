package s3

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/meta"
)

func TestPartsLayoutIsRecordedOnlyWhenItDescribesTheBytes(t *testing.T) {
	for _, tc := range []struct {
		sizes []int64
		want  string
	}{
		{[]int64{10, 10, 3}, "3/10/23"},
		{[]int64{10, 10, 10}, "3/10/30"},
		{[]int64{10}, ""},                               // one part: no record
		{[]int64{10, 4, 3}, "runs:17:10x1,4x1,3x1"},     // a middle part of another size
		{[]int64{10, 10, 11}, "runs:31:10x2,11x1"},      // the last larger than the others
		{[]int64{5, 6, 6, 6, 1}, "runs:24:5x1,6x3,1x1"}, // equal neighbours counted once
	} {
		got := ""
		if f := partsField(tc.sizes); f != nil {
			got = f[fieldParts].Str
		}
		if got != tc.want {
			t.Errorf("partsField(%v) = %q, want %q", tc.sizes, got, tc.want)
		}
	}
	// Sizes alternating too often for one field: one part.
	var many []int64
	for i := range 200 {
		many = append(many, int64(1000+i%2))
	}
	if f := partsField(many); f != nil {
		t.Errorf("a layout of 200 alternating sizes was recorded in %d bytes", len(f[fieldParts].Str))
	}

	check := func(name string, l partsLayout, sizes []int64) {
		t.Helper()
		if l.count() != len(sizes) {
			t.Fatalf("%s: %d parts, want %d", name, l.count(), len(sizes))
		}
		var off int64
		for i, s := range sizes {
			if o, n := l.part(i + 1); o != off || n != s {
				t.Fatalf("%s: part %d at %d+%d, want %d+%d", name, i+1, o, n, off, s)
			}
			off += s
		}
	}
	for _, sizes := range [][]int64{{10, 10, 3}, {10, 4, 3}, {5, 6, 6, 6, 1}, {10, 10, 11}} {
		var total int64
		for _, s := range sizes {
			total += s
		}
		check(fmt.Sprint(sizes), layoutOf(partsField(sizes), total), sizes)
	}

	fields := partsField([]int64{10, 10, 3})
	for name, fs := range map[string]map[string]meta.FieldValue{
		"another size (the bytes changed since)": fields,
		"a malformed record":                     {fieldParts: meta.StringField("3/ten/23")},
		"a record of parts that do not add up":   {fieldParts: meta.StringField("2/10/23")},
		"runs that do not add up":                {fieldParts: meta.StringField("runs:23:10x1,4x1")},
		"runs of another object size":            {fieldParts: meta.StringField("runs:24:10x2,3x1")},
		"a run of no parts":                      {fieldParts: meta.StringField("runs:23:10x2,3x0")},
		"a run of empty parts":                   {fieldParts: meta.StringField("runs:23:0x5,10x2,3x1")},
		"a run of too many parts":                {fieldParts: meta.StringField("runs:23:1x10001")},
		"one part in runs":                       {fieldParts: meta.StringField("runs:23:23x1")},
		"a run that overflows":                   {fieldParts: meta.StringField("runs:23:9223372036854775807x2,3x1")},
		"malformed runs":                         {fieldParts: meta.StringField("runs:23:10*2,3x1")},
		"no record":                              nil,
	} {
		size := int64(23)
		if strings.HasPrefix(name, "another size") {
			size = 30
		}
		if l := layoutOf(fs, size); l != nil || l.count() != 1 {
			t.Errorf("%s: layout %+v, want one part", name, l)
		}
	}
}

// FuzzPartsLayout: whatever a record says, the layout read is one part or parts that tile
// the object exactly.
func FuzzPartsLayout(f *testing.F) {
	f.Add("3/10/23", int64(23))
	f.Add("runs:17:10x1,4x1,3x1", int64(17))
	f.Fuzz(func(t *testing.T, rec string, size int64) {
		if size < 1 {
			return
		}
		l := layoutOf(map[string]meta.FieldValue{fieldParts: meta.StringField(rec)}, size)
		if l == nil {
			return
		}
		var off int64
		for n := 1; n <= l.count(); n++ {
			o, length := l.part(n)
			if o != off || length < 1 {
				t.Fatalf("%q over %d: part %d at %d+%d, want at %d and at least a byte", rec, size, n, o, length, off)
			}
			off += length
		}
		if off != size || l.count() < 2 || l.count() > MaxPartNumber {
			t.Fatalf("%q over %d: %d parts covering %d bytes", rec, size, l.count(), off)
		}
	})
}
