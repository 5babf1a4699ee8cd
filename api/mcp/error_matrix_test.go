package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// The tool × error-code matrix: for every tool, every code docs/workbench.md assigns to it or
// implies for it, driven through the MCP surface (in-memory transport) and checked for its
// code, its retryable flag and the details the contract names. matrixCodes is the grid;
// every pair in it has at least one cell in matrixCells or a documented entry in
// matrixExclusions, and TestErrorMatrix fails when one has neither.

// matrixCap is the MCP payload cap of the matrix's service: small, so that PayloadTooLarge
// and the bodies edit and structured reads refuse to load are cheap to reach.
const matrixCap = 1024

// matrixAgent is the agent root the matrix works in.
const matrixAgent = "matrix"

// Workbenches of the matrix fixture.
const (
	mxWB        = "fx"           // files of every kind, snapshots "keep" (alive) and "gone" (retired)
	mxCommitted = "fx-committed" // committed once
	mxSource    = "src"          // source of the restore left staging, snapshot "feed"
	mxStaging   = "staging-dst"  // destination of a restore that is still staging
	mxMissing   = "nowhere"      // never created
)

// matrixCodes is the grid: tool → the codes docs/workbench.md assigns or implies for it.
// InvalidArguments covers both schema violations and the contract's rules (ids, sections,
// the path jail, text/base64, limits, cursors). Codes only a failing infrastructure can
// produce are listed under "*".
var matrixCodes = map[string][]string{
	"workbench_create":          {"InvalidArguments", "InvalidState"},
	"workbench_put_file":        {"InvalidArguments", "PayloadTooLarge", "AlreadyExists", "NotFound", "NotArtifact", "NotDirectory", "Conflict", "InvalidState"},
	"workbench_append":          {"InvalidArguments", "PayloadTooLarge", "NotArtifact", "NotDirectory", "Conflict", "InvalidState"},
	"workbench_edit":            {"InvalidArguments", "NotFound", "NotArtifact", "InvalidUtf8", "NoMatch", "AmbiguousEdit", "Conflict", "PayloadTooLarge", "InvalidState"},
	"workbench_list":            {"InvalidArguments", "NotFound", "NotDirectory", "ReadFenceChanged", "SnapshotNotFound", "SnapshotExpired"},
	"workbench_stat":            {"InvalidArguments", "NotFound", "SnapshotNotFound", "SnapshotExpired"},
	"workbench_read":            {"InvalidArguments", "NotFound", "NotArtifact", "StructuredDecodeFailed", "ReadFenceChanged", "SnapshotNotFound", "SnapshotExpired", "PayloadTooLarge"},
	"workbench_grep":            {"InvalidArguments", "NotFound", "ReadFenceChanged"},
	"workbench_search":          {"InvalidArguments", "NotFound", "ReadFenceChanged"},
	"workbench_aggregate":       {"InvalidArguments", "NotFound"},
	"workbench_catalog":         {"InvalidArguments", "NotFound"},
	"workbench_find":            {"InvalidArguments"},
	"workbench_commit":          {"InvalidArguments", "WorkbenchCommitConflict", "Conflict", "InvalidState"},
	"workbench_snapshot":        {"InvalidArguments", "NotFound", "InvalidState"},
	"workbench_snapshot_renew":  {"InvalidArguments", "SnapshotNotFound", "SnapshotExpired"},
	"workbench_snapshot_retire": {"InvalidArguments", "SnapshotNotFound", "SnapshotExpired", "ForkRetentionActive"},
	"workbench_snapshot_list":   {"InvalidArguments", "NotFound"},
	"workbench_restore":         {"InvalidArguments", "NotFound", "AlreadyExists", "SnapshotNotFound", "SnapshotExpired", "Conflict"},
	// Tools this profile does not offer: an unknown name, and a Cairn extra that lives in
	// another profile (docs/workbench.md#beyond-the-contract).
	"workbench_frobnicate": {"UnknownTool"},
	"workbench_history":    {"UnknownTool"},
	"*":                    {"ObjectUnavailable", "ResourceExhausted", "RoutingUnavailable", "OutcomeUnknown", "DataCorrupted", "Internal"},
}

// matrixExclusion is a pair of the grid no cell reaches, and why.
type matrixExclusion struct{ tool, code, reason string }

var matrixExclusions = []matrixExclusion{
	{"workbench_append", "Conflict",
		"the contract has append retry generation conflicts itself (docs/workbench.md, workbench_append), so none reaches the caller"},
	{"workbench_edit", "Conflict",
		"needs five consecutive lost races between edit's re-read and its conditional write; no public call forces that deterministically"},
	{"workbench_commit", "Conflict",
		"commit recomputes its tree and retries internally when writes land between its read and its publish (8 attempts); a replace " +
			"losing to a concurrent head change is WorkbenchCommitConflict, and neither race can be forced through the public surface"},
	{"workbench_snapshot_retire", "SnapshotExpired",
		"retire answers SnapshotExpired only for a reaped snapshot (a retired one is an exact retry, retired:false); reaping needs the " +
			"lease (ttl_days ≥ 1) plus the grace period to pass on the command clock"},
	{"*", "ObjectUnavailable", "needs a failing object store; the MCP surface offers no way to break one"},
	{"*", "ResourceExhausted", "needs a replica out of capacity; not reachable with bounded test inputs"},
	{"*", "RoutingUnavailable", "needs a shard that lost its leader; a single-voter test node always leads (TestContractOverStreamableHTTP produces it with a core that fails one proposal)"},
	{"*", "OutcomeUnknown", "needs a commit the replica could not confirm; a single-voter test node always confirms (TestAToolWriteWhoseCommitIsUnconfirmedAnswersOutcomeUnknown produces it with a core that hides one commit)"},
	{"*", "DataCorrupted", "needs stored bytes damaged behind Cairn's back; integration.TestCorruptBlobIsNeverServedAndReuploadRepairsIt " +
		"flips a blob file under a real server and reads it with workbench_read"},
	{"*", "Internal", "a defect by definition; TestArbitraryArgumentsGetAToolResultNeverAFailure checks no input produces one"},
}

// present is a details value that must exist, whatever it is.
type present struct{}

// matrixCell is one driven cell: a call that must fail with code.
type matrixCell struct {
	tool, code string
	// name says what the call does wrong, as a sentence.
	name string
	// args are the arguments; prep, when set, builds them (it may write state first).
	args args
	prep func(t *testing.T, f *matrixFixture) args
	// run, when set, replaces the call altogether and returns the error envelope.
	run func(t *testing.T, f *matrixFixture) obj
	// field is details.field of an InvalidArguments cell.
	field string
	// details are required details members; present{} accepts any value, other values
	// compare by their printed form (numbers arrive as json.Number).
	details map[string]any
	// check, when set, makes further assertions on the envelope.
	check func(t *testing.T, f *matrixFixture, e obj)
}

// matrixRetryable is the retryable flag each code must carry ("retryable says whether the
// same call may succeed later", docs/workbench.md#errors): the contract names ReadFenceChanged
// and Conflict; ForkRetentionActive and a staging destination's InvalidState end when the
// restore completes (TestStagingRestoreErrorsThroughAConcurrentRestore makes the same calls
// succeed afterwards). Nothing else the cells reach succeeds on a plain retry.
func matrixRetryable(code string) bool {
	switch code {
	case "ReadFenceChanged", "Conflict", "ForkRetentionActive", "InvalidState":
		return true
	}
	return false
}

// matrixFixture is the state the cells run against.
type matrixFixture struct {
	node *workbenchtest.Node
	cs   *sdk.ClientSession

	notesGen   int64  // generation of fx/input/notes.txt
	bigSize    int64  // size of fx/logs/big.log, above matrixCap
	keepID     int64  // snapshot "keep" of fx (alive)
	goneID     int64  // snapshot "gone" of fx (retired)
	feedID     int64  // snapshot "feed" of src, consumed by the staging restore
	stagingOp  string // operation id of the restore into staging-dst
	commitBase args   // the arguments of fx-committed's commit

	mu   sync.Mutex
	next int
}

// fresh returns a workbench id no other cell uses.
func (f *matrixFixture) fresh(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	return fmt.Sprintf("%s-%d", prefix, f.next)
}

const mxZeroDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// newMatrixFixture builds the matrix's state through the MCP surface, except the staging
// restore: a restore driven by workbench_restore finishes before the call returns, so the
// fixture begins one on the shard directly, the way a node that crashed mid-restore leaves
// it (TestStagingRestoreErrorsThroughAConcurrentRestore reaches the same answers through
// the public surface alone, with a restore in flight).
func newMatrixFixture(t *testing.T) *matrixFixture {
	t.Helper()
	node := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, MCPMaxPayloadBytes: matrixCap})
	f := &matrixFixture{node: node, cs: connectInMemory(t, node.Service, matrixAgent)}
	cs := f.cs
	put := func(id, section, path, text string) obj {
		return ok(t, cs, "workbench_put_file", args{"id": id, "section": section, "path": path, "text": text})
	}
	f.notesGen = put(mxWB, "input", "notes.txt", "alpha beta alpha\n").int(t, "generation")
	ok(t, cs, "workbench_put_file", args{"id": mxWB, "section": "input", "path": "bin.dat",
		"base64": base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 'a', '\n'})})
	put(mxWB, "input", "broken.json", "{")
	put(mxWB, "input", "inf.yaml", "x: .inf\n")
	put(mxWB, "input", "dir/child.txt", "child\n")
	line := strings.Repeat("z", 699) + "\n"
	ok(t, cs, "workbench_append", args{"id": mxWB, "section": "logs", "path": "big.log", "text": line})
	f.bigSize = ok(t, cs, "workbench_append", args{"id": mxWB, "section": "logs", "path": "big.log", "text": line}).int(t, "size_bytes")
	if f.bigSize <= matrixCap {
		t.Fatalf("big.log is %d bytes, not above the %d-byte cap", f.bigSize, matrixCap)
	}
	f.keepID = ok(t, cs, "workbench_snapshot", args{"id": mxWB, "name": "keep"}).int(t, "snapshot_id")
	f.goneID = ok(t, cs, "workbench_snapshot", args{"id": mxWB, "name": "gone"}).int(t, "snapshot_id")
	if r := ok(t, cs, "workbench_snapshot_retire", args{"id": mxWB, "name": "gone", "reason": "matrix"}); r["retired"] != true {
		t.Fatalf("retiring gone: %v", r)
	}

	f.commitBase = args{"id": mxCommitted, "manifest": map[string]any{"run": 1}, "content_digest_uri": mxZeroDigest}
	ok(t, cs, "workbench_commit", f.commitBase)

	put(mxSource, "input", "a.txt", "a\n")
	f.feedID = ok(t, cs, "workbench_snapshot", args{"id": mxSource, "name": "feed"}).int(t, "snapshot_id")
	view, err := node.Shard.ReadView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	src, err := view.Workspace(matrixAgent, mxSource)
	if err != nil {
		t.Fatal(err)
	}
	f.stagingOp = workbench.RestoreOperationID(matrixAgent, src.Incarnation, fmt.Sprintf("snapshot:%d", f.feedID), mxStaging)
	res, err := node.Shard.Propose(t.Context(), meta.Header{}, meta.RestoreBegin{Agent: matrixAgent, OpID: f.stagingOp,
		Source: mxSource, SourceIncarnation: src.Incarnation, SnapshotID: uint64(f.feedID), Destination: mxStaging})
	if err != nil || res.Err != nil {
		t.Fatalf("beginning the staging restore: %v %v", err, res.Err)
	}
	return f
}

// mxCursor returns the next_cursor of a call that must have one.
// withBase returns a function that builds a tool's arguments as overlay(base, over).
func withBase(base args) func(over args) args {
	return func(over args) args { return overlay(base, over) }
}

func mxCursor(t *testing.T, r obj) string {
	t.Helper()
	c := r.str("next_cursor")
	if c == "" {
		t.Fatalf("no next_cursor: %v", r)
	}
	return c
}

