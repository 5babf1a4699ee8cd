package meta

import (
	"cmp"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

func isNumber(v FieldValue) bool { return v.Kind == FieldInt || v.Kind == FieldFloat }

// valuesEqual: numbers numerically, strings and booleans by value, other pairs never.
func valuesEqual(a, b FieldValue) bool {
	c, ok := compareSameType(a, b)
	return ok && c == 0
}

// compareSameType compares two numbers, two strings or two booleans; ok is false for any
// other pair.
func compareSameType(a, b FieldValue) (c int, ok bool) {
	switch {
	case isNumber(a) && isNumber(b):
		return compareNumbers(a, b), true
	case a.Kind == FieldString && b.Kind == FieldString:
		return strings.Compare(a.Str, b.Str), true
	case a.Kind == FieldBool && b.Kind == FieldBool:
		return compareBools(a.Bool, b.Bool), true
	}
	return 0, false
}

func compareBools(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// compareValues is the total order of present values: numbers (numerically), then strings
// (bytes), then booleans (false first).
func compareValues(a, b FieldValue) int {
	if c, ok := compareSameType(a, b); ok {
		return c
	}
	return cmp.Compare(typeRank(a), typeRank(b))
}

func typeRank(v FieldValue) int {
	switch v.Kind {
	case FieldInt, FieldFloat:
		return 0
	case FieldString:
		return 1
	}
	return 2
}

// two63 is 2^63, the first float above every int64.
const two63 = 9223372036854775808.0

// compareNumbers compares two numeric values exactly (no rounding of large ints).
func compareNumbers(a, b FieldValue) int {
	switch {
	case a.Kind == FieldInt && b.Kind == FieldInt:
		return cmp.Compare(a.Int, b.Int)
	case a.Kind == FieldFloat && b.Kind == FieldFloat:
		return cmp.Compare(a.Float, b.Float)
	case a.Kind == FieldInt:
		return compareIntFloat(a.Int, b.Float)
	}
	return -compareIntFloat(b.Int, a.Float)
}

func compareIntFloat(i int64, f float64) int {
	if f >= two63 {
		return -1
	}
	if f < -two63 {
		return 1
	}
	t := math.Trunc(f)
	if ti := int64(t); i != ti {
		return cmp.Compare(i, ti)
	}
	switch {
	case f > t:
		return -1
	case f < t:
		return 1
	}
	return 0
}

// canonical folds numerically equal values together (an integral float in int64 range
// becomes an int) and clears members the kind does not use: equal values, equal structs.
func canonical(v FieldValue) FieldValue {
	switch v.Kind {
	case FieldString:
		return StringField(v.Str)
	case FieldInt:
		return IntField(v.Int)
	case FieldFloat:
		if v.Float == math.Trunc(v.Float) && v.Float >= -two63 && v.Float < two63 {
			return IntField(int64(v.Float))
		}
		return FloatField(v.Float)
	case FieldBool:
		return BoolField(v.Bool)
	}
	return FieldValue{}
}

// scalarValue converts a decoded JSON scalar (or a Go number) to a field value.
func scalarValue(x any) (FieldValue, bool) {
	switch x := x.(type) {
	case FieldValue:
		switch x.Kind {
		case FieldString, FieldInt, FieldBool:
			return canonicalMembers(x), true
		case FieldFloat:
			return x, !math.IsNaN(x.Float) && !math.IsInf(x.Float, 0)
		}
		return FieldValue{}, false
	case string:
		return StringField(x), true
	case bool:
		return BoolField(x), true
	case int:
		return IntField(int64(x)), true
	case int8:
		return IntField(int64(x)), true
	case int16:
		return IntField(int64(x)), true
	case int32:
		return IntField(int64(x)), true
	case int64:
		return IntField(x), true
	case uint:
		return uintValue(uint64(x)), true
	case uint8:
		return IntField(int64(x)), true
	case uint16:
		return IntField(int64(x)), true
	case uint32:
		return IntField(int64(x)), true
	case uint64:
		return uintValue(x), true
	case float32:
		return floatValue(float64(x))
	case float64:
		return floatValue(x)
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return IntField(i), true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return FieldValue{}, false
		}
		return floatValue(f)
	}
	return FieldValue{}, false
}

func canonicalMembers(v FieldValue) FieldValue {
	switch v.Kind {
	case FieldString:
		return StringField(v.Str)
	case FieldInt:
		return IntField(v.Int)
	case FieldBool:
		return BoolField(v.Bool)
	}
	return v
}

func uintValue(u uint64) FieldValue {
	if u > math.MaxInt64 {
		return FloatField(float64(u))
	}
	return IntField(int64(u))
}

func floatValue(f float64) (FieldValue, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return FieldValue{}, false
	}
	return FloatField(f), true
}

func arrayValue(x any) ([]any, bool) {
	switch x := x.(type) {
	case []any:
		return x, true
	case []FieldValue:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = v
		}
		return out, true
	}
	return nil, false
}
