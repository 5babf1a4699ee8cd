package meta

// Digest is a SHA-256 digest: of a whole body (Entry.Digest) or of a segment's
// uncompressed bytes (Segment.Digest).
type Digest [32]byte

// Blake3 is a BLAKE3 digest (256 bits) of a segment's uncompressed bytes
// (Segment.Blake3); the zero value means none was recorded.
type Blake3 [32]byte

// Producer is who wrote a revision or made a record: the id of the principal the command
// acted for and the surface and tool it came through (Header.Principal, Header.Surface).
// The zero Producer is "unknown": data written before Cairn recorded producers, or the
// node's own work. The FSM copies it from the command, never from anything else, so every
// replica records the same producer.
type Producer struct {
	Principal string `cbor:"1,keyasint,omitempty"`
	Surface   string `cbor:"2,keyasint,omitempty"`
}

// IsZero reports whether p is unknown.
func (p Producer) IsZero() bool { return p == Producer{} }

// String is the producer as one line, as workbench_stat's card.producer and REST's
// Cairn-Producer header show it: "" when unknown, the principal id alone when the surface
// is unknown, "via <surface>" for the node's own work through a surface, else
// "<principal> via <surface>" ("alice via rest/put").
func (p Producer) String() string {
	switch {
	case p.Surface == "":
		return p.Principal
	case p.Principal == "":
		return "via " + p.Surface
	}
	return p.Principal + " via " + p.Surface
}

// appendString appends p.String().
func (p Producer) appendString(b []byte) []byte {
	switch {
	case p.Surface == "":
		return append(b, p.Principal...)
	case p.Principal == "":
		return append(append(b, "via "...), p.Surface...)
	}
	return append(append(append(b, p.Principal...), " via "...), p.Surface...)
}

// Root is an agent root: the tenant boundary. It is created by its first write.
type Root struct {
	Agent string `cbor:"1,keyasint"`
	// UID names the root in blob keys ("r" + a decimal counter); never reused.
	UID            string `cbor:"2,keyasint"`
	CreatedVersion uint64 `cbor:"3,keyasint"`
	// LastSnapshotID numbers the root's snapshots from 1.
	LastSnapshotID uint64 `cbor:"4,keyasint,omitempty"`
	// BlobsDeletedVersion is the shard version of the last GCDeleted that removed a blob
	// record of this root (0 = none): a fenced publish uploaded before it must upload again
	// (gc.go).
	BlobsDeletedVersion uint64 `cbor:"5,keyasint,omitempty"`
}

// WorkspaceState is the lifecycle state of a workbench incarnation.
type WorkspaceState uint8

// Workbench states. Staging is used by restore (a later issue): staged workbenches are
// invisible to every read.
const (
	WorkspaceVisible WorkspaceState = 0
	WorkspaceStaging WorkspaceState = 1
)

// Workspace is WorkspaceCurrent: (root, workbench name) → incarnation and state.
type Workspace struct {
	Agent string `cbor:"1,keyasint"`
	Name  string `cbor:"2,keyasint"`
	// Incarnation is never reused: metadata rows key on it, not on the name.
	Incarnation uint64         `cbor:"3,keyasint"`
	State       WorkspaceState `cbor:"4,keyasint"`
	// Revision is the shard version of the last command that changed this workbench.
	Revision       uint64 `cbor:"5,keyasint"`
	CreatedVersion uint64 `cbor:"6,keyasint"`
	CreatedAtMs    int64  `cbor:"7,keyasint"`
	// Files and Bytes count the live files and their bytes.
	Files int64 `cbor:"8,keyasint"`
	Bytes int64 `cbor:"9,keyasint"`
	// HeadIdentity is the commit identity of the workbench's head commit ("" = none);
	// HeadVersion the shard version that sealed it.
	HeadIdentity string `cbor:"10,keyasint,omitempty"`
	HeadVersion  uint64 `cbor:"11,keyasint,omitempty"`
	// RestoreOp names the restore operation filling a staging workbench.
	RestoreOp string `cbor:"12,keyasint,omitempty"`
	// Producer wrote the workbench's current Revision (zero: unknown, older logs).
	Producer Producer `cbor:"13,keyasint,omitempty"`
}

