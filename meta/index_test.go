package meta

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Value pools shared by the generators: small enough that values collide, with the edge
// cases of the index encoding (NUL bytes, strings longer than indexStringBytes that share
// their indexed prefix, ints beyond 2^53 next to their float neighbours, -0).
var (
	longA   = strings.Repeat("p", indexStringBytes) + "a"
	longB   = strings.Repeat("p", indexStringBytes) + "b"
	genStrs = []string{"", "a", "ab", "b", "a\x00b", "a\x00", "\x00", "B", longA, longB, longA[:indexStringBytes-1]}
	genInts = []int64{-2, 0, 1, 3, 1<<53 + 1, 1 << 53, math.MaxInt64, math.MinInt64}
	genFlts = []float64{math.Copysign(0, -1), 0.5, 3.0, 1 << 53, -1.5, 9.3e18}
)

func genValue(t *rapid.T, label string, kinds ...FieldKind) FieldValue {
	if len(kinds) == 0 {
		kinds = []FieldKind{FieldString, FieldInt, FieldFloat, FieldBool}
	}
	switch rapid.SampledFrom(kinds).Draw(t, label+"-kind") {
	case FieldString:
		return StringField(rapid.SampledFrom(genStrs).Draw(t, label))
	case FieldInt:
		return IntField(rapid.SampledFrom(genInts).Draw(t, label))
	case FieldFloat:
		return FloatField(rapid.SampledFrom(genFlts).Draw(t, label))
	}
	return BoolField(rapid.Bool().Draw(t, label))
}

