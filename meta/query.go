package meta

import (
	"slices"
	"strconv"
)

// Query bounds. The limits on results come from docs/workbench.md (search 1..10, aggregate
// 1..100); the others bound the work and memory one request may ask for.
const (
	MaxSearchLimit          = 10
	MaxAggregateLimit       = 100
	MaxPredicates           = 32
	MaxInValues             = 100
	MaxPredicateStringBytes = MaxPathBytes
	MaxSortKeys             = 8
	MaxProjectedFields      = 64
	MaxFacets               = 16
	MaxFacetValues          = 20 // values reported per facet
	MaxMeasures             = 16
	MaxMeasureNameBytes     = 128
	MaxGroupBy              = 8
	// MaxAggregateGroups bounds the groups one aggregate may form (it keeps each with its
	// measure accumulators until it has seen every match): more is ResourceExhausted on
	// group_by, so an aggregate's memory is known before it runs.
	MaxAggregateGroups = 10_000
	MaxCatalogFields   = 1000
)

// SortDirection is asc (the default, "") or desc.
type SortDirection string

// Sort directions.
const (
	SortAsc  SortDirection = "asc"
	SortDesc SortDirection = "desc"
)

// SortKey orders results by one field (Search) or one measure or group field (Aggregate).
type SortKey struct {
	Field     string
	Direction SortDirection
}

// Scope selects the files a query reads.
type Scope struct {
	// Agent names the agent root; used when Workbench is nil.
	Agent string
	// Workbench restricts the query to one workbench (for a snapshot read, the incarnation
	// the snapshot pins); nil means every visible workbench of Agent's root.
	Workbench *Workspace
	// Path restricts the query to a subtree ("" = everything): the file Path itself and
	// everything below Path + "/". The surfaces join section and path into it.
	Path string
}

type sortKey struct {
	field string
	desc  bool
	// measure is the measure index an aggregate sort key names (-1: a group field, whose
	// index is group).
	measure, group int
}

func compareSortKeys(a, b []FieldValue, sorts []sortKey) int {
	for i, s := range sorts {
		if c := compareSortValue(a[i], b[i], s.desc); c != 0 {
			return c
		}
	}
	return 0
}

// compareSortValue orders a and b in direction desc, with missing values (Kind 0) last.
func compareSortValue(a, b FieldValue, desc bool) int {
	switch {
	case a.Kind == 0 && b.Kind == 0:
		return 0
	case a.Kind == 0:
		return 1
	case b.Kind == 0:
		return -1
	}
	c := compareValues(a, b)
	if desc {
		return -c
	}
	return c
}

func compileFieldList(arg string, names []string, maxN int) ([]string, *Error) {
	if len(names) > maxN {
		return nil, invalidArg(arg, "has %d fields, more than %d", len(names), maxN)
	}
	for i, n := range names {
		a := arg + "[" + strconv.Itoa(i) + "]"
		if err := checkFieldName(a, n); err != nil {
			return nil, err
		}
		if slices.Contains(names[:i], n) {
			return nil, invalidArg(a, "repeats field %q", n)
		}
	}
	return names, nil
}

func checkLimit(limit, maxN int) (int, *Error) {
	if limit == 0 {
		return maxN, nil
	}
	if limit < 1 || limit > maxN {
		return 0, invalidArg("limit", "must be 1..%d, got %d", maxN, limit)
	}
	return limit, nil
}

func compileDirection(arg string, d SortDirection) (bool, *Error) {
	switch d {
	case "", SortAsc:
		return false, nil
	case SortDesc:
		return true, nil
	}
	return false, invalidArg(arg, "must be asc or desc, got %q", d)
}

// QueryView is the metadata queries of one View (View.Queries): search, aggregate,
// catalog and the scope bound a caller checks before it runs one (the package doc's
// "Queries"). Every query reads only through its View, as every facet does, so it sees
// exactly the files visible at the View's version under its restriction.
type QueryView struct{ v *View }