// matrixCells is the table. Cells that write use their own workbenches (f.fresh), so the
// order they run in does not matter.
func matrixCells() []matrixCell {
	longPath := strings.Repeat("p", 4097)
	manyComponents := strings.TrimSuffix(strings.Repeat("c/", 65), "/")
	over := strings.Repeat("x", matrixCap+1)
	overB64 := base64.StdEncoding.EncodeToString([]byte(over))
	seventeen := make([]string, 17)
	for i := range seventeen {
		seventeen[i] = fmt.Sprintf("p%d", i)
	}
	sixteen := seventeen[:16]
	manyProps := map[string]any{}
	for i := range 65 {
		manyProps[fmt.Sprintf("k%02d", i)] = i
	}
	pred := func(field, op string, value any) []any {
		p := map[string]any{"field": field, "op": op}
		if value != nil {
			p["value"] = value
		}
		return []any{p}
	}
	sum := []any{map[string]any{"name": "n", "op": "count"}}
	digest64 := strings.Repeat("a", 64)

	// Values the ReadFenceChanged and Conflict cells share between their prep and check.
	var readFenceGen int64

	var cells []matrixCell
	add := func(c ...matrixCell) { cells = append(cells, c...) }
	ia := func(tool, field, name string, a args) matrixCell {
		return matrixCell{tool: tool, code: "InvalidArguments", name: name, args: a, field: field}
	}

	// workbench_create
	add(
		ia("workbench_create", "id", "id is missing", args{}),
		ia("workbench_create", "id", "id starts with a dash", args{"id": "-dash"}),
		ia("workbench_create", "id", "id holds a dot", args{"id": "a.b"}),
		ia("workbench_create", "id", "id is 129 bytes", args{"id": strings.Repeat("a", 129)}),
		ia("workbench_create", "id", "id is a number", args{"id": 42}),
		ia("workbench_create", "agent", "an agent property is not part of the schema", args{"id": "w", "agent": "other"}),
		matrixCell{tool: "workbench_create", code: "InvalidState", name: "the workbench is a restore destination still staging",
			args: args{"id": mxStaging}},
	)

	// workbench_put_file
	for _, p := range []struct{ path, why string }{
		{"../x", "a .. component"}, {"/abs", "an absolute path"}, {"a//b", "an empty component"}, {"a/./b", "a . component"},
		{`a\b`, "a backslash"}, {"a\x00b", "a NUL byte"}, {"dir/", "a trailing slash"}, {"", "an empty path"},
		{longPath, "4097 bytes"}, {manyComponents, "65 components"}, {"input/x", "the section name repeated as its first component"},
	} {
		add(ia("workbench_put_file", "path", "path with "+p.why, args{"id": mxWB, "section": "input", "path": p.path, "text": "x"}))
	}
	add(
		ia("workbench_put_file", "path", "the reserved run manifest", args{"id": mxWB, "section": "metadata", "path": "run_manifest.json", "text": "{}"}),
		ia("workbench_put_file", "path", "the reserved restore manifest", args{"id": mxWB, "section": "metadata", "path": "restore_manifest.json", "text": "{}"}),
		ia("workbench_put_file", "section", "an unknown section", args{"id": mxWB, "section": "secrets", "path": "a", "text": "x"}),
		ia("workbench_put_file", "section", "a null section", args{"id": mxWB, "section": nil, "path": "a", "text": "x"}),
		ia("workbench_put_file", "text", "both text and base64", args{"id": mxWB, "section": "input", "path": "both", "text": "x", "base64": "eA=="}),
		ia("workbench_put_file", "text", "neither text nor base64", args{"id": mxWB, "section": "input", "path": "neither"}),
		ia("workbench_put_file", "base64", "base64 that does not decode", args{"id": mxWB, "section": "input", "path": "b", "base64": "!!"}),
		ia("workbench_put_file", "replace", "replace is a string", args{"id": mxWB, "section": "input", "path": "r", "text": "x", "replace": "yes"}),
		ia("workbench_put_file", "id", "an invalid workbench id", args{"id": "bad id", "section": "input", "path": "a", "text": "x"}),
		matrixCell{tool: "workbench_put_file", code: "PayloadTooLarge", name: "text one byte above the cap",
			args:    args{"id": mxWB, "section": "input", "path": "big.txt", "text": over},
			details: map[string]any{"actual_bytes": matrixCap + 1, "max_bytes": matrixCap}},
		matrixCell{tool: "workbench_put_file", code: "PayloadTooLarge", name: "base64 decoding to one byte above the cap",
			args:    args{"id": mxWB, "section": "input", "path": "big.bin", "base64": overB64},
			details: map[string]any{"actual_bytes": matrixCap + 1, "max_bytes": matrixCap}},
		matrixCell{tool: "workbench_put_file", code: "AlreadyExists", name: "create-only over an existing file",
			args: args{"id": mxWB, "section": "input", "path": "notes.txt", "text": "again"},
			check: func(t *testing.T, f *matrixFixture, e obj) {
				if got := e.details().int(t, "current_generation"); got != f.notesGen {
					t.Errorf("details.current_generation = %d, want %d", got, f.notesGen)
				}
			}},
		matrixCell{tool: "workbench_put_file", code: "AlreadyExists", name: "create-only where a directory is",
			args: args{"id": mxWB, "section": "input", "path": "dir", "text": "x"}, details: map[string]any{"kind": "directory"}},
		matrixCell{tool: "workbench_put_file", code: "NotFound", name: "replace-only of a missing file",
			args: args{"id": mxWB, "section": "input", "path": "missing.txt", "text": "x", "replace": true}},
		matrixCell{tool: "workbench_put_file", code: "NotFound", name: "replace-only in a missing workbench",
			args: args{"id": mxMissing, "section": "input", "path": "a", "text": "x", "replace": true}},
		matrixCell{tool: "workbench_put_file", code: "NotArtifact", name: "replace-only of a directory",
			args: args{"id": mxWB, "section": "input", "path": "dir", "text": "x", "replace": true}, details: map[string]any{"kind": "directory"}},
		matrixCell{tool: "workbench_put_file", code: "NotDirectory", name: "a path below a file",
			args:    args{"id": mxWB, "section": "input", "path": "notes.txt/child", "text": "x"},
			details: map[string]any{"conflicting_path": "input/notes.txt"}},
		matrixCell{tool: "workbench_put_file", code: "Conflict", name: "concurrent replace-only writes of one file",
			run: mxConcurrentReplace, details: map[string]any{"current_generation": present{}}},
		matrixCell{tool: "workbench_put_file", code: "InvalidState", name: "a write to a restore destination still staging",
			args: args{"id": mxStaging, "section": "input", "path": "new.txt", "text": "x"}},
	)

	// workbench_append
	add(
		ia("workbench_append", "path", "the section name repeated", args{"id": mxWB, "section": "logs", "path": "logs/x", "text": "x"}),
		ia("workbench_append", "path", "the reserved restore manifest", args{"id": mxWB, "section": "metadata", "path": "restore_manifest.json", "text": "{}"}),
		ia("workbench_append", "path", "path with a .. component", args{"id": mxWB, "section": "logs", "path": "a/../b", "text": "x"}),
		ia("workbench_append", "text", "neither text nor base64", args{"id": mxWB, "section": "logs", "path": "a.log"}),
		ia("workbench_append", "text", "both text and base64", args{"id": mxWB, "section": "logs", "path": "a.log", "text": "x", "base64": "eA=="}),
		ia("workbench_append", "section", "an unknown section", args{"id": mxWB, "section": "tmp", "path": "a.log", "text": "x"}),
		ia("workbench_append", "content_type", "content_type is a number", args{"id": mxWB, "section": "logs", "path": "a.log", "text": "x", "content_type": 5}),
		ia("workbench_append", "id", "an invalid workbench id", args{"id": "_x", "section": "logs", "path": "a.log", "text": "x"}),
		matrixCell{tool: "workbench_append", code: "PayloadTooLarge", name: "text one byte above the cap",
			args:    args{"id": mxWB, "section": "logs", "path": "over.log", "text": over},
			details: map[string]any{"actual_bytes": matrixCap + 1, "max_bytes": matrixCap}},
		matrixCell{tool: "workbench_append", code: "PayloadTooLarge", name: "base64 decoding to one byte above the cap",
			args:    args{"id": mxWB, "section": "logs", "path": "over.log", "base64": overB64},
			details: map[string]any{"actual_bytes": matrixCap + 1, "max_bytes": matrixCap}},
		matrixCell{tool: "workbench_append", code: "NotArtifact", name: "appending to a directory",
			args: args{"id": mxWB, "section": "input", "path": "dir", "text": "x"}, details: map[string]any{"kind": "directory"}},
		matrixCell{tool: "workbench_append", code: "NotDirectory", name: "a path below a file",
			args:    args{"id": mxWB, "section": "input", "path": "notes.txt/x.log", "text": "x"},
			details: map[string]any{"conflicting_path": "input/notes.txt"}},
		matrixCell{tool: "workbench_append", code: "InvalidState", name: "appending in a restore destination still staging",
			args: args{"id": mxStaging, "section": "logs", "path": "a.log", "text": "x"}},
	)

	// workbench_edit
	notes := withBase(args{"id": mxWB, "section": "input", "path": "notes.txt", "old_string": "alpha", "new_string": "omega"})
	add(
		ia("workbench_edit", "old_string", "an empty old_string", notes(args{"old_string": ""})),
		ia("workbench_edit", "old_string", "old_string is missing", notes(args{"old_string": nil})),
		ia("workbench_edit", "new_string", "new_string is missing", notes(args{"new_string": nil})),
		ia("workbench_edit", "replace_all", "replace_all is a string", notes(args{"replace_all": "yes"})),
		ia("workbench_edit", "path", "the reserved run manifest", args{"id": mxWB, "section": "metadata", "path": "run_manifest.json", "old_string": "a", "new_string": "b"}),
		ia("workbench_edit", "path", "the section name repeated", notes(args{"path": "input/notes.txt"})),
		ia("workbench_edit", "path", "an empty component", notes(args{"path": "a//notes.txt"})),
		ia("workbench_edit", "section", "an unknown section", notes(args{"section": "notes"})),
		matrixCell{tool: "workbench_edit", code: "NotFound", name: "a missing file", args: notes(args{"path": "missing.txt"})},
		matrixCell{tool: "workbench_edit", code: "NotFound", name: "a missing workbench", args: notes(args{"id": mxMissing})},
		matrixCell{tool: "workbench_edit", code: "NotArtifact", name: "a directory", args: notes(args{"path": "dir"}),
			details: map[string]any{"kind": "directory"}},
		matrixCell{tool: "workbench_edit", code: "InvalidUtf8", name: "a file that is not UTF-8", args: notes(args{"path": "bin.dat", "old_string": "a"})},
		matrixCell{tool: "workbench_edit", code: "NoMatch", name: "old_string absent", args: notes(args{"old_string": "zeta"})},
		matrixCell{tool: "workbench_edit", code: "AmbiguousEdit", name: "old_string twice without replace_all", args: notes(nil),
			details: map[string]any{"matches": 2}},
		// Edit reads before it writes; the read path hides staging workbenches, and the answer
		// must still be the write's InvalidState, not NotFound (fixed in e2bf503).
		matrixCell{tool: "workbench_edit", code: "InvalidState", name: "an edit in a restore destination still staging",
			args: args{"id": mxStaging, "section": "input", "path": "a.txt", "old_string": "a", "new_string": "b"}},
		matrixCell{tool: "workbench_edit", code: "PayloadTooLarge", name: "a file larger than the cap edit loads",
			args: args{"id": mxWB, "section": "logs", "path": "big.log", "old_string": "z", "new_string": "y", "replace_all": true},
			check: func(t *testing.T, f *matrixFixture, e obj) {
				if e.details().int(t, "actual_bytes") != f.bigSize || e.details().int(t, "max_bytes") != matrixCap {
					t.Errorf("details = %v, want actual_bytes %d, max_bytes %d", e.details(), f.bigSize, matrixCap)
				}
			}},
	)

	// workbench_list
	add(
		ia("workbench_list", "limit", "limit 0", args{"id": mxWB, "limit": 0}),
		ia("workbench_list", "limit", "limit 101", args{"id": mxWB, "limit": 101}),
		ia("workbench_list", "limit", "limit as a string", args{"id": mxWB, "limit": "10"}),
		ia("workbench_list", "limit", "a fractional limit", args{"id": mxWB, "limit": 1.5}),
		ia("workbench_list", "at_snapshot", "a negative snapshot id", args{"id": mxWB, "at_snapshot": -1}),
		ia("workbench_list", "at_snapshot", "a boolean snapshot", args{"id": mxWB, "at_snapshot": true}),
		ia("workbench_list", "at_snapshot", "an empty snapshot name", args{"id": mxWB, "at_snapshot": ""}),
		ia("workbench_list", "section", "an unknown section", args{"id": mxWB, "section": "secrets"}),
		ia("workbench_list", "path", "path with a .. component", args{"id": mxWB, "section": "input", "path": "../x"}),
		ia("workbench_list", "path", "the section name repeated", args{"id": mxWB, "section": "input", "path": "input/dir"}),
		ia("workbench_list", "cursor", "a forged cursor", args{"id": mxWB, "section": "input", "cursor": "forged.cursor"}),
		ia("workbench_list", "id", "an invalid workbench id", args{"id": "a/b"}),
		matrixCell{tool: "workbench_list", code: "InvalidArguments", field: "cursor", name: "a cursor issued for another directory",
			prep: func(t *testing.T, f *matrixFixture) args {
				c := mxCursor(t, ok(t, f.cs, "workbench_list", args{"id": mxWB, "section": "input", "limit": 1}))
				return args{"id": mxWB, "section": "logs", "cursor": c}
			}},
		matrixCell{tool: "workbench_list", code: "NotFound", name: "a missing workbench", args: args{"id": mxMissing}},
		matrixCell{tool: "workbench_list", code: "NotFound", name: "a missing directory", args: args{"id": mxWB, "section": "input", "path": "nodir"}},
		matrixCell{tool: "workbench_list", code: "NotFound", name: "a restore destination still staging is invisible", args: args{"id": mxStaging}},
		matrixCell{tool: "workbench_list", code: "NotDirectory", name: "a file", args: args{"id": mxWB, "section": "input", "path": "notes.txt"}},
		matrixCell{tool: "workbench_list", code: "ReadFenceChanged", name: "a live cursor after a write",
			prep: func(t *testing.T, f *matrixFixture) args {
				id := f.fresh("list-fence")
				for i := range 3 {
					ok(t, f.cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": fmt.Sprintf("f%d", i), "text": "x"})
				}
				c := mxCursor(t, ok(t, f.cs, "workbench_list", args{"id": id, "section": "outputs", "limit": 1}))
				ok(t, f.cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "late", "text": "x"})
				return args{"id": id, "section": "outputs", "limit": 1, "cursor": c}
			}},
		matrixCell{tool: "workbench_list", code: "SnapshotNotFound", name: "an unknown snapshot name", args: args{"id": mxWB, "at_snapshot": "never"}},
		matrixCell{tool: "workbench_list", code: "SnapshotNotFound", name: "snapshot id 0", args: args{"id": mxWB, "at_snapshot": 0}},
		matrixCell{tool: "workbench_list", code: "SnapshotNotFound", name: "an unknown snapshot id", args: args{"id": mxWB, "at_snapshot": 999}},
		matrixCell{tool: "workbench_list", code: "SnapshotNotFound", name: "another workbench's snapshot",
			prep: func(t *testing.T, f *matrixFixture) args { return args{"id": mxCommitted, "at_snapshot": f.keepID} }},
		matrixCell{tool: "workbench_list", code: "SnapshotExpired", name: "a retired snapshot by name",
			args: args{"id": mxWB, "at_snapshot": "gone"}, details: map[string]any{"state": "retired"}},
	)

	// workbench_stat
	add(
		ia("workbench_stat", "at_snapshot", "a fractional snapshot id", args{"id": mxWB, "at_snapshot": 1.5}),
		ia("workbench_stat", "section", "an unknown section", args{"id": mxWB, "section": "bogus"}),
		ia("workbench_stat", "path", "an absolute path", args{"id": mxWB, "section": "input", "path": "/abs"}),
		ia("workbench_stat", "path", "the section name repeated", args{"id": mxWB, "section": "input", "path": "input/dir"}),
		ia("workbench_stat", "id", "id is a list", args{"id": []string{"a"}}),
		matrixCell{tool: "workbench_stat", code: "NotFound", name: "a missing workbench", args: args{"id": mxMissing}},
		matrixCell{tool: "workbench_stat", code: "NotFound", name: "a missing file", args: args{"id": mxWB, "section": "input", "path": "nope"}},
		matrixCell{tool: "workbench_stat", code: "NotFound", name: "a restore destination still staging is invisible", args: args{"id": mxStaging}},
		matrixCell{tool: "workbench_stat", code: "SnapshotNotFound", name: "an unknown snapshot name", args: args{"id": mxWB, "at_snapshot": "nightly"}},
		matrixCell{tool: "workbench_stat", code: "SnapshotNotFound", name: "snapshot id 0", args: args{"id": mxWB, "at_snapshot": 0}},
		matrixCell{tool: "workbench_stat", code: "SnapshotExpired", name: "a retired snapshot by id",
			prep:    func(t *testing.T, f *matrixFixture) args { return args{"id": mxWB, "at_snapshot": f.goneID} },
			details: map[string]any{"state": "retired"}},
	)

	// workbench_read
	read := withBase(args{"id": mxWB, "section": "input", "path": "notes.txt"})
	add(
		ia("workbench_read", "section", "section is missing", read(args{"section": nil})),
		ia("workbench_read", "path", "path is missing", read(args{"path": nil})),
		ia("workbench_read", "path", "a trailing slash", read(args{"path": "dir/"})),
		ia("workbench_read", "format", "an unknown format", read(args{"format": "lines"})),
		ia("workbench_read", "limit", "limit 0", read(args{"limit": 0})),
		ia("workbench_read", "limit", "limit 301", read(args{"limit": 301})),
		ia("workbench_read", "offset", "a negative offset", read(args{"offset": -1})),
		ia("workbench_read", "offset", "a bytes offset beyond the end", read(args{"format": "bytes", "offset": 100})),
		ia("workbench_read", "cursor", "both offset and cursor", read(args{"format": "bytes", "offset": 1, "cursor": "x"})),
		ia("workbench_read", "cursor", "a forged cursor", read(args{"cursor": "not.issued"})),
		ia("workbench_read", "if_none_match", "a negative if_none_match", read(args{"if_none_match": -3})),
		matrixCell{tool: "workbench_read", code: "InvalidArguments", field: "cursor", name: "a bytes cursor used for a structured read",
			prep: func(t *testing.T, f *matrixFixture) args {
				c := mxCursor(t, ok(t, f.cs, "workbench_read", args{"id": mxWB, "section": "logs", "path": "big.log", "format": "bytes", "limit": 10}))
				return args{"id": mxWB, "section": "logs", "path": "big.log", "cursor": c}
			}},
		matrixCell{tool: "workbench_read", code: "NotFound", name: "a missing file", args: read(args{"path": "missing.txt"})},
		matrixCell{tool: "workbench_read", code: "NotFound", name: "a missing workbench", args: read(args{"id": mxMissing})},
		matrixCell{tool: "workbench_read", code: "NotArtifact", name: "a directory", args: read(args{"path": "dir"}),
			details: map[string]any{"kind": "directory"}},
		matrixCell{tool: "workbench_read", code: "StructuredDecodeFailed", name: "broken JSON", args: read(args{"path": "broken.json"})},
		matrixCell{tool: "workbench_read", code: "StructuredDecodeFailed", name: "YAML holding .inf", args: read(args{"path": "inf.yaml"})},
		matrixCell{tool: "workbench_read", code: "StructuredDecodeFailed", name: "text lines that are not UTF-8", args: read(args{"path": "bin.dat"})},
		matrixCell{tool: "workbench_read", code: "ReadFenceChanged", name: "a live cursor after the file changed",
			prep: func(t *testing.T, f *matrixFixture) args {
				id := f.fresh("read-fence")
				ok(t, f.cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "l.txt", "text": "1\n2\n3\n"})
				c := mxCursor(t, ok(t, f.cs, "workbench_read", args{"id": id, "section": "logs", "path": "l.txt", "limit": 1}))
				readFenceGen = ok(t, f.cs, "workbench_append", args{"id": id, "section": "logs", "path": "l.txt", "text": "4\n"}).int(t, "generation")
				return args{"id": id, "section": "logs", "path": "l.txt", "limit": 1, "cursor": c}
			},
			check: func(t *testing.T, f *matrixFixture, e obj) {
				if got := e.details().int(t, "current_generation"); got != readFenceGen {
					t.Errorf("details.current_generation = %d, want %d", got, readFenceGen)
				}
			}},
		matrixCell{tool: "workbench_read", code: "SnapshotNotFound", name: "an unknown snapshot name", args: read(args{"at_snapshot": "never"})},
		matrixCell{tool: "workbench_read", code: "SnapshotNotFound", name: "an unknown snapshot id", args: read(args{"at_snapshot": 999})},
		matrixCell{tool: "workbench_read", code: "SnapshotExpired", name: "a retired snapshot", args: read(args{"at_snapshot": "gone"}),
			details: map[string]any{"state": "retired"}},
		matrixCell{tool: "workbench_read", code: "PayloadTooLarge", name: "a structured read of a file larger than the cap",
			args: args{"id": mxWB, "section": "logs", "path": "big.log"},
			check: func(t *testing.T, f *matrixFixture, e obj) {
				if e.details().int(t, "actual_bytes") != f.bigSize || e.details().int(t, "max_bytes") != matrixCap {
					t.Errorf("details = %v, want actual_bytes %d, max_bytes %d", e.details(), f.bigSize, matrixCap)
				}
			}},
	)

	// workbench_grep
	grep := withBase(args{"id": mxWB, "pattern": "alpha", "recursive": true})
	add(
		ia("workbench_grep", "pattern", "an empty pattern", grep(args{"pattern": ""})),
		ia("workbench_grep", "pattern", "an empty alternative around |", grep(args{"pattern": "a||b"})),
		ia("workbench_grep", "pattern", "a pattern with a newline", grep(args{"pattern": "a\nb"})),
		ia("workbench_grep", "pattern", "pattern is missing", grep(args{"pattern": nil})),
		ia("workbench_grep", "patterns", "17 patterns", grep(args{"patterns": seventeen})),
		ia("workbench_grep", "patterns", "17 distinct terms with pattern", grep(args{"patterns": sixteen})),
		ia("workbench_grep", "patterns", "an empty item in patterns", grep(args{"patterns": []string{"a", ""}})),
		ia("workbench_grep", "glob", "a glob with [", grep(args{"glob": "[a]*"})),
		ia("workbench_grep", "glob", "a glob with /", grep(args{"glob": "a/*"})),
		ia("workbench_grep", "limit", "limit 0", grep(args{"limit": 0})),
		ia("workbench_grep", "limit", "limit 301", grep(args{"limit": 301})),
		ia("workbench_grep", "recursive", "recursive is missing", grep(args{"recursive": nil})),
		ia("workbench_grep", "recursive", "recursive is a string", grep(args{"recursive": "yes"})),
		ia("workbench_grep", "cursor", "a forged cursor", grep(args{"cursor": "a.b"})),
		ia("workbench_grep", "section", "an unknown section", grep(args{"section": "everything"})),
		ia("workbench_grep", "path", "path with a .. component", grep(args{"section": "input", "path": ".."})),
		matrixCell{tool: "workbench_grep", code: "InvalidArguments", field: "cursor", name: "a cursor reused with another pattern",
			prep: func(t *testing.T, f *matrixFixture) args {
				c := mxCursor(t, ok(t, f.cs, "workbench_grep", args{"id": mxWB, "pattern": "z", "recursive": true, "limit": 1}))
				return grep(args{"pattern": "y", "cursor": c, "limit": 1})
			}},
		matrixCell{tool: "workbench_grep", code: "NotFound", name: "a missing workbench", args: grep(args{"id": mxMissing})},
		matrixCell{tool: "workbench_grep", code: "NotFound", name: "a missing path", args: grep(args{"section": "input", "path": "nodir"})},
		matrixCell{tool: "workbench_grep", code: "ReadFenceChanged", name: "a cursor after a write",
			prep: func(t *testing.T, f *matrixFixture) args {
				id := f.fresh("grep-fence")
				ok(t, f.cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "a.log", "text": "hit\nhit\nhit\n"})
				c := mxCursor(t, ok(t, f.cs, "workbench_grep", args{"id": id, "pattern": "hit", "recursive": true, "limit": 1}))
				ok(t, f.cs, "workbench_append", args{"id": id, "section": "logs", "path": "b.log", "text": "hit\n"})
				return args{"id": id, "pattern": "hit", "recursive": true, "limit": 1, "cursor": c}
			}},
	)

	// workbench_search
	add(
		ia("workbench_search", "limit", "limit 0", args{"id": mxWB, "limit": 0}),
		ia("workbench_search", "limit", "limit 11", args{"id": mxWB, "limit": 11}),
		ia("workbench_search", "id", "an invalid workbench id", args{"id": "-bad"}),
		ia("workbench_search", "predicates[0].op", "an unknown operator", args{"id": mxWB, "predicates": pred("artifact.name", "like", "x")}),
		ia("workbench_search", "predicates[0].field", "a predicate without a field", args{"id": mxWB, "predicates": []any{map[string]any{"op": "eq", "value": "x"}}}),
		ia("workbench_search", "predicates[0].value", "in with a scalar", args{"id": mxWB, "predicates": pred("artifact.size_bytes", "in", 3)}),
		ia("workbench_search", "predicates[0].value", "exists with a value", args{"id": mxWB, "predicates": pred("artifact.size_bytes", "exists", 1)}),
		ia("workbench_search", "predicates[0].value", "a string compared with a number field", args{"id": mxWB, "predicates": pred("artifact.size_bytes", "gt", "x")}),
		ia("workbench_search", "sort[0].field", "an unknown built-in sort field", args{"id": mxWB, "sort": []any{map[string]any{"field": "artifact.nope"}}}),
		ia("workbench_search", "sort[0].direction", "an unknown sort direction", args{"id": mxWB, "sort": []any{map[string]any{"field": "artifact.name", "direction": "up"}}}),
		ia("workbench_search", "cursor", "a forged cursor", args{"id": mxWB, "cursor": "x.y"}),
		ia("workbench_search", "section", "an unknown section", args{"id": mxWB, "section": "bogus"}),
		ia("workbench_search", "query", "a property outside the schema", args{"id": mxWB, "query": "x"}),
		matrixCell{tool: "workbench_search", code: "InvalidArguments", field: "cursor", name: "a cursor reused with other predicates",
			prep: func(t *testing.T, f *matrixFixture) args {
				c := mxCursor(t, ok(t, f.cs, "workbench_search", args{"id": mxWB, "limit": 1}))
				return args{"id": mxWB, "limit": 1, "cursor": c, "predicates": pred("artifact.section", "eq", "input")}
			}},
		matrixCell{tool: "workbench_search", code: "NotFound", name: "a missing workbench", args: args{"id": mxMissing}},
		matrixCell{tool: "workbench_search", code: "ReadFenceChanged", name: "a cursor after a write in scope",
			prep: func(t *testing.T, f *matrixFixture) args {
				id := f.fresh("search-fence")
				for i := range 3 {
					ok(t, f.cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": fmt.Sprintf("f%d", i), "text": "x"})
				}
				c := mxCursor(t, ok(t, f.cs, "workbench_search", args{"id": id, "limit": 1}))
				ok(t, f.cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "late", "text": "x"})
				return args{"id": id, "limit": 1, "cursor": c}
			}},
	)

	// workbench_aggregate
	add(
		ia("workbench_aggregate", "measures", "measures is missing", args{"id": mxWB}),
		ia("workbench_aggregate", "measures", "no measures", args{"id": mxWB, "measures": []any{}}),
		ia("workbench_aggregate", "measures[0].op", "an unknown measure", args{"id": mxWB, "measures": []any{map[string]any{"name": "m", "op": "median"}}}),
		ia("workbench_aggregate", "measures[0].name", "a measure without a name", args{"id": mxWB, "measures": []any{map[string]any{"op": "count"}}}),
		ia("workbench_aggregate", "measures[0].field", "sum without a field", args{"id": mxWB, "measures": []any{map[string]any{"name": "n", "op": "sum"}}}),
		ia("workbench_aggregate", "limit", "limit 0", args{"id": mxWB, "measures": sum, "limit": 0}),
		ia("workbench_aggregate", "limit", "limit 101", args{"id": mxWB, "measures": sum, "limit": 101}),
		ia("workbench_aggregate", "group_by", "group_by is a string", args{"id": mxWB, "measures": sum, "group_by": "artifact.section"}),
		ia("workbench_aggregate", "id", "an invalid workbench id", args{"id": "a b", "measures": sum}),
		matrixCell{tool: "workbench_aggregate", code: "NotFound", name: "a missing workbench", args: args{"id": mxMissing, "measures": sum}},
	)

	// workbench_catalog
	add(
		ia("workbench_catalog", "section", "an unknown section", args{"id": mxWB, "section": "bogus"}),
		ia("workbench_catalog", "id", "an invalid workbench id", args{"id": "-x"}),
		ia("workbench_catalog", "include_facets", "include_facets is a string", args{"id": mxWB, "include_facets": "yes"}),
		ia("workbench_catalog", "field_prefix", "field_prefix is a number", args{"id": mxWB, "field_prefix": 5}),
		ia("workbench_catalog", "path", "path with a .. component", args{"id": mxWB, "section": "input", "path": "../x"}),
		matrixCell{tool: "workbench_catalog", code: "NotFound", name: "a missing workbench", args: args{"id": mxMissing}},
	)

	// workbench_find
	add(
		ia("workbench_find", "limit", "limit 0", args{"limit": 0}),
		ia("workbench_find", "limit", "limit 101", args{"limit": 101}),
		ia("workbench_find", "committed", "committed is a string", args{"committed": "yes"}),
		ia("workbench_find", "cursor", "a forged cursor", args{"cursor": "x.y"}),
		ia("workbench_find", "manifest_pattern", "a pattern of 1025 bytes", args{"manifest_pattern": strings.Repeat("m", 1025)}),
		ia("workbench_find", "include_manifest", "include_manifest is a string", args{"include_manifest": "x"}),
		ia("workbench_find", "id", "an id property is not part of the schema", args{"id": mxWB}),
		matrixCell{tool: "workbench_find", code: "InvalidArguments", field: "cursor", name: "a cursor reused with another committed filter",
			prep: func(t *testing.T, f *matrixFixture) args {
				c := mxCursor(t, ok(t, f.cs, "workbench_find", args{"limit": 1}))
				return args{"limit": 1, "committed": true, "cursor": c}
			}},
	)

	// workbench_commit
	commit := withBase(args{"id": mxWB, "manifest": map[string]any{"k": "v"}, "content_digest_uri": mxZeroDigest})
	add(
		ia("workbench_commit", "content_digest_uri", "a short digest", commit(args{"content_digest_uri": "sha256:XX"})),
		ia("workbench_commit", "content_digest_uri", "upper-case hex", commit(args{"content_digest_uri": "sha256:" + strings.Repeat("A", 64)})),
		ia("workbench_commit", "content_digest_uri", "another algorithm", commit(args{"content_digest_uri": "md5:" + strings.Repeat("a", 64)})),
		ia("workbench_commit", "content_digest_uri", "content_digest_uri is missing", commit(args{"content_digest_uri": nil})),
		ia("workbench_commit", "manifest", "manifest is missing", commit(args{"manifest": nil})),
		ia("workbench_commit", "manifest", "a manifest array", commit(args{"manifest": []any{1}})),
		ia("workbench_commit", "manifest", "a manifest string", commit(args{"manifest": "{}"})),
		ia("workbench_commit", "id", "an invalid workbench id", commit(args{"id": "wb!"})),
		ia("workbench_commit", "replace", "replace is a string", commit(args{"replace": "yes"})),
		matrixCell{tool: "workbench_commit", code: "WorkbenchCommitConflict", name: "another identity without replace",
			prep: func(t *testing.T, f *matrixFixture) args {
				a := args{}
				for k, v := range f.commitBase {
					a[k] = v
				}
				a["manifest"] = map[string]any{"run": 2}
				return a
			}},
		matrixCell{tool: "workbench_commit", code: "InvalidState", name: "a commit of a restore destination still staging",
			args: commit(args{"id": mxStaging})},
	)

	// workbench_snapshot
	add(
		ia("workbench_snapshot", "ttl_days", "ttl_days 0", args{"id": mxWB, "ttl_days": 0}),
		ia("workbench_snapshot", "ttl_days", "ttl_days 91", args{"id": mxWB, "ttl_days": 91}),
		ia("workbench_snapshot", "reason", "an empty reason", args{"id": mxWB, "reason": ""}),
		ia("workbench_snapshot", "reason", "a reason of 257 characters", args{"id": mxWB, "reason": strings.Repeat("é", 257)}),
		ia("workbench_snapshot", "metadata", "metadata with 65 properties", args{"id": mxWB, "metadata": manyProps}),
		ia("workbench_snapshot", "metadata", "metadata that is an array", args{"id": mxWB, "metadata": []any{1}}),
		ia("workbench_snapshot", "name", "an empty name", args{"id": mxWB, "name": ""}),
		ia("workbench_snapshot", "id", "an invalid workbench id", args{"id": ""}),
		matrixCell{tool: "workbench_snapshot", code: "NotFound", name: "a missing workbench", args: args{"id": mxMissing}},
		matrixCell{tool: "workbench_snapshot", code: "InvalidState", name: "a restore destination still staging", args: args{"id": mxStaging}},
	)

	// workbench_snapshot_renew
	add(
		ia("workbench_snapshot_renew", "snapshot_id", "neither snapshot_id nor name", args{"id": mxWB}),
		ia("workbench_snapshot_renew", "snapshot_id", "both snapshot_id and name", args{"id": mxWB, "snapshot_id": 1, "name": "keep"}),
		ia("workbench_snapshot_renew", "snapshot_id", "a negative snapshot_id", args{"id": mxWB, "snapshot_id": -1}),
		ia("workbench_snapshot_renew", "ttl_days", "ttl_days 0", args{"id": mxWB, "name": "keep", "ttl_days": 0}),
		ia("workbench_snapshot_renew", "ttl_days", "ttl_days 91", args{"id": mxWB, "name": "keep", "ttl_days": 91}),
		ia("workbench_snapshot_renew", "id", "an invalid workbench id", args{"id": "..", "name": "keep"}),
		// Snapshots are resolved per workbench without requiring it to exist (a snapshot may
		// outlive its workbench), so a missing workbench has no such snapshot.
		matrixCell{tool: "workbench_snapshot_renew", code: "SnapshotNotFound", name: "a snapshot id of a missing workbench", args: args{"id": mxMissing, "snapshot_id": 1}},
		matrixCell{tool: "workbench_snapshot_renew", code: "SnapshotNotFound", name: "an unknown snapshot id", args: args{"id": mxWB, "snapshot_id": 999}},
		matrixCell{tool: "workbench_snapshot_renew", code: "SnapshotNotFound", name: "snapshot id 0", args: args{"id": mxWB, "snapshot_id": 0}},
		matrixCell{tool: "workbench_snapshot_renew", code: "SnapshotNotFound", name: "an unknown snapshot name", args: args{"id": mxWB, "name": "never"}},
		matrixCell{tool: "workbench_snapshot_renew", code: "SnapshotExpired", name: "a retired snapshot",
			args: args{"id": mxWB, "name": "gone"}, details: map[string]any{"state": "retired"}},
	)

	// workbench_snapshot_retire
	add(
		ia("workbench_snapshot_retire", "arguments", "neither snapshot_id nor name", args{"id": mxWB}),
		ia("workbench_snapshot_retire", "arguments", "both snapshot_id and name", args{"id": mxWB, "snapshot_id": 1, "name": "keep"}),
		ia("workbench_snapshot_retire", "id", "an empty id", args{"id": "", "name": "keep"}),
		ia("workbench_snapshot_retire", "name", "an empty name", args{"id": mxWB, "name": ""}),
		ia("workbench_snapshot_retire", "snapshot_id", "a negative snapshot_id", args{"id": mxWB, "snapshot_id": -2}),
		ia("workbench_snapshot_retire", "reason", "an empty reason", args{"id": mxWB, "name": "keep", "reason": ""}),
		ia("workbench_snapshot_retire", "reason", "a reason of 257 characters", args{"id": mxWB, "name": "keep", "reason": strings.Repeat("r", 257)}),
		matrixCell{tool: "workbench_snapshot_retire", code: "SnapshotNotFound", name: "a snapshot id of a missing workbench", args: args{"id": mxMissing, "snapshot_id": 1}},
		matrixCell{tool: "workbench_snapshot_retire", code: "SnapshotNotFound", name: "an unknown snapshot id", args: args{"id": mxWB, "snapshot_id": 999}},
		matrixCell{tool: "workbench_snapshot_retire", code: "SnapshotNotFound", name: "snapshot id 0", args: args{"id": mxWB, "snapshot_id": 0}},
		matrixCell{tool: "workbench_snapshot_retire", code: "SnapshotNotFound", name: "an unknown snapshot name", args: args{"id": mxWB, "name": "never"}},
		matrixCell{tool: "workbench_snapshot_retire", code: "ForkRetentionActive", name: "a snapshot a staging restore consumes",
			args: args{"id": mxSource, "name": "feed", "reason": "too early"}},
	)

	// workbench_snapshot_list
	add(
		ia("workbench_snapshot_list", "id", "id is missing", args{}),
		ia("workbench_snapshot_list", "id", "an invalid workbench id", args{"id": "x y"}),
		ia("workbench_snapshot_list", "name", "a property outside the schema", args{"id": mxWB, "name": "keep"}),
		matrixCell{tool: "workbench_snapshot_list", code: "NotFound", name: "a missing workbench", args: args{"id": mxMissing}},
		matrixCell{tool: "workbench_snapshot_list", code: "NotFound", name: "a restore destination still staging is invisible", args: args{"id": mxStaging}},
	)

	// workbench_restore
	restore := withBase(args{"id": mxWB, "destination_id": "restored-x", "at_snapshot": "keep"})
	add(
		ia("workbench_restore", "at_snapshot", "neither at_snapshot nor at_commit", restore(args{"at_snapshot": nil})),
		ia("workbench_restore", "at_snapshot", "both at_snapshot and at_commit", restore(args{"at_commit": digest64})),
		ia("workbench_restore", "at_snapshot", "an empty snapshot name", restore(args{"at_snapshot": ""})),
		ia("workbench_restore", "at_snapshot", "a negative snapshot id", restore(args{"at_snapshot": -1})),
		ia("workbench_restore", "at_snapshot", "a null at_snapshot", args{"id": mxWB, "destination_id": "restored-x", "at_snapshot": nil}),
		ia("workbench_restore", "destination_id", "destination_id is missing", restore(args{"destination_id": nil})),
		ia("workbench_restore", "destination_id", "an empty destination_id", restore(args{"destination_id": ""})),
		ia("workbench_restore", "destination_id", "an invalid destination_id", restore(args{"destination_id": "-bad"})),
		ia("workbench_restore", "at_commit", "a 63-character commit id", restore(args{"at_snapshot": nil, "at_commit": digest64[:63]})),
		ia("workbench_restore", "at_commit", "an upper-case commit id", restore(args{"at_snapshot": nil, "at_commit": strings.Repeat("A", 64)})),
		ia("workbench_restore", "at_commit", "a commit id that is not hex", restore(args{"at_snapshot": nil, "at_commit": strings.Repeat("g", 64)})),
		ia("workbench_restore", "id", "an empty source id", restore(args{"id": ""})),
		matrixCell{tool: "workbench_restore", code: "NotFound", name: "a missing source workbench", args: restore(args{"id": mxMissing, "at_snapshot": 1})},
		matrixCell{tool: "workbench_restore", code: "NotFound", name: "an unknown commit", args: restore(args{"at_snapshot": nil, "at_commit": digest64})},
		matrixCell{tool: "workbench_restore", code: "NotFound", name: "a source still staging is invisible", args: restore(args{"id": mxStaging, "at_snapshot": 1})},
		matrixCell{tool: "workbench_restore", code: "AlreadyExists", name: "a destination that exists", args: restore(args{"destination_id": mxCommitted})},
		matrixCell{tool: "workbench_restore", code: "SnapshotNotFound", name: "an unknown snapshot id", args: restore(args{"at_snapshot": 999})},
		matrixCell{tool: "workbench_restore", code: "SnapshotNotFound", name: "snapshot id 0", args: restore(args{"at_snapshot": 0})},
		matrixCell{tool: "workbench_restore", code: "SnapshotNotFound", name: "an unknown snapshot name", args: restore(args{"at_snapshot": "never"})},
		matrixCell{tool: "workbench_restore", code: "SnapshotExpired", name: "a retired snapshot", args: restore(args{"at_snapshot": "gone"}),
			details: map[string]any{"state": "retired"}},
		matrixCell{tool: "workbench_restore", code: "Conflict", name: "an exact retry while the restore is still staging",
			prep: func(t *testing.T, f *matrixFixture) args {
				return args{"id": mxSource, "destination_id": mxStaging, "at_snapshot": f.feedID}
			},
			check: func(t *testing.T, f *matrixFixture, e obj) {
				if got := e.details().str("operation_id"); got != f.stagingOp {
					t.Errorf("details.operation_id = %q, want %q", got, f.stagingOp)
				}
			}},
		matrixCell{tool: "workbench_restore", code: "Conflict", name: "the same restore named by snapshot name while staging",
			args: args{"id": mxSource, "destination_id": mxStaging, "at_snapshot": "feed"}, details: map[string]any{"operation_id": present{}}},
	)

	// Tools the profile does not offer.
	for _, name := range []string{"workbench_frobnicate", "workbench_history"} {
		add(matrixCell{tool: name, code: "UnknownTool", name: "a tool this profile does not offer", args: args{"id": mxWB},
			details: map[string]any{"tool": name}})
	}
	return cells
}

