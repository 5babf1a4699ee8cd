package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/internal/strictjson"
	"github.com/cairnstore/cairn/meta"
)

// PredicateInput is one search predicate as the contract spells it.
type PredicateInput struct {
	Field string          `json:"field"`
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value"`
}

// SortInput is one sort key as the contract spells it.
type SortInput struct {
	Field     string  `json:"field"`
	Direction *string `json:"direction"`
}

// SearchInput is workbench_search's input.
type SearchInput struct {
	ID         *string          `json:"id"`
	Section    *string          `json:"section"`
	Path       *string          `json:"path"`
	Predicates []PredicateInput `json:"predicates"`
	Fields     []string         `json:"fields"`
	Sort       []SortInput      `json:"sort"`
	Facets     []string         `json:"facets"`
	Cursor     *string          `json:"cursor"`
	Limit      *int             `json:"limit"`
}

// MeasureInput is one aggregate measure.
type MeasureInput struct {
	Name  string  `json:"name"`
	Op    string  `json:"op"`
	Field *string `json:"field"`
}

// AggregateInput is workbench_aggregate's input.
type AggregateInput struct {
	Measures   []MeasureInput   `json:"measures"`
	ID         *string          `json:"id"`
	Section    *string          `json:"section"`
	Path       *string          `json:"path"`
	Predicates []PredicateInput `json:"predicates"`
	Sort       []SortInput      `json:"sort"`
	GroupBy    []string         `json:"group_by"`
	Limit      *int             `json:"limit"`
}

// CatalogInput is workbench_catalog's input.
type CatalogInput struct {
	ID            *string `json:"id"`
	Section       *string `json:"section"`
	Path          *string `json:"path"`
	FieldPrefix   *string `json:"field_prefix"`
	IncludeFacets *bool   `json:"include_facets"`
}

// queryScope resolves (id, section, path) to a query scope on a linearizable live view,
// and the fence a cursor binds: the workbench revision, or for a root-wide query the
// highest revision of the root's visible workbenches (any change in scope raises it).
func (s *Reads) queryScope(ctx context.Context, agent string, id, section, path *string) (*meta.View, meta.Scope, uint64, error) {
	if err := mayReadAgent(ctx, agent); err != nil {
		return nil, meta.Scope{}, 0, err
	}
	full, werr := toolTarget(deref(section), deref(path))
	if werr != nil {
		return nil, meta.Scope{}, 0, werr
	}
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return nil, meta.Scope{}, 0, AsError(err)
	}
	scope := meta.Scope{Agent: agent, Path: full}
	if deref(id) != "" {
		if err := meta.ValidateName("id", *id); err != nil {
			return nil, meta.Scope{}, 0, AsError(err)
		}
		ws, err := view.Workspace(agent, *id)
		if err != nil {
			return nil, meta.Scope{}, 0, AsError(err)
		}
		scope.Workbench = ws
		return view, scope, ws.Revision, nil
	}
	var fence uint64
	after := ""
	for {
		page, more := view.Workspaces(agent, after, 1024)
		for _, ws := range page {
			fence = max(fence, ws.Revision)
			after = ws.Name
		}
		if !more {
			return view, scope, fence, nil
		}
	}
}

func predicates(in []PredicateInput) ([]meta.Predicate, *Error) {
	out := make([]meta.Predicate, 0, len(in))
	for i, p := range in {
		mp := meta.Predicate{Field: p.Field, Op: meta.PredicateOp(p.Op)}
		if len(p.Value) > 0 && string(p.Value) != "null" {
			var v any
			if err := decodeNumberJSON(p.Value, &v); err != nil {
				return nil, invalidArgument("predicates["+strconv.Itoa(i)+"].value", "is not valid JSON")
			}
			if werr := underflowIn("predicates["+strconv.Itoa(i)+"].value", v); werr != nil {
				return nil, werr
			}
			mp.Value = v
		}
		out = append(out, mp)
	}
	return out, nil
}

func sortKeys(in []SortInput) []meta.SortKey {
	out := make([]meta.SortKey, 0, len(in))
	for _, k := range in {
		d := meta.SortAsc
		if k.Direction != nil {
			d = meta.SortDirection(*k.Direction)
		}
		out = append(out, meta.SortKey{Field: k.Field, Direction: d})
	}
	return out
}

func fieldMap(fs map[string]meta.FieldValue, names []string) map[string]any {
	out := make(map[string]any, len(names))
	for _, n := range names {
		if v, ok := fs[n]; ok {
			out[n] = v.Any()
		} else {
			out[n] = nil
		}
	}
	return out
}

// facetsJSON renders facets as the contract does: field, values [{value, count}],
// distinct_count, and truncated when values lists fewer than the distinct values; Cairn adds
// missing (matches without the field) and other (matches whose value is not listed).
func facetsJSON(fs []meta.Facet) []map[string]any {
	out := make([]map[string]any, 0, len(fs))
	for _, f := range fs {
		vals := make([]map[string]any, 0, len(f.Values))
		for _, v := range f.Values {
			vals = append(vals, map[string]any{"value": v.Value.Any(), "count": v.Count})
		}
		out = append(out, map[string]any{"field": f.Field, "values": vals, "distinct_count": f.Distinct,
			"truncated": int64(len(f.Values)) < f.Distinct, "missing": f.Missing, "other": f.Other})
	}
	return out
}

