package meta

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// tb is what query tests need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// qfix builds FSM states for query tests by applying commands, as a replica would.
type qfix struct {
	t     tb
	f     *FSM
	index uint64
	nowMs int64
}

// aggregateInEveryPlan runs q on v under each plan of allPlans and returns the first
// plan's result (Examined and Index, which tell the plans apart, zeroed); a plan that fails
// or answers otherwise than the first fails the test.
func aggregateInEveryPlan(t tb, v *View, q AggregateQuery) AggregateResult {
	t.Helper()
	var first AggregateResult
	for i, mode := range allPlans {
		r, err := v.Queries().aggregate(q, mode)
		if err != nil {
			t.Fatalf("aggregate under the %s plan: %v", planName(mode), err)
		}
		r.Examined, r.Index = 0, ""
		if i == 0 {
			first = r
		} else if !reflect.DeepEqual(r, first) {
			t.Fatalf("aggregate %s plan:\n%+v\n%s plan:\n%+v", planName(mode), r, planName(allPlans[0]), first)
		}
	}
	return first
}

func newQFix(t tb) *qfix {
	// Keep every version so that views at older versions stay readable.
	opts := Options{RetentionWindow: 1000 * time.Hour, History: Retention{Versions: 1, Age: 1000 * time.Hour, MaxVersions: MaxRetentionVersions}}
	return &qfix{t: t, f: New(opts), nowMs: time.Date(2026, 11, 29, 23, 17, 56, 123e6, time.UTC).UnixMilli()}
}

func (x *qfix) apply(b Body) Result {
	x.t.Helper()
	x.index++
	x.nowMs += 1000
	r := x.f.ApplyBody(x.index, Header{TimeMs: x.nowMs}, b)
	if r.Err != nil {
		x.t.Fatalf("%T %+v: %v", b, b, r.Err)
	}
	return r
}

func qSegs(body string) []Segment {
	if body == "" {
		return nil
	}
	return []Segment{{Digest: digestOf([]byte(body)), Size: int64(len(body)), Inline: []byte(body)}}
}

func (x *qfix) put(ws, path, body string, fields map[string]FieldValue) Result {
	x.t.Helper()
	return x.apply(Put{Agent: "a", Workspace: ws, Path: path, CreateWorkspace: true, Size: int64(len(body)),
		Digest: digestOf([]byte(body)), ContentType: "text/plain", Segments: qSegs(body), Fields: fields})
}

func (x *qfix) del(ws, path string) {
	x.t.Helper()
	x.apply(Delete{Agent: "a", Workspace: ws, Path: path})
}

func (x *qfix) ws(v *View, name string) *Workspace {
	x.t.Helper()
	ws, err := v.Workspace("a", name)
	if err != nil {
		x.t.Fatal(err)
	}
	return ws
}

var allPlans = []planMode{planAuto, planScan, planIndex}

func planName(p planMode) string { return [...]string{"auto", "scan", "index"}[p] }

// searchAll pages through a search and returns "workbench:path" of every hit, checking
// that every page reports the same total and facets.
func searchAll(t tb, v *View, q Query, mode planMode) ([]string, SearchResult) {
	t.Helper()
	var out []string
	var first SearchResult
	for page := 0; ; page++ {
		r, err := v.Queries().search(q, mode)
		if err != nil {
			t.Fatalf("%s search: %v", planName(mode), err)
		}
		if page == 0 {
			first = r
		} else if r.Total != first.Total || !reflect.DeepEqual(r.Facets, first.Facets) {
			t.Fatalf("page %d: total %d facets %v; first page %d %v", page, r.Total, r.Facets, first.Total, first.Facets)
		}
		for _, h := range r.Hits {
			out = append(out, h.Workbench+":"+h.Path)
		}
		if r.Next == nil {
			return out, first
		}
		if len(r.Hits) != max(q.Limit, 1) && q.Limit != 0 {
			t.Fatalf("page %d has %d hits but a next position (limit %d)", page, len(r.Hits), q.Limit)
		}
		if page > 1000 {
			t.Fatal("paging does not end")
		}
		q.After = r.Next
	}
}

// searchEveryPlan runs q with each plan and fails unless all agree; it returns the hits.
func searchEveryPlan(t tb, v *View, q Query) []string {
	t.Helper()
	want, wantRes := searchAll(t, v, q, planScan)
	for _, mode := range []planMode{planAuto, planIndex} {
		got, res := searchAll(t, v, q, mode)
		if !slices.Equal(got, want) || res.Total != wantRes.Total || !reflect.DeepEqual(res.Facets, wantRes.Facets) {
			t.Fatalf("%s plan: %v (total %d), scan: %v (total %d)", planName(mode), got, res.Total, want, wantRes.Total)
		}
	}
	return want
}

