package documents_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/api/documents"
)

// The fixture runner's golden outputs: identical input, identical output, for several
// selections.
func TestFixtureDeterministicGoldenOutputs(t *testing.T) {
	ev := func(n string) documents.Observation {
		return documents.Observation{EventID: "cairn:feed:" + n + ".0", Type: "cairn.feed.file.put", Source: "cairn:workbench:notes",
			OccurredAt: "2026-01-02T03:04:05.000Z"}
	}
	ver := documents.SelectedVersion{DocumentID: "d", VersionID: "v1", Sha256: "abc", Path: "documents/d.md"}
	for _, tc := range []struct {
		name     string
		base     string
		events   []documents.Observation
		versions []documents.SelectedVersion
		want     string
		evidence []string
	}{
		{"an empty selection on an empty body", "", nil, nil,
			"## Sources\n\n\nSummary: 0 events, 0 versions selected.\n", []string{}},
		{"one event appended after the body", "Hello\n", []documents.Observation{ev("7")}, nil,
			"Hello\n\n## Sources\n\n- event cairn:feed:7.0 — cairn.feed.file.put from cairn:workbench:notes at 2026-01-02T03:04:05.000Z\n\nSummary: 1 events, 0 versions selected.\n",
			[]string{"cairn:feed:7.0"}},
		{"an existing sources section is replaced where it stands, the next heading kept after it", "Intro\n\n## Sources\n\n- old\n\n## Next\nmore\n",
			[]documents.Observation{ev("1"), ev("2")}, []documents.SelectedVersion{ver},
			"Intro\n\n## Sources\n\n- event cairn:feed:1.0 — cairn.feed.file.put from cairn:workbench:notes at 2026-01-02T03:04:05.000Z\n" +
				"- event cairn:feed:2.0 — cairn.feed.file.put from cairn:workbench:notes at 2026-01-02T03:04:05.000Z\n" +
				"- version v1 — documents/d.md sha256 abc\n\nSummary: 2 events, 1 versions selected.\n\n## Next\nmore\n",
			[]string{"cairn:feed:1.0", "cairn:feed:2.0"}},
		{"a second sources section is removed, a body that opens with one keeps it first", "## Sources\n- a\n## Mid\nx\n## Sources\n- b\n",
			[]documents.Observation{ev("3")}, nil,
			"## Sources\n\n- event cairn:feed:3.0 — cairn.feed.file.put from cairn:workbench:notes at 2026-01-02T03:04:05.000Z\n\nSummary: 1 events, 0 versions selected.\n\n## Mid\nx\n",
			[]string{"cairn:feed:3.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := documents.RunRequest{BaseText: tc.base, Snapshot: documents.Snapshot{SelectedEvents: tc.events, SelectedVersions: tc.versions}}
			for range 2 {
				got, err := documents.FixtureRunner{}.Propose(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if got.ProposedText != tc.want || got.Reason != "fixture: append sources section" || !reflect.DeepEqual(got.EvidenceEventIDs, tc.evidence) {
					t.Fatalf("got %q %q %v\nwant %q", got.ProposedText, got.Reason, got.EvidenceEventIDs, tc.want)
				}
			}
		})
	}
}

func TestStableKeyIsTheSHA256OfTheJCSArray(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		jcs   string
	}{
		{[]string{"a", "b"}, `["a","b"]`},
		{[]string{}, `[]`},
		{[]string{"<é>", "\u2028"}, "[\"<é>\",\"\u2028\"]"},
		{[]string{"a,b"}, `["a,b"]`},
	} {
		if got := documents.StableKey(tc.parts...); got != hexSHA(tc.jcs) {
			t.Fatalf("StableKey(%q) = %s, want sha256(%s)", tc.parts, got, tc.jcs)
		}
	}
	if documents.StableKey("a,b") == documents.StableKey("a", "b") {
		t.Fatal("parts are joined")
	}
}