// mxConcurrentReplace races replace-only writes of one file from several sessions until one
// loses with Conflict (bounded), and returns that envelope.
func mxConcurrentReplace(t *testing.T, f *matrixFixture) obj {
	t.Helper()
	id := f.fresh("conflict")
	ok(t, f.cs, "workbench_put_file", args{"id": id, "section": "input", "path": "f.txt", "text": "0"})
	sessions := make([]*sdk.ClientSession, 4)
	for i := range sessions {
		sessions[i] = connectInMemory(t, f.node.Service, matrixAgent)
	}
	for round := range 100 {
		envs := make([]obj, len(sessions))
		var wg sync.WaitGroup
		for i, cs := range sessions {
			wg.Go(func() {
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_put_file",
					Arguments: args{"id": id, "section": "input", "path": "f.txt", "text": fmt.Sprint(round, i), "replace": true}})
				if err == nil && res.IsError {
					envs[i] = mxDecodeError(res)
				}
			})
		}
		wg.Wait()
		for _, e := range envs {
			if e != nil {
				if e.str("code") != "Conflict" {
					t.Fatalf("a concurrent replace failed with %v", e)
				}
				return e
			}
		}
	}
	t.Fatal("100 rounds of 4 concurrent replace-only writes produced no Conflict")
	return nil
}

