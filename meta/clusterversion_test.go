package meta

import (
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// Every op of the first released log needs cluster version 1; every later op this binary
// decodes needs 2; an op it cannot decode needs more than this binary has.
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
		case op > OpAssignRoot && known && got != 2:
			t.Errorf("op %d, added after the first release, needs version %d, want 2", op, got)
		case !known && got <= ClusterVersion:
			t.Errorf("op %d is unknown to this binary, yet needs version %d ≤ ClusterVersion %d", op, got, ClusterVersion)
		}
	}
}