// Segment is one contiguous byte range of a body: either a blob in the object store (named
// by the SHA-256 of its uncompressed bytes) or, for tiny segments, bytes kept inline in the
// metadata record (Inline != nil, no object-store request).
type Segment struct {
	Digest Digest `cbor:"1,keyasint"`
	Size   int64  `cbor:"2,keyasint"`
	Inline []byte `cbor:"3,keyasint,omitempty"`
	// Chunking is the chunk format (blob.ChunkFormat) of the content-defined chunking that
	// cut this segment out of a body longer than one segment: 0 is Rabin, the format of
	// every segment recorded before the field existed (it is absent from their
	// encoding). A whole-body, inline or compacted segment was cut by no chunker and
	// carries 0. Readers ignore it (a segment is a byte range whatever cut it); it says
	// which cuts a re-upload of the same bytes dedupes against, so one file's list may mix
	// formats (a file appended to after a format change). The FSM stores it as it comes
	// and never judges it: which formats exist is the writer's knowledge, and replicas of
	// different releases must apply the same log alike.
	Chunking uint8 `cbor:"4,keyasint,omitempty"`
	// Blake3 is the BLAKE3 of the segment's uncompressed bytes, which the write path took
	// in the same pass over them as Digest (blob.Hash). A read verifies an object-store
	// segment against it instead of recomputing Digest, at under half the CPU
	// (docs/architecture.md#the-read-path, blob.Blake3). Zero, and absent from the
	// encoding (omitzero), in every segment recorded before the field existed and in
	// inline segments: those are verified by Digest, as before. The compactor records it
	// for the blob it merges a run into (shard/worker/compact.go). Copies,
	// composes, restores and proposals carry it with the segment, so no byte is hashed
	// again. Like Chunking, the FSM stores it as it comes and never judges it: a replica
	// of a release without the field decodes the segment without it (unknown keys are
	// ignored) and applies the command to the same outcome, only its reads verifying by
	// Digest, so no cluster version gates it (meta/clusterversion.go).
	Blake3 Blake3 `cbor:"5,keyasint,omitzero"`
}

// IsInline reports whether the segment's bytes live in the metadata record.
func (s Segment) IsInline() bool { return s.Inline != nil }

// Entry is a revision: an immutable file body and its attributes.
type Entry struct {
	Generation  uint64    `cbor:"1,keyasint"`
	Size        int64     `cbor:"2,keyasint"`
	Digest      Digest    `cbor:"3,keyasint"`
	ContentType string    `cbor:"4,keyasint"`
	Executable  bool      `cbor:"5,keyasint,omitempty"`
	Segments    []Segment `cbor:"6,keyasint"`
	// HashState is the serialized SHA-256 state after the whole body, prefixed with a
	// format version byte, so an append resumes the hash over the new bytes only.
	HashState    []byte `cbor:"7,keyasint,omitempty"`
	ModifiedAtMs int64  `cbor:"8,keyasint"`
	// Fields are the writer-attached, indexed metadata fields (names lower case).
	Fields map[string]FieldValue `cbor:"9,keyasint,omitempty"`
	// ListID names the segment list this revision covers a prefix of (docs/architecture.md#the-write-path): an
	// append keeps the list of the revision it extends and adds only its new segments, so
	// versions of one file share one append-only list; a put, a restore copy or a
	// compaction starts a new list. 0 (older logs): a list of its own.
	ListID uint64 `cbor:"10,keyasint,omitempty"`
	// Producer wrote this revision (zero: unknown, older logs). A compaction keeps it (same
	// revision); a restore copy is a new revision, written by the restore's producer.
	Producer Producer `cbor:"11,keyasint,omitempty"`
	// Proposal is the id of the proposal whose acceptance published this revision ("" =
	// a plain write; proposal.go). A compaction keeps it (same revision).
	Proposal string `cbor:"12,keyasint,omitempty"`
}

// version is one element of a path's MVCC chain: the entry the path had from shard
// version Version on, or a tombstone.
type version struct {
	Version uint64 `cbor:"1,keyasint"`
	Entry   *Entry `cbor:"2,keyasint,omitempty"` // nil = tombstone
	// AtMs is the command time of the command that made this element.
	AtMs int64 `cbor:"3,keyasint"`
	// Ordinal numbers the element within the path's current life (OpenWOP host.workspace's
	// per-path "version"): 1 for the first body after the path was created or deleted,
	// the previous element's Ordinal + 1 for every later body and for the tombstone that
	// ends the life. 0: written before the field existed (then the next element counts on
	// from 0). Unlike the generation it restarts, so it never serves as a conditional-write
	// token; the generation does.
	Ordinal uint64 `cbor:"4,keyasint,omitempty"`
	// DeletedBy is the producer of a tombstone (a body's producer is Entry.Producer); nil
	// for a body, for the node's own work and for tombstones written before it existed. A
	// pointer, so that a body's element stays small (chains are copied per write).
	DeletedBy *Producer `cbor:"5,keyasint,omitempty"`
}

