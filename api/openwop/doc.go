// Package openwop is Cairn's OpenWOP host.workspace facade (OpenWOP RFC 0059;
// the wire facts the project gathered from the published spec, schemas, conformance suite
// and reference host are its specification where the RFC is silent): discovery at
// /.well-known/openwop, the four workspace endpoints under /v1/host/workspace/files, run
// snapshots under /v1/runs, and, only when configured, the conformance seams. It also
// serves OpenWOP v2's proposals of agent and workflow-chain packs and their readback
// (RFC 0096, issue 18; unversioned at the server root, negotiated by OpenWOP-Version):
// /proposals, /installed-packs/{packName} (getInstalledPack) and the agent inventory
// /agents (served by a handler of their own, packsHandler in v2.go; proposal_record.go says
// how they are stored, apply.go how they install).
//
// Mapping. An OpenWOP tenant is a Cairn agent root and an OpenWOP workspace is a
// workbench in it. A workspace file at path P is the Cairn file at path P of that
// workbench: the same bytes through REST, MCP and the CLI, and any write through any
// surface is a new OpenWOP version. Its version is the path's Ordinal (meta: 1 on create,
// +1 per body, 1 again after a delete), its etag a quoted string naming the generation
// of its body (never reused, so an etag from before a delete never matches again), its
// updatedAt the command time of the write.
//
// Invariants:
//
//   - The owner {tenant, workspace} comes only from the credential (auth.Principal.Tenant
//     and Workspace; on a node without authentication, Options.Tenant and Workspace),
//     never from a query, header or body. The seam, which names owners in its body, exists
//     only with Options.TestSeams (refused at start beyond loopback) and answers 404
//     otherwise.
//   - Authentication is checked before anything else; discovery is public.
//   - Routes match on the escaped path; the file path is decoded exactly once and then
//     validated (the published pattern, and no "." or ".." segment): "%2F" and "/" name
//     the same file.
//   - Every non-2xx answer is the closed envelope {error, message, details?} with a code
//     of the OpenWOP registry (errors.go), including 401 and the 413 of an oversized body
//     (the body limit sits far above MaxFileBytes plus JSON escaping).
//   - A PUT with If-Match is one conditional Cairn write on the generation the etag
//     names, a PUT with If-None-Match: * one create-only write, a DELETE with If-Match one
//     delete at that generation (the check and the change are atomic); without them both
//     are unconditional. A failed precondition is a final 409 workspace_conflict (no
//     Retry-After) that changes nothing. Under an Idempotency-Key the store judges a PUT's
//     precondition after it looks the key up, so a retry of a write that went through
//     answers its first answer (updatedAt included) rather than a 409.
//   - A workspace never holds more than Options.MaxFiles live files, whichever nodes serve
//     the creates: a PUT that creates a file is checked on a view under the node's
//     per-owner lock (createLocks, the clear answer) and written with the cap
//     (workbench.WriteRequest.MaxWorkbenchFiles), which the store checks in the command
//     that writes; either refusal is the same 413 workspace_too_large. Only while a
//     replica of the shard runs a release before meta.WorkbenchFilesVersion does the write
//     go without the cap (the node-local check alone bounds it then). A PUT that replaces
//     a live file is never refused for the count.
//   - A request body is a closed object; a refusal names the wire member and its rule,
//     never a Go type (decode.go).
//   - A run is a leased Cairn snapshot of the caller's workbench, named "run-<id>", whose
//     annotation holds the run record; nothing of a run lives outside the snapshot.
//   - The package never reads the clock to decide a version, and holds at most one file
//     body (≤ MaxFileBytes) per request in memory (an artifact, ≤ MaxArtifactBytes; the
//     inventory holds the tenant's pack manifests while an apply or a listing judges them).
//   - What grows with the workspace takes its estimate of the node's memory budget before
//     it is built (workbench.Service.AdmitMemory): a proposal page, a file listing (the
//     workspace's, a run's: counted on the view it lists). Every request keeps its shares
//     until its answer is written (HoldAdmissions); while the budget stays taken the
//     answer is 429 rate_limited.
//   - A proposal is inert until applied: its artifact is a Cairn proposal's body, never a
//     file, so no readback, agent listing or file read sees it. Apply installs exactly the
//     bytes last persisted (readback is byte-equal, hence RFC 8785-equal), in one Cairn
//     accept guarded by the pack file's generation and the packs workbench's revision: a
//     refused apply (403, 409, 422) changes nothing, and two applies that race cannot both
//     install what only one of them may.
//   - Another tenant's proposal, pack or agent answers exactly like a missing one.
package openwop
