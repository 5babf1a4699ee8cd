// Package worker runs the leader-only background workers of a node's shards (docs/architecture.md
// #packages, #blob-storage-and-garbage-collection, #replication-and-placement): per led shard a garbage collector of blobs (the sweep of unreferenced
// digests and of orphans, gc.go), a compactor that rolls runs of small segments into one
// (compact.go), and a restore resumer (through Restorer, which the Workbench adapter
// implements). The embedded node and a cluster node run the same Set, with the same
// metrics (cairn_gc_*, cairn_compaction_*), started and stopped from each replica's
// leadership callback (shard.Config.OnReady, through Lead and Unlead or a Leadership),
// not by timers polling readiness.
//
// The package knows a shard only through Core (Propose and ReadView) and the error values
// of shard/outcome: it imports neither package shard nor Raft, nor anything under api
// (deps_test.go checks). The write path's half of collection (a publish that meets a
// delete intent uploads again) stays with ingest in workbench.
//
// Invariants:
//
//   - Every step a worker proposes is conditional on the state it read, and the FSM
//     re-checks it: a GCIntent is accepted only for digests that still qualify (count zero
//     past the grace, or an orphan with no record, or an intent old enough to take over),
//     a GCDeleted only for records still under this sweep's intent, a Compact only while
//     the replaced segment range is unchanged, a restore step only at the operation's
//     recorded position. So a deposed leader's late proposals are rejected, and two
//     sweeps or compactions racing (an old and a new leader) cannot undo each other.
//   - Sweeps fail closed: any read or listing error of the object store or the core
//     aborts a sweep before it proposes an intent; a sweep deletes only what the FSM put
//     under its intent, and stops deleting at half of the intent timeout, before another
//     sweep may take its intents over. Intents left by a crash or an error are taken over
//     and finished by a later sweep.
//   - Sweeps of one shard never overlap (the worker's, the admin route's, and those of a
//     previous lead of the shard): one lock per shard, kept across leads, and a new lead's
//     workers start only after the previous lead's have returned.
//   - The compactor never changes a file's digest, size or generation; it reads a segment
//     only through verification (an inline segment hashed, a blob read to its end,
//     blob.ReadVerified), uploads a replacement blob under the upload fence of a view read
//     before the upload, and holds at most one run (≤ blob.SingleSegmentMaxBytes) in
//     memory node-wide.
//   - Lead and Unlead return at once (they are called from a replica's leadership
//     goroutine); Unlead's channel and Close wait for the workers. Close returns only
//     when every goroutine the Set started has returned.
package worker
