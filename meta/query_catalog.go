package meta

import (
	"slices"
	"strings"
)

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

// Catalog lists the fields of the files in scope with their observed types, the number of
// files that have each and the operators each accepts; with IncludeFacets also their top
// values. It always scans the scope. InvalidArguments for a bad scope or field_prefix.
func (qv QueryView) Catalog(q CatalogQuery) (CatalogResult, *Error) {
	if len(q.FieldPrefix) > MaxFieldNameBytes {
		return CatalogResult{}, invalidArg("field_prefix", "must be at most %d bytes", MaxFieldNameBytes)
	}
	wss, err := qv.scopeWorkspaces(q.Scope)
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
	res := CatalogResult{Version: qv.v.at}
	for _, ws := range wss {
		qv.scanFiles(ws, q.Scope.Path, func(path string, e *Entry) {
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
