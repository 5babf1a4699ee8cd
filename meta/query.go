package meta

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Version-consistent queries over file metadata: the engine behind workbench_search,
// workbench_aggregate and workbench_catalog (WORKBENCH.md "search / aggregate / catalog").
// Every query reads one View, so it sees exactly the files visible at one shard version.
//
// # Fields
//
// Every file has the built-in fields below (BuiltinFields) plus the fields its writer
// attached (Entry.Fields, names validated by ValidateFieldName):
//
//	artifact.section       string  first path component when it is input, scripts,
//	                               outputs, logs or metadata and the file lies below it;
//	                               absent otherwise (null on the wire)
//	artifact.name          string  the last path component
//	artifact.ext           string  the basename's text after its last '.', ASCII lower-case;
//	                               absent when the basename has no '.', starts with its only
//	                               '.' (".bashrc") or ends with '.'
//	artifact.size_bytes    int     bytes
//	artifact.content_type  string
//	artifact.generation    int     the shard version that published the body
//	artifact.updated_at    string  RFC 3339 UTC with milliseconds (2026-11-29T23:17:56.123Z),
//	                               so byte order is time order
//	artifact.digest        string  "sha256:" + 64 lower-case hex digits
//
// # Scope
//
// A Scope is one workbench or every visible workbench of an agent root (not staging, and
// created at or before the view's version), optionally narrowed to a path subtree compared
// component-wise: Path "a" holds the file "a" and everything below "a/", never "ab".
//
// # Predicates (all must hold)
//
// Values are JSON scalars: strings, numbers (Go integers, floats, json.Number; an integral
// literal that fits int64 is an int, anything else a float), booleans, or for "in" an array
// of 1..MaxInValues scalars. Strings are at most MaxPredicateStringBytes bytes.
//
//	eq, ne              a scalar. Numbers are equal when numerically equal (3 = 3.0, exactly,
//	                    also beyond 2^53); strings when byte-equal; booleans when equal;
//	                    values of different types are never equal. ne is exactly "has the
//	                    field and not eq".
//	in                  an array of scalars: eq to any of them.
//	prefix, suffix,     a string; matches string values only (bytes, no case folding).
//	contains
//	gt, gte, lt, lte    a number (matches numeric values, compared numerically across int and
//	                    float) or a string (matches string values, compared byte-wise). A
//	                    boolean is InvalidArguments.
//	exists, not_exists  no value (nil).
//
// A file lacking the field matches only not_exists (SQL-like: a missing field is neither
// equal nor unequal to anything). On an attached field, whose type may differ from file to
// file, a value of another type simply does not match. On a built-in field, whose type is
// fixed, an operator or value that could never match is InvalidArguments (so a typo like
// artifact.size_bytes gt "10" is reported, not silently empty). Errors name the argument:
// "predicates[2].value", "predicates[0].op", "predicates[1].value[3]".
//
// # Order and paging
//
// Sort keys compare values of one type as above; across types numbers come before strings,
// strings before booleans (false before true); desc reverses that. A file lacking a sort
// field sorts after every file that has it, in both directions. Ties (and the default order
// without sort keys) go by workbench name, then path component-wise, both ascending, so the
// order is total. A page ends with a Position (the last hit's sort values and identity);
// the caller seals it into its cursor and passes it back as Query.After to resume strictly
// after it. At a fixed shard version, paging visits every match exactly once.
//
// Facets count values over all matches, not only the page: numerically equal values count
// as one (reported as an int when integral), at most MaxFacetValues per field, most
// frequent first, ties by value order.
//
// # Aggregates
//
// Matches are grouped by the group_by fields (a file lacking one groups under null, Kind 0);
// without group_by there is exactly one group, even over no matches. Measures:
//
//	count          files in the group (with a field: files in the group that have it)
//	sum            sum of the numeric values: an int when every value is an int and the sum
//	               fits int64, else a float; null when the group has no numeric value (or a
//	               float sum overflows); non-numeric values are ignored
//	avg            float mean of the numeric values; null when there are none
//	min, max       over the numeric values when the group has any, else over the string
//	               values (byte order); booleans are ignored; null when nothing qualifies
//
// Values are folded in the canonical order (workbench, path), so float sums are identical
// whichever plan produced the matches. Groups sort by the sort keys (measure names or
// group_by fields; nulls last in both directions), then by group key ascending; at most
// limit groups are returned and TotalGroups says how many there were. An aggregate that
// would form more than MaxAggregateGroups groups is ResourceExhausted (Field group_by).
//
// # Cost
//
// Every query is bounded by its scope. A scan visits each file in scope once (B-tree steps,
// one version-chain walk per path). On a live view, Search and Aggregate may instead take
// candidates from the index range of the most selective indexable predicate (eq, in,
// prefix, gt, gte, lt, lte, exists); estimating selectivity counts at most as many index
// keys as there are live files in scope, so a query costs at most about twice a scan.
// Views at older versions (snapshots) always scan. Then O(M) to check and facet the M
// candidates and O(M log limit) to page. Catalog always scans; with facets it keeps one
// counter per distinct (field, value) in scope. Memory is at most one match, one group and
// one counter per facet for each file in scope: ScopeFiles counts those files from the
// directory counters, without visiting one, so a caller can bound a query before it runs.