func TestBuiltinFieldsDescribeEveryFile(t *testing.T) {
	x := newQFix(t)
	r := x.put("w", "outputs/sub/Report.JSON", "hello", nil)
	x.put("w", "notes", "", nil)
	x.put("w", "input/.bashrc", "", nil)
	x.put("w", "logs/trail.", "", nil)
	x.put("w", "a.tar.gz", "", map[string]FieldValue{"owner": StringField("ann")})
	v := x.f.View()
	res, err := v.Queries().Search(Query{Scope: Scope{Workbench: x.ws(v, "w")}, Fields: append(BuiltinFields(), "owner")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]FieldValue{}
	for _, h := range res.Hits {
		got[h.Path] = h.Fields
	}
	report := got["outputs/sub/Report.JSON"]
	want := map[string]FieldValue{
		ArtifactSection:     StringField("outputs"),
		ArtifactName:        StringField("Report.JSON"),
		ArtifactExt:         StringField("json"),
		ArtifactSizeBytes:   IntField(5),
		ArtifactContentType: StringField("text/plain"),
		ArtifactGeneration:  IntField(int64(r.Generation)),
		ArtifactUpdatedAt:   StringField("2026-11-29T23:17:57.123Z"),
		ArtifactDigest:      StringField(digestURI(digestOf([]byte("hello")))),
	}
	if !reflect.DeepEqual(report, want) {
		t.Fatalf("fields %v, want %v", report, want)
	}
	if !strings.HasPrefix(report[ArtifactDigest].Str, "sha256:2cf24dba") {
		t.Fatalf("digest %s", report[ArtifactDigest].Str)
	}
	for path, absent := range map[string][]string{
		"notes":         {ArtifactSection, ArtifactExt, "owner"}, // outside every section, no extension
		"input/.bashrc": {ArtifactExt},                           // a leading dot is not an extension
		"logs/trail.":   {ArtifactExt},                           // nor is a trailing one
	} {
		for _, f := range absent {
			if v, ok := got[path][f]; ok {
				t.Errorf("%s has %s = %v", path, f, v)
			}
		}
	}
	if got["a.tar.gz"][ArtifactExt] != StringField("gz") || got["a.tar.gz"]["owner"] != StringField("ann") {
		t.Errorf("a.tar.gz: %v", got["a.tar.gz"])
	}
	// The default projection is the built-in fields only.
	res, _ = v.Queries().Search(Query{Scope: Scope{Workbench: x.ws(v, "w")}, Predicates: []Predicate{{Field: "owner", Op: PredExists}}})
	if len(res.Hits) != 1 || len(res.Hits[0].Fields) != 7 {
		t.Fatalf("default projection: %+v", res.Hits)
	}
}

// opFixture holds files whose fields exercise every typing rule.
func opFixture(t *testing.T) (*View, *Workspace) {
	x := newQFix(t)
	files := map[string]map[string]FieldValue{
		"f1": {"n": IntField(3), "s": StringField("alpha"), "b": BoolField(true), "big": IntField(1<<53 + 1)},
		"f2": {"n": FloatField(3.0), "s": StringField("beta"), "b": BoolField(false), "big": FloatField(1 << 53)},
		"f3": {"n": IntField(10), "s": StringField("alphabet"), "z": FloatField(math.Copysign(0, -1))},
		"f4": {"n": StringField("3"), "s": IntField(7), "z": IntField(0)},
		"f5": nil,
		"f6": {"n": FloatField(2.5), "s": StringField("al\x00pha")},
	}
	for _, p := range []string{"f1", "f2", "f3", "f4", "f5", "f6"} {
		x.put("w", p, p, files[p])
	}
	v := x.f.View()
	return v, x.ws(v, "w")
}

func TestEveryOperatorMatchesByItsTypingRules(t *testing.T) {
	v, ws := opFixture(t)
	tests := []struct {
		name string
		p    Predicate
		want string
	}{
		{"eq compares numbers across int and float", Predicate{"n", PredEq, 3}, "f1,f2"},
		{"eq with a string never matches a number", Predicate{"n", PredEq, "3"}, "f4"},
		{"eq on a JSON number literal", Predicate{"n", PredEq, json.Number("3.0")}, "f1,f2"},
		{"eq is exact beyond 2^53", Predicate{"big", PredEq, int64(1 << 53)}, "f2"},
		{"gt is exact beyond 2^53", Predicate{"big", PredGt, float64(1 << 53)}, "f1"},
		{"eq folds -0 and 0", Predicate{"z", PredEq, 0}, "f3,f4"},
		{"ne skips files lacking the field", Predicate{"n", PredNe, 3}, "f3,f4,f6"},
		{"ne across types is true", Predicate{"s", PredNe, "alpha"}, "f2,f3,f4,f6"},
		{"in mixes types", Predicate{"n", PredIn, []any{3, "3"}}, "f1,f2,f4"},
		{"in with one value", Predicate{"s", PredIn, []any{"beta"}}, "f2"},
		{"prefix matches strings only", Predicate{"s", PredPrefix, "alpha"}, "f1,f3"},
		{"prefix with a NUL byte", Predicate{"s", PredPrefix, "al\x00"}, "f6"},
		{"empty prefix matches every string", Predicate{"s", PredPrefix, ""}, "f1,f2,f3,f6"},
		{"suffix", Predicate{"s", PredSuffix, "bet"}, "f3"},
		{"contains", Predicate{"s", PredContains, "ph"}, "f1,f3,f6"},
		{"gt number", Predicate{"n", PredGt, 3}, "f3"},
		{"gte number", Predicate{"n", PredGte, 3}, "f1,f2,f3"},
		{"lt number with a float bound", Predicate{"n", PredLt, 3.5}, "f1,f2,f6"},
		{"lte number", Predicate{"n", PredLte, 2.5}, "f6"},
		{"gt string compares bytes", Predicate{"s", PredGt, "alpha"}, "f2,f3"},
		{"lte string", Predicate{"s", PredLte, "alpha"}, "f1,f6"},
		{"a numeric range skips string values", Predicate{"s", PredLt, 8}, "f4"},
		{"a string range skips numeric values", Predicate{"n", PredGte, "0"}, "f4"},
		{"exists", Predicate{"b", PredExists, nil}, "f1,f2"},
		{"not_exists", Predicate{"b", PredNotExists, nil}, "f3,f4,f5,f6"},
		{"eq bool", Predicate{"b", PredEq, false}, "f2"},
		{"ne bool", Predicate{"b", PredNe, true}, "f2"},
		{"a field nobody has matches nothing", Predicate{"nope", PredEq, 1}, ""},
		{"built-in eq", Predicate{ArtifactName, PredEq, "f3"}, "f3"},
		{"built-in range", Predicate{ArtifactSizeBytes, PredGte, uint64(2)}, "f1,f2,f3,f4,f5,f6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := searchEveryPlan(t, v, Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{tc.p}})
			var paths []string
			for _, h := range got {
				paths = append(paths, strings.TrimPrefix(h, "w:"))
			}
			if s := strings.Join(paths, ","); s != tc.want {
				t.Fatalf("got %s, want %s", s, tc.want)
			}
		})
	}
}