// nextOrdinal is the Ordinal of an element that follows chain's head: a body or
// tombstone after a body counts on, a body after a tombstone (or on a path with no chain)
// starts a new life at 1.
func nextOrdinal(chain []version, tombstone bool) uint64 {
	if len(chain) == 0 || chain[0].Entry == nil {
		if tombstone {
			return 0 // unreachable: a delete needs a live body
		}
		return 1
	}
	return chain[0].Ordinal + 1
}

// pathRecord is PathCurrent plus history: the version chain of one path, newest first.
// A pathRecord reachable from a View is never mutated; writers build a new one.
type pathRecord struct {
	Chain []version `cbor:"1,keyasint"`
}

func (r *pathRecord) live() *Entry {
	if r == nil || len(r.Chain) == 0 {
		return nil
	}
	return r.Chain[0].Entry
}

// at returns the entry visible at shard version v (nil: absent or deleted) and whether any
// element covers v at all.
func (r *pathRecord) at(v uint64) *Entry {
	if r == nil {
		return nil
	}
	for _, el := range r.Chain {
		if el.Version <= v {
			return el.Entry
		}
	}
	return nil
}

// dirRecord counts what lives below an implicit directory of the live tree.
type dirRecord struct {
	Files    int64 `cbor:"1,keyasint"` // live files anywhere below
	Children int64 `cbor:"2,keyasint"` // live direct children (files and non-empty directories)
	Bytes    int64 `cbor:"3,keyasint"` // bytes of the live files below
}

// blobRef is the reference count of one blob of one root. Every chain element that holds
// an entry holds one reference per non-inline segment occurrence.
type blobRef struct {
	Count int64 `cbor:"1,keyasint"`
	// ZeroSinceMs is the command time when Count last reached zero (0 while referenced).
	ZeroSinceMs int64 `cbor:"2,keyasint,omitempty"`
	// Intent is set while the garbage collector deletes the blob (docs/architecture.md#blob-storage-and-garbage-collection): a publish
	// that references it fails (retryably) until the deletion is recorded.
	Intent bool `cbor:"3,keyasint,omitempty"`
	// IntentVersion and IntentAtMs are the shard version and command time of the GCIntent
	// that set Intent; GCDeleted must name the version (gc.go).
	IntentVersion uint64 `cbor:"4,keyasint,omitempty"`
	IntentAtMs    int64  `cbor:"5,keyasint,omitempty"`
}

// dedupeRecord remembers the answer to one request id.
type dedupeRecord struct {
	RequestHash Digest `cbor:"1,keyasint"`
	Result      Result `cbor:"2,keyasint"`
	ExpiresAtMs int64  `cbor:"3,keyasint"`
	Seq         uint64 `cbor:"4,keyasint"`
}

// SnapshotState is the lifecycle state of a workbench snapshot (docs/workbench.md, workbench_snapshot).
type SnapshotState string

// Snapshot states.
const (
	SnapshotAlive   SnapshotState = "alive"
	SnapshotExpired SnapshotState = "expired"
	SnapshotRetired SnapshotState = "retired"
	SnapshotReaped  SnapshotState = "reaped"
)

// WorkbenchSnapshot is a leased MVCC read point of one workbench incarnation: reads at it
// see the workbench as of ReadVersion. Records are kept after retirement and reaping so a
// name keeps resolving to the newest snapshot minted with it.
type WorkbenchSnapshot struct {
	ID          uint64 `cbor:"1,keyasint"` // per agent root, from 1
	Agent       string `cbor:"2,keyasint"`
	Workspace   string `cbor:"3,keyasint"`
	Incarnation uint64 `cbor:"4,keyasint"`
	ReadVersion uint64 `cbor:"5,keyasint"`
	Name        string `cbor:"6,keyasint,omitempty"`
	Reason      string `cbor:"7,keyasint,omitempty"`
	// Metadata is the annotation object as canonical JSON bytes (nil = none).
	Metadata       []byte `cbor:"8,keyasint,omitempty"`
	TTLDays        int    `cbor:"9,keyasint"`
	CreatedAtMs    int64  `cbor:"10,keyasint"`
	LeaseExpiresMs int64  `cbor:"11,keyasint"`
	RenewedAtMs    int64  `cbor:"12,keyasint,omitempty"`
	RetiredAtMs    int64  `cbor:"13,keyasint,omitempty"` // 0 = not retired
	RetireReason   string `cbor:"14,keyasint,omitempty"`
	ReapedAtMs     int64  `cbor:"15,keyasint,omitempty"` // 0 = not reaped
	// Consumers counts restores in progress that read from this snapshot.
	Consumers int64 `cbor:"16,keyasint,omitempty"`
	// Producer minted the snapshot; RetiredBy retired it (zero: unknown, or not retired).
	Producer  Producer `cbor:"17,keyasint,omitempty"`
	RetiredBy Producer `cbor:"18,keyasint,omitempty"`
	// Pool is the cap the snapshot counts against (SnapshotMint.Pool).
	Pool SnapshotPool `cbor:"19,keyasint,omitempty"`
}