// Built-in field names.
const (
	ArtifactSection     = "artifact.section"
	ArtifactName        = "artifact.name"
	ArtifactExt         = "artifact.ext"
	ArtifactSizeBytes   = "artifact.size_bytes"
	ArtifactContentType = "artifact.content_type"
	ArtifactGeneration  = "artifact.generation"
	ArtifactUpdatedAt   = "artifact.updated_at"
	ArtifactDigest      = "artifact.digest"
)

const artifactPrefix = "artifact."

var builtinFields = []string{ArtifactSection, ArtifactName, ArtifactExt, ArtifactSizeBytes,
	ArtifactContentType, ArtifactGeneration, ArtifactUpdatedAt, ArtifactDigest}

var builtinKinds = map[string]FieldKind{
	ArtifactSection: FieldString, ArtifactName: FieldString, ArtifactExt: FieldString,
	ArtifactSizeBytes: FieldInt, ArtifactContentType: FieldString, ArtifactGeneration: FieldInt,
	ArtifactUpdatedAt: FieldString, ArtifactDigest: FieldString,
}

// BuiltinFields returns the names of the built-in fields, in documentation order.
func BuiltinFields() []string { return slices.Clone(builtinFields) }

// Query bounds. The limits on results come from WORKBENCH.md (search 1..10, aggregate
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

// PredicateOp is a predicate operator (WORKBENCH.md: the op enum of predicates).
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

// CatalogQuery asks which fields exist in a scope.
type CatalogQuery struct {
	Scope         Scope
	FieldPrefix   string // only fields whose name starts with it ("" = all)
	IncludeFacets bool
}

// CatalogField describes one field.
type CatalogField struct {
	Name    string
	Builtin bool
	// Types are the JSON types the field holds: "string", "integer", "number", "boolean"
	// (observed for attached fields, declared for built-ins).
	Types []string
	// Files is the number of files in scope that have the field.
	Files int64
	// Operators are the predicate operators that can match the field's types.
	Operators []PredicateOp
	Facet     *Facet // with IncludeFacets
}

// CatalogResult lists the fields of a scope, by name. Built-in fields are always listed
// (Files may be 0); attached fields when at least one file in scope has them.
type CatalogResult struct {
	Version   uint64
	Files     int64 // files in scope
	Fields    []CatalogField
	Truncated bool // more than MaxCatalogFields fields matched
}

// Search returns a page of the files in scope that match every predicate, in the
// requested order, with facets over all matches. InvalidArguments (naming the argument)
// for a bad query; it never fails otherwise.
func (v *View) Search(q Query) (SearchResult, *Error) { return v.search(q, planAuto) }

// Aggregate groups the files in scope that match every predicate and computes the
// measures of each group. InvalidArguments (naming the argument) for a bad query.
func (v *View) Aggregate(q AggregateQuery) (AggregateResult, *Error) {
	return v.aggregate(q, planAuto)
}

// planMode chooses how candidates are produced; tests force each plan.
type planMode uint8

const (
	planAuto  planMode = iota // the index when it is more selective than a scan
	planScan                  // always scan
	planIndex                 // the most selective indexable predicate whenever there is one
)

