package meta

import (
	"reflect"
	"testing"
)

// A delta compares every field of a record: two records of one key that differ in any one
// field are not the same (sameRecord's fast path compares the fields one by one; a field
// added to snapRecord without it there would let a delta skip a changed record, and the
// target keep the pre-copy's value).
func TestSameRecordComparesEveryField(t *testing.T) {
	typ := reflect.TypeFor[snapRecord]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "T" || f.Name == "K" {
			continue // the table and the key: equal for the two records a delta compares
		}
		var a, b snapRecord
		v := reflect.ValueOf(&a).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Int64:
			v.SetInt(1)
		case reflect.Slice:
			v.SetBytes([]byte{1})
		default:
			t.Fatalf("field %s of kind %s: extend this test and sameRecord", f.Name, f.Type.Kind())
		}
		if sameRecord(a, b) || sameRecord(b, a) {
			t.Errorf("records that differ in %s are the same to a delta", f.Name)
		}
		if !sameRecord(a, a) {
			t.Errorf("a record with %s set differs from itself", f.Name)
		}
	}
}