// invalidCase is one query that must be refused as InvalidArguments naming field.
type invalidCase[Q any] struct {
	name  string
	q     Q
	field string
}

// checkInvalid runs each case as a subtest of its name and fails it unless run refuses
// its query with InvalidArguments naming the case's field.
func checkInvalid[Q any](t *testing.T, cases []invalidCase[Q], run func(Q) *Error) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := run(tc.q); err == nil || err.Code != CodeInvalidArguments || err.Field != tc.field {
				t.Fatalf("error %v, want InvalidArguments on %s", err, tc.field)
			}
		})
	}
}

func TestInvalidQueriesNameTheArgument(t *testing.T) {
	v, ws := opFixture(t)
	sc := Scope{Workbench: ws}
	one := func(p Predicate) Query { return Query{Scope: sc, Predicates: []Predicate{p}} }
	long := strings.Repeat("x", MaxPredicateStringBytes+1)
	many := make([]any, MaxInValues+1)
	for i := range many {
		many[i] = i
	}
	tests := []invalidCase[Query]{
		{"eq without a value", one(Predicate{"n", PredEq, nil}), "predicates[0].value"},
		{"exists with a value", one(Predicate{"n", PredExists, 1}), "predicates[0].value"},
		{"not_exists with a value", one(Predicate{"n", PredNotExists, false}), "predicates[0].value"},
		{"in with a scalar", one(Predicate{"n", PredIn, 3}), "predicates[0].value"},
		{"in with an empty array", one(Predicate{"n", PredIn, []any{}}), "predicates[0].value"},
		{"in with too many values", one(Predicate{"n", PredIn, many}), "predicates[0].value"},
		{"in with a nested array", one(Predicate{"n", PredIn, []any{1, []any{2}}}), "predicates[0].value[1]"},
		{"in with a null", one(Predicate{"n", PredIn, []any{nil}}), "predicates[0].value[0]"},
		{"eq with an object", one(Predicate{"n", PredEq, map[string]any{}}), "predicates[0].value"},
		{"eq with NaN", one(Predicate{"n", PredEq, math.NaN()}), "predicates[0].value"},
		{"eq with a bad json.Number", one(Predicate{"n", PredEq, json.Number("1x")}), "predicates[0].value"},
		{"prefix with a number", one(Predicate{"s", PredPrefix, 1}), "predicates[0].value"},
		{"contains with a bool", one(Predicate{"s", PredContains, true}), "predicates[0].value"},
		{"gt with a bool", one(Predicate{"b", PredGt, true}), "predicates[0].value"},
		{"a string too long", one(Predicate{"s", PredEq, long}), "predicates[0].value"},
		{"unknown operator", one(Predicate{"s", "like", "x"}), "predicates[0].op"},
		{"bad field name", one(Predicate{"Bad", PredExists, nil}), "predicates[0].field"},
		{"unknown built-in", one(Predicate{"artifact.owner", PredExists, nil}), "predicates[0].field"},
		{"built-in int with a string", one(Predicate{ArtifactSizeBytes, PredGt, "10"}), "predicates[0].value"},
		{"built-in int with prefix", one(Predicate{ArtifactSizeBytes, PredPrefix, "1"}), "predicates[0].op"},
		{"built-in string with a number", one(Predicate{ArtifactName, PredEq, 3}), "predicates[0].value"},
		{"built-in string in with a number", one(Predicate{ArtifactName, PredIn, []any{"a", 3}}), "predicates[0].value[1]"},
		{"built-in ne with a bool", one(Predicate{ArtifactExt, PredNe, true}), "predicates[0].value"},
		{"the second predicate", Query{Scope: sc, Predicates: []Predicate{{"n", PredExists, nil}, {"n", PredGt, false}}}, "predicates[1].value"},
		{"too many predicates", Query{Scope: sc, Predicates: make([]Predicate, MaxPredicates+1)}, "predicates"},
		{"bad sort field", Query{Scope: sc, Sort: []SortKey{{Field: "X"}}}, "sort[0].field"},
		{"repeated sort field", Query{Scope: sc, Sort: []SortKey{{Field: "n"}, {Field: "n", Direction: SortDesc}}}, "sort[1].field"},
		{"bad sort direction", Query{Scope: sc, Sort: []SortKey{{Field: "n", Direction: "up"}}}, "sort[0].direction"},
		{"bad projected field", Query{Scope: sc, Fields: []string{"n", "artifact.x"}}, "fields[1]"},
		{"repeated facet", Query{Scope: sc, Facets: []string{"n", "n"}}, "facets[1]"},
		{"limit above 10", Query{Scope: sc, Limit: 11}, "limit"},
		{"negative limit", Query{Scope: sc, Limit: -1}, "limit"},
		{"a position of another sort", Query{Scope: sc, After: &Position{Sort: []FieldValue{IntField(1)}}}, "cursor"},
		{"a position with a bad value", Query{Scope: sc, Sort: []SortKey{{Field: "n"}}, After: &Position{Sort: []FieldValue{{Kind: 9}}}}, "cursor"},
		{"a bad path", Query{Scope: Scope{Workbench: ws, Path: "a//b"}}, "path"},
		{"a bad agent", Query{Scope: Scope{Agent: "-a"}}, "agent"},
	}
	checkInvalid(t, tests, func(q Query) *Error {
		_, err := v.Queries().Search(q)
		return err
	})
}

