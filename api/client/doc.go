// Package client is the Go client of Cairn's REST API (`/v1/agents/{agent}/workbenches/...`,
// docs/architecture.md#surfaces) and the bulk transfers built on it (Import, Export): files, listings,
// snapshots, commits, restores, metadata search and grep, and the operator routes of a
// node's admin listener (garbage collection, backups, keys, quotas, the cluster's status,
// shards, moves and recovery). The CLI, the load generator and the integration tests use
// it; it knows nothing of the server's internals.
//
// Structure: the two listeners of a node serve different routes, so each has its own
// client. Client (New) calls the client listener's routes, the tenant API an agent key
// may use: a workbench's files, versions, forks, history and feed are its own methods,
// and three families are parts it holds as fields, built with it: Query (an agent root's
// metadata search, aggregates, catalog, find, and grep; c.Query.Search), Proposals
// (review-gated changes; c.Proposals.Propose) and Documents (the working-documents
// surface under /api/workbench/; c.Documents.List). Admin (NewAdmin) calls the admin
// listener's /v1/admin/ routes, which no other listener serves. All are thin: each
// endpoint is a method that builds its URL and body, and every request goes through an
// unexported transport (base URL, *http.Client with TLS and API key, RetryPolicy) that
// sends it, retries it within the policy and decodes its answer, so a Client, its parts
// and an Admin built with the same options send, retry and fail alike. A client is never
// changed once built: WithRetry and WithAPIKey return a new one, parts included.
//
// Invariants callers rely on:
//
//   - Bodies stream in both directions. PutFile and Append send the caller's io.Reader as
//     the request body; GetFile hands back the response body unread. Only JSON results and
//     error envelopes are buffered, each under a named bound (maxResultBytes,
//     maxErrorBodyBytes).
//   - Every non-2xx answer (304 excepted, which GetFile reports as FileInfo.NotModified)
//     becomes a *Error carrying the server's stable code, message, retryable flag and
//     details (docs/workbench.md#errors). HEAD answers have no body, so Stat derives the code
//     from the HTTP status. Error.Retryable and Error.RetryAfter tell the caller
//     whether and when to try again.
//   - A client from New or NewAdmin never retries on its own. WithRetry makes it retry within a
//     RetryPolicy's bounds (attempts and total time, honouring Retry-After): a refused
//     connection always (it read none of the body, even a stream's), a retryable 503 or 429
//     only for requests that mean the same sent twice (idempotent methods, an
//     Idempotency-Key, read-only tool calls, and the tool calls whose repeat answers the
//     first: a commit of one identity, a renew), and only with a body it can send again
//     (bytes, strings, or a file read again from where it started; never a stream, such
//     as stdin, that was read). Two operations retry
//     within their own bounds besides: Import resends a request a broken connection cut
//     off or the server answered retryable (each file re-opened, each upload under an
//     Idempotency-Key, importRetry), and Edit without IfMatch redoes its read and
//     conditional write after a concurrent write (editRetry); Edit with IfMatch never
//     retries.
//   - The tool endpoints (Commit, Snapshot, Restore, Query's Search, Grep and Find, ...)
//     take the Workbench tool's input as a JSON body and return its result: typed, with
//     numbers in untyped values (search fields, facet values) as json.Number, exactly as
//     the server wrote them, and the result object itself in the result's Raw field.
//   - A success body decodes exactly as encoding/json's Decoder with UseNumber decodes
//     it (decodeResult, checked against it by a fuzz test), with encoding/json/v2's
//     reference implementation under its v1 options: listings decode in about 40% of
//     the time.
//   - Reads at a snapshot (GetOptions.AtSnapshot, ListOptions.AtSnapshot, StatAt, WalkAt,
//     DescribeWorkbench) send ?at_snapshot=, where digits mean an id: a SnapshotRef whose
//     Name is all digits, or that sets both ID and Name, fails before any request.
//   - A live listing is never pages of two read versions: one that meets a write between
//     pages (ReadFenceChanged) is listed again from its first page, at most
//     ListingAttempts times, then fails wrapping ErrWorkbenchKeptChanging.
//     FallBackToSnapshot (and Export's and Import's Fallback) then reads the workbench at
//     a snapshot it takes for the purpose (lease FallbackTTLDays) and retires it after,
//     whatever the outcome; a snapshot it cannot take leaves the ReadFenceChanged error,
//     with the reason joined to it.
//   - Paths are workbench paths ("input/data/a.csv"): each component is escaped with
//     url.PathEscape and the components are joined with "/". The client does not clean or
//     validate them; the server's jail rules (docs/workbench.md#common-rules) decide, so a
//     request never means something other than what the caller wrote.
//   - Agent and workbench ids are escaped the same way and go to the server as given, whose
//     name rules decide, except an id holding a '/': it fails before any request
//     (InvalidArguments naming the id as given; transport.escapedSlash), since the
//     server would refuse it in terms of the escape %2F the caller never wrote.
//   - Export never writes outside its destination directory: each remote path is checked
//     component by component, and all writes go through an os.Root opened on the
//     destination, so neither a hostile path nor a symlink already in the destination can
//     redirect a write. Files appear whole (temporary file, then rename) or not at all.
//   - NewHTTPClient (TransportOptions) is how a client reaches a server beyond loopback:
//     a CA file in place of the system's, a client certificate for mutual TLS, and an API
//     key sent as "Authorization: Bearer …" only to the server's own scheme and host (a
//     redirect elsewhere goes without it). The key never appears in an error, in
//     TransportOptions' String, GoString or LogValue, or anywhere this package logs.
//   - Events reads the change feed's server-sent events one frame at a time (each under
//     maxEventFrameBytes); FollowEvents reopens a stream that ended or broke after the
//     last event it handed out (Last-Event-ID), so its callback sees each event once.
//
// Concurrency: a *Client, its parts and an *Admin are safe for concurrent use; Import and
// Export each own their worker goroutines and have stopped all of them by the time they
// return.
package client