// mxDecodeError decodes an error result's text with numbers as json.Number.
func mxDecodeError(res *sdk.CallToolResult) obj {
	text := res.Content[0].(*sdk.TextContent).Text
	var m obj
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return obj{"code": "undecodable: " + text}
	}
	return m
}

func TestErrorMatrix(t *testing.T) {
	f := newMatrixFixture(t)
	cells := matrixCells()

	t.Run("every pair of the grid has a cell or a documented exclusion", func(t *testing.T) {
		reached := map[[2]string]int{}
		for _, c := range cells {
			reached[[2]string{c.tool, c.code}]++
			if !slices.Contains(matrixCodes[c.tool], c.code) {
				t.Errorf("cell %s/%s (%s) is outside the grid: add the code to matrixCodes or drop the cell", c.tool, c.code, c.name)
			}
		}
		excluded := map[[2]string]string{}
		for _, x := range matrixExclusions {
			excluded[[2]string{x.tool, x.code}] = x.reason
			if reached[[2]string{x.tool, x.code}] > 0 {
				t.Errorf("%s/%s is both reached and excluded", x.tool, x.code)
			}
		}
		var tools []string
		for tool := range matrixCodes {
			tools = append(tools, tool)
		}
		slices.Sort(tools)
		for _, d := range contractToolNames() {
			if _, ok := matrixCodes[d]; !ok {
				t.Errorf("the grid has no row for %s", d)
			}
		}
		var summary strings.Builder
		for _, tool := range tools {
			fmt.Fprintf(&summary, "\n%-26s", tool)
			for _, code := range matrixCodes[tool] {
				k := [2]string{tool, code}
				switch {
				case reached[k] > 0:
					fmt.Fprintf(&summary, " %s×%d", code, reached[k])
				case excluded[k] != "":
					fmt.Fprintf(&summary, " (%s: excluded)", code)
				default:
					t.Errorf("%s/%s has neither a cell nor an exclusion", tool, code)
				}
			}
		}
		t.Logf("cells reached per tool (code×cells):%s", summary.String())
		for _, x := range matrixExclusions {
			t.Logf("excluded %s/%s: %s", x.tool, x.code, x.reason)
		}
	})

	for _, c := range cells {
		t.Run(c.tool+"/"+c.code+"/"+c.name, func(t *testing.T) {
			var e obj
			if c.run != nil {
				e = c.run(t, f)
			} else {
				a := c.args
				if c.prep != nil {
					a = c.prep(t, f)
				}
				e = fails(t, f.cs, c.tool, a, c.code)
			}
			if e.str("code") != c.code {
				t.Fatalf("code %v, want %s: %v", e["code"], c.code, e)
			}
			if e.str("message") == "" {
				t.Errorf("empty message: %v", e)
			}
			if want := matrixRetryable(c.code); e["retryable"] != want {
				t.Errorf("retryable = %v, want %v: %v", e["retryable"], want, e)
			}
			if c.code == "InvalidArguments" {
				if got := e.details().str("field"); got != c.field {
					t.Errorf("details.field = %q, want %q: %v", got, c.field, e)
				}
				if msg := e.str("message"); !strings.HasPrefix(msg, c.field+": ") {
					t.Errorf("message %q does not start with %q", msg, c.field+": ")
				}
			}
			for k, want := range c.details {
				got, ok := e.details()[k]
				switch {
				case !ok:
					t.Errorf("details.%s is missing: %v", k, e)
				case want == (present{}):
				case fmt.Sprint(got) != fmt.Sprint(want):
					t.Errorf("details.%s = %v, want %v", k, got, want)
				}
			}
			if c.check != nil {
				c.check(t, f, e)
			}
		})
	}
}