// TestIndexEncodingIsMonotone: a ≤ b implies enc(a) ≤ enc(b) for values of one family,
// the property that makes index ranges supersets of predicate ranges.
func TestIndexEncodingIsMonotone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fam := rapid.SampledFrom([][]FieldKind{{FieldString}, {FieldInt, FieldFloat}, {FieldBool}}).Draw(t, "family")
		gen := func(label string) FieldValue {
			if fam[0] == FieldString && rapid.Bool().Draw(t, label+"-any") {
				return StringField(string(rapid.SliceOfN(rapid.ByteRange(0, 3), 0, indexStringBytes+3).Draw(t, label)))
			}
			if fam[0] == FieldInt && rapid.Bool().Draw(t, label+"-any") {
				if rapid.Bool().Draw(t, label+"-int") {
					return IntField(rapid.Int64().Draw(t, label))
				}
				return FloatField(rapid.Float64Range(-1e19, 1e19).Draw(t, label))
			}
			return genValue(t, label, fam...)
		}
		a, b := gen("a"), gen("b")
		ea, eb := appendIndexValue(nil, a), appendIndexValue(nil, b)
		c := compareValues(a, b)
		if c < 0 && bytes.Compare(ea, eb) > 0 || c > 0 && bytes.Compare(ea, eb) < 0 || c == 0 && !bytes.Equal(ea, eb) {
			t.Fatalf("%v vs %v: compare %d but encodings %x vs %x", a, b, c, ea, eb)
		}
		// The path comes back out of a whole key.
		base := indexFieldBase(7, "f")
		key := string(appendIndexValue([]byte(base), a)) + "dir/file"
		if p, ok := indexKeyPath(key, len(base)); !ok || p != "dir/file" {
			t.Fatalf("path of %q: %q %v", key, p, ok)
		}
	})
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"ab": "ac", "a\xff": "b", "\xff\xff": "", "": "", "a\x00": "a\x01"} {
		if got := prefixEnd(in); got != want {
			t.Errorf("prefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}

// qmodel is a naive model of the files a query sees: every version of every path, kept in
// plain maps, with fields computed from first principles.
type qmodel struct {
	hist map[[2]string][]qmVersion // (workbench, path) → versions, oldest first
}

type qmVersion struct {
	v uint64
	f *qmFile // nil: deleted
}

type qmFile struct {
	ws, path string
	gen      uint64
	size     int64
	fields   map[string]FieldValue
}

func (m *qmodel) files(v uint64) []*qmFile {
	var out []*qmFile
	for _, h := range m.hist {
		var cur *qmFile
		for _, el := range h {
			if el.v <= v {
				cur = el.f
			}
		}
		if cur != nil {
			out = append(out, cur)
		}
	}
	return out
}

func (f *qmFile) field(name string) (FieldValue, bool) {
	comps := strings.Split(f.path, "/")
	last := comps[len(comps)-1]
	switch name {
	case ArtifactSizeBytes:
		return IntField(f.size), true
	case ArtifactGeneration:
		return IntField(int64(f.gen)), true
	case ArtifactName:
		return StringField(last), true
	case ArtifactSection:
		if len(comps) > 1 && slices.Contains([]string{"input", "scripts", "outputs", "logs", "metadata"}, comps[0]) {
			return StringField(comps[0]), true
		}
		return FieldValue{}, false
	case ArtifactExt:
		if i := strings.LastIndex(last, "."); i > 0 && i < len(last)-1 {
			return StringField(strings.ToLower(last[i+1:])), true
		}
		return FieldValue{}, false
	}
	v, ok := f.fields[name]
	return v, ok
}

// Exact arithmetic for the model: every int64 and float64 is a big.Float at 256 bits.
func bigOf(v FieldValue) *big.Float {
	f := new(big.Float).SetPrec(256)
	if v.Kind == FieldInt {
		return f.SetInt64(v.Int)
	}
	return f.SetFloat64(v.Float)
}

func mIsNum(v FieldValue) bool { return v.Kind == FieldInt || v.Kind == FieldFloat }

// mCompare orders present values: numbers, then strings, then booleans; ok=false when the
// two are of different families.
func mCompare(a, b FieldValue) (int, bool) {
	rank := func(v FieldValue) int {
		switch {
		case mIsNum(v):
			return 0
		case v.Kind == FieldString:
			return 1
		}
		return 2
	}
	if rank(a) != rank(b) {
		if rank(a) < rank(b) {
			return -1, false
		}
		return 1, false
	}
	switch {
	case mIsNum(a):
		return bigOf(a).Cmp(bigOf(b)), true
	case a.Kind == FieldString:
		return strings.Compare(a.Str, b.Str), true
	case a.Bool == b.Bool:
		return 0, true
	case b.Bool:
		return -1, true
	}
	return 1, true
}

func mMatch(p Predicate, f *qmFile) bool {
	v, ok := f.field(p.Field)
	switch p.Op {
	case PredExists:
		return ok
	case PredNotExists:
		return !ok
	}
	if !ok {
		return false
	}
	eq := func(x any) bool {
		c, same := mCompare(v, x.(FieldValue))
		return same && c == 0
	}
	switch p.Op {
	case PredEq:
		return eq(p.Value)
	case PredNe:
		return !eq(p.Value)
	case PredIn:
		return slices.ContainsFunc(p.Value.([]any), eq)
	case PredPrefix:
		return v.Kind == FieldString && strings.HasPrefix(v.Str, p.Value.(FieldValue).Str)
	case PredSuffix:
		return v.Kind == FieldString && strings.HasSuffix(v.Str, p.Value.(FieldValue).Str)
	case PredContains:
		return v.Kind == FieldString && strings.Contains(v.Str, p.Value.(FieldValue).Str)
	}
	c, same := mCompare(v, p.Value.(FieldValue))
	if !same {
		return false
	}
	switch p.Op {
	case PredGt:
		return c > 0
	case PredGte:
		return c >= 0
	case PredLt:
		return c < 0
	}
	return c <= 0
}

// mSearch returns "workbench:path" of every match in order.
func (m *qmodel) search(v uint64, ws string, dir string, q Query) []string {
	var ms []*qmFile
	for _, f := range m.files(v) {
		if ws != "" && f.ws != ws || dir != "" && f.path != dir && !strings.HasPrefix(f.path, dir+"/") {
			continue
		}
		ok := true
		for _, p := range q.Predicates {
			ok = ok && mMatch(p, f)
		}
		if ok {
			ms = append(ms, f)
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		for _, sk := range q.Sort {
			x, xok := a.field(sk.Field)
			y, yok := b.field(sk.Field)
			if xok != yok {
				return xok
			}
			if !xok {
				continue
			}
			if c, _ := mCompare(x, y); c != 0 {
				return (c < 0) != (sk.Direction == SortDesc)
			}
		}
		if a.ws != b.ws {
			return a.ws < b.ws
		}
		return slices.Compare(strings.Split(a.path, "/"), strings.Split(b.path, "/")) < 0
	})
	out := make([]string, len(ms))
	for i, f := range ms {
		out[i] = f.ws + ":" + f.path
	}
	return out
}

// mGroupKey names a value the way facets and groups fold them: numerically equal numbers
// are one value.
func mGroupKey(v FieldValue, ok bool) string {
	switch {
	case !ok:
		return "null"
	case mIsNum(v) && bigOf(v).Sign() == 0:
		return "n:0" // -0 and 0 are one value
	case mIsNum(v):
		return "n:" + bigOf(v).Text('g', 80)
	case v.Kind == FieldString:
		return "s:" + v.Str
	}
	return fmt.Sprint("b:", v.Bool)
}

var (
	genQWorkbenches = []string{"w1", "w2", "w3"}
	genQPaths       = []string{"input/a.txt", "input/b.CSV", "outputs/r.json", "outputs/deep/x.JSON", "logs/run.log", "notes", ".hidden", "scripts/s.py"}
	genQFields      = []string{"k", "n", "tag", "flag"}
	genQScopes      = []string{"", "input", "outputs", "outputs/deep", "notes", "in", "outputs/r.json"}
	queryFields     = append(slices.Clone(genQFields), ArtifactSizeBytes, ArtifactExt, ArtifactSection, ArtifactName, ArtifactGeneration)
)

func genPredicate(t *rapid.T, i int) Predicate {
	label := fmt.Sprint("p", i)
	field := rapid.SampledFrom(queryFields).Draw(t, label+"-field")
	op := rapid.SampledFrom(allPredicateOps).Draw(t, label+"-op")
	kinds := []FieldKind{FieldString, FieldInt, FieldFloat, FieldBool}
	if k, ok := builtinKinds[field]; ok {
		if k == FieldInt {
			kinds = []FieldKind{FieldInt, FieldFloat}
			if op == PredPrefix || op == PredSuffix || op == PredContains {
				op = PredGte
			}
		} else {
			kinds = []FieldKind{FieldString}
		}
	}
	switch op {
	case PredExists, PredNotExists:
		return Predicate{Field: field, Op: op}
	case PredPrefix, PredSuffix, PredContains:
		return Predicate{Field: field, Op: op, Value: genValue(t, label, FieldString)}
	case PredGt, PredGte, PredLt, PredLte:
		kinds = slices.DeleteFunc(kinds, func(k FieldKind) bool { return k == FieldBool })
		return Predicate{Field: field, Op: op, Value: genValue(t, label, kinds...)}
	case PredIn:
		n := rapid.IntRange(1, 3).Draw(t, label+"-n")
		vals := make([]any, n)
		for j := range vals {
			vals[j] = genValue(t, fmt.Sprint(label, "-", j), kinds...)
		}
		return Predicate{Field: field, Op: op, Value: vals}
	}
	return Predicate{Field: field, Op: op, Value: genValue(t, label, kinds...)}
}

// qState applies random puts, appends and deletes to an FSM and the model.
func qState(t *rapid.T) (*qfix, *qmodel) {
	x := newQFix(t)
	m := &qmodel{hist: map[[2]string][]qmVersion{}}
	n := rapid.IntRange(8, 60).Draw(t, "commands")
	for i := 0; i < n; i++ {
		ws := rapid.SampledFrom(genQWorkbenches).Draw(t, "ws")
		path := rapid.SampledFrom(genQPaths).Draw(t, "path")
		key := [2]string{ws, path}
		var cur *qmFile
		if h := m.hist[key]; len(h) > 0 {
			cur = h[len(h)-1].f
		}
		switch op := rapid.IntRange(0, 5).Draw(t, "op"); {
		case op == 0 && cur != nil:
			x.del(ws, path)
			m.hist[key] = append(m.hist[key], qmVersion{x.index, nil})
		case op == 1 && cur != nil:
			add := rapid.StringN(1, 3, -1).Draw(t, "appended")
			r := x.apply(Append{Agent: "a", Workspace: ws, Path: path, ExpectGeneration: cur.gen, Segments: qSegs(add),
				AppendedBytes: int64(len(add)), NewSize: cur.size + int64(len(add))})
			nf := *cur
			nf.gen, nf.size = r.Generation, r.Size
			m.hist[key] = append(m.hist[key], qmVersion{x.index, &nf})
		default:
			fields := map[string]FieldValue{}
			for _, f := range genQFields {
				if rapid.IntRange(0, 2).Draw(t, "has-"+f) > 0 {
					fields[f] = genValue(t, "value-"+f)
				}
			}
			if len(fields) == 0 {
				fields = nil
			}
			body := strings.Repeat("x", rapid.IntRange(0, 4).Draw(t, "size"))
			r := x.put(ws, path, body, fields)
			m.hist[key] = append(m.hist[key], qmVersion{x.index, &qmFile{ws: ws, path: path, gen: r.Generation, size: r.Size, fields: fields}})
		}
	}
	return x, m
}

// TestIndexFollowsEveryPublishAndMatchesARebuild: the index maintained write by write
// equals one rebuilt from the live paths, and Restore rebuilds it.
func TestIndexFollowsEveryPublishAndMatchesARebuild(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x, _ := qState(t)
		st := x.f.View().st
		rebuilt := st.copy()
		rebuilt.rebuildIndex()
		if got, want := st.index.Keys(), rebuilt.index.Keys(); !slices.Equal(got, want) {
			t.Fatalf("index has %d keys, a rebuild %d", len(got), len(want))
		}
		g := restoredCopy(t, x.f, Options{})
		if got, want := g.View().st.index.Keys(), st.index.Keys(); !slices.Equal(got, want) {
			t.Fatalf("restored index has %d keys, want %d", len(got), len(want))
		}
	})
}

// TestSearchIndexScanAndModelAgree: on random files and queries, the index plan, the scan
// plan and a naive model give the same hits in the same order, page after page, the same
// totals and facets, and the same aggregates; at older versions the scan matches the
// model's history.
func TestSearchIndexScanAndModelAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x, m := qState(t)
		live := x.f.View()
		for qi := 0; qi < 6; qi++ {
			var q Query
			for i := rapid.IntRange(0, 3).Draw(t, "predicates"); i > 0; i-- {
				q.Predicates = append(q.Predicates, genPredicate(t, i))
			}
			for i := rapid.IntRange(0, 2).Draw(t, "sorts"); i > 0; i-- {
				f := rapid.SampledFrom(queryFields).Draw(t, "sort")
				if !slices.ContainsFunc(q.Sort, func(s SortKey) bool { return s.Field == f }) {
					q.Sort = append(q.Sort, SortKey{Field: f, Direction: rapid.SampledFrom([]SortDirection{"", SortAsc, SortDesc}).Draw(t, "dir")})
				}
			}
			if rapid.Bool().Draw(t, "facet") {
				q.Facets = []string{rapid.SampledFrom(queryFields).Draw(t, "facet-field")}
			}
			q.Limit = rapid.IntRange(0, MaxSearchLimit).Draw(t, "limit")
			wsName := rapid.SampledFrom(append([]string{""}, genQWorkbenches...)).Draw(t, "scope-ws")
			q.Scope.Path = rapid.SampledFrom(genQScopes).Draw(t, "scope-path")
			at := live
			if rapid.Bool().Draw(t, "older") {
				at, _ = live.At(rapid.Uint64Range(0, live.Version()).Draw(t, "version"))
			}
			q.Scope.Agent = "a"
			if wsName != "" {
				ws, err := live.Workspace("a", wsName)
				if err != nil {
					continue // not created yet
				}
				q.Scope.Workbench = ws
			}

			want := m.search(at.Version(), wsName, q.Scope.Path, q)
			got, res := searchAll(t, at, q, planScan)
			if !slices.Equal(got, want) {
				t.Fatalf("v%d query %+v:\nscan  %q\nmodel %q", at.Version(), q, got, want)
			}
			for _, mode := range []planMode{planAuto, planIndex} {
				other, ores := searchAll(t, at, q, mode)
				if !slices.Equal(other, got) || ores.Total != res.Total || !reflect.DeepEqual(ores.Facets, res.Facets) {
					t.Fatalf("v%d query %+v:\n%s %q (index %q)\nscan  %q", at.Version(), q, planName(mode), other, ores.Index, got)
				}
			}
			if res.Total != int64(len(want)) {
				t.Fatalf("total %d, model %d", res.Total, len(want))
			}
			// Facets count the model's matches.
			for _, fc := range res.Facets {
				counts := map[string]int64{}
				for _, h := range want {
					wsn, p, _ := strings.Cut(h, ":")
					f := m.fileAt(at.Version(), wsn, p)
					v, ok := f.field(fc.Field)
					counts[mGroupKey(v, ok)]++
				}
				if fc.Missing != counts["null"] {
					t.Fatalf("facet %s missing %d, model %d", fc.Field, fc.Missing, counts["null"])
				}
				delete(counts, "null")
				if fc.Distinct != int64(len(counts)) {
					t.Fatalf("facet %s has %d values, model %d", fc.Field, fc.Distinct, len(counts))
				}
				for _, fv := range fc.Values {
					if n := counts[mGroupKey(fv.Value, true)]; n != fv.Count {
						t.Fatalf("facet %s value %v: %d, model %d", fc.Field, fv.Value, fv.Count, n)
					}
				}
			}

			// Aggregates agree across plans and count like the model.
			group := rapid.SampledFrom(queryFields).Draw(t, "group")
			aq := AggregateQuery{Scope: q.Scope, Predicates: q.Predicates, GroupBy: []string{group}, Measures: []Measure{
				{Name: "files", Op: MeasureCount}, {Name: "bytes", Op: MeasureSum, Field: ArtifactSizeBytes},
				{Name: "total", Op: MeasureSum, Field: "n"}, {Name: "avg", Op: MeasureAvg, Field: "k"},
				{Name: "low", Op: MeasureMin, Field: "k"}, {Name: "high", Op: MeasureMax, Field: "tag"}}}
			ares := aggregateInEveryPlan(t, at, aq)
			type agg struct{ files, bytes int64 }
			wantGroups := map[string]agg{}
			for _, h := range want {
				wsn, p, _ := strings.Cut(h, ":")
				f := m.fileAt(at.Version(), wsn, p)
				v, ok := f.field(group)
				k := mGroupKey(v, ok)
				wantGroups[k] = agg{wantGroups[k].files + 1, wantGroups[k].bytes + f.size}
			}
			if ares.Matched != int64(len(want)) || ares.TotalGroups != int64(len(wantGroups)) {
				t.Fatalf("aggregate matched %d in %d groups %+v, model %d in %v", ares.Matched, ares.TotalGroups, ares.Groups, len(want), wantGroups)
			}
			for _, g := range ares.Groups {
				k := mGroupKey(g.Key[0], g.Key[0].Kind != 0)
				w := wantGroups[k]
				if g.Count != w.files || g.Values[0] != IntField(w.files) || g.Values[1] != IntField(w.bytes) {
					t.Fatalf("group %s: %+v, model %+v", k, g, w)
				}
			}

			// The catalog counts the files in scope like the model.
			cat, err := at.Queries().Catalog(CatalogQuery{Scope: q.Scope})
			if err != nil {
				t.Fatal(err)
			}
			all := m.search(at.Version(), wsName, q.Scope.Path, Query{})
			if cat.Files != int64(len(all)) {
				t.Fatalf("catalog sees %d files, model %d", cat.Files, len(all))
			}
			for _, cf := range cat.Fields {
				var n int64
				for _, h := range all {
					wsn, p, _ := strings.Cut(h, ":")
					if _, ok := m.fileAt(at.Version(), wsn, p).field(cf.Name); ok {
						n++
					}
				}
				if isModelled := slices.Contains(queryFields, cf.Name); isModelled && cf.Files != n {
					t.Fatalf("catalog: %d files have %s, model %d", cf.Files, cf.Name, n)
				}
			}
		}
	})
}

