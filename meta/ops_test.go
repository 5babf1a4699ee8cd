package meta

import (
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// TestOpTableDeclaresEveryPart walks the op table: every op this binary decodes is in it
// with a name, a cluster version, a body type of that op, a scope and an apply function;
// an encoded zero body of each decodes back through the table and applies without a
// panic.
func TestOpTableDeclaresEveryPart(t *testing.T) {
	if err := checkOpDefs(opDefs); err != nil {
		t.Fatal(err)
	}
	for op := Op(1); op < 255; op++ {
		data, err := cbor.Marshal(envelope{Format: CommandFormat, Op: op, Body: cbor.RawMessage{0xa0}}) // body: {}
		if err != nil {
			t.Fatal(err)
		}
		_, b, err := DecodeCommand(data)
		inTable := opTable[op] != nil
		if decoded := err == nil || !strings.Contains(err.Error(), "unknown op"); decoded != inTable {
			t.Errorf("op %d: decodes %v, in the table %v", op, decoded, inTable)
		}
		if !inTable || err != nil {
			continue
		}
		if b.Op() != op {
			t.Errorf("op %d decodes to a body of op %d", op, b.Op())
		}
		f := New(Options{})
		if res := f.Apply(1, data); res.Err == nil && op != OpTick {
			// A zero body names no root, workbench or path: every op but the tick refuses it.
			t.Errorf("op %s applied a zero body without an error", opName(op))
		}
	}
}

// TestOpTableRefusesAnIncompleteOp: an op declared without its apply function or its
// scope, twice, with a body of another op, or beyond this binary's cluster version fails
// the table check (and so the package's start).
func TestOpTableRefusesAnIncompleteOp(t *testing.T) {
	const fake Op = 200
	complete := defineOp(fake, "fake", 1,
		func(c fakeBody) CommandScope { return rootWide(c.Agent) },
		func(*applier, fakeBody) Result { return Result{} })
	if err := checkOpDefs(append(append([]opDef(nil), opDefs...), complete)); err != nil {
		t.Fatalf("a complete fake op was refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		def  opDef
		want string
	}{
		{"without apply", defineOp[fakeBody](fake, "fake", 1, func(c fakeBody) CommandScope { return rootWide(c.Agent) }, nil), "no apply"},
		{"without scope", defineOp(fake, "fake", 1, nil, func(*applier, fakeBody) Result { return Result{} }), "no scope"},
		{"beyond the cluster version", defineOp(fake, "fake", ClusterVersion+1,
			func(c fakeBody) CommandScope { return rootWide(c.Agent) }, func(*applier, fakeBody) Result { return Result{} }), "cluster version"},
		{"with another op's body", defineOp(fake+1, "fake", 1,
			func(c fakeBody) CommandScope { return rootWide(c.Agent) }, func(*applier, fakeBody) Result { return Result{} }), "body of op"},
		{"declared twice", defineOp(OpPut, "fake", 1,
			func(c Put) CommandScope { return rootWide(c.Agent) }, on(fileOps, (*fileApplier).put)), "declared twice"},
	} {
		err := checkOpDefs(append(append([]opDef(nil), opDefs...), tc.def))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("a fake op %s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestCommandScopes pins the scope of the ops whose scope callers rely on.
func TestCommandScopes(t *testing.T) {
	for _, tc := range []struct {
		body Body
		want CommandScope
	}{
		{Put{Agent: "a", Workspace: "w", Path: "p"}, CommandScope{"a", "w", "w"}},
		{CreateWorkspace{Agent: "a", Name: "w"}, CommandScope{"a", "w", ""}},
		{SnapshotMint{Agent: "a", Workspace: "w"}, CommandScope{"a", "w", ""}},
		{RestoreBegin{Agent: "a", Source: "s", Destination: "d"}, CommandScope{"a", "s", "d"}},
		{RestoreCopy{Agent: "a", OpID: "o"}, CommandScope{"a", "", ""}},
		{DeleteWorkspace{Agent: "a", Name: "w"}, CommandScope{"a", "w", "w"}},
		{SetQuota{Agent: "a"}, CommandScope{"a", "", ""}},
		{Tick{}, CommandScope{}},
		{BackupHold{ID: "b"}, CommandScope{}},
	} {
		if got := ScopeOf(tc.body); got != tc.want {
			t.Errorf("ScopeOf(%T) = %+v, want %+v", tc.body, got, tc.want)
		}
	}
}

// fakeBody is the body of the fake op of TestOpTableRefusesAnIncompleteOp.
type fakeBody struct{ Agent string }

func (fakeBody) Op() Op { return 200 }