func (v *View) search(q Query, mode planMode) (SearchResult, *Error) {
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
	wss, err := v.scopeWorkspaces(q.Scope)
	if err != nil {
		return SearchResult{}, err
	}
	ms, examined, index := v.collect(wss, q.Scope.Path, preds, mode)
	res := SearchResult{Version: v.at, Total: int64(len(ms)), Examined: examined, Index: index}
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

// match is a file that passed every predicate.
type match struct {
	ws   *Workspace
	path string
	e    *Entry
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

// scopeWorkspaces resolves a scope to its workbenches, in name order.
func (v *View) scopeWorkspaces(sc Scope) ([]*Workspace, *Error) {
	if sc.Path != "" {
		if err := ValidatePath("path", sc.Path); err != nil {
			return nil, err
		}
	}
	if sc.Workbench != nil {
		return []*Workspace{sc.Workbench}, nil
	}
	if err := ValidateName("agent", sc.Agent); err != nil {
		return nil, err
	}
	var out []*Workspace
	prefix := sc.Agent + "\x00"
	v.st.workspaces.Ascend(prefix, func(k string, ws *Workspace) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		// The visibility rule of View.Workspace: staging workbenches and workbenches
		// created after the view's version are invisible.
		if ws.State == WorkspaceVisible && ws.CreatedVersion <= v.at {
			out = append(out, ws)
		}
		return true
	})
	return out, nil
}

// collect returns the files in scope that match every predicate, in canonical order
// (workbench name, then path component-wise), how many files it checked, and the field
// whose index produced the candidates ("" = a scan).
func (v *View) collect(wss []*Workspace, dir string, preds []pred, mode planMode) ([]match, int64, string) {
	var ms []match
	var examined int64
	if mode != planScan && v.live() {
		if p := v.choosePredicate(wss, dir, preds, mode == planIndex); p != nil {
			for _, ws := range wss {
				base := indexFieldBase(ws.Incarnation, p.field)
				var paths []string
				for _, r := range p.indexRanges(ws.Incarnation) {
					paths = v.st.rangePaths(r, len(base), paths)
				}
				slices.SortFunc(paths, comparePaths)
				paths = slices.Compact(paths)
				for _, path := range paths {
					if !hasPathPrefix(path, dir) {
						continue
					}
					rec, _ := v.st.paths.Get(pathKey(ws.Incarnation, path))
					e := rec.at(v.at)
					if e == nil {
						continue
					}
					examined++
					if matchAll(preds, path, e) {
						ms = append(ms, match{ws: ws, path: path, e: e})
					}
				}
			}
			return ms, examined, p.field
		}
	}
	for _, ws := range wss {
		v.scanFiles(ws.Incarnation, dir, func(path string, e *Entry) {
			examined++
			if matchAll(preds, path, e) {
				ms = append(ms, match{ws: ws, path: path, e: e})
			}
		})
	}
	return ms, examined, ""
}

// scanFiles calls fn for every file of incarnation inc visible at the view's version in
// the subtree dir, in component-wise path order.
func (v *View) scanFiles(inc uint64, dir string, fn func(path string, e *Entry)) {
	start := pathKey(inc, dir)
	incPrefix := start[:incarnationKeySize]
	below := start + "\x00"
	v.st.paths.Ascend(start, func(key string, rec *pathRecord) bool {
		if dir == "" {
			if !strings.HasPrefix(key, incPrefix) {
				return false
			}
		} else if key != start && !strings.HasPrefix(key, below) {
			return false
		}
		if e := rec.at(v.at); e != nil {
			fn(keyPath(key), e)
		}
		return true
	})
}

// ScopeFiles returns how many live files a scope holds, from the directory counters: O(the
// workbenches in scope), no file is visited. Callers size a query's memory from it before
// running the query (every match, group or facet value is at most one per file).
// InvalidArguments for a bad scope.
func (v *View) ScopeFiles(sc Scope) (int64, *Error) {
	wss, err := v.scopeWorkspaces(sc)
	if err != nil {
		return 0, err
	}
	return v.liveScopeSize(wss, sc.Path), nil
}

// liveScopeSize counts the live files in scope from the directory counters.
func (v *View) liveScopeSize(wss []*Workspace, dir string) int64 {
	var n int64
	for _, ws := range wss {
		dr, _ := v.st.dirs.Get(pathKey(ws.Incarnation, dir))
		n += dr.Files
		if dir != "" {
			if rec, ok := v.st.paths.Get(pathKey(ws.Incarnation, dir)); ok && rec.live() != nil {
				n++
			}
		}
	}
	return n
}

// choosePredicate picks the indexable predicate with the fewest index keys in scope, when
// that is fewer than the live files in scope (force: whenever one is indexable). It counts
// the keys of every indexable predicate up to a cap that doubles each round, so it stops
// soon after the most selective one is exhausted; the keys it counts in total never exceed
// the live files in scope, so planning never costs more than the scan it may avoid.
func (v *View) choosePredicate(wss []*Workspace, dir string, preds []pred, force bool) *pred {
	order := make([]int, 0, len(preds))
	for i := range preds {
		if preds[i].indexable() {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return nil
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(preds[a].indexRank(), preds[b].indexRank()) })
	scope := int64(math.MaxInt64)
	if !force {
		scope = v.liveScopeSize(wss, dir)
	}
	budget := scope
	for capN := int64(16); ; capN *= 2 {
		var best *pred
		bestN := int64(math.MaxInt64)
		for _, i := range order {
			limit := min(capN, budget)
			if limit <= 0 {
				return nil
			}
			p := &preds[i]
			var n int64
			for _, ws := range wss {
				for _, r := range p.indexRanges(ws.Incarnation) {
					if n < limit {
						n += v.st.countRange(r, limit-n)
					}
				}
			}
			budget -= n
			if n < limit && n < bestN {
				best, bestN = p, n
			}
		}
		switch {
		case best != nil && bestN < scope:
			return best
		case best != nil || capN >= scope:
			return nil
		}
	}
}

// indexRank orders indexable predicates by how selective they tend to be.
func (p *pred) indexRank() int {
	switch p.op {
	case PredEq, PredIn:
		return 0
	case PredPrefix:
		return 1
	case PredExists:
		return 3
	}
	return 2
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

// comparePaths orders paths component-wise, the order of pathKey.
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x == '/' {
			x = 0
		}
		if y == '/' {
			y = 0
		}
		return cmp.Compare(x, y)
	}
	return cmp.Compare(len(a), len(b))
}

