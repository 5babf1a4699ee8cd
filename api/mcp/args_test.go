package mcp

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// referenceValidateArgs is validateArgs as it was before the arguments were decoded once
// (decodeCallArgs): it decodes them itself. Two changes since, on purpose: arguments that
// do not decode are answered by undecodableArgs, which names a number out of range, and
// a number whose float64 hides what its text says by hiddenNumber.
func (ts *toolSchema) referenceValidateArgs(args json.RawMessage) *workbench.Error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return undecodableArgs(args)
	}
	if werr := ts.hiddenNumber(args); werr != nil {
		return werr
	}
	if ts.resolved.Validate(v) == nil {
		return nil
	}
	if vio := explain(ts.schema, v, ""); vio != nil {
		return invalidArgs(vio.field, vio.keyword, vio.rule)
	}
	return invalidArgs("arguments", "schema", "do not match the tool's input schema")
}

// allSchemas are the input schemas of every tool of both profiles, in name order.
func allSchemas(t testing.TB) (names []string, schemas []*toolSchema) {
	t.Helper()
	for _, load := range []func() (map[string]*toolSchema, error){loadSchemas, loadCairnSchemas} {
		all, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range sortedKeys(all) {
			names, schemas = append(names, n), append(schemas, all[n])
		}
	}
	return names, schemas
}

// checkDecodedOnce compares, for one arguments text, what the handler now derives from one
// decode (the audit target, the schema verdict and its error) with what the separate
// decodes gave: auditTarget and referenceValidateArgs.
func checkDecodedOnce(t *testing.T, names []string, schemas []*toolSchema, args []byte) {
	t.Helper()
	a := decodeCallArgs(json.RawMessage(args))
	id, path := a.auditTarget()
	wantID, wantPath := auditTarget(json.RawMessage(args))
	if id != wantID || path != wantPath {
		t.Fatalf("%q: audit target (%q, %q), decoded separately (%q, %q)", args, id, path, wantID, wantPath)
	}
	if json.Valid(args) {
		// The fast pass finds a number with a fraction or an exponent exactly when the
		// decoder's tokens have one.
		want := walkNumbers(args, func(_ []pathStep, lit string) bool { return strings.ContainsAny(lit, ".eE") })
		if got := hasFractionOrExponent(args); got != want {
			t.Fatalf("%q: hasFractionOrExponent %v, the decoder's numbers %v", args, got, want)
		}
	}
	for i, ts := range schemas {
		got, want := ts.validate(a), ts.referenceValidateArgs(json.RawMessage(args))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s %q: verdict %+v, decoded separately %+v", names[i], args, got, want)
		}
	}
}

// argumentSeeds are argument texts where one decode and three could part: names matching
// case-insensitively (also through Unicode folding: ſ folds to s, K to k), the same name
// twice, in either case, values that are not strings, not objects, numbers out of range
// in members the audit struct skips or reads, escapes, invalid UTF-8, invalid JSON.
var argumentSeeds = []string{
	`{}`, `null`, `[]`, `"w"`, `7`, `{"id":"w","section":"input","path":"a/b.txt"}`,
	`{"id":"w","section":"","path":"a"}`, `{"id":"w","section":"input","path":""}`, `{"id":"w","section":"input"}`,
	`{"ID":"w","Section":"input","PATH":"x"}`, `{"id":"a","ID":"b"}`, `{"ID":"b","id":"a"}`, `{"id":"a","id":"b"}`,
	`{"ſection":"input","path":"p"}`, `{"section":"input","ſection":"output"}`, `{"Path":"p","path":"q","id":"w"}`,
	`{"id":7,"section":true,"path":null}`, `{"id":{"x":1},"section":["input"],"path":"p"}`, `{"id":"w","x":1e400}`,
	`{"id":1e400}`, `{"id":"w","path":1e400}`, `{"id":"w","limit":1e400,"section":"input"}`, `{"\u0069d":"w","s\u0065ction":"input","path":"p"}`,
	`{"id":"\ud800","path":"\u00e9"}`, "{\"id\":\"\xff\",\"path\":\"p\"}", "{\"i\xffd\":\"w\"}", `{"id":"w",}`, `{"id"`,
	`{"id":"w","limit":2.0,"offset":1e2}`, `{"id":"w","snapshot_id":3,"name":"nightly"}`, `{"id":"w","limit":-1}`,
	`{"id":"w","predicates":[{"field":"artifact.size_bytes","op":"gt","value":1}],"limit":5}`, ` {"id" : "w" } `,
	`{"id":"w","limit":1e-400}`, `{"id":"w","ttl_days":90.0000000000000001}`, `{"id":"w","at_snapshot":-0.0e-5}`,
	`{"id":"w\\","path":"1.5\"e","limit":7}`, `{"id":"w","metadata":{"x":[1e-999,2.00000000000000001]},"ttl_days":1E+1}`,
	`{"predicates":[{"field":"f","op":"in","value":[1,-1e-330,"2.5"]}]}`, `[1,2,-3]`, `-4.0`,
}

// A number's text is judged exactly: zero, underflow to 0, and a fraction that its
// float64 rounds away, in any spelling.
func TestNumbersAreJudgedOnTheirText(t *testing.T) {
	for lit, want := range map[string]numberText{
		"0": numberPlain, "-0": numberPlain, "0.000": numberPlain, "-0.0e-99999999999999999999": numberPlain, "0e400": numberPlain,
		"7": numberPlain, "1.0": numberPlain, "1e2": numberPlain, "1.50e1": numberPlain, "12345e-3": numberPlain, "1.5": numberPlain,
		"1e-400": numberUnderflow, "-1e-400": numberUnderflow, "2e-324": numberUnderflow, "0.00000e-1000000000000": numberPlain,
		"1e-99999999999999999999": numberUnderflow, "5e-324": numberPlain, "1e-320": numberPlain,
		"90.0000000000000001": numberFraction, "9.00000000000000001e1": numberFraction, "4503599627370496.5": numberFraction,
		"1.0000000000000000001e0": numberFraction, "100000000000000000000.5": numberFraction, "1e400": numberPlain,
		"123456789012345678901234567890": numberPlain, "1.5e-1": numberPlain, "2.50e0": numberPlain,
	} {
		if got := judgeNumber(lit); got != want {
			t.Errorf("%s: judged %d, want %d", lit, got, want)
		}
	}
}

func TestArgumentsDecodedOnceAsSeparately(t *testing.T) {
	names, schemas := allSchemas(t)
	if len(names) < 18 || !slices.Contains(names, "workbench_stat") {
		t.Fatalf("schemas of %v", names)
	}
	for _, s := range argumentSeeds {
		checkDecodedOnce(t, names, schemas, []byte(s))
	}
}

func FuzzArgumentsDecodedOnceAsSeparately(f *testing.F) {
	for _, s := range argumentSeeds {
		f.Add([]byte(s))
	}
	names, schemas := allSchemas(f)
	f.Fuzz(func(t *testing.T, args []byte) {
		checkDecodedOnce(t, names, schemas, args)
	})
}
