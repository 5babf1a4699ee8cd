package meta

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// CommandFormat is the version of the command encoding this binary writes. Decode accepts
// every format up to this one, so a newer binary applies an older log (rolling upgrades).
const CommandFormat = 1

// MaxCommandBytes bounds one encoded command. Large operations run as sequences of bounded
// commands (docs/architecture.md#the-metadata-core).
const MaxCommandBytes = 32 << 20

// MaxInlineSegmentBytes bounds the bytes one inline segment may carry, whatever the
// configured inline threshold.
const MaxInlineSegmentBytes = 64 << 10

// MaxSegmentsPerCommand bounds the segment list a command may carry.
const MaxSegmentsPerCommand = 1 << 16

// Op identifies the body type of a command.
type Op uint8

// Command operations. Numbers are part of the log format: never renumber.
const (
	OpCreateRoot      Op = 1
	OpCreateWorkspace Op = 2
	OpPut             Op = 3
	OpAppend          Op = 4
	OpDelete          Op = 5
	OpTick            Op = 6
	OpSnapshotMint    Op = 7
	OpSnapshotRenew   Op = 8
	OpSnapshotRetire  Op = 9
	OpCommit          Op = 10
	OpRestoreBegin    Op = 11
	OpRestoreCopy     Op = 12
	OpRestoreFinish   Op = 13
	OpCompact         Op = 14
	OpGCIntent        Op = 15 // gc.go
	OpGCDeleted       Op = 16 // gc.go
	OpAssignRoot      Op = 17 // placement.go
	OpSetQuota        Op = 18 // quota.go
	OpDeleteWorkspace Op = 19 // purge.go
	OpPurgeRoot       Op = 20 // purge.go
	OpSetRetention    Op = 21 // retention.go
)

// Header is what every command carries besides its body.
type Header struct {
	// TimeMs is the proposing leader's wall clock, Unix milliseconds. The FSM uses
	// max(previous command time, TimeMs).
	TimeMs int64 `cbor:"1,keyasint"`
	// RequestID, when set, makes the command idempotent within (agent root, Principal):
	// once a command with it succeeded, a replay with the same RequestHash returns the
	// stored result and a different hash is an InvalidArguments error naming field
	// "idempotency_key". Failed commands change nothing and are not remembered.
	RequestID string `cbor:"2,keyasint,omitempty"`
	// Principal is the id of the principal the command acts for (workbench/auth); "" for the
	// node's own work (workers) and for every command written before principals existed.
	// It scopes idempotency (above) and is recorded as the producer of what the command
	// writes (Producer).
	Principal   string `cbor:"3,keyasint,omitempty"`
	RequestHash Digest `cbor:"4,keyasint,omitempty"`
	// UploadFence, when non-zero, is the shard version of a view the proposer read before
	// it uploaded the blobs the command references: a publish of a blob with no reference
	// record fails with BlobDeleting when the root recorded a blob deletion after it
	// (gc.go). 0: no fence, only the delete-intent check applies.
	UploadFence uint64 `cbor:"5,keyasint,omitempty"`
	// Surface names the surface and tool the command came through ("rest/put",
	// "mcp/workbench_put_file"; "" for the node's own work and older logs). With Principal
	// it is the producer of what the command writes. An addition of format 1: a log
	// written before it decodes with "".
	Surface string `cbor:"6,keyasint,omitempty"`
}

// Producer returns who the command acts for: its principal and surface.
func (h Header) Producer() Producer { return Producer{Principal: h.Principal, Surface: h.Surface} }

// Body is one of the command bodies below.
type Body interface{ Op() Op }

// CreateRoot creates an agent root if it does not exist. Result.RootUID names it.
type CreateRoot struct {
	Agent string `cbor:"1,keyasint"`
}

// CreateWorkspace creates a workbench (and its root) if it does not exist. Result.Created
// says whether this command created it.
type CreateWorkspace struct {
	Agent string `cbor:"1,keyasint"`
	Name  string `cbor:"2,keyasint"`
}

// Condition is the precondition of a Put.
type Condition uint8

// Put conditions (docs/architecture.md#the-write-path).
const (
	// CondNone writes whatever is there (an upsert).
	CondNone Condition = 0
	// CondCreateOnly fails with AlreadyExists when the path holds a file.
	CondCreateOnly Condition = 1
	// CondIfGeneration fails with Conflict unless the path holds a file of IfGeneration.
	CondIfGeneration Condition = 2
	// CondReplaceOnly fails with NotFound unless the path holds a file (any generation).
	CondReplaceOnly Condition = 3
)

