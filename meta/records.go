package meta

// Digest is a SHA-256 digest: of a whole body (Entry.Digest) or of a segment's
// uncompressed bytes (Segment.Digest).
type Digest [32]byte

// Root is an agent root: the tenant boundary. It is created by its first write.
type Root struct {
	Agent string `cbor:"1,keyasint"`
	// UID names the root in blob keys ("r" + a decimal counter); never reused.
	UID            string `cbor:"2,keyasint"`
	CreatedVersion uint64 `cbor:"3,keyasint"`
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
}

// Segment is one contiguous byte range of a body: either a blob in the object store (named
// by the SHA-256 of its uncompressed bytes) or, for tiny segments, bytes kept inline in the
// metadata record (Inline != nil, no object-store request).
type Segment struct {
	Digest Digest `cbor:"1,keyasint"`
	Size   int64  `cbor:"2,keyasint"`
	Inline []byte `cbor:"3,keyasint,omitempty"`
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
}

// version is one element of a path's MVCC chain: the entry the path had from shard
// version Version on, or a tombstone.
type version struct {
	Version uint64 `cbor:"1,keyasint"`
	Entry   *Entry `cbor:"2,keyasint,omitempty"` // nil = tombstone
	// AtMs is the command time of the command that made this element.
	AtMs int64 `cbor:"3,keyasint"`
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
}

// dedupeRecord remembers the answer to one request id.
type dedupeRecord struct {
	RequestHash Digest `cbor:"1,keyasint"`
	Result      Result `cbor:"2,keyasint"`
	ExpiresAtMs int64  `cbor:"3,keyasint"`
	Seq         uint64 `cbor:"4,keyasint"`
}