func TestSortPutsFilesLackingTheFieldLastInBothDirections(t *testing.T) {
	x := newQFix(t)
	score := map[string]FieldValue{
		"a": IntField(2), "b": FloatField(1.5), "c": StringField("high"), "d": BoolField(true),
		"e": IntField(2), "g": BoolField(false), "h": StringField("Z"),
	}
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		var fs map[string]FieldValue
		if v, ok := score[p]; ok {
			fs = map[string]FieldValue{"score": v}
		}
		x.put("w", "dir/"+p, "", fs)
	}
	v := x.f.View()
	ws := x.ws(v, "w")
	for _, tc := range []struct {
		dir  SortDirection
		want string
	}{
		// Numbers, then strings, then booleans; ties (a, e) and missing (f, i) by path.
		{SortAsc, "b,a,e,h,c,g,d,f,i"},
		{SortDesc, "d,g,c,h,a,e,b,f,i"},
	} {
		for _, limit := range []int{1, 2, 4, 9, 10} {
			hits := searchEveryPlan(t, v, Query{Scope: Scope{Workbench: ws}, Sort: []SortKey{{Field: "score", Direction: tc.dir}}, Limit: limit,
				Predicates: []Predicate{{Field: ArtifactName, Op: PredPrefix, Value: ""}}})
			var names []string
			for _, h := range hits {
				names = append(names, baseName(h))
			}
			if got := strings.Join(names, ","); got != tc.want {
				t.Fatalf("%s limit %d: %s, want %s", tc.dir, limit, got, tc.want)
			}
		}
	}
	// Two keys: the second orders within ties of the first.
	hits := searchEveryPlan(t, v, Query{Scope: Scope{Workbench: ws}, Limit: 3,
		Sort: []SortKey{{Field: ArtifactSizeBytes}, {Field: "score", Direction: SortDesc}}})
	if got := strings.Join(hits, ","); !strings.HasPrefix(got, "w:dir/d,w:dir/g,w:dir/c,") {
		t.Fatalf("two keys: %s", got)
	}
}

func TestPagingIsExactAtAFixedVersion(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 20, 21, 57} {
		t.Run(fmt.Sprint(n, " files"), func(t *testing.T) {
			x := newQFix(t)
			x.apply(CreateWorkspace{Agent: "a", Name: "w"})
			var want []string
			for i := 0; i < n; i++ {
				p := fmt.Sprintf("outputs/f%03d", i)
				x.put("w", p, "", map[string]FieldValue{"rank": IntField(int64(i % 4))})
				want = append(want, p)
			}
			v := x.f.View()
			ws := x.ws(v, "w")
			for _, limit := range []int{1, 9, 10} {
				q := Query{Scope: Scope{Workbench: ws}, Limit: limit, Fields: []string{}}
				var got []string
				pages := 0
				for {
					r, err := v.Queries().Search(q)
					if err != nil {
						t.Fatal(err)
					}
					pages++
					for _, h := range r.Hits {
						got = append(got, h.Path)
					}
					if r.Total != int64(n) {
						t.Fatalf("total %d", r.Total)
					}
					if r.Next == nil {
						break
					}
					if len(r.Hits) != limit {
						t.Fatalf("a short page (%d hits) with more to come", len(r.Hits))
					}
					// Writes after the first page change nothing at the view's version.
					x.put("w", fmt.Sprintf("outputs/f%03d-new", pages), "", nil)
					if pages == 1 && n > 0 {
						x.del("w", want[0])
						x.put("w", want[0], "", nil)
					}
					q.After = r.Next
				}
				if !slices.Equal(got, want) {
					t.Fatalf("limit %d: %v, want %v", limit, got, want)
				}
				if wantPages := max(1, (n+limit-1)/limit); pages != wantPages {
					t.Fatalf("limit %d: %d pages, want %d", limit, pages, wantPages)
				}
			}
			// Sorted by a field with many ties, the pages still partition the matches.
			hits := searchEveryPlan(t, v, Query{Scope: Scope{Workbench: ws}, Limit: 3, Sort: []SortKey{{Field: "rank", Direction: SortDesc}}})
			if len(hits) != n {
				t.Fatalf("%d hits sorted by rank, want %d", len(hits), n)
			}
			seen := map[string]bool{}
			for _, h := range hits {
				if seen[h] {
					t.Fatalf("%s twice", h)
				}
				seen[h] = true
			}
		})
	}
}

func TestFacetsCountAllMatchesNotOnlyThePage(t *testing.T) {
	x := newQFix(t)
	for i := 0; i < 30; i++ {
		fs := map[string]FieldValue{"color": StringField([]string{"red", "green", "blue"}[i%3]), "id": IntField(int64(i))}
		if i%5 == 0 {
			delete(fs, "color")
		}
		if i%2 == 0 {
			fs["weight"] = IntField(int64(i % 4)) // 0 and 2 as ints ...
		} else {
			fs["weight"] = FloatField(float64(i % 4)) // ... 1.0 and 3.0 as floats: one value each
		}
		x.put("w", fmt.Sprintf("input/f%02d", i), "", fs)
	}
	v := x.f.View()
	ws := x.ws(v, "w")
	q := Query{Scope: Scope{Workbench: ws}, Limit: 2, Facets: []string{"color", "id", "weight"},
		Predicates: []Predicate{{Field: "id", Op: PredLt, Value: 25}}}
	for _, mode := range allPlans {
		r, err := v.Queries().search(q, mode)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) != 2 || r.Total != 25 {
			t.Fatalf("%d hits of %d", len(r.Hits), r.Total)
		}
		color := r.Facets[0]
		// Of ids 0..24: 5 lack color (0,5,...,20); red, green, blue 7, 7, 6 of the others.
		wantColor := Facet{Field: "color", Missing: 5, Distinct: 3, Values: []FacetValue{
			{StringField("green"), 7}, {StringField("red"), 7}, {StringField("blue"), 6}}}
		if !reflect.DeepEqual(color, wantColor) {
			t.Fatalf("%s color facet %+v, want %+v", planName(mode), color, wantColor)
		}
		id := r.Facets[1]
		if len(id.Values) != MaxFacetValues || id.Distinct != 25 || id.Other != 5 || id.Values[0] != (FacetValue{IntField(0), 1}) || id.Values[19].Value != IntField(19) {
			t.Fatalf("%s id facet %+v", planName(mode), id)
		}
		weight := r.Facets[2]
		wantWeight := []FacetValue{{IntField(0), 7}, {IntField(1), 6}, {IntField(2), 6}, {IntField(3), 6}}
		if !reflect.DeepEqual(weight.Values, wantWeight) || weight.Distinct != 4 {
			t.Fatalf("%s weight facet %+v", planName(mode), weight)
		}
	}
}