// fileField returns the value of field name of the file at path with entry e.
func fileField(path string, e *Entry, name string) (FieldValue, bool) {
	if !strings.HasPrefix(name, artifactPrefix) {
		v, ok := e.Fields[name]
		return v, ok
	}
	switch name {
	case ArtifactSection:
		if s, ok := sectionOf(path); ok {
			return StringField(s), true
		}
	case ArtifactName:
		return StringField(baseName(path)), true
	case ArtifactExt:
		if x, ok := extOf(path); ok {
			return StringField(x), true
		}
	case ArtifactSizeBytes:
		return IntField(e.Size), true
	case ArtifactContentType:
		return StringField(e.ContentType), true
	case ArtifactGeneration:
		return IntField(int64(e.Generation)), true
	case ArtifactUpdatedAt:
		return StringField(FormatUpdatedAt(e.ModifiedAtMs)), true
	case ArtifactDigest:
		return StringField(digestURI(e.Digest)), true
	}
	return FieldValue{}, false
}

// forEachField calls fn for every field the file has: the built-ins in BuiltinFields
// order, then the attached fields in no particular order.
func forEachField(path string, e *Entry, fn func(name string, v FieldValue)) {
	for _, name := range builtinFields {
		if v, ok := fileField(path, e, name); ok {
			fn(name, v)
		}
	}
	for name, v := range e.Fields {
		fn(name, v)
	}
}

// Sections are the five virtual prefixes of a workbench (WORKBENCH.md §Common rules).
var sections = []string{"input", "scripts", "outputs", "logs", "metadata"}

func sectionOf(path string) (string, bool) {
	i := strings.IndexByte(path, '/')
	if i < 0 || !slices.Contains(sections, path[:i]) {
		return "", false
	}
	return path[:i], true
}

func extOf(path string) (string, bool) {
	name := baseName(path)
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return "", false
	}
	b := []byte(name[i+1:])
	for j, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[j] = c + ('a' - 'A')
		}
	}
	return string(b), true
}