// contractToolNames are the 18 tools of docs/workbench.md, from the transcribed contract table.
func contractToolNames() []string {
	var names []string
	for n := range contractTools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestStagingRestoreErrorsThroughAConcurrentRestore reaches the staging cells of the matrix
// with the public surface alone: a restore slowed down by one-file copy batches runs in
// one session while another session observes it through snapshot_list (consumers: 1) and
// then retries it (Conflict with details.operation_id), retires its snapshot
// (ForkRetentionActive) and writes to its destination (InvalidState). A restore that ends
// before all three were answered is started again on a new snapshot and destination
// (bounded).
func TestStagingRestoreErrorsThroughAConcurrentRestore(t *testing.T) {
	node := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, RestoreBatch: 1})
	const agent = "concurrent"
	cs := connectInMemory(t, node.Service, agent)
	observer := connectInMemory(t, node.Service, agent)
	const files = 300
	for i := range files {
		ok(t, cs, "workbench_put_file", args{"id": "big", "section": "input", "path": fmt.Sprintf("d%02d/f%04d.txt", i%10, i), "text": "x"})
	}
	for attempt := 1; attempt <= 5; attempt++ {
		snap := fmt.Sprintf("s%d", attempt)
		dst := fmt.Sprintf("copy-%d", attempt)
		ok(t, cs, "workbench_snapshot", args{"id": "big", "name": snap})
		restoreArgs := args{"id": "big", "destination_id": dst, "at_snapshot": snap}
		done := make(chan obj, 1)
		go func() {
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_restore", Arguments: restoreArgs})
			if err != nil || res.IsError {
				done <- obj{"status": "failed", "error": fmt.Sprint(err, res)}
				return
			}
			done <- obj{"status": "success"}
		}()
		seen := false
		for range 10000 {
			l := ok(t, observer, "workbench_snapshot_list", args{"id": "big"})
			snaps := l.list(t, "snapshots")
			if fmt.Sprint(snaps[len(snaps)-1]["consumers"]) == "1" {
				seen = true
				break
			}
			if len(done) > 0 {
				break
			}
		}
		if !seen {
			if r := <-done; r.str("status") != "success" {
				t.Fatalf("restore: %v", r)
			}
			t.Logf("attempt %d: the restore completed before the observer saw it consume its snapshot", attempt)
			continue
		}
		retry, _ := call(t, observer, "workbench_restore", restoreArgs)
		retire, _ := call(t, observer, "workbench_snapshot_retire", args{"id": "big", "name": snap})
		write, _ := call(t, observer, "workbench_put_file", args{"id": dst, "section": "input", "path": "early.txt", "text": "x"})
		list, _ := call(t, observer, "workbench_list", args{"id": dst})
		if r := <-done; r.str("status") != "success" {
			t.Fatalf("restore: %v", r)
		}
		if retry.str("code") != "Conflict" || retire.str("code") != "ForkRetentionActive" || write.str("code") != "InvalidState" {
			t.Logf("attempt %d: the restore completed while the observer asked: retry %v, retire %v, write %v", attempt, retry["code"], retire["code"], write["code"])
			continue
		}
		if retry["retryable"] != true || retry.details().str("operation_id") == "" {
			t.Errorf("retry while staging: %v, want retryable Conflict with details.operation_id", retry)
		}
		if list.str("code") != "NotFound" {
			t.Errorf("list of a destination still staging: %v, want NotFound (staging is invisible)", list)
		}
		// Once complete, the same calls succeed: the restore replays, the snapshot retires.
		again := ok(t, observer, "workbench_restore", restoreArgs)
		if again["idempotent_replay"] != true || again.str("operation_id") != retry.details().str("operation_id") {
			t.Errorf("retry after completion: %v, want idempotent_replay with operation %s", again, retry.details().str("operation_id"))
		}
		if r := ok(t, observer, "workbench_snapshot_retire", args{"id": "big", "name": snap}); r["retired"] != true {
			t.Errorf("retire after completion: %v", r)
		}
		ok(t, observer, "workbench_put_file", args{"id": dst, "section": "input", "path": "early.txt", "text": "x"})
		return
	}
	t.Fatal("in 5 attempts no restore was observed while staging")
}

