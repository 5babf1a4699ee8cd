// Package documents serves working documents (docs/documents.md): operator-owned Markdown
// documents created from one observation of an agent root's change feed, edited by the
// operator, improved by proposals a runner makes from an exact context snapshot, and
// accepted or rejected by a human, with every step an append-only event and every
// decision a judgment. Routes under /api/workbench/ (Prefix): documents, a document, its
// versions, selections and proposals, candidates, and a proposal's decisions.
//
// Storage. Every record is a file of the reserved workbench Workbench of the owner's
// agent root (records.go lists them), written through Cairn's ordinary write path via
// the Store interface (api/server adapts the Workbench service to it): replicated,
// durable, content-addressed in the blob store, on the change feed as the file writes
// they are, readable (never writable) through REST, MCP and the CLI.
//
// Invariants:
//
//   - The owner {tenant, workspace} comes only from the credential (auth.Principal.Tenant
//     and Workspace; the Local principal of a node without keys: Options.Tenant and
//     Workspace), as on the OpenWOP facade. Another owner's document, version or proposal
//     answers exactly as a missing one: its records are in another root or directory.
//   - Every id is derived as the design states (ids.go: StableKey, the hex SHA-256 of the
//     RFC 8785 form of the array of its parts); identical content is one version.
//   - Events are never changed or deleted: each is written create-only at a path named by
//     its id, which is its idempotency key, so a replay finds what the first attempt wrote
//     and a conflicting reuse of a client id is a ConflictError, never a second event.
//   - Mutations that move a document's head are serialized per document across every node
//     by compare-and-swap on the head record (mutate.go); of two racing edits on one base
//     exactly one applies and the other is a StaleBaseError that appended nothing.
//   - A proposal is inert until accepted; accept requires the head to be the proposal's
//     base; nothing here edits a file outside Workbench.
//   - A runner sees only the head and the selection's snapshot; its result is validated
//     (length, evidence admitted by the selection) before it becomes an event, and a
//     failure records a failed run with a classified errorText of at most
//     MaxErrorTextChars and appends no proposal.
//   - Bodies are closed JSON objects of at most MaxRequestBytes; a refusal names the
//     member and the rule. Every non-2xx answer is the closed Error body.
package documents
