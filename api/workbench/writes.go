package workbench

// Writes stores files: a whole body (Write), the end of one (Append), a deletion (Delete).
// Each is one command on the shard of the file's agent root; Write's doc comment walks
// the write path.
//
// Invariants:
//
//   - Every non-inline segment of a body is uploaded before the command that references
//     it is proposed (docs/architecture.md#the-write-path): a failed upload leaves at most
//     unreferenced blobs, never a path pointing at missing data.
//   - A body streams: it holds at most a few segments in memory, each at most
//     blob.ChunkMaxBytes, and passes the redactor (Config.Redactor) before it is cut and
//     hashed.
//   - Appends to one path through this node run one at a time (appendLocks); across
//     nodes the command's generation check decides.
//   - Every write holds one of its principal's upload slots (Config.Limits) while it runs.
type Writes struct {
	base *base
	// appendLocks serializes appends to one path through this node.
	appendLocks pathLocks
}