// Put publishes a new body at a path. Non-inline segments must have been uploaded before
// the command is proposed.
type Put struct {
	Agent     string `cbor:"1,keyasint"`
	Workspace string `cbor:"2,keyasint"`
	Path      string `cbor:"3,keyasint"`
	// CreateWorkspace creates a missing workbench (implicit create); without it a missing
	// workbench is NotFound.
	CreateWorkspace bool      `cbor:"4,keyasint,omitempty"`
	Cond            Condition `cbor:"5,keyasint,omitempty"`
	IfGeneration    uint64    `cbor:"6,keyasint,omitempty"`
	Size            int64     `cbor:"7,keyasint"`
	Digest          Digest    `cbor:"8,keyasint"`
	ContentType     string    `cbor:"9,keyasint"`
	Executable      bool      `cbor:"10,keyasint,omitempty"`
	Segments        []Segment `cbor:"11,keyasint"`
	HashState       []byte    `cbor:"12,keyasint,omitempty"`
	// Fields are writer-attached metadata fields, indexed for search (ValidateFields).
	Fields map[string]FieldValue `cbor:"13,keyasint,omitempty"`
	// MaxWorkbenchFiles, when positive, caps the workbench's live files: a Put that would
	// create a file (the path holds no live file) in a workbench that already holds this
	// many or more is refused with ResourceExhausted, quota QuotaFilesPerWorkbench; a Put
	// that replaces a live file is never refused by it. The proposer's configuration (the
	// OpenWOP facade's maxFiles), not an admin's quota: the check and the write are one
	// command, so creates proposed through any number of nodes cannot pass one count.
	// Negative is InvalidArguments. Cluster version WorkbenchFilesVersion.
	MaxWorkbenchFiles int64 `cbor:"14,keyasint,omitempty"`
}

// Append adds bytes at the end of a file, creating it when missing (ExpectGeneration 0).
// The command carries only the new segments and the resumed hash (O(delta)).
type Append struct {
	Agent           string `cbor:"1,keyasint"`
	Workspace       string `cbor:"2,keyasint"`
	Path            string `cbor:"3,keyasint"`
	CreateWorkspace bool   `cbor:"4,keyasint,omitempty"`
	// ExpectGeneration is the generation the appender read; 0 means the file must be
	// absent (the append creates it). A mismatch is Conflict with the current generation.
	ExpectGeneration uint64    `cbor:"5,keyasint,omitempty"`
	Segments         []Segment `cbor:"6,keyasint"`
	AppendedBytes    int64     `cbor:"7,keyasint"`
	// NewSize, NewDigest and NewHashState describe the whole body after the append.
	NewSize      int64  `cbor:"8,keyasint"`
	NewDigest    Digest `cbor:"9,keyasint"`
	NewHashState []byte `cbor:"10,keyasint,omitempty"`
	// ContentType and Executable apply when the append creates the file.
	ContentType string `cbor:"11,keyasint,omitempty"`
	Executable  bool   `cbor:"12,keyasint,omitempty"`
	// InlineMaxBytes lets the FSM merge a new inline segment into a trailing inline
	// segment while the merged one stays within this many bytes.
	InlineMaxBytes int64 `cbor:"13,keyasint,omitempty"`
}

// Delete removes a file. IfGeneration 0 means unconditional.
type Delete struct {
	Agent        string `cbor:"1,keyasint"`
	Workspace    string `cbor:"2,keyasint"`
	Path         string `cbor:"3,keyasint"`
	IfGeneration uint64 `cbor:"4,keyasint,omitempty"`
}

// Tick advances command time on an idle shard so that retention and leases still expire.
type Tick struct{}

// FileBody describes a body the command publishes (a manifest written by commit or
// restore). Non-inline segments must have been uploaded first.
type FileBody struct {
	Size        int64     `cbor:"1,keyasint"`
	Digest      Digest    `cbor:"2,keyasint"`
	ContentType string    `cbor:"3,keyasint"`
	Segments    []Segment `cbor:"4,keyasint"`
	HashState   []byte    `cbor:"5,keyasint,omitempty"`
}