// FormatUpdatedAt renders Unix milliseconds as artifact.updated_at does: RFC 3339 UTC with
// exactly three fractional digits, so byte order is time order (years 0000..9999).
func FormatUpdatedAt(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// digestURI renders a digest as "sha256:" + lower-case hex.
func digestURI(d Digest) string { return "sha256:" + hex.EncodeToString(d[:]) }

// checkFieldName accepts a built-in field name or a valid attached field name.
func checkFieldName(arg, name string) *Error {
	if strings.HasPrefix(name, artifactPrefix) {
		if _, ok := builtinKinds[name]; ok {
			return nil
		}
		return invalidArg(arg, "%q is not a built-in field (%s)", name, strings.Join(builtinFields, ", "))
	}
	return ValidateFieldName(arg, name)
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

// kindFamily groups kinds the way predicates compare them: numbers together.
func kindFamily(k FieldKind) string {
	switch k {
	case FieldInt, FieldFloat:
		return "number"
	case FieldString:
		return "string"
	case FieldBool:
		return "boolean"
	}
	return "null"
}

// kindName is the JSON type name of a kind.
func kindName(k FieldKind) string {
	switch k {
	case FieldInt:
		return "integer"
	case FieldFloat:
		return "number"
	case FieldString:
		return "string"
	case FieldBool:
		return "boolean"
	}
	return "null"
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
			return FieldValue{}, invalidArg(a, "must be a string, a finite number or a boolean, got %T", x)
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

func (v *View) aggregate(q AggregateQuery, mode planMode) (AggregateResult, *Error) {
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
	wss, err := v.scopeWorkspaces(q.Scope)
	if err != nil {
		return AggregateResult{}, err
	}
	ms, examined, index := v.collect(wss, q.Scope.Path, preds, mode)

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
	res := AggregateResult{Version: v.at, TotalGroups: int64(len(out)), Matched: int64(len(ms)), Examined: examined, Index: index}
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

// Catalog lists the fields of the files in scope with their observed types, the number of
// files that have each and the operators each accepts; with IncludeFacets also their top
// values. It always scans the scope. InvalidArguments for a bad scope or field_prefix.
func (v *View) Catalog(q CatalogQuery) (CatalogResult, *Error) {
	if len(q.FieldPrefix) > MaxFieldNameBytes {
		return CatalogResult{}, invalidArg("field_prefix", "must be at most %d bytes", MaxFieldNameBytes)
	}
	wss, err := v.scopeWorkspaces(q.Scope)
	if err != nil {
		return CatalogResult{}, err
	}
	type stat struct {
		files  int64
		kinds  [FieldBool + 1]bool
		counts map[FieldValue]int64
	}
	stats := make(map[string]*stat)
	for _, name := range builtinFields {
		if strings.HasPrefix(name, q.FieldPrefix) {
			stats[name] = &stat{}
		}
	}
	res := CatalogResult{Version: v.at}
	for _, ws := range wss {
		v.scanFiles(ws.Incarnation, q.Scope.Path, func(path string, e *Entry) {
			res.Files++
			forEachField(path, e, func(name string, fv FieldValue) {
				if !strings.HasPrefix(name, q.FieldPrefix) {
					return
				}
				st := stats[name]
				if st == nil {
					st = &stat{}
					stats[name] = st
				}
				st.files++
				if fv.Kind <= FieldBool {
					st.kinds[fv.Kind] = true
				}
				if q.IncludeFacets {
					if st.counts == nil {
						st.counts = make(map[FieldValue]int64)
					}
					st.counts[canonical(fv)]++
				}
			})
		})
	}
	names := make([]string, 0, len(stats))
	for name := range stats {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) > MaxCatalogFields {
		names, res.Truncated = names[:MaxCatalogFields], true
	}
	for _, name := range names {
		st := stats[name]
		cf := CatalogField{Name: name, Files: st.files}
		kinds := st.kinds
		if k, ok := builtinKinds[name]; ok {
			cf.Builtin = true
			kinds = [FieldBool + 1]bool{}
			kinds[k] = true
		}
		for _, k := range []FieldKind{FieldString, FieldInt, FieldFloat, FieldBool} {
			if kinds[k] {
				cf.Types = append(cf.Types, kindName(k))
			}
		}
		cf.Operators = operatorsFor(kinds[FieldString], kinds[FieldInt] || kinds[FieldFloat], kinds[FieldBool])
		if q.IncludeFacets {
			f := topValues(name, st.counts, res.Files-st.files)
			cf.Facet = &f
		}
		res.Fields = append(res.Fields, cf)
	}
	return res, nil
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
