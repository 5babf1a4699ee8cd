package meta

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// planMode chooses how candidates are produced; tests force each plan.
type planMode uint8

const (
	planAuto  planMode = iota // the index when it is more selective than a scan
	planScan                  // always scan
	planIndex                 // the most selective indexable predicate whenever there is one
)

// match is a file that passed every predicate.
type match struct {
	ws   *Workspace
	path string
	e    *Entry
}

// scopeWorkspaces resolves a scope to its workbenches, in name order.
func (qv QueryView) scopeWorkspaces(sc Scope) ([]*Workspace, *Error) {
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
	qv.v.st.workspaces.Ascend(prefix, func(k string, ws *Workspace) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		// The visibility rule of View.Workspace: staging workbenches and workbenches
		// created after the view's version are invisible.
		if ws.State == WorkspaceVisible && ws.CreatedVersion <= qv.v.at && qv.v.shows(sc.Agent, ws.Name) {
			out = append(out, ws)
		}
		return true
	})
	return out, nil
}

// collect returns the files in scope that match every predicate, in canonical order
// (workbench name, then path component-wise), how many files it checked, and the field
// whose index produced the candidates ("" = a scan).
func (qv QueryView) collect(wss []*Workspace, dir string, preds []pred, mode planMode) ([]match, int64, string) {
	var ms []match
	var examined int64
	if mode != planScan && qv.v.live() {
		if p := qv.choosePredicate(wss, dir, preds, mode == planIndex); p != nil {
			for _, ws := range wss {
				base := indexFieldBase(ws.Incarnation, p.field)
				var paths []string
				for _, r := range p.indexRanges(ws.Incarnation) {
					paths = qv.v.st.rangePaths(r, len(base), paths)
				}
				slices.SortFunc(paths, comparePaths)
				paths = slices.Compact(paths)
				for _, path := range paths {
					if !hasPathPrefix(path, dir) || !qv.v.ShowsPath(ws.Agent, path) {
						continue
					}
					rec, _ := qv.v.st.paths.Get(pathKey(ws.Incarnation, path))
					e := rec.at(qv.v.at)
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
		qv.scanFiles(ws, dir, func(path string, e *Entry) {
			examined++
			if matchAll(preds, path, e) {
				ms = append(ms, match{ws: ws, path: path, e: e})
			}
		})
	}
	return ms, examined, ""
}

// scanFiles calls fn for every file of ws visible at the view's version in the subtree
// dir (and shown by the view: OnlyPaths), in component-wise path order.
func (qv QueryView) scanFiles(ws *Workspace, dir string, fn func(path string, e *Entry)) {
	start := pathKey(ws.Incarnation, dir)
	incPrefix := start[:incarnationKeySize]
	below := start + "\x00"
	qv.v.st.paths.Ascend(start, func(key string, rec *pathRecord) bool {
		if dir == "" {
			if !strings.HasPrefix(key, incPrefix) {
				return false
			}
		} else if key != start && !strings.HasPrefix(key, below) {
			return false
		}
		if e := rec.at(qv.v.at); e != nil && qv.v.showsKey(ws, key) {
			fn(keyPath(key), e)
		}
		return true
	})
}

// ScopeFiles returns how many live files a scope holds, from the directory counters: O(the
// workbenches in scope), no file is visited. Callers size a query's memory from it before
// running the query (every match, group or facet value is at most one per file).
// InvalidArguments for a bad scope.
func (qv QueryView) ScopeFiles(sc Scope) (int64, *Error) {
	wss, err := qv.scopeWorkspaces(sc)
	if err != nil {
		return 0, err
	}
	return qv.liveScopeSize(wss, sc.Path), nil
}

// liveScopeSize counts the live files in scope from the directory counters.
func (qv QueryView) liveScopeSize(wss []*Workspace, dir string) int64 {
	var n int64
	for _, ws := range wss {
		dr, _ := qv.v.st.dirs.Get(pathKey(ws.Incarnation, dir))
		n += dr.Files
		if dir != "" {
			if rec, ok := qv.v.st.paths.Get(pathKey(ws.Incarnation, dir)); ok && rec.live() != nil {
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
func (qv QueryView) choosePredicate(wss []*Workspace, dir string, preds []pred, force bool) *pred {
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
		scope = qv.liveScopeSize(wss, dir)
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
						n += qv.v.st.countRange(r, limit-n)
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