// SnapshotMint mints a leased snapshot of a visible workbench at the command's shard
// version. Result.Snapshot is the new record.
type SnapshotMint struct {
	Agent     string `cbor:"1,keyasint"`
	Workspace string `cbor:"2,keyasint"`
	Name      string `cbor:"3,keyasint,omitempty"`
	TTLDays   int    `cbor:"4,keyasint"` // 1..MaxSnapshotTTLDays
	Reason    string `cbor:"5,keyasint,omitempty"`
	// Metadata is the annotation object as canonical JSON (at most MaxSnapshotMetadataBytes).
	Metadata []byte `cbor:"6,keyasint,omitempty"`
	// MaxHeld, when positive, is the most snapshots of the workbench's incarnation that may
	// hold history (alive, or expired and not yet reaped) once this one is minted: the
	// proposer's configured cap, carried in the command so that every replica decides
	// alike. 0 (every command before the cap existed) means no cap.
	MaxHeld int `cbor:"7,keyasint,omitempty"`
	// Pool is the snapshot's pool: MaxHeld counts only the held snapshots of the same pool,
	// so the runs of OpenWOP (SnapshotPoolRuns) never use up the workbench's own snapshots
	// (issue 25, finding 13). 0 (every command before pools existed) is the workbench's.
	Pool SnapshotPool `cbor:"8,keyasint,omitempty"`
}

// SnapshotPool names the cap a snapshot counts against (SnapshotMint.MaxHeld).
type SnapshotPool uint8

const (
	// SnapshotPoolWorkbench: snapshots the workbench tools (REST, MCP, CLI) take.
	SnapshotPoolWorkbench SnapshotPool = 0
	// SnapshotPoolRuns: the snapshots of OpenWOP runs (api/openwop/runs.go).
	SnapshotPoolRuns SnapshotPool = 1
)

// quota is the name of a pool's cap as a ResourceExhausted quota answer reports it.
func (p SnapshotPool) quota() string {
	if p == SnapshotPoolRuns {
		return QuotaRunSnapshotsPerWorkbench
	}
	return QuotaSnapshotsPerWorkbench
}

// SnapshotRenew extends a snapshot's lease to command time + TTLDays (never shortens it).
// Exactly one of ID and Name selects the snapshot.
type SnapshotRenew struct {
	Agent     string `cbor:"1,keyasint"`
	Workspace string `cbor:"2,keyasint"`
	ID        uint64 `cbor:"3,keyasint,omitempty"`
	Name      string `cbor:"4,keyasint,omitempty"`
	TTLDays   int    `cbor:"5,keyasint"`
}

// SnapshotRetire ends a snapshot at once. Exactly one of ID and Name selects it.
// Result.Retired is true for the first success only.
type SnapshotRetire struct {
	Agent     string `cbor:"1,keyasint"`
	Workspace string `cbor:"2,keyasint"`
	ID        uint64 `cbor:"3,keyasint,omitempty"`
	Name      string `cbor:"4,keyasint,omitempty"`
	Reason    string `cbor:"5,keyasint,omitempty"`
}

// Commit seals the workbench's tree: it writes metadata/run_manifest.json (Envelope),
// records the commit under Identity and makes it the head, in one command. The caller
// computed TreeDigestURI from the workbench at revision ExpectRevision; a workbench that
// changed since is Conflict (retryable: recompute and retry).
type Commit struct {
	Agent           string `cbor:"1,keyasint"`
	Workspace       string `cbor:"2,keyasint"`
	CreateWorkspace bool   `cbor:"3,keyasint,omitempty"`
	// ExpectRevision is the workbench revision the tree was computed at (0: absent).
	ExpectRevision uint64 `cbor:"4,keyasint"`
	// ExpectHead is the head identity the caller observed; with Replace a different head
	// is WorkbenchCommitConflict.
	ExpectHead        string   `cbor:"5,keyasint,omitempty"`
	Replace           bool     `cbor:"6,keyasint,omitempty"`
	Identity          string   `cbor:"7,keyasint"`
	ContentDigestURI  string   `cbor:"8,keyasint"`
	ManifestDigestURI string   `cbor:"9,keyasint"`
	TreeDigestURI     string   `cbor:"10,keyasint"`
	Envelope          FileBody `cbor:"11,keyasint"`
}

