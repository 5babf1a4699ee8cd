package main

import (
	"encoding/json"
	"io"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/api/client"
)

func TestParseWhere(t *testing.T) {
	tests := []struct {
		name, in string
		want     client.Predicate
	}{
		{"a number stays the number as written", "accuracy gt 0.90", client.Predicate{Field: "accuracy", Op: "gt", Value: json.Number("0.90")}},
		{"symbols stand for operators", "accuracy >= 0.9", client.Predicate{Field: "accuracy", Op: "gte", Value: json.Number("0.9")}},
		{"a compact condition needs no blanks", "epochs<12", client.Predicate{Field: "epochs", Op: "lt", Value: json.Number("12")}},
		{"a compact condition may have blanks after the symbol", "owner!= bob", client.Predicate{Field: "owner", Op: "ne", Value: "bob"}},
		{"text that is not JSON is a plain string, blanks kept", "owner eq alice  smith", client.Predicate{Field: "owner", Op: "eq", Value: "alice  smith"}},
		{"a quoted string is JSON", `owner = "true"`, client.Predicate{Field: "owner", Op: "eq", Value: "true"}},
		{"true is a boolean", "final == true", client.Predicate{Field: "final", Op: "eq", Value: true}},
		{"in takes a comma-separated list", `owner in alice, "bob smith",3`, client.Predicate{Field: "owner", Op: "in", Value: []any{"alice", "bob smith", json.Number("3")}}},
		{"in takes a JSON array", `epochs in [1,2]`, client.Predicate{Field: "epochs", Op: "in", Value: []any{json.Number("1"), json.Number("2")}}},
		{"exists takes no value", "final exists", client.Predicate{Field: "final", Op: "exists"}},
		{"surrounding blanks are ignored", "  artifact.ext   eq   csv ", client.Predicate{Field: "artifact.ext", Op: "eq", Value: "csv"}},
		{"a JSON object is text", `note eq {"a":1}`, client.Predicate{Field: "note", Op: "eq", Value: `{"a":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWhere(tt.in)
			if err != nil {
				t.Fatalf("parseWhere(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parseWhere(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseWhereRejects(t *testing.T) {
	for _, in := range []string{"", "accuracy", "accuracy between 1", "accuracy gt", "final exists yes", "> 3", "owner in"} {
		if p, err := parseWhere(in); err == nil {
			t.Errorf("parseWhere(%q) = %+v, want a usage error", in, p)
		} else if _, ok := err.(usageError); !ok {
			t.Errorf("parseWhere(%q): %v is not a usage error", in, err)
		}
	}
}

func TestParseSort(t *testing.T) {
	for in, want := range map[string]client.SortKey{
		"accuracy":          {Field: "accuracy"},
		"accuracy:desc":     {Field: "accuracy", Direction: "desc"},
		"artifact.name:asc": {Field: "artifact.name", Direction: "asc"},
	} {
		if got, err := parseSort(in); err != nil || got != want {
			t.Errorf("parseSort(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", ":desc", "accuracy:down"} {
		if _, err := parseSort(in); err == nil {
			t.Errorf("parseSort(%q): no error", in)
		}
	}
}

func TestFormatValueReadsBackAsTheSameValue(t *testing.T) {
	for _, v := range []any{"alice", json.Number("0.93"), true, nil, "bob smith", "", "a=b", "tab\there"} {
		s := formatValue(v)
		back := parseValue(s)
		if s == "null" {
			back = nil
		}
		if !reflect.DeepEqual(back, v) {
			t.Errorf("formatValue(%#v) = %q, which reads back as %#v", v, s, back)
		}
	}
}

func TestParseFieldFlags(t *testing.T) {
	got, err := parseFieldFlags([]string{"owner=alice", "accuracy=0.93", "final=true", `note="12"`, "empty="})
	want := map[string]any{"owner": "alice", "accuracy": json.Number("0.93"), "final": true, "note": "12", "empty": ""}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, %v; want %#v", got, err, want)
	}
	for _, bad := range []string{"noequals", "=x", "tags=[1]", "x=null"} {
		if _, err := parseFieldFlags([]string{bad}); err == nil {
			t.Errorf("--field %q: no error", bad)
		}
	}
}

func TestGrepExitsLikeGrep(t *testing.T) {
	url := newTestServer(t)
	runCases(t, url, []cliCase{{"put", []string{"put", "logs/run.log", "--agent", "a", "--workbench", "w"}, "loss 0.1\nnan here\n", "", ""}})
	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"a match exits 0", []string{"grep", "--agent", "a", "w", "nan", "-r"}, 0},
		{"no match exits 1", []string{"grep", "--agent", "a", "w", "zebra", "-r"}, 1},
		{"no match with --json exits 1", []string{"grep", "--json", "--agent", "a", "w", "zebra", "-r"}, 1},
		{"an error exits 2", []string{"grep", "--agent", "a", "nosuch", "nan", "-r"}, 2},
		{"a usage error exits 2", []string{"grep", "--agent", "a", "w"}, 2},
		{"a bad flag exits 2", []string{"grep", "--nosuchflag", "w", "x"}, 2},
		{"other commands still exit 1 on an error", []string{"cat", "--agent", "a", "--workbench", "w", "nope"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := newCLI()
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			root.SetArgs(append([]string{"--server", url}, tt.args...))
			cmd, err := root.ExecuteContextC(t.Context())
			got := 0
			if err != nil {
				got = exitCode(cmd, err)
			}
			if got != tt.want {
				t.Errorf("exit %d (error %v), want %d", got, err, tt.want)
			}
		})
	}
}
