// Command cairn is the single Cairn binary: the server (`cairn serve`, `cairn mcp`, and
// `cairn health`, the probe a container without curl runs against its node) and
// the client commands people and CI jobs use (`put`, `cat`, `ls`, `stat`, `rm`, `append`,
// `edit`, `import`, `export`; `snapshot`, `commit`, `restore`, `search`, `grep`,
// `aggregate`, `catalog`, `find`; `admin`), which talk to a server over its REST API
// through package api/client (README.md) and build no HTTP request themselves.
//
// This package only wires: it parses flags and arguments, builds the pieces from their
// packages and reports results. Rules it keeps:
//
//   - The Workbench tool commands print a summary; with --json, the server's result
//     object, one line.
//   - Results go to stdout; progress bars (only when stderr is a terminal), warnings and
//     errors go to stderr, so stdout stays usable in pipes.
//   - Every failure prints one line "cairn: <code>: <message>" on stderr and exits 1
//     (grep exits 2, and 1 without a line when nothing matched, as grep(1) does). The
//     code is the server's stable error code (NotFound, Conflict, ...) or, for failures
//     that never reached the server, InvalidArguments (bad usage or an unsafe path),
//     NotFound (a local file), Unavailable (the server could not be reached), Canceled
//     (interrupted) or Internal.
//   - Client commands find the server with --server, else CAIRN_SERVER, else
//     http://127.0.0.1:7070, and the agent root with --agent, else CAIRN_AGENT, else
//     "default". `cairn admin …` talks to the admin listener instead: --admin-server, else
//     CAIRN_ADMIN_SERVER, else http://127.0.0.1:7071.
//   - Every client command, `cairn admin …` and `cairn mcp --server` reach the server
//     with the global --ca-file, --client-cert/--client-key and --api-key, else
//     CAIRN_CA_FILE, CAIRN_CLIENT_CERT/CAIRN_CLIENT_KEY and CAIRN_API_KEY
//     (api/client.NewHTTPClient). The key is sent only as "Authorization: Bearer …" to
//     the server named; no flag default, help text, error or log line shows it.
//   - Client commands retry what is safe to retry (a refused connection, a retryable 503
//     or 429 of a replayable request) within client.DefaultRetryPolicy, then report the
//     last answer; import and edit (without --if-match) also retry within their own bounds
//     (api/client), and a failed precondition the user set (--if-match) is never retried.
//     Every write that changes a file (put, append, import's uploads) carries an
//     Idempotency-Key, so a retry whose first attempt applied replays that answer: no
//     second version, and no --if-match failing on the generation the first attempt made.
//     So do snapshot (and its create, renew and retire), commit and restore: no second
//     snapshot or restore after a lost answer. The key is --idempotency-key, else a random
//     one; a write sent under one that fails with its outcome unknown says that sending it
//     again under that key is safe.
//   - ls, export and import list a workbench live first; when it keeps changing under
//     every listing (client.ErrWorkbenchKeptChanging) they read it at a snapshot they take
//     and retire (client.FallBackToSnapshot), saying so in one line on stderr, unless
//     --no-snapshot-fallback. Nothing is printed or written before a listing is whole.
package main