// RestoreBegin starts restore operation OpID: it creates Destination in the staging state
// and pins the source tree at the snapshot's or commit's version. Exactly one of
// SnapshotID and CommitIdentity is set.
type RestoreBegin struct {
	Agent             string `cbor:"1,keyasint"`
	OpID              string `cbor:"2,keyasint"`
	Source            string `cbor:"3,keyasint"`
	SourceIncarnation uint64 `cbor:"4,keyasint"`
	SnapshotID        uint64 `cbor:"5,keyasint,omitempty"`
	CommitIdentity    string `cbor:"6,keyasint,omitempty"`
	Destination       string `cbor:"7,keyasint"`
	// Again lets a completed operation OpID whose destination is gone (the workbench it
	// made was deleted, or another of the name replaced it) begin again instead of
	// answering its terminal replay; while that destination lives, the begin replays as
	// without it. Cluster version RestoreAgainVersion (a replica of version 6 would replay).
	Again bool `cbor:"8,keyasint,omitempty"`
}

// RestoreCopy stages up to Limit more source files into the destination, continuing after
// the operation's recorded position, which must equal After (a late or duplicate proposal
// is a Conflict and changes nothing).
type RestoreCopy struct {
	Agent string `cbor:"1,keyasint"`
	OpID  string `cbor:"2,keyasint"`
	After string `cbor:"3,keyasint,omitempty"`
	Limit int    `cbor:"4,keyasint"`
}

// RestoreFinish publishes a fully staged destination: it writes
// metadata/restore_manifest.json, commits the destination (Envelope at
// metadata/run_manifest.json) and makes it visible, in one command.
type RestoreFinish struct {
	Agent             string   `cbor:"1,keyasint"`
	OpID              string   `cbor:"2,keyasint"`
	Manifest          FileBody `cbor:"3,keyasint"`
	Identity          string   `cbor:"4,keyasint"`
	ContentDigestURI  string   `cbor:"5,keyasint"`
	ManifestDigestURI string   `cbor:"6,keyasint"`
	TreeDigestURI     string   `cbor:"7,keyasint"`
	Envelope          FileBody `cbor:"8,keyasint"`
}

func (SnapshotMint) Op() Op   { return OpSnapshotMint }
func (SnapshotRenew) Op() Op  { return OpSnapshotRenew }
func (SnapshotRetire) Op() Op { return OpSnapshotRetire }
func (Commit) Op() Op         { return OpCommit }
func (RestoreBegin) Op() Op   { return OpRestoreBegin }
func (RestoreCopy) Op() Op    { return OpRestoreCopy }
func (RestoreFinish) Op() Op  { return OpRestoreFinish }

func (CreateRoot) Op() Op      { return OpCreateRoot }
func (CreateWorkspace) Op() Op { return OpCreateWorkspace }
func (Put) Op() Op             { return OpPut }
func (Append) Op() Op          { return OpAppend }
func (Delete) Op() Op          { return OpDelete }
func (Tick) Op() Op            { return OpTick }

// Result is the deterministic answer to a command. It is stored verbatim in dedupe records.
type Result struct {
	Err *Error `cbor:"1,keyasint,omitempty"`
	// Version is the shard version (Raft index) of the command that produced this result.
	Version uint64 `cbor:"2,keyasint,omitempty"`
	// Generation is the path's generation after a Put or Append, the version of a Delete.
	Generation  uint64 `cbor:"3,keyasint,omitempty"`
	Created     bool   `cbor:"4,keyasint,omitempty"`
	Size        int64  `cbor:"5,keyasint,omitempty"`
	Digest      Digest `cbor:"6,keyasint,omitempty"`
	ContentType string `cbor:"7,keyasint,omitempty"`
	Executable  bool   `cbor:"8,keyasint,omitempty"`
	RootUID     string `cbor:"9,keyasint,omitempty"`
	// Replayed is set when the answer came from a dedupe record (never stored as true), or
	// when a commit or restore answered an exact retry with its original result.
	Replayed bool `cbor:"10,keyasint,omitempty"`
	// Snapshot is the snapshot a mint, renew or retire is about.
	Snapshot *WorkbenchSnapshot `cbor:"11,keyasint,omitempty"`
	// Retired is true for the first successful retire only.
	Retired bool `cbor:"12,keyasint,omitempty"`
	// Renewed is true when a renew moved the lease later (a renew never shortens it).
	Renewed bool `cbor:"16,keyasint,omitempty"`
	// Commit is the commit a Commit or RestoreFinish sealed (or replayed).
	Commit *CommitRecord `cbor:"13,keyasint,omitempty"`
	// Restore is the restore operation record after the command.
	Restore *RestoreOp `cbor:"14,keyasint,omitempty"`
	// GC answers GCIntent and GCDeleted (gc.go).
	GC *GCResult `cbor:"15,keyasint,omitempty"`
	// Quota and Usage answer SetQuota (quota.go).
	Quota *Quota `cbor:"17,keyasint,omitempty"`
	Usage *Usage `cbor:"18,keyasint,omitempty"`
	// Deleted counts the workbenches a DeleteWorkspace or PurgeRoot deleted; More says a
	// PurgeRoot left workbenches for the next one (purge.go).
	Deleted int64 `cbor:"19,keyasint,omitempty"`
	More    bool  `cbor:"20,keyasint,omitempty"`
	// Ordinal is the path's version number after a Put, Append or Delete (the new
	// element's Ordinal, records.go): what OpenWOP host.workspace calls its version.
	Ordinal uint64 `cbor:"21,keyasint,omitempty"`
	// Retention answers SetRetention: the history retention that applies to the root
	// afterwards; RetentionDefault says it is the node default (retention.go).
	Retention        *Retention `cbor:"22,keyasint,omitempty"`
	RetentionDefault bool       `cbor:"23,keyasint,omitempty"`
	// Proposal and Judgment answer ProposalCreate and ProposalDecide; Superseded names the
	// proposal a create superseded (proposal.go).
	Proposal   *Proposal `cbor:"24,keyasint,omitempty"`
	Judgment   *Judgment `cbor:"25,keyasint,omitempty"`
	Superseded string    `cbor:"26,keyasint,omitempty"`
	// Move is the move record after a move step (move.go); nil once the record went.
	Move *MoveRecord `cbor:"27,keyasint,omitempty"`
}

