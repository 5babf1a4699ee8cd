package main

import (
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/api/client"
)

func TestParseMeasure(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want client.Measure
		bad  bool
	}{
		{in: "count", want: client.Measure{Name: "count", Op: "count"}},
		{in: "sum:artifact.size_bytes", want: client.Measure{Name: "sum_artifact_size_bytes", Op: "sum", Field: "artifact.size_bytes"}},
		{in: "best=max:accuracy", want: client.Measure{Name: "best", Op: "max", Field: "accuracy"}},
		{in: "n=count", want: client.Measure{Name: "n", Op: "count"}},
		{in: "median:x", bad: true},
		{in: "count:x", bad: true},
		{in: "avg", bad: true},
		{in: "=count", bad: true},
	} {
		got, err := parseMeasure(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("parseMeasure(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseMeasure(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestMetadataCommands(t *testing.T) {
	url := newTestServer(t)
	tgt := []string{"--agent", "a", "--workbench", "w"}
	put := func(path string, fields ...string) []string {
		args := append([]string{"put", path}, tgt...)
		for _, f := range fields {
			args = append(args, "--field", f)
		}
		return args
	}
	runCases(t, url, []cliCase{
		{"put m1", put("outputs/m1.json", "accuracy=0.93", "owner=alice"), "{}", "", ""},
		{"put m2", put("outputs/m2.json", "accuracy=0.81", "owner=bob"), "{}", "", ""},
		{"put m3", put("outputs/m3.json", "accuracy=0.99", "owner=alice"), "{}", "", ""},
		{"aggregate groups and measures", []string{"aggregate", "--agent", "a", "w", "--where", "owner exists", "--group-by", "owner",
			"--measure", "count", "--measure", "best=max:accuracy", "--sort", "owner"}, "",
			`^OWNER +COUNT +BEST\nalice +2 +0.99\nbob +1 +0.81\n2 of 2 groups over 3 files\n$`, ""},
		{"aggregate defaults to count", []string{"aggregate", "--agent", "a"}, "", `^COUNT\n3 *\n1 of 1 groups over 3 files\n$`, ""},
		{"a --where typo in aggregate names the condition", []string{"aggregate", "--agent", "a", "--where", "ownr eq alice"}, "", "", "InvalidArguments"},
		{"a --where typo in search names the condition", []string{"search", "--agent", "a", "w", "--where", "acuracy > 0.9"}, "", "", "InvalidArguments"},
		{"a --where typo in search --json too", []string{"search", "--json", "--agent", "a", "w", "--where", "acuracy > 0.9"}, "", "", "InvalidArguments"},
		{"a real field with no match is 0 of 0", []string{"search", "--agent", "a", "w", "--where", "accuracy > 0.999"}, "", `^0 of 0 files\n$`, ""},
		{"not_exists of an absent field is no typo", []string{"search", "--agent", "a", "w", "--where", "nosuch not_exists", "--limit", "0"}, "", `3 of 3 files\n$`, ""},
		{"catalog lists attached and built-in fields", []string{"catalog", "--agent", "a", "w"}, "",
			`(?s)^FIELD +KIND +TYPES +FILES +OPERATORS\naccuracy +attached +number +3 +eq .*owner +attached +string +3 .*\n13 fields over 3 files\n$`, ""},
		{"catalog --facets --prefix", []string{"catalog", "--agent", "a", "w", "--facets", "--prefix", "own"}, "",
			`(?s)owner +attached.*\nfacet owner: alice 2, bob 1\n1 field over 3 files\n$`, ""},
		{"find lists the workbench", []string{"find", "--agent", "a"}, "", `^w uncommitted 3 files 6 bytes\n$`, ""},
		{"find --committed finds none", []string{"find", "--agent", "a", "--committed"}, "", `^$`, ""},
		{"find --committed --uncommitted is a usage error", []string{"find", "--agent", "a", "--committed", "--uncommitted"}, "", "", "InvalidArguments"},
		{"find --json prints the result object", []string{"find", "--agent", "a", "--json"}, "", `^\{"status":"success".*"workbench_id":"w"`, ""},
	})
}
