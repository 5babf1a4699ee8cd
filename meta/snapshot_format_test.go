package meta

import (
	"bytes"
	"fmt"
	"testing"
)

// TestSnapshotsAreWrittenInTheOldestFormatThatHoldsTheState: while a shard applied no
// command of format 2 (quotas, backup holds, workbench deletion) and keeps no change feed
// (Options.FeedMaxPerRoot < 0), its snapshots are format 1, which a replica of the
// previous release installs during a rolling upgrade (it refuses format 2); a feed makes
// format 3; every format restores to the same state here.
func TestSnapshotsAreWrittenInTheOldestFormatThatHoldsTheState(t *testing.T) {
	for _, tc := range []struct {
		name string
		then []Body // after files in two workbenches and a held snapshot
		want uint16
		feed bool
	}{
		{name: "files, workbenches and snapshots alone are format 1", want: 1},
		{name: "a quota makes format 2", then: []Body{SetQuota{Agent: "a", Quota: Quota{MaxFiles: 1000}}}, want: 2},
		{name: "a backup hold makes format 2", then: []Body{BackupHold{ID: "b1"}}, want: 2},
		{name: "a released backup hold leaves format 1", then: []Body{BackupHold{ID: "b1"}, BackupRelease{ID: "b1"}}, want: 1},
		{name: "a workbench deletion still purging makes format 2", then: []Body{DeleteWorkspace{Agent: "a", Name: "w"}}, want: 2},
		{name: "a change feed makes format 3", feed: true, want: 3},
		{name: "a change feed with a quota is format 3", feed: true, then: []Body{SetQuota{Agent: "a", Quota: Quota{MaxFiles: 1000}}}, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One retention item per command: a purge takes several commands.
			opts := Options{RetentionBatch: 1, FeedMaxPerRoot: -1}
			if tc.feed {
				opts.FeedMaxPerRoot = 0 // the default
			}
			h := &applyHelper{t: t, f: New(opts)}
			for i := range 2 * purgeBatch { // more records than one purge step visits
				h.put(fmt.Sprintf("input/f%03d", i), "body")
			}
			h.do(CreateWorkspace{Agent: "a", Name: "w2"})
			h.do(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1})
			for _, b := range tc.then {
				if r := h.do(b); r.Err != nil {
					t.Fatalf("%T: %v", b, r.Err)
				}
			}
			var buf bytes.Buffer
			if _, err := h.f.Snapshot().WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			var hdr snapHeader
			if err := snapDecMode.NewDecoder(bytes.NewReader(buf.Bytes())).Decode(&hdr); err != nil {
				t.Fatal(err)
			}
			if hdr.Format != tc.want {
				t.Fatalf("snapshot format %d, want %d", hdr.Format, tc.want)
			}
			g := New(h.f.opts)
			if err := g.Restore(&buf); err != nil {
				t.Fatal(err)
			}
			if g.StateDigest() != h.f.StateDigest() || g.View().Usage("a") != h.f.View().Usage("a") {
				t.Fatalf("snapshot → restore changed the state (usage %+v, was %+v)", g.View().Usage("a"), h.f.View().Usage("a"))
			}
		})
	}
}
