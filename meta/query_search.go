package meta

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Position is where a page of search hits ended: the last hit's values of the sort fields
// (Kind 0 where it lacked one), workbench and path. Meta does not sign it: the surface
// seals it into its cursor together with the query and the read version.
type Position struct {
	Sort      []FieldValue `cbor:"1,keyasint,omitempty"`
	Workbench string       `cbor:"2,keyasint"`
	Path      string       `cbor:"3,keyasint"`
}

// Query is a search.
type Query struct {
	Scope      Scope
	Predicates []Predicate // at most MaxPredicates, all must hold
	// Fields to return per hit (at most MaxProjectedFields); nil = the built-in fields.
	Fields []string
	Sort   []SortKey // at most MaxSortKeys; nil = (workbench, path)
	Facets []string  // at most MaxFacets fields to count values of over all matches
	After  *Position // resume strictly after this hit (nil = from the start)
	Limit  int       // 1..MaxSearchLimit; 0 = MaxSearchLimit
}

// Hit is one matching file.
type Hit struct {
	Workbench string
	Path      string
	Entry     *Entry // read-only
	// Fields holds the requested fields the file has; a requested field it lacks is
	// absent here and null on the wire.
	Fields map[string]FieldValue
}

// FacetValue is one value of a facet and the number of matches that have it.
type FacetValue struct {
	Value FieldValue
	Count int64
}

// Facet counts the values of one field over all matches.
type Facet struct {
	Field    string
	Values   []FacetValue // at most MaxFacetValues, most frequent first, ties by value order
	Missing  int64        // matches lacking the field
	Distinct int64        // distinct values among the matches
	Other    int64        // matches whose value is not among Values
}

// SearchResult is a page of hits.
type SearchResult struct {
	Version uint64 // the shard version every hit was read at
	Hits    []Hit
	Total   int64     // matches in scope (all pages)
	Next    *Position // resume point; nil when this page holds the last match
	Facets  []Facet   // in the order requested
	// Examined is the number of files the query checked; Index names the field whose
	// index produced them ("" = a scan of the scope).
	Examined int64
	Index    string
}

// Search returns a page of the files in scope that match every predicate, in the
// requested order, with facets over all matches. InvalidArguments (naming the argument)
// for a bad query; it never fails otherwise.
func (qv QueryView) Search(q Query) (SearchResult, *Error) { return qv.search(q, planAuto) }

func (qv QueryView) search(q Query, mode planMode) (SearchResult, *Error) {
	preds, err := compilePredicates(q.Predicates)
	if err != nil {
		return SearchResult{}, err
	}
	sorts, err := compileSearchSort(q.Sort)
	if err != nil {
		return SearchResult{}, err
	}
	fields := builtinFields
	if q.Fields != nil {
		if fields, err = compileFieldList("fields", q.Fields, MaxProjectedFields); err != nil {
			return SearchResult{}, err
		}
	}
	facets, err := compileFieldList("facets", q.Facets, MaxFacets)
	if err != nil {
		return SearchResult{}, err
	}
	limit, err := checkLimit(q.Limit, MaxSearchLimit)
	if err != nil {
		return SearchResult{}, err
	}
	if q.After != nil {
		if len(q.After.Sort) != len(sorts) {
			return SearchResult{}, invalidArg("cursor", "does not belong to this sort order")
		}
		for _, fv := range q.After.Sort {
			if fv.Kind > FieldBool || fv.Kind == FieldFloat && (math.IsNaN(fv.Float) || math.IsInf(fv.Float, 0)) {
				return SearchResult{}, invalidArg("cursor", "holds an invalid sort value")
			}
		}
	}
	wss, err := qv.scopeWorkspaces(q.Scope)
	if err != nil {
		return SearchResult{}, err
	}
	ms, examined, index := qv.collect(wss, q.Scope.Path, preds, mode)
	res := SearchResult{Version: qv.v.at, Total: int64(len(ms)), Examined: examined, Index: index}
	for _, f := range facets {
		res.Facets = append(res.Facets, facetOf(f, ms))
	}

	cmpRows := func(a, b *row) int {
		if c := compareSortKeys(a.keys, b.keys, sorts); c != 0 {
			return c
		}
		if c := strings.Compare(a.m.ws.Name, b.m.ws.Name); c != 0 {
			return c
		}
		return comparePaths(a.m.path, b.m.path)
	}
	var after *row
	if q.After != nil {
		after = &row{m: match{ws: &Workspace{Name: q.After.Workbench}, path: q.After.Path}, keys: q.After.Sort}
	}
	top := topK{k: limit + 1, cmp: cmpRows}
	for _, m := range ms {
		r := &row{m: m, keys: sortValues(m, sorts)}
		if after != nil && cmpRows(r, after) <= 0 {
			continue
		}
		top.push(r)
	}
	page := top.sorted()
	if len(page) > limit {
		page = page[:limit]
		last := page[limit-1]
		res.Next = &Position{Sort: last.keys, Workbench: last.m.ws.Name, Path: last.m.path}
	}
	for _, r := range page {
		h := Hit{Workbench: r.m.ws.Name, Path: r.m.path, Entry: r.m.e, Fields: make(map[string]FieldValue, len(fields))}
		for _, f := range fields {
			if fv, ok := fileField(r.m.path, r.m.e, f); ok {
				h.Fields[f] = fv
			}
		}
		res.Hits = append(res.Hits, h)
	}
	return res, nil
}

