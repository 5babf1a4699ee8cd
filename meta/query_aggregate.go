package meta

import (
	"slices"
	"strconv"
)

// MeasureOp is an aggregate function.
type MeasureOp string

// Measure operators.
const (
	MeasureCount MeasureOp = "count"
	MeasureSum   MeasureOp = "sum"
	MeasureAvg   MeasureOp = "avg"
	MeasureMin   MeasureOp = "min"
	MeasureMax   MeasureOp = "max"
)

// Measure is one named aggregate. Field is required except for count.
type Measure struct {
	Name  string
	Op    MeasureOp
	Field string
}

// AggregateQuery groups the matches of its predicates and measures each group.
type AggregateQuery struct {
	Scope      Scope
	Predicates []Predicate
	Measures   []Measure // 1..MaxMeasures, unique names
	GroupBy    []string  // at most MaxGroupBy fields
	Sort       []SortKey // by measure names or group_by fields
	Limit      int       // groups, 1..MaxAggregateLimit; 0 = MaxAggregateLimit
}

// Group is one group of an aggregate.
type Group struct {
	Key    []FieldValue // one per GroupBy field; Kind 0 = null
	Count  int64        // matches in the group
	Values []FieldValue // one per measure; Kind 0 = null
}

// AggregateResult holds the groups of an aggregate.
type AggregateResult struct {
	Version     uint64
	Groups      []Group
	TotalGroups int64
	Matched     int64
	Examined    int64
	Index       string
}

// Aggregate groups the files in scope that match every predicate and computes the
// measures of each group. InvalidArguments (naming the argument) for a bad query.
func (qv QueryView) Aggregate(q AggregateQuery) (AggregateResult, *Error) {
	return qv.aggregate(q, planAuto)
}

func (qv QueryView) aggregate(q AggregateQuery, mode planMode) (AggregateResult, *Error) {
	preds, err := compilePredicates(q.Predicates)
	if err != nil {
		return AggregateResult{}, err
	}
	groupBy, err := compileFieldList("group_by", q.GroupBy, MaxGroupBy)
	if err != nil {
		return AggregateResult{}, err
	}
	if len(q.Measures) == 0 || len(q.Measures) > MaxMeasures {
		return AggregateResult{}, invalidArg("measures", "must hold 1..%d measures, got %d", MaxMeasures, len(q.Measures))
	}
	for i, m := range q.Measures {
		arg := "measures[" + strconv.Itoa(i) + "]"
		if m.Name == "" || len(m.Name) > MaxMeasureNameBytes {
			return AggregateResult{}, invalidArg(arg+".name", "must be 1..%d bytes", MaxMeasureNameBytes)
		}
		for _, prev := range q.Measures[:i] {
			if prev.Name == m.Name {
				return AggregateResult{}, invalidArg(arg+".name", "repeats measure name %q", m.Name)
			}
		}
		if slices.Contains(groupBy, m.Name) {
			return AggregateResult{}, invalidArg(arg+".name", "%q is also a group_by field; sort keys would be ambiguous", m.Name)
		}
		switch m.Op {
		case MeasureCount:
			if m.Field == "" {
				continue
			}
		case MeasureSum, MeasureAvg, MeasureMin, MeasureMax:
			if m.Field == "" {
				return AggregateResult{}, invalidArg(arg+".field", "%s needs a field", m.Op)
			}
		default:
			return AggregateResult{}, invalidArg(arg+".op", "unknown measure %q (one of count, sum, avg, min, max)", m.Op)
		}
		if err := checkFieldName(arg+".field", m.Field); err != nil {
			return AggregateResult{}, err
		}
	}
	if len(q.Sort) > MaxSortKeys {
		return AggregateResult{}, invalidArg("sort", "has %d keys, more than %d", len(q.Sort), MaxSortKeys)
	}
	sorts := make([]sortKey, 0, len(q.Sort))
	for i, k := range q.Sort {
		arg := "sort[" + strconv.Itoa(i) + "]"
		sk := sortKey{field: k.Field, measure: -1, group: -1}
		if j := slices.IndexFunc(q.Measures, func(m Measure) bool { return m.Name == k.Field }); j >= 0 {
			sk.measure = j
		} else if j := slices.Index(groupBy, k.Field); j >= 0 {
			sk.group = j
		} else {
			return AggregateResult{}, invalidArg(arg+".field", "%q names neither a measure nor a group_by field", k.Field)
		}
		if slices.ContainsFunc(sorts, func(s sortKey) bool { return s.field == k.Field }) {
			return AggregateResult{}, invalidArg(arg+".field", "repeats %q", k.Field)
		}
		if sk.desc, err = compileDirection(arg+".direction", k.Direction); err != nil {
			return AggregateResult{}, err
		}
		sorts = append(sorts, sk)
	}
	limit, err := checkLimit(q.Limit, MaxAggregateLimit)
	if err != nil {
		return AggregateResult{}, err
	}
	wss, err := qv.scopeWorkspaces(q.Scope)
	if err != nil {
		return AggregateResult{}, err
	}
	ms, examined, index := qv.collect(wss, q.Scope.Path, preds, mode)

	type groupAcc struct {
		key   [MaxGroupBy]FieldValue
		count int64
		accs  []measureAcc
	}
	groups := make(map[[MaxGroupBy]FieldValue]*groupAcc)
	var order []*groupAcc
	get := func(key [MaxGroupBy]FieldValue) *groupAcc {
		g := groups[key]
		if g == nil {
			g = &groupAcc{key: key, accs: make([]measureAcc, len(q.Measures))}
			groups[key] = g
			order = append(order, g)
		}
		return g
	}
	if len(groupBy) == 0 {
		get([MaxGroupBy]FieldValue{})
	}
	for _, m := range ms { // canonical order: float sums do not depend on the plan
		var key [MaxGroupBy]FieldValue
		for i, f := range groupBy {
			if fv, ok := fileField(m.path, m.e, f); ok {
				key[i] = canonical(fv)
			}
		}
		g := groups[key]
		if g == nil && len(order) == MaxAggregateGroups {
			return AggregateResult{}, &Error{Code: CodeResourceExhausted, Field: "group_by",
				Message: "groups the matches into more than " + strconv.Itoa(MaxAggregateGroups) + " groups, the most one aggregate forms; narrow the scope or the predicates, or group by fewer or coarser fields"}
		}
		g = get(key)
		g.count++
		for i, me := range q.Measures {
			if me.Field == "" {
				g.accs[i].count++
				continue
			}
			if fv, ok := fileField(m.path, m.e, me.Field); ok {
				g.accs[i].add(fv)
			}
		}
	}
	out := make([]Group, 0, len(order))
	for _, g := range order {
		gr := Group{Key: slices.Clone(g.key[:len(groupBy)]), Count: g.count, Values: make([]FieldValue, len(q.Measures))}
		for i, m := range q.Measures {
			gr.Values[i] = g.accs[i].result(m.Op)
		}
		out = append(out, gr)
	}
	slices.SortFunc(out, func(a, b Group) int {
		for _, s := range sorts {
			var x, y FieldValue
			if s.measure >= 0 {
				x, y = a.Values[s.measure], b.Values[s.measure]
			} else {
				x, y = a.Key[s.group], b.Key[s.group]
			}
			if c := compareSortValue(x, y, s.desc); c != 0 {
				return c
			}
		}
		for i := range a.Key {
			if c := compareSortValue(a.Key[i], b.Key[i], false); c != 0 {
				return c
			}
		}
		return 0
	})
	res := AggregateResult{Version: qv.v.at, TotalGroups: int64(len(out)), Matched: int64(len(ms)), Examined: examined, Index: index}
	if len(out) > limit {
		out = out[:limit]
	}
	res.Groups = out
	return res, nil
}

