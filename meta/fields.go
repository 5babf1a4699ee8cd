package meta

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Limits on the fields a writer attaches to a file (REST: Cairn-Field-<name> headers).
const (
	MaxFieldsPerFile    = 64
	MaxFieldNameBytes   = 128
	MaxFieldStringBytes = 1024
)

// FieldKind is the JSON scalar type of a field value.
type FieldKind uint8

// Field kinds. Numbers are part of the log and snapshot format: never renumber.
const (
	FieldString FieldKind = 1
	FieldInt    FieldKind = 2 // a JSON number written without fraction or exponent that fits int64
	FieldFloat  FieldKind = 3 // any other finite JSON number
	FieldBool   FieldKind = 4
)

// FieldValue is a typed JSON scalar: the value of a built-in or writer-attached field.
// Exactly the member that Kind names is meaningful.
type FieldValue struct {
	Kind  FieldKind `cbor:"1,keyasint"`
	Str   string    `cbor:"2,keyasint,omitempty"`
	Int   int64     `cbor:"3,keyasint,omitempty"`
	Float float64   `cbor:"4,keyasint,omitempty"`
	Bool  bool      `cbor:"5,keyasint,omitempty"`
}

// StringField, IntField, FloatField and BoolField build field values.
func StringField(s string) FieldValue { return FieldValue{Kind: FieldString, Str: s} }
func IntField(i int64) FieldValue     { return FieldValue{Kind: FieldInt, Int: i} }
func FloatField(f float64) FieldValue { return FieldValue{Kind: FieldFloat, Float: f} }
func BoolField(b bool) FieldValue     { return FieldValue{Kind: FieldBool, Bool: b} }

// Any returns the value as a Go value for JSON encoding: string, int64, float64 or bool.
func (v FieldValue) Any() any {
	switch v.Kind {
	case FieldString:
		return v.Str
	case FieldInt:
		return v.Int
	case FieldFloat:
		return v.Float
	case FieldBool:
		return v.Bool
	}
	return nil
}

// Number returns the value as a float64 and whether it is numeric.
func (v FieldValue) Number() (float64, bool) {
	switch v.Kind {
	case FieldInt:
		return float64(v.Int), true
	case FieldFloat:
		return v.Float, true
	}
	return 0, false
}

// String renders the value the way JSON would.
func (v FieldValue) String() string {
	switch v.Kind {
	case FieldString:
		return strconv.Quote(v.Str)
	case FieldInt:
		return strconv.FormatInt(v.Int, 10)
	case FieldFloat:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case FieldBool:
		return strconv.FormatBool(v.Bool)
	}
	return "null"
}

// ValidateFieldName checks a writer-attached field name: 1..MaxFieldNameBytes bytes of
// lower-case ASCII letters, digits, '_', '-' and '.', starting with a letter, and not in
// the reserved "artifact." namespace of the built-in fields.
func ValidateFieldName(field, name string) *Error {
	if name == "" || len(name) > MaxFieldNameBytes {
		return invalidArg(field, "field name must be 1..%d bytes, got %d", MaxFieldNameBytes, len(name))
	}
	if name[0] < 'a' || name[0] > 'z' {
		return invalidArg(field, "field name %q must start with a lower-case ASCII letter", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return invalidArg(field, "field name %q may contain only a-z, 0-9, '_', '-' and '.'", name)
		}
	}
	if len(name) >= len("artifact.") && name[:len("artifact.")] == "artifact." {
		return invalidArg(field, "field name %q is in the reserved artifact. namespace", name)
	}
	return nil
}

// ValidateFields checks the fields a writer attaches: at most MaxFieldsPerFile, valid
// names, known kinds, strings valid UTF-8 of at most MaxFieldStringBytes bytes, finite
// floats.
func ValidateFields(field string, fs map[string]FieldValue) *Error {
	if len(fs) > MaxFieldsPerFile {
		return invalidArg(field, "has %d fields, more than %d", len(fs), MaxFieldsPerFile)
	}
	for name, v := range fs {
		if err := ValidateFieldName(field, name); err != nil {
			return err
		}
		switch v.Kind {
		case FieldString:
			if len(v.Str) > MaxFieldStringBytes || !utf8.ValidString(v.Str) {
				return invalidArg(field, "field %q must be valid UTF-8 of at most %d bytes", name, MaxFieldStringBytes)
			}
		case FieldInt, FieldBool:
		case FieldFloat:
			if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
				return invalidArg(field, "field %q must be a finite number", name)
			}
		default:
			return invalidArg(field, "field %q has unknown kind %d", name, v.Kind)
		}
	}
	return nil
}