// queryScopeFields adds the scope keys every query result carries: the presentation path
// of the scope, and the workbench id (null for a root-wide query).
func (s *Reads) queryScopeFields(r Result, agent string, id, section, path *string) Result {
	full, _ := toolTarget(deref(section), deref(path)) // validated by queryScope
	r["path"] = s.base.scopePath(agent, deref(id), full)
	r["workbench_id"] = nilIfEmpty(deref(id))
	return r
}

func searchArgsKey(in SearchInput) string {
	c := in
	c.Cursor, c.Limit = nil, nil
	b, _ := json.Marshal(c)
	return string(b)
}

// Search implements workbench_search: version-consistent queries over the indexed
// metadata of one workbench or the whole agent root. A cursor is bound to the arguments
// and to the scope's revision: a change in scope since the first page is ReadFenceChanged.
func (s *Reads) Search(ctx context.Context, agent string, in SearchInput) (Result, error) {
	limit, werr := limitArg(in.Limit, meta.MaxSearchLimit, meta.MaxSearchLimit)
	if werr != nil {
		return nil, werr
	}
	view, scope, fence, err := s.queryScope(ctx, agent, in.ID, in.Section, in.Path)
	if err != nil {
		return nil, err
	}
	preds, werr := predicates(in.Predicates)
	if werr != nil {
		return nil, werr
	}
	release, aerr := s.base.admitQuery(ctx, view, scope, func(files int64) int64 { return searchCost(files, len(in.Facets)) })
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	q := meta.Query{Scope: scope, Predicates: preds, Fields: in.Fields, Sort: sortKeys(in.Sort), Facets: in.Facets, Limit: limit}
	args := searchArgsKey(in)
	if in.Cursor != nil {
		cur, cerr := s.base.cursors.decode(ctx, *in.Cursor, "search", agent, deref(in.ID), scope.Path)
		if cerr != nil {
			return nil, cerr
		}
		if cur.Args != args || cur.Position == nil {
			return nil, invalidArgument("cursor", "was issued for other arguments")
		}
		if cur.Fence != fence {
			e := newError(CodeReadFenceChanged, "files in scope changed since the first page; search again from the start")
			e.Retryable = true
			return nil, e
		}
		q.After = cur.Position
	}
	res, merr := view.Queries().Search(q)
	if merr != nil {
		return nil, AsError(merr)
	}
	names := in.Fields
	if len(names) == 0 {
		names = meta.BuiltinFields()
	}
	matches := make([]map[string]any, 0, len(res.Hits))
	for _, h := range res.Hits {
		m := s.base.fileFields(Result{}, agent, h.Workbench, h.Path)
		m["values"] = fieldMap(h.Fields, names)
		matches = append(matches, m)
	}
	r := s.queryScopeFields(success(), agent, in.ID, in.Section, in.Path)
	r["matches"] = matches
	r["match_count"] = res.Total
	r["facets"] = facetsJSON(res.Facets)
	r["read_version"] = res.Version
	r["truncated"] = res.Next != nil
	r["next_cursor"] = nil
	if res.Next != nil {
		r["next_cursor"] = s.base.cursors.encode(ctx, cursor{Kind: "search", Agent: agent, Workbench: deref(in.ID), Path: scope.Path,
			Args: args, Fence: fence, Position: res.Next})
	}
	return r, nil
}

// Aggregate implements workbench_aggregate: measures over matching files, grouped.
func (s *Reads) Aggregate(ctx context.Context, agent string, in AggregateInput) (Result, error) {
	limit, werr := limitArg(in.Limit, meta.MaxAggregateLimit, meta.MaxAggregateLimit)
	if werr != nil {
		return nil, werr
	}
	if len(in.Measures) == 0 {
		return nil, invalidArgument("measures", "give at least one measure")
	}
	view, scope, _, err := s.queryScope(ctx, agent, in.ID, in.Section, in.Path)
	if err != nil {
		return nil, err
	}
	preds, werr := predicates(in.Predicates)
	if werr != nil {
		return nil, werr
	}
	ms := make([]meta.Measure, 0, len(in.Measures))
	for _, m := range in.Measures {
		ms = append(ms, meta.Measure{Name: m.Name, Op: meta.MeasureOp(m.Op), Field: deref(m.Field)})
	}
	release, aerr := s.base.admitQuery(ctx, view, scope, func(files int64) int64 {
		return aggregateCost(files, len(in.GroupBy), len(in.Measures))
	})
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	res, merr := view.Queries().Aggregate(meta.AggregateQuery{Scope: scope, Predicates: preds, Measures: ms, GroupBy: in.GroupBy,
		Sort: sortKeys(in.Sort), Limit: limit})
	if merr != nil {
		e := AsError(merr)
		if e.Code == CodeResourceExhausted { // the group bound: the same call meets it again
			e.Retryable = false
			e.Details["max_groups"] = meta.MaxAggregateGroups
		}
		return nil, e
	}
	groups := make([]map[string]any, 0, len(res.Groups))
	for _, g := range res.Groups {
		key := map[string]any{}
		for i, f := range in.GroupBy {
			key[f] = g.Key[i].Any()
		}
		vals := map[string]any{}
		for i, m := range in.Measures {
			vals[m.Name] = g.Values[i].Any()
		}
		groups = append(groups, map[string]any{"key": key, "values": vals, "count": g.Count})
	}
	r := s.queryScopeFields(success(), agent, in.ID, in.Section, in.Path)
	r["groups"] = groups
	r["group_count"] = res.TotalGroups
	r["row_count"] = len(groups)
	r["input_match_count"] = res.Matched
	r["read_version"] = res.Version
	r["truncated"] = int64(len(groups)) < res.TotalGroups
	return r, nil
}