type envelope struct {
	Format uint16          `cbor:"1,keyasint"`
	Op     Op              `cbor:"2,keyasint"`
	Header Header          `cbor:"3,keyasint"`
	Body   cbor.RawMessage `cbor:"4,keyasint"`
}

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	encMode, err = cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	decMode = commandDecMode(16)
}

// commandDecMode is the decoding of commands, nesting at most maxNested levels: unknown
// fields of a newer minor format are ignored; duplicate keys are corruption.
func commandDecMode(maxNested int) cbor.DecMode {
	m, err := cbor.DecOptions{
		MaxNestedLevels:  maxNested,
		MaxArrayElements: MaxSegmentsPerCommand + 1,
		MaxMapPairs:      4096,
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}

// EncodeCommand encodes a command in the current format, deterministically: equal commands
// encode to equal bytes, those encMode writes for the envelope (appendCommand).
func EncodeCommand(h Header, b Body) ([]byte, error) {
	out, err := appendCommand(make([]byte, 0, commandSizeHint(&h, b)), &h, b)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", b, err)
	}
	if len(out) > MaxCommandBytes {
		return nil, invalidArg("command", "encodes to %d bytes, more than the %d-byte limit", len(out), MaxCommandBytes)
	}
	return out, nil
}

// DecodeCommand decodes a command of any supported format. It never panics; bad input is
// an InvalidArguments *Error naming field "command". A put, append or delete in the shape
// EncodeCommand writes is decoded by hand (decodeHotCommand, command_decode.go); every
// other input by decMode, to the same values and errors.
func DecodeCommand(data []byte) (Header, Body, error) {
	if len(data) > MaxCommandBytes {
		return Header{}, nil, invalidArg("command", "is %d bytes, more than the %d-byte limit", len(data), MaxCommandBytes)
	}
	if h, b, ok := decodeHotCommand(data); ok {
		return h, b, nil
	}
	return decodeCommandReflect(data)
}

// decodeCommandReflect is DecodeCommand through decMode alone, for a command of length at
// most MaxCommandBytes.
func decodeCommandReflect(data []byte) (Header, Body, error) {
	var env envelope
	if err := decMode.Unmarshal(data, &env); err != nil {
		return Header{}, nil, invalidArg("command", "does not decode: %v", err)
	}
	if env.Format == 0 || env.Format > CommandFormat {
		return Header{}, nil, invalidArg("command", "format %d is not supported (this binary reads 1..%d)", env.Format, CommandFormat)
	}
	d := opTable[env.Op]
	if d == nil {
		return Header{}, nil, invalidArg("command", "unknown op %d", env.Op)
	}
	b, err := d.decode(env.Body)
	if err != nil {
		return Header{}, nil, invalidArg("command", "%s body does not decode: %v", opName(env.Op), err)
	}
	return env.Header, b, nil
}
