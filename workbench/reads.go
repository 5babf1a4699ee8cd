package workbench

// Reads answers what is stored: a file's body and card (Open, Stat, at the head, a
// snapshot, a commit or a generation), a listing, a grep, the metadata queries (search,
// aggregate, catalog) and find. It changes nothing.
//
// Invariants:
//
//   - Reads go through Core.ReadView, so they are linearizable; a read at a live
//     snapshot's version may use Core.ReadViewAt (at.go says when).
//   - No byte of a body leaves before the segment it belongs to has been verified against
//     its SHA-256 (integrity.go): damage is DataCorrupted, logged and counted. A read
//     holds at most one segment's part of its range plus its read-ahead, and all reads of
//     the node together at most Config.MaxReadBufferBytes.
//   - Every query, grep and listing holds its memory estimate of the node's budget while
//     it runs (admission.go); beyond the budget it waits a bounded time, then is
//     ResourceExhausted.
//   - Proposals are not files: no read, listing, grep, search or find sees them.
type Reads struct {
	base *base
}
