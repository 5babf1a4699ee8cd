// Package workbench is the transport-free Workbench domain: the semantics of the tool
// contract (docs/workbench.md) and of the REST file operations, as plain Go methods over a small
// interface of the metadata core (Core, Cores) and a blob store. The MCP, REST and OpenWOP
// packages are thin transports over it.
//
// # Parts
//
// A Service is assembled (New, NewWithCores) from narrow parts over one shared state
// (base: the cores, the blob store, the configuration, the node's budgets, the segment
// cache, metrics, limits), each a type with its own files and its own invariants in its
// doc comment; no type has more than 40 methods (parts_test.go):
//
//   - Writes (writes.go, copy.go): Write, Append, Delete — a body in, one command out —
//     and Copy, a command that refers to another revision's segments (no byte moved).
//   - Reads (reads.go, files.go, list.go, grep.go, search.go, find.go, openwop.go): a
//     file's body and card at the head or at a snapshot, commit or generation, listings,
//     grep, the metadata queries (search, aggregate, catalog) and find.
//   - Lifecycle (lifecycle.go, workbenches.go, snapshots.go, commit.go, restore.go):
//     workbenches and a root's usage, quota, retention and purge; snapshots, commits and
//     restores, whose leftover drivers ResumeRestores finishes (shard/worker's Restorer).
//     Its settings are LifecycleConfig.
//   - Review (review.go, proposals.go, proposals_view.go, artifacts.go, history.go,
//     diff.go, diffside.go, feed.go): proposals and decisions, a file's history, diffs
//     and the change feed. Its settings are ReviewConfig.
//   - Attempts (rewind.go, rewind_target.go, rewind_token.go, rewind_apply.go, fork.go,
//     fork_key.go, fork_pins.go, merge.go): rewind of a workbench, a prefix or a set of paths to a snapshot, a commit
//     or a past time, previewed with a self-verifying token and applied as one
//     meta.ChangeSet guarded by what the preview saw (docs/architecture.md, "Attempts:
//     rewind"); fork, merge and discard (docs/architecture.md, "Attempts: fork and
//     merge"). A fork is a Lifecycle.Restore of its parent (a live fork first pins a
//     snapshot of the parent, annotated pinned_by_fork), and its restore manifest is the
//     only record of its parent and base: nothing else stores a fork. A merge decides each
//     path three ways (decideMerge) and applies the paths only the fork changed as one
//     change set on the parent, previewed and guarded like a rewind, under a token of its
//     own kind; a path both sides changed is never written, only reported (and proposed on
//     request). Discard retires only the snapshot the fork pinned, before it deletes the
//     fork, whatever the caller reaches of the parent; a pin a live fork has as its base
//     is not retired by anyone else (fork_pins.go).
//   - Tools (tools_contract.go, tools.go, tools_read.go, tools_review.go): the tool
//     contract over the parts — one method per tool (svc.Tools.Read for workbench_read),
//     its inputs, Result shapes, cursors and presentation paths.
//
// The Service keeps the node-wide methods: Config, the memory budget (AdmitMemory,
// HoldAdmissions, AdmissionHighWater), AllowRequest and Instrument. Every default of a
// setting is declared once, in config.go (Config.Default, Config.Validate).
//
// The leader-only background workers (the garbage collector, the compactor, the scheduler
// that resumes restores) are shard/worker's. What stays here is what needs the contract:
// the restore driver, which Tools.Restore runs inline and which builds the restore
// manifest (Lifecycle.ResumeRestores drives one core's leftovers and is shard/worker's
// Restorer), and the write path's half of collection, a publish that meets a delete
// intent and uploads again (publish.go).
//
// The invariants below hold for the whole package; each part's doc comment repeats the
// ones it carries.
//
// Invariants:
//
//   - The write path uploads every non-inline segment before it proposes the command that
//     references it (docs/architecture.md#the-write-path): a failed upload leaves at most unreferenced blobs,
//     never a path pointing at missing data.
//   - Bodies stream: a write holds at most a few segments in memory (bounded by
//     blob.ChunkMaxBytes each), and all writes of the node together at most
//     Config.MaxConcurrentIngests slots of the ingest budget (ingest_budget.go: a body of
//     declared length up to one segment weighs the pooled buffer of its length, any other
//     a slot, and those hold at most one slot less than the budget; a body keeps its
//     weight until its ingest ends, and waits for it at most IngestQueueTimeout); a read
//     holds at most one segment's part of the range (pooled, ≤ blob.ChunkMaxBytes =
//     16 MiB) plus its read-ahead, and all reads of the node together at most
//     Config.MaxReadBufferBytes (default 256 MiB; a read waits for its share, read-ahead
//     is skipped).
//   - Verified reads (integrity.go): no byte of a body leaves this package before the
//     segment it belongs to has been verified against the segment's SHA-256 — an
//     object-store segment is read through the blob reader to the blob's end (which
//     verifies the whole blob, whatever the range) into the buffer first; an inline
//     segment is hashed; a body of one segment must carry that segment's digest. Damage is
//     a DataCorrupted error (not retryable) naming the segment digest, logged and counted
//     in cairn_blob_corrupt_total; put-if-absent backends verify before they dedupe, so the
//     next upload of the same content repairs it. A segment in the node's segment cache
//     (Config.SegmentCache, blob/cache) was verified so when the cache was filled, and is
//     served from its file without a second hash and without a buffer.
//   - Every error that leaves this package is an *Error with a stable wire code; internal
//     names (incarnations, root uids, blob keys, file system paths) never appear in it.
//   - Reads go through Core.ReadView, so they are linearizable. The change feed (feed.go)
//     reads its first page so, then follows this node's replica (Core.WaitApplied,
//     Core.ReadViewAt): positions are shard versions, so what it hands out after the first
//     page is what any replica shows at those versions.
//   - Authorization (access.go): a root the request's principal may not use answers as a
//     root that does not exist, from the same path: its views are the empty state a
//     missing root is read from, its commands are decided on the empty state after the
//     same view read, and cursors are signed for the root and the principal. A missing
//     scope is PermissionDenied only where the root is visible. No principal in the
//     context is the node's own work or a node without authentication: auth.Local. One
//     step of a request is decided so too while still attributed to its principal
//     (asNode): a discard releasing the fork's own pin on a parent the caller may not see.
//   - The package knows the core only through Core, Cores and the core errors
//     (ErrCoreUnavailable, ErrOutcomeUnknown, ErrCoreStorageFull, which the shard
//     package's errors match with errors.Is): it imports no replication package, so its
//     dependencies hold no Raft library, log store or bbolt (deps_test.go checks).
//   - Every metadata query (search, aggregate, catalog) and every grep holds its memory
//     estimate, computed before it runs from the files in its scope, of the node's query
//     budget while it runs (admission.go); so do file diffs, file listings, histories,
//     state-diff pages and proposal and judgment listings, by estimates computed before
//     their answers are built (pages.go, proposals_view.go), a page cut with a next_cursor
//     where its estimate would pass an eighth of the budget. Beyond the budget a request
//     waits a bounded time, then is answered ResourceExhausted. Structured reads stream records and keep one page;
//     edit computes its result's size before building it.
//   - Attribution (attribution.go): every command a part proposes carries the id of
//     the principal the request acts for (auth.FromContext; none: the node's own work)
//     and the surface and tool it came through (WithSurface: "rest/put",
//     "mcp/workbench_edit"), stamped in one place (proposeRaw); the FSM records them as
//     the producer of every revision, snapshot, commit and restore (meta.Producer). Reads
//     show it: workbench_stat's card.producer is "<principal> via <surface>" ("" when
//     unknown: data written before producers, directories, a workbench at a snapshot),
//     with producer_principal and producer_surface beside it; snapshot, commit and restore
//     results carry producer (and retired_by). The principal also scopes idempotency keys
//     (docs/architecture.md#the-write-path).
//   - Per-principal limits (limits.go, Config.Limits, off by default): AllowRequest
//     spends one token of the principal's bucket per request (the surfaces call it first),
//     Write and Append hold one of its MaxConcurrentUploads slots while they run; past
//     either the answer is a retryable ResourceExhausted with details.limit and
//     details.retry_after_ms, never a wait. A request without a principal is never
//     limited. State is bounded by the principals active at once.
//   - Secret redaction (redact.go, Config.Redactor, off by default): the body of every
//     write and append, whatever the surface, passes through the redactor before it is
//     cut, hashed and uploaded, so the stored bytes, the digest, the size and the
//     idempotency record are all of the redacted body and the original never reaches
//     the object store or the metadata. An append is redacted on its own bytes: a secret
//     split across two appends is not found.
//   - An ingest takes at most Config.MaxUploadDuration, which is less than GCGrace (the
//     collector's grace, shard/worker's Config.GCGrace), so the collector never takes the
//     blobs of an upload that can still publish; a slower one fails before publishing and
//     says why.
//   - Proposals (proposals.go) are inert until accepted: no read, listing, grep, search,
//     find or export path reads them (they are not files); deciding needs the review
//     scope; an accept's readback compares the file's bytes with the stored proposal's
//     (and RFC 8785 equality for JSON, jcs.go).
package workbench