// TestPathLimitsApplyToThePathRelativeToItsSection: docs/workbench.md#common-rules: "path:
// relative to the section. Rejected: … more than 4096 bytes or 64 components". Exactly 4096
// bytes and exactly 64 components are accepted, one more of either is not (the matrix's
// put_file cells), and the message reports the length the caller sent. Regression: the
// limits were applied to section + "/" + path ("must be at most 4096 bytes, got 4102"),
// fixed in e2bf503.
func TestPathLimitsApplyToThePathRelativeToItsSection(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paths")
	for _, p := range []struct{ path, what string }{
		{strings.Repeat("p", 4096), "4096 bytes"},
		{strings.TrimSuffix(strings.Repeat("c/", 64), "/"), "64 components"},
	} {
		for _, section := range []string{"input", "metadata"} {
			r, isErr := call(t, cs, "workbench_put_file", args{"id": "w", "section": section, "path": p.path, "text": "x"})
			if isErr {
				t.Errorf("put_file in %s with a path of %s: %v: %v, want success (only more than that is rejected)", section, p.what, r["code"], r["message"])
				continue
			}
			if st := ok(t, cs, "workbench_stat", args{"id": "w", "section": section, "path": p.path}); st.str("relative_path") != p.path {
				t.Errorf("stat of the %s path: %v", p.what, st)
			}
			ok(t, cs, "workbench_read", args{"id": "w", "section": section, "path": p.path})
		}
	}
	e := invalid(t, cs, "workbench_put_file", args{"id": "w", "section": "input", "path": strings.Repeat("p", 4097), "text": "x"}, "path")
	if !strings.Contains(e.str("message"), "4097") {
		t.Errorf("message %q does not report the 4097 bytes sent", e.str("message"))
	}
}
