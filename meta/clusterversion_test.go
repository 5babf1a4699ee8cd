package meta

import (
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// Every op of the first released log needs cluster version 1; the change set needs 3;
// the moves of roots need 5; every other later op this binary decodes needs 2; an op it
// cannot decode needs more than this binary has.
func TestOpVersionCoversEveryOpThisBinaryDecodes(t *testing.T) {
	for op := Op(1); op < 255; op++ {
		data, err := cbor.Marshal(envelope{Format: CommandFormat, Op: op, Body: cbor.RawMessage{0xa0}}) // body: {}
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = DecodeCommand(data)
		known := err == nil || !strings.Contains(err.Error(), "unknown op")
		got := OpVersion(op)
		switch {
		case op <= OpAssignRoot && got != 1:
			t.Errorf("op %d of the first release needs version %d, want 1", op, got)
		case op == OpChangeSet && got != 3:
			t.Errorf("op %d (change set) needs version %d, want 3", op, got)
		case op >= OpMoveFence && op <= OpMoveImportAbort && got != 5:
			t.Errorf("op %d (a move) needs version %d, want 5", op, got)
		case op == OpMoveWalk && got != 6:
			t.Errorf("op %d (a move's walk) needs version %d, want 6", op, got)
		case op > OpAssignRoot && op != OpChangeSet && op != OpMoveWalk && (op < OpMoveFence || op > OpMoveImportAbort) && known && got != 2:
			t.Errorf("op %d, added after the first release, needs version %d, want 2", op, got)
		case !known && got <= ClusterVersion:
			t.Errorf("op %d is unknown to this binary, yet needs version %d ≤ ClusterVersion %d", op, got, ClusterVersion)
		}
	}
}

// A field added to an op of the first release is gated like a new op: a run's snapshot
// (SnapshotMint.Pool, SnapshotPoolRuns) needs version 2, since the first release decodes
// it without the pool; a workbench snapshot still needs 1; a restore begun again
// (RestoreBegin.Again) needs 7, since version 6 would replay instead; a put under a cap on
// its workbench's files (Put.MaxWorkbenchFiles) needs 9, since version 8 cannot decode it.
// Every other command needs its op's version.
func TestCommandVersionGatesFieldsTheFirstReleaseIgnores(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Body
		want int
	}{
		{"a workbench snapshot", SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1}, 1},
		{"a run snapshot", SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1, Pool: SnapshotPoolRuns}, 2},
		{"a put", Put{Agent: "a", Workspace: "w", Path: "input/x"}, 1},
		{"a workbench delete", DeleteWorkspace{Agent: "a", Name: "w"}, 2},
		{"a restore begin", RestoreBegin{Agent: "a", Source: "w", Destination: "d", SnapshotID: 1}, 1},
		{"a restore begun again", RestoreBegin{Agent: "a", Source: "w", Destination: "d", SnapshotID: 1, Again: true}, 7},
		{"a put under a files cap", Put{Agent: "a", Workspace: "w", Path: "input/x", MaxWorkbenchFiles: 4}, 9},
	} {
		if got := CommandVersion(tc.b); got != tc.want {
			t.Errorf("%s needs cluster version %d, want %d", tc.name, got, tc.want)
		}
	}
}
