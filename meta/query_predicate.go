package meta

import (
	"reflect"
	"strconv"
	"strings"
)

// PredicateOp is a predicate operator (docs/workbench.md: the op enum of predicates).
type PredicateOp string

// Predicate operators.
const (
	PredEq        PredicateOp = "eq"
	PredNe        PredicateOp = "ne"
	PredIn        PredicateOp = "in"
	PredPrefix    PredicateOp = "prefix"
	PredSuffix    PredicateOp = "suffix"
	PredContains  PredicateOp = "contains"
	PredGt        PredicateOp = "gt"
	PredGte       PredicateOp = "gte"
	PredLt        PredicateOp = "lt"
	PredLte       PredicateOp = "lte"
	PredExists    PredicateOp = "exists"
	PredNotExists PredicateOp = "not_exists"
)

var allPredicateOps = []PredicateOp{PredEq, PredNe, PredIn, PredPrefix, PredSuffix, PredContains,
	PredGt, PredGte, PredLt, PredLte, PredExists, PredNotExists}

// Predicate is one condition on a field. Value is nil (exists, not_exists), a scalar
// (string, bool, a Go integer or float type, json.Number, FieldValue) or, for in, a []any
// or []FieldValue of scalars.
type Predicate struct {
	Field string
	Op    PredicateOp
	Value any
}

// pred is a validated predicate.
type pred struct {
	field string
	op    PredicateOp
	val   FieldValue   // every op but in, exists, not_exists
	vals  []FieldValue // in
}

func matchAll(preds []pred, path string, e *Entry) bool {
	for i := range preds {
		fv, ok := fileField(path, e, preds[i].field)
		if !preds[i].match(fv, ok) {
			return false
		}
	}
	return true
}

// match reports whether a file whose field has value v (ok: it has the field) satisfies p.
func (p *pred) match(v FieldValue, ok bool) bool {
	switch p.op {
	case PredExists:
		return ok
	case PredNotExists:
		return !ok
	}
	if !ok {
		return false
	}
	switch p.op {
	case PredEq:
		return valuesEqual(v, p.val)
	case PredNe:
		return !valuesEqual(v, p.val)
	case PredIn:
		for _, x := range p.vals {
			if valuesEqual(v, x) {
				return true
			}
		}
		return false
	case PredPrefix:
		return v.Kind == FieldString && strings.HasPrefix(v.Str, p.val.Str)
	case PredSuffix:
		return v.Kind == FieldString && strings.HasSuffix(v.Str, p.val.Str)
	case PredContains:
		return v.Kind == FieldString && strings.Contains(v.Str, p.val.Str)
	}
	c, comparable := compareSameType(v, p.val)
	if !comparable {
		return false
	}
	switch p.op {
	case PredGt:
		return c > 0
	case PredGte:
		return c >= 0
	case PredLt:
		return c < 0
	case PredLte:
		return c <= 0
	}
	return false
}