func (m *qmodel) fileAt(v uint64, ws, path string) *qmFile {
	var cur *qmFile
	for _, el := range m.hist[[2]string{ws, path}] {
		if el.v <= v {
			cur = el.f
		}
	}
	return cur
}

// indexKeys makes, for any file, the keys of the key layout this file's header describes,
// built field by field from forEachField, indexFieldToken and appendIndexValue.
func TestIndexKeysFollowTheLayout(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		path := rapid.SampledFrom([]string{"input/a.txt", "outputs/x/y", "README", "logs/run.JSON", "input/bench/p0/000000001"}).Draw(t, "path")
		e := &Entry{Generation: rapid.Uint64Range(1, 9).Draw(t, "gen"), Size: rapid.Int64Range(0, 1<<40).Draw(t, "size"),
			ContentType:  rapid.SampledFrom([]string{"", "text/plain", "application/octet-stream"}).Draw(t, "ct"),
			ModifiedAtMs: rapid.Int64Range(0, 1<<45).Draw(t, "mtime"),
			Producer:     Producer{Principal: rapid.SampledFrom([]string{"", "local", "key-1"}).Draw(t, "principal"), Surface: rapid.SampledFrom([]string{"", "rest/put", "mcp"}).Draw(t, "surface")}}
		e.Digest[0] = byte(rapid.IntRange(0, 255).Draw(t, "digest"))
		n := rapid.IntRange(0, 4).Draw(t, "fields")
		if n > 0 {
			e.Fields = map[string]FieldValue{}
		}
		for i := range n {
			e.Fields[rapid.SampledFrom([]string{"a", "owner", "score", "z9"}).Draw(t, fmt.Sprint("name", i))] = genValue(t, fmt.Sprint("value", i))
		}
		// The formatted built-ins, as fileField rendered them before it shared their appenders.
		if got, want := FormatUpdatedAt(e.ModifiedAtMs), time.UnixMilli(e.ModifiedAtMs).UTC().Format("2006-01-02T15:04:05.000Z"); got != want {
			t.Fatalf("FormatUpdatedAt = %q, want %q", got, want)
		}
		if got, want := digestURI(e.Digest), "sha256:"+hex.EncodeToString(e.Digest[:]); got != want {
			t.Fatalf("digestURI = %q, want %q", got, want)
		}
		inc := rapid.Uint64().Draw(t, "inc")
		var want []string
		forEachField(path, e, func(name string, v FieldValue) {
			want = append(want, u64(inc)+indexFieldToken(name)+"\x00"+string(appendIndexValue(nil, v))+path)
		})
		slices.Sort(want)
		if got := indexKeys(inc, path, e); !slices.Equal(got, want) {
			t.Fatalf("indexKeys:\n%q\nwant\n%q", got, want)
		}
	})
}