// row is a match with its sort values (Kind 0 = lacks the field).
type row struct {
	m    match
	keys []FieldValue
}

func sortValues(m match, sorts []sortKey) []FieldValue {
	if len(sorts) == 0 {
		return nil
	}
	out := make([]FieldValue, len(sorts))
	for i, s := range sorts {
		if fv, ok := fileField(m.path, m.e, s.field); ok {
			out[i] = fv
		}
	}
	return out
}

// topK keeps the k least rows pushed to it (a bounded max-heap).
type topK struct {
	k   int
	cmp func(a, b *row) int
	h   []*row
}

func (t *topK) push(r *row) {
	if len(t.h) < t.k {
		t.h = append(t.h, r)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if t.cmp(t.h[i], t.h[p]) <= 0 {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if t.cmp(r, t.h[0]) >= 0 {
		return
	}
	t.h[0] = r
	for i := 0; ; {
		l, big := 2*i+1, i
		if l < len(t.h) && t.cmp(t.h[l], t.h[big]) > 0 {
			big = l
		}
		if l+1 < len(t.h) && t.cmp(t.h[l+1], t.h[big]) > 0 {
			big = l + 1
		}
		if big == i {
			return
		}
		t.h[i], t.h[big] = t.h[big], t.h[i]
		i = big
	}
}

func (t *topK) sorted() []*row {
	slices.SortFunc(t.h, t.cmp)
	return t.h
}

func compileSearchSort(keys []SortKey) ([]sortKey, *Error) {
	if len(keys) > MaxSortKeys {
		return nil, invalidArg("sort", "has %d keys, more than %d", len(keys), MaxSortKeys)
	}
	out := make([]sortKey, 0, len(keys))
	for i, k := range keys {
		arg := "sort[" + strconv.Itoa(i) + "]"
		if err := checkFieldName(arg+".field", k.Field); err != nil {
			return nil, err
		}
		for _, prev := range out {
			if prev.field == k.Field {
				return nil, invalidArg(arg+".field", "repeats field %q", k.Field)
			}
		}
		desc, err := compileDirection(arg+".direction", k.Direction)
		if err != nil {
			return nil, err
		}
		out = append(out, sortKey{field: k.Field, desc: desc})
	}
	return out, nil
}

// facetOf counts the values of field over ms.
func facetOf(field string, ms []match) Facet {
	counts := make(map[FieldValue]int64)
	var missing int64
	for _, m := range ms {
		v, ok := fileField(m.path, m.e, field)
		if !ok {
			missing++
			continue
		}
		counts[canonical(v)]++
	}
	return topValues(field, counts, missing)
}

func topValues(field string, counts map[FieldValue]int64, missing int64) Facet {
	vals := make([]FacetValue, 0, len(counts))
	for v, n := range counts {
		vals = append(vals, FacetValue{Value: v, Count: n})
	}
	slices.SortFunc(vals, func(a, b FacetValue) int {
		if a.Count != b.Count {
			return cmp.Compare(b.Count, a.Count)
		}
		return compareValues(a.Value, b.Value)
	})
	f := Facet{Field: field, Missing: missing, Distinct: int64(len(vals))}
	if len(vals) > MaxFacetValues {
		for _, x := range vals[MaxFacetValues:] {
			f.Other += x.Count
		}
		vals = vals[:MaxFacetValues]
	}
	f.Values = vals
	return f
}