func compilePredicates(ps []Predicate) ([]pred, *Error) {
	if len(ps) > MaxPredicates {
		return nil, invalidArg("predicates", "has %d predicates, more than %d", len(ps), MaxPredicates)
	}
	out := make([]pred, 0, len(ps))
	for i, p := range ps {
		cp, err := compilePredicate("predicates["+strconv.Itoa(i)+"]", p)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, nil
}

func compilePredicate(arg string, p Predicate) (pred, *Error) {
	if err := checkFieldName(arg+".field", p.Field); err != nil {
		return pred{}, err
	}
	cp := pred{field: p.Field, op: p.Op}
	scalar := func(x any, a string) (FieldValue, *Error) {
		if x == nil {
			return FieldValue{}, invalidArg(a, "%s needs a value", p.Op)
		}
		v, ok := scalarValue(x)
		if !ok {
			return FieldValue{}, invalidArg(a, "must be a string, a finite number or a boolean, got %s", valueKind(x))
		}
		if v.Kind == FieldString && len(v.Str) > MaxPredicateStringBytes {
			return FieldValue{}, invalidArg(a, "string is %d bytes, more than %d", len(v.Str), MaxPredicateStringBytes)
		}
		return v, nil
	}
	var err *Error
	switch p.Op {
	case PredExists, PredNotExists:
		if p.Value != nil {
			return pred{}, invalidArg(arg+".value", "%s takes no value", p.Op)
		}
		return cp, nil
	case PredIn:
		arr, ok := arrayValue(p.Value)
		if !ok || len(arr) == 0 || len(arr) > MaxInValues {
			return pred{}, invalidArg(arg+".value", "in needs an array of 1..%d scalars", MaxInValues)
		}
		for j, x := range arr {
			v, err := scalar(x, arg+".value["+strconv.Itoa(j)+"]")
			if err != nil {
				return pred{}, err
			}
			cp.vals = append(cp.vals, v)
		}
	case PredEq, PredNe:
		if cp.val, err = scalar(p.Value, arg+".value"); err != nil {
			return pred{}, err
		}
	case PredPrefix, PredSuffix, PredContains:
		if cp.val, err = scalar(p.Value, arg+".value"); err != nil {
			return pred{}, err
		}
		if cp.val.Kind != FieldString {
			return pred{}, invalidArg(arg+".value", "%s needs a string, got a %s", p.Op, kindFamily(cp.val.Kind))
		}
	case PredGt, PredGte, PredLt, PredLte:
		if cp.val, err = scalar(p.Value, arg+".value"); err != nil {
			return pred{}, err
		}
		if cp.val.Kind == FieldBool {
			return pred{}, invalidArg(arg+".value", "%s needs a number or a string; booleans support eq, ne and in only", p.Op)
		}
	default:
		ops := make([]string, len(allPredicateOps))
		for i, o := range allPredicateOps {
			ops[i] = string(o)
		}
		return pred{}, invalidArg(arg+".op", "unknown operator %q (one of %s)", p.Op, strings.Join(ops, ", "))
	}
	// A built-in field has one type: reject what could never match it.
	if kind, ok := builtinKinds[p.Field]; ok {
		fam := kindFamily(kind)
		switch p.Op {
		case PredPrefix, PredSuffix, PredContains:
			if kind != FieldString {
				return pred{}, invalidArg(arg+".op", "%s applies to strings; %s is an %s field", p.Op, p.Field, kindName(kind))
			}
		case PredIn:
			for j, v := range cp.vals {
				if kindFamily(v.Kind) != fam {
					return pred{}, invalidArg(arg+".value["+strconv.Itoa(j)+"]", "%s is a %s field; a %s never matches it", p.Field, fam, kindFamily(v.Kind))
				}
			}
		default:
			if kindFamily(cp.val.Kind) != fam {
				return pred{}, invalidArg(arg+".value", "%s is a %s field; a %s never matches it", p.Field, fam, kindFamily(cp.val.Kind))
			}
		}
	}
	return cp, nil
}

// operatorsFor lists the operators that can match a field holding the given types:
// strings take all twelve; numbers all but prefix, suffix and contains; booleans eq, ne,
// in, exists, not_exists.
func operatorsFor(str, num, boolean bool) []PredicateOp {
	var out []PredicateOp
	for _, op := range allPredicateOps {
		ok := false
		switch op {
		case PredEq, PredNe, PredIn, PredExists, PredNotExists:
			ok = true
		case PredPrefix, PredSuffix, PredContains:
			ok = str
		case PredGt, PredGte, PredLt, PredLte:
			ok = str || num
		}
		if ok {
			out = append(out, op)
		}
	}
	return out
}

// valueKind names what a predicate value that is not a scalar is, in the JSON terms a
// caller wrote it in (never a Go type).
func valueKind(x any) string {
	if v, ok := x.(FieldValue); ok && v.Kind != FieldFloat {
		return "a value of another kind"
	}
	switch reflect.ValueOf(x).Kind() {
	case reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String, reflect.Float32, reflect.Float64, reflect.Struct:
		return "a number out of range" // json.Number, NaN or ±Inf: the scalars scalarValue refuses
	}
	return "a value of another kind"
}