// measureAcc accumulates one measure of one group.
type measureAcc struct {
	count    int64 // values seen (count with a field)
	nums     int64 // numeric values seen
	sumIsInt bool  // every numeric value so far was an int and their sum fits int64
	sumInt   int64
	sumFloat float64
	minNum   FieldValue
	maxNum   FieldValue
	minStr   FieldValue
	maxStr   FieldValue
}

func (a *measureAcc) add(v FieldValue) {
	a.count++
	switch {
	case isNumber(v):
		if a.nums == 0 {
			a.sumIsInt = true
			a.minNum, a.maxNum = v, v
		} else {
			if compareNumbers(v, a.minNum) < 0 {
				a.minNum = v
			}
			if compareNumbers(v, a.maxNum) > 0 {
				a.maxNum = v
			}
		}
		a.nums++
		if a.sumIsInt && v.Kind == FieldInt {
			if s, ok := addInt64(a.sumInt, v.Int); ok {
				a.sumInt = s
				return
			}
		}
		if a.sumIsInt {
			a.sumIsInt = false
			a.sumFloat = float64(a.sumInt)
		}
		f, _ := v.Number()
		a.sumFloat += f
	case v.Kind == FieldString:
		if a.minStr.Kind == 0 || v.Str < a.minStr.Str {
			a.minStr = v
		}
		if a.maxStr.Kind == 0 || v.Str > a.maxStr.Str {
			a.maxStr = v
		}
	}
}

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

func (a *measureAcc) result(op MeasureOp) FieldValue {
	switch op {
	case MeasureCount:
		return IntField(a.count)
	case MeasureSum:
		switch {
		case a.nums == 0:
			return FieldValue{}
		case a.sumIsInt:
			return IntField(a.sumInt)
		}
		v, _ := floatValue(a.sumFloat)
		return v
	case MeasureAvg:
		if a.nums == 0 {
			return FieldValue{}
		}
		sum := a.sumFloat
		if a.sumIsInt {
			sum = float64(a.sumInt)
		}
		v, _ := floatValue(sum / float64(a.nums))
		return v
	case MeasureMin:
		if a.nums > 0 {
			return a.minNum
		}
		return a.minStr
	case MeasureMax:
		if a.nums > 0 {
			return a.maxNum
		}
		return a.maxStr
	}
	return FieldValue{}
}