// StateAt returns the snapshot's lifecycle state at command time nowMs.
func (s *WorkbenchSnapshot) StateAt(nowMs int64) SnapshotState {
	switch {
	case s.RetiredAtMs != 0:
		return SnapshotRetired
	case s.ReapedAtMs != 0:
		return SnapshotReaped
	case nowMs >= s.LeaseExpiresMs:
		return SnapshotExpired
	}
	return SnapshotAlive
}

// holdsHistory reports whether the snapshot still pins its read version.
func (s *WorkbenchSnapshot) holdsHistory() bool { return s.RetiredAtMs == 0 && s.ReapedAtMs == 0 }

// CommitRecord is a sealed commit of a workbench (docs/workbench.md, workbench_commit): permanent, it
// pins the workbench's tree as of Version.
type CommitRecord struct {
	Identity    string `cbor:"1,keyasint"` // hex commit identity
	Workspace   string `cbor:"2,keyasint"`
	Incarnation uint64 `cbor:"3,keyasint"`
	// Version is the shard version of the command that sealed the commit; the sealed
	// members are the workbench's files at Version, except the reserved manifests.
	Version uint64 `cbor:"4,keyasint"`
	// EnvelopeSize and EnvelopeDigest describe the bytes stored at
	// metadata/run_manifest.json (whose generation is Version).
	EnvelopeSize      int64  `cbor:"5,keyasint"`
	EnvelopeDigest    Digest `cbor:"6,keyasint"`
	ContentDigestURI  string `cbor:"7,keyasint"`
	ManifestDigestURI string `cbor:"8,keyasint"`
	TreeDigestURI     string `cbor:"9,keyasint"`
	Replace           bool   `cbor:"10,keyasint,omitempty"`
	CommittedAtMs     int64  `cbor:"11,keyasint"`
	// Producer sealed the commit (a restore's commit: the restore's producer).
	Producer Producer `cbor:"12,keyasint,omitempty"`
}

// RestoreState is the state of a restore operation.
type RestoreState uint8

// Restore states.
const (
	RestoreCopying  RestoreState = 1
	RestoreComplete RestoreState = 2
)

// RestoreOp is the operation record of a restore: it drives the bounded commands that
// stage a destination workbench from a snapshot or commit, and answers retries.
type RestoreOp struct {
	ID                string       `cbor:"1,keyasint"` // deterministic operation id (hex)
	Agent             string       `cbor:"2,keyasint"`
	Source            string       `cbor:"3,keyasint"`
	SourceIncarnation uint64       `cbor:"4,keyasint"`
	ReadVersion       uint64       `cbor:"5,keyasint"`
	SnapshotID        uint64       `cbor:"6,keyasint,omitempty"`
	CommitIdentity    string       `cbor:"7,keyasint,omitempty"`
	Destination       string       `cbor:"8,keyasint"`
	DestIncarnation   uint64       `cbor:"9,keyasint"`
	State             RestoreState `cbor:"10,keyasint"`
	// After is the last source path staged ("" = none yet); CopyDone says every source
	// path has been staged.
	After        string `cbor:"11,keyasint,omitempty"`
	Copied       int64  `cbor:"12,keyasint,omitempty"`
	CopyDone     bool   `cbor:"13,keyasint,omitempty"`
	StartedAtMs  int64  `cbor:"14,keyasint"`
	FinishedAtMs int64  `cbor:"15,keyasint,omitempty"`
	// DestinationGeneration is the shard version of the final publish.
	DestinationGeneration uint64 `cbor:"16,keyasint,omitempty"`
	// Producer began the restore; every revision it writes, whoever proposes its bounded
	// commands later (a worker resuming it), is attributed to it.
	Producer Producer `cbor:"17,keyasint,omitempty"`
	// Again counts the times the operation began again (RestoreBegin.Again) after its
	// destination was gone; 0 for an operation begun once.
	Again uint32 `cbor:"18,keyasint,omitempty"`
	// RetainUntilMs is when the record of an operation begun again, once complete, may be
	// dropped (command time; 0 for one begun once, whose only retention item is its own):
	// the item its earlier run queued finds it younger and leaves it.
	RetainUntilMs int64 `cbor:"19,keyasint,omitempty"`
}