// Catalog implements workbench_catalog: the fields present in scope, their types,
// how many files carry them, the operators each accepts, and optionally top values.
func (s *Reads) Catalog(ctx context.Context, agent string, in CatalogInput) (Result, error) {
	view, scope, _, err := s.queryScope(ctx, agent, in.ID, in.Section, in.Path)
	if err != nil {
		return nil, err
	}
	release, aerr := s.base.admitQuery(ctx, view, scope, func(files int64) int64 { return catalogCost(files, deref(in.IncludeFacets)) })
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	res, merr := view.Queries().Catalog(meta.CatalogQuery{Scope: scope, FieldPrefix: deref(in.FieldPrefix), IncludeFacets: deref(in.IncludeFacets)})
	if merr != nil {
		return nil, AsError(merr)
	}
	r := s.queryScopeFields(success(), agent, in.ID, in.Section, in.Path)
	r["catalog"] = catalogJSON(res)
	r["catalog_empty"] = res.Files == 0
	// One catalog covers the whole scope in Cairn (every workbench of a root-wide query
	// is in it): there are no child catalogs to point at.
	r["child_catalogs"] = []any{}
	r["file_count"] = res.Files
	r["read_version"] = res.Version
	r["truncated"] = res.Truncated
	return r, nil
}

// catalogJSON renders a catalog as the contract does: the fields that can be faceted
// and sorted, the filterable fields grouped by the operator set they accept (in order of
// first appearance), and the facets asked for. Cairn adds fields: each field with its
// JSON types, how many files in scope have it, whether it is built in, and its operators.
func catalogJSON(res meta.CatalogResult) map[string]any {
	names := make([]string, 0, len(res.Fields))
	var filterable []map[string]any
	groups := map[string]int{}
	facets := make([]map[string]any, 0)
	fields := make([]map[string]any, 0, len(res.Fields))
	for _, f := range res.Fields {
		names = append(names, f.Name)
		ops := make([]string, 0, len(f.Operators))
		for _, o := range f.Operators {
			ops = append(ops, string(o))
		}
		key := strings.Join(ops, " ")
		if i, ok := groups[key]; ok {
			filterable[i]["fields"] = append(filterable[i]["fields"].([]string), f.Name)
		} else {
			groups[key] = len(filterable)
			filterable = append(filterable, map[string]any{"fields": []string{f.Name}, "operators": ops})
		}
		if f.Facet != nil {
			facets = append(facets, facetsJSON([]meta.Facet{*f.Facet})[0])
		}
		fields = append(fields, map[string]any{"field": f.Name, "builtin": f.Builtin, "types": f.Types, "file_count": f.Files, "operators": ops})
	}
	if filterable == nil {
		filterable = []map[string]any{}
	}
	// Every indexed field can be faceted and sorted on (meta.Query, meta.AggregateQuery).
	return map[string]any{"facetable": names, "sortable": slices.Clone(names), "filterable": filterable,
		"facets": facets, "fields": fields}
}

// decodeNumberJSON decodes one JSON value keeping numbers as json.Number (exact integers).
func decodeNumberJSON(raw []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// underflowIn refuses a predicate value (a number, or an array of them) whose text is not
// 0 but nearer 0 than any float64 (1e-400): it would be compared as 0. The answer names
// it with rule "range", as MCP's schema check does (api/mcp/numbers.go).
func underflowIn(field string, v any) *Error {
	check := func(field string, x any) *Error {
		if n, ok := x.(json.Number); ok && strictjson.Underflows(string(n)) {
			lit := string(n)
			if len(lit) > 64 {
				lit = lit[:64] + "…"
			}
			e := invalidArgument(field, "must be 0 or at least %g in magnitude; %s is not 0 but nearer 0 than that, and would read as 0", math.SmallestNonzeroFloat64, lit)
			e.Details["rule"] = "range"
			return e
		}
		return nil
	}
	if items, ok := v.([]any); ok {
		for j, x := range items {
			if werr := check(field+"["+strconv.Itoa(j)+"]", x); werr != nil {
				return werr
			}
		}
		return nil
	}
	return check(field, v)
}