func TestAggregateGroupsMeasuresAndSorts(t *testing.T) {
	x := newQFix(t)
	put := func(path, body string, fs map[string]FieldValue) { x.put("w", path, body, fs) }
	put("input/a.csv", "12345", map[string]FieldValue{"score": IntField(4), "model": StringField("m1")})
	put("input/b.csv", "1", map[string]FieldValue{"score": FloatField(0.5), "model": StringField("m2")})
	put("outputs/c.json", "123", map[string]FieldValue{"score": StringField("n/a"), "model": StringField("m1")})
	put("outputs/d.json", "1234567", map[string]FieldValue{"score": IntField(math.MaxInt64)})
	put("outputs/e.json", "12", map[string]FieldValue{"score": IntField(1)})
	put("logs/run.log", "", map[string]FieldValue{"score": StringField("bad"), "flag": BoolField(true)})
	put("README", "1234", map[string]FieldValue{"score": StringField("zz")})
	v := x.f.View()
	ws := x.ws(v, "w")
	measures := []Measure{
		{Name: "files", Op: MeasureCount},
		{Name: "scored", Op: MeasureCount, Field: "score"},
		{Name: "bytes", Op: MeasureSum, Field: ArtifactSizeBytes},
		{Name: "total", Op: MeasureSum, Field: "score"},
		{Name: "mean", Op: MeasureAvg, Field: "score"},
		{Name: "low", Op: MeasureMin, Field: "score"},
		{Name: "high", Op: MeasureMax, Field: "score"},
	}
	q := AggregateQuery{Scope: Scope{Workbench: ws}, Measures: measures, GroupBy: []string{ArtifactSection},
		Sort: []SortKey{{Field: "bytes", Direction: SortDesc}}}
	want := aggregateInEveryPlan(t, v, q)
	null := FieldValue{}
	wantGroups := []Group{
		{Key: []FieldValue{StringField("outputs")}, Count: 3, Values: []FieldValue{IntField(3), IntField(3), IntField(12),
			FloatField(float64(math.MaxInt64) + 1), FloatField((float64(math.MaxInt64) + 1) / 2), IntField(1), IntField(math.MaxInt64)}},
		{Key: []FieldValue{StringField("input")}, Count: 2, Values: []FieldValue{IntField(2), IntField(2), IntField(6),
			FloatField(4.5), FloatField(2.25), FloatField(0.5), IntField(4)}},
		{Key: []FieldValue{null}, Count: 1, Values: []FieldValue{IntField(1), IntField(1), IntField(4),
			null, null, StringField("zz"), StringField("zz")}},
		{Key: []FieldValue{StringField("logs")}, Count: 1, Values: []FieldValue{IntField(1), IntField(1), IntField(0),
			null, null, StringField("bad"), StringField("bad")}},
	}
	if want.Matched != 7 || want.TotalGroups != 4 || !reflect.DeepEqual(want.Groups, wantGroups) {
		t.Fatalf("aggregate:\n%+v\nwant\n%+v", want, wantGroups)
	}

	// Sorting by a group field puts null last; limit keeps the first groups.
	r, err := v.Queries().Aggregate(AggregateQuery{Scope: Scope{Workbench: ws}, Measures: measures[:1], GroupBy: []string{ArtifactSection, "model"},
		Sort: []SortKey{{Field: ArtifactSection, Direction: SortDesc}}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, g := range r.Groups {
		keys = append(keys, g.Key[0].String()+"/"+g.Key[1].String()+"="+g.Values[0].String())
	}
	if got := strings.Join(keys, " "); got != `"outputs"/"m1"=1 "outputs"/null=2 "logs"/null=1` || r.TotalGroups != 6 {
		t.Fatalf("groups %s (of %d)", got, r.TotalGroups)
	}

	// Without group_by there is one group, even over no matches.
	r, err = v.Queries().Aggregate(AggregateQuery{Scope: Scope{Workbench: ws}, Measures: measures,
		Predicates: []Predicate{{Field: "model", Op: PredEq, Value: "none"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 1 || r.Groups[0].Count != 0 || !reflect.DeepEqual(r.Groups[0].Values, []FieldValue{IntField(0), IntField(0), null, null, null, null, null}) {
		t.Fatalf("empty aggregate %+v", r)
	}
}

func TestInvalidAggregatesNameTheArgument(t *testing.T) {
	v, ws := opFixture(t)
	sc := Scope{Workbench: ws}
	count := []Measure{{Name: "n", Op: MeasureCount}}
	tests := []invalidCase[AggregateQuery]{
		{"no measures", AggregateQuery{Scope: sc}, "measures"},
		{"an empty measure name", AggregateQuery{Scope: sc, Measures: []Measure{{Op: MeasureCount}}}, "measures[0].name"},
		{"a repeated measure name", AggregateQuery{Scope: sc, Measures: []Measure{{Name: "x", Op: MeasureCount}, {Name: "x", Op: MeasureCount}}}, "measures[1].name"},
		{"a measure named like a group field", AggregateQuery{Scope: sc, Measures: []Measure{{Name: "s", Op: MeasureCount}}, GroupBy: []string{"s"}}, "measures[0].name"},
		{"an unknown measure", AggregateQuery{Scope: sc, Measures: []Measure{{Name: "x", Op: "median", Field: "n"}}}, "measures[0].op"},
		{"sum without a field", AggregateQuery{Scope: sc, Measures: []Measure{{Name: "x", Op: MeasureSum}}}, "measures[0].field"},
		{"a bad measure field", AggregateQuery{Scope: sc, Measures: []Measure{{Name: "x", Op: MeasureMax, Field: "artifact.nope"}}}, "measures[0].field"},
		{"a bad group field", AggregateQuery{Scope: sc, Measures: count, GroupBy: []string{"s", "S"}}, "group_by[1]"},
		{"too many group fields", AggregateQuery{Scope: sc, Measures: count, GroupBy: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, "group_by"},
		{"a sort key naming nothing", AggregateQuery{Scope: sc, Measures: count, Sort: []SortKey{{Field: "s"}}}, "sort[0].field"},
		{"a bad sort direction", AggregateQuery{Scope: sc, Measures: count, Sort: []SortKey{{Field: "n", Direction: "DESC"}}}, "sort[0].direction"},
		{"limit above 100", AggregateQuery{Scope: sc, Measures: count, Limit: 101}, "limit"},
		{"a bad predicate", AggregateQuery{Scope: sc, Measures: count, Predicates: []Predicate{{"n", PredIn, nil}}}, "predicates[0].value"},
	}
	checkInvalid(t, tests, func(q AggregateQuery) *Error {
		_, err := v.Queries().Aggregate(q)
		return err
	})
}

func TestCatalogListsFieldsTypesCountsAndOperators(t *testing.T) {
	x := newQFix(t)
	x.put("w", "input/a", "", map[string]FieldValue{"model": StringField("m1"), "score": IntField(3), "ok": BoolField(true)})
	x.put("w", "input/b", "", map[string]FieldValue{"model": StringField("m1"), "score": FloatField(0.5)})
	x.put("w", "outputs/c", "", map[string]FieldValue{"model": StringField("m2"), "score": StringField("n/a")})
	x.put("w", "outputs/d", "", map[string]FieldValue{"stage": IntField(1)})
	v := x.f.View()
	ws := x.ws(v, "w")
	r, err := v.Queries().Catalog(CatalogQuery{Scope: Scope{Workbench: ws}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]CatalogField{}
	var names []string
	for _, f := range r.Fields {
		byName[f.Name] = f
		names = append(names, f.Name)
	}
	if !slices.IsSorted(names) || len(names) != len(builtinFields)+4 || r.Files != 4 {
		t.Fatalf("fields %v of %d files", names, r.Files)
	}
	all := allPredicateOps
	numOps := []PredicateOp{PredEq, PredNe, PredIn, PredGt, PredGte, PredLt, PredLte, PredExists, PredNotExists}
	boolOps := []PredicateOp{PredEq, PredNe, PredIn, PredExists, PredNotExists}
	for _, tc := range []struct {
		name    string
		builtin bool
		types   []string
		files   int64
		ops     []PredicateOp
	}{
		{"model", false, []string{"string"}, 3, all},
		{"score", false, []string{"string", "integer", "number"}, 3, all},
		{"ok", false, []string{"boolean"}, 1, boolOps},
		{"stage", false, []string{"integer"}, 1, numOps},
		{ArtifactSizeBytes, true, []string{"integer"}, 4, numOps},
		{ArtifactExt, true, []string{"string"}, 0, all},
		{ArtifactSection, true, []string{"string"}, 4, all},
	} {
		f := byName[tc.name]
		if f.Builtin != tc.builtin || !slices.Equal(f.Types, tc.types) || f.Files != tc.files || !slices.Equal(f.Operators, tc.ops) || f.Facet != nil {
			t.Errorf("%s: %+v", tc.name, f)
		}
	}

	// A prefix and a path narrow the catalog; facets count values over the scope.
	r, err = v.Queries().Catalog(CatalogQuery{Scope: Scope{Workbench: ws, Path: "input"}, FieldPrefix: "mo", IncludeFacets: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 2 || len(r.Fields) != 1 || r.Fields[0].Name != "model" ||
		!reflect.DeepEqual(*r.Fields[0].Facet, Facet{Field: "model", Distinct: 1, Values: []FacetValue{{StringField("m1"), 2}}}) {
		t.Fatalf("narrowed catalog %+v", r)
	}
	r, _ = v.Queries().Catalog(CatalogQuery{Scope: Scope{Workbench: ws}, FieldPrefix: "artifact.s", IncludeFacets: true})
	if len(r.Fields) != 2 || r.Fields[0].Name != ArtifactSection || r.Fields[0].Facet.Values[0] != (FacetValue{StringField("input"), 2}) {
		t.Fatalf("built-in catalog %+v", r)
	}
	if _, err := v.Queries().Catalog(CatalogQuery{Scope: Scope{Workbench: ws}, FieldPrefix: strings.Repeat("a", 129)}); err == nil || err.Field != "field_prefix" {
		t.Fatalf("long field prefix: %v", err)
	}
}

func TestRootScopeSkipsStagingAndLaterWorkbenches(t *testing.T) {
	x := newQFix(t)
	x.put("w1", "outputs/a", "", map[string]FieldValue{"k": IntField(1)})
	x.put("w2", "outputs/a", "", map[string]FieldValue{"k": IntField(1)})
	x.put("w3", "outputs/a", "", map[string]FieldValue{"k": IntField(1)})
	old := x.f.View()
	x.put("w4", "outputs/a", "", map[string]FieldValue{"k": IntField(1)})
	x.apply(CreateWorkspace{Agent: "b", Name: "w1"})
	x.apply(Put{Agent: "b", Workspace: "w1", Path: "outputs/a", Fields: map[string]FieldValue{"k": IntField(1)}})
	// A restore stages w5 from a snapshot of w1: its files exist (and are indexed) but the
	// workbench stays invisible until the restore finishes.
	snap := x.apply(SnapshotMint{Agent: "a", Workspace: "w1", TTLDays: 1}).Snapshot
	w1 := x.ws(x.f.View(), "w1")
	op := fmt.Sprintf("%064x", 5)
	x.apply(RestoreBegin{Agent: "a", OpID: op, Source: "w1", SourceIncarnation: w1.Incarnation, SnapshotID: snap.ID, Destination: "w5"})
	x.apply(RestoreCopy{Agent: "a", OpID: op, Limit: 100})
	staged, _ := x.f.View().st.workspaces.Get(workspaceKey("a", "w5"))
	if staged == nil || staged.State != WorkspaceStaging || x.f.View().st.index.Len() == 0 {
		t.Fatalf("no staging workbench: %+v", staged)
	}
	if got := searchEveryPlan(t, x.f.View(), Query{Scope: Scope{Workbench: staged}}); len(got) != 1 {
		t.Fatalf("the staged copy holds %v", got)
	}

	v := x.f.View()
	q := Query{Scope: Scope{Agent: "a"}, Predicates: []Predicate{{Field: "k", Op: PredEq, Value: 1}}}
	if got := strings.Join(searchEveryPlan(t, v, q), ","); got != "w1:outputs/a,w2:outputs/a,w3:outputs/a,w4:outputs/a" {
		t.Fatalf("root search: %s", got)
	}
	agg, err := v.Queries().Aggregate(AggregateQuery{Scope: Scope{Agent: "a"}, Measures: []Measure{{Name: "n", Op: MeasureCount}}})
	if err != nil || agg.Groups[0].Count != 4 {
		t.Fatalf("root aggregate %+v %v", agg, err)
	}
	cat, err := v.Queries().Catalog(CatalogQuery{Scope: Scope{Agent: "a"}})
	if err != nil || cat.Files != 4 {
		t.Fatalf("root catalog %+v %v", cat, err)
	}
	// A view at an older version does not see the workbench created after it.
	at, _ := v.At(old.Version())
	if got := strings.Join(searchEveryPlan(t, at, q), ","); got != "w1:outputs/a,w2:outputs/a,w3:outputs/a" {
		t.Fatalf("root search at v%d: %s", old.Version(), got)
	}
	// An agent without a root holds nothing.
	if got := searchEveryPlan(t, v, Query{Scope: Scope{Agent: "nobody"}}); len(got) != 0 {
		t.Fatalf("nobody's search: %v", got)
	}
}

func TestQueryAtAnOlderVersionIgnoresLaterWrites(t *testing.T) {
	x := newQFix(t)
	for i := 0; i < 6; i++ {
		x.put("w", fmt.Sprintf("outputs/r%d.json", i), strings.Repeat("x", i), map[string]FieldValue{"status": StringField("ok"), "n": IntField(int64(i))})
	}
	then := x.f.AppliedVersion()
	x.put("w", "outputs/r0.json", "changed", map[string]FieldValue{"status": StringField("failed"), "n": IntField(100)})
	x.del("w", "outputs/r1.json")
	x.put("w", "outputs/r9.json", "", map[string]FieldValue{"status": StringField("ok"), "n": IntField(9)})
	x.apply(Append{Agent: "a", Workspace: "w", Path: "outputs/r2.json", ExpectGeneration: 3, Segments: qSegs("more"),
		AppendedBytes: 4, NewSize: 6})

	live := x.f.View()
	ws := x.ws(live, "w")
	old, err := live.At(then)
	if err != nil {
		t.Fatal(err)
	}
	q := Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{{Field: "status", Op: PredEq, Value: "ok"}},
		Sort: []SortKey{{Field: "n", Direction: SortDesc}}, Facets: []string{"status"}, Limit: 2}
	if got := strings.Join(searchEveryPlan(t, old, q), ","); got != "w:outputs/r5.json,w:outputs/r4.json,w:outputs/r3.json,w:outputs/r2.json,w:outputs/r1.json,w:outputs/r0.json" {
		t.Fatalf("old search: %s", got)
	}
	r, _ := old.Queries().Search(q)
	if r.Index != "" || r.Version != then {
		t.Fatalf("an old view used the live index (%q) or the wrong version %d", r.Index, r.Version)
	}
	if got := strings.Join(searchEveryPlan(t, live, q), ","); got != "w:outputs/r9.json,w:outputs/r5.json,w:outputs/r4.json,w:outputs/r3.json,w:outputs/r2.json" {
		t.Fatalf("live search: %s", got)
	}
	// The append kept the fields and changed the size.
	r, _ = live.Queries().Search(Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{{Field: ArtifactSizeBytes, Op: PredEq, Value: 6}}, Fields: []string{"n"}})
	if len(r.Hits) != 1 || r.Hits[0].Path != "outputs/r2.json" || r.Hits[0].Fields["n"] != IntField(2) {
		t.Fatalf("appended file: %+v", r.Hits)
	}
	oldAgg, _ := old.Queries().Aggregate(AggregateQuery{Scope: Scope{Workbench: ws}, Measures: []Measure{{Name: "sum", Op: MeasureSum, Field: "n"}}})
	if oldAgg.Groups[0].Values[0] != IntField(15) {
		t.Fatalf("old aggregate %+v", oldAgg)
	}
	oldCat, _ := old.Queries().Catalog(CatalogQuery{Scope: Scope{Workbench: ws}, FieldPrefix: "status", IncludeFacets: true})
	if oldCat.Files != 6 || oldCat.Fields[0].Facet.Values[0] != (FacetValue{StringField("ok"), 6}) {
		t.Fatalf("old catalog %+v", oldCat)
	}
}

func TestPathScopeIsComponentWise(t *testing.T) {
	x := newQFix(t)
	for _, p := range []string{"a/x", "a/b/c", "ab", "a-b/y", "a.b", "b/a/x"} {
		x.put("w", p, "", map[string]FieldValue{"k": BoolField(true)})
	}
	v := x.f.View()
	ws := x.ws(v, "w")
	for _, tc := range []struct{ path, want string }{
		{"a", "w:a/b/c,w:a/x"},
		{"a/x", "w:a/x"},
		{"a/b", "w:a/b/c"},
		{"ab", "w:ab"},
		{"b", "w:b/a/x"},
		{"c", ""},
		{"", "w:a/b/c,w:a/x,w:a-b/y,w:a.b,w:ab,w:b/a/x"},
	} {
		for _, preds := range [][]Predicate{nil, {{Field: "k", Op: PredEq, Value: true}}} {
			got := strings.Join(searchEveryPlan(t, v, Query{Scope: Scope{Workbench: ws, Path: tc.path}, Predicates: preds}), ",")
			if got != tc.want {
				t.Fatalf("path %q: %s, want %s", tc.path, got, tc.want)
			}
		}
	}
}

func TestTheLiveViewUsesTheIndexWhenItIsSelective(t *testing.T) {
	x := newQFix(t)
	for i := 0; i < 200; i++ {
		x.put("w", fmt.Sprintf("input/f%03d", i), "", map[string]FieldValue{"id": IntField(int64(i)), "kind": StringField("common")})
	}
	v := x.f.View()
	ws := x.ws(v, "w")
	r, err := v.Queries().Search(Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{
		{Field: "kind", Op: PredEq, Value: "common"}, {Field: "id", Op: PredIn, Value: []any{7, 8}}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Index != "id" || r.Examined != 2 || r.Total != 2 {
		t.Fatalf("selective query: index %q examined %d total %d", r.Index, r.Examined, r.Total)
	}
	r, _ = v.Queries().Search(Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{{Field: "id", Op: PredGte, Value: 150}}})
	if r.Index != "id" || r.Examined != 50 || r.Total != 50 {
		t.Fatalf("range query: index %q examined %d total %d", r.Index, r.Examined, r.Total)
	}
	// Nothing to gain from the index: scan.
	r, _ = v.Queries().Search(Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{{Field: "kind", Op: PredEq, Value: "common"}}})
	if r.Index != "" || r.Examined != 200 || r.Total != 200 {
		t.Fatalf("unselective query: index %q examined %d total %d", r.Index, r.Examined, r.Total)
	}
	r, _ = v.Queries().Search(Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{{Field: "kind", Op: PredNe, Value: "x"}}})
	if r.Index != "" {
		t.Fatalf("ne used the index %q", r.Index)
	}
}

func TestLongStringsShareAnIndexKeyButMatchExactly(t *testing.T) {
	x := newQFix(t)
	p := strings.Repeat("p", indexStringBytes)
	for name, s := range map[string]string{"a": p + "a", "b": p + "b", "exact": p, "short": p[:10], "nul": p + "\x00"} {
		x.put("w", name, "", map[string]FieldValue{"s": StringField(s)})
	}
	v := x.f.View()
	ws := x.ws(v, "w")
	for _, tc := range []struct {
		p    Predicate
		want string
	}{
		{Predicate{"s", PredEq, p + "a"}, "a"},
		{Predicate{"s", PredEq, p}, "exact"},
		{Predicate{"s", PredEq, p + "c"}, ""},
		{Predicate{"s", PredPrefix, p + "a"}, "a"},
		{Predicate{"s", PredPrefix, p}, "a,b,exact,nul"},
		{Predicate{"s", PredGt, p + "a"}, "b"},
		{Predicate{"s", PredGte, p + "\x00"}, "a,b,nul"},
		{Predicate{"s", PredLt, p + "b"}, "a,exact,nul,short"},
		{Predicate{"s", PredLte, p}, "exact,short"},
		{Predicate{"s", PredIn, []any{p + "b", p[:10], p + "z"}}, "b,short"},
	} {
		got := searchEveryPlan(t, v, Query{Scope: Scope{Workbench: ws}, Predicates: []Predicate{tc.p}})
		if s := strings.ReplaceAll(strings.Join(got, ","), "w:", ""); s != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.p.Op, tc.p.Value, s, tc.want)
		}
	}
}

// A predicate value that is not a scalar is refused naming what it is in JSON's terms,
// never a Go type.
func TestAPredicateValueThatIsNoScalarIsNamedInJSONTerms(t *testing.T) {
	for _, c := range []struct {
		val  any
		want string
	}{
		{json.Number("1e400"), "a number out of range"},
		{math.Inf(1), "a number out of range"},
		{map[string]any{"a": 1}, "an object"},
		{[]any{1}, "an array"},
	} {
		_, err := compilePredicate("predicates[0]", Predicate{Field: "n", Op: PredEq, Value: c.val})
		if err == nil || !strings.Contains(err.Message, "got "+c.want) || strings.Contains(err.Message, "json.") || strings.Contains(err.Message, "map[") {
			t.Errorf("value %#v: %v, want a refusal naming %q and no Go type", c.val, err, c.want)
		}
	}
}
