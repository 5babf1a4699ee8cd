// Package mcp is Cairn's MCP surface: the Workbench tool profile (docs/workbench.md) served with
// the official MCP go-sdk over streamable HTTP (Handler, mounted at
// /v1/agents/{agent}/mcp and /mcp), over stdio (ServeStdio), and as a stdio proxy in front
// of a running server (ServeStdioProxy). It is a thin transport: the tool semantics live in
// workbench, which this package calls and never bypasses.
//
// Invariants:
//
//   - A session works inside exactly one agent root, chosen by its endpoint (the URL's
//     {agent}, "default" for /mcp, or the stdio --agent); no tool takes an agent id.
//   - Input schemas are the hand-written schemas/workbench.json, byte for byte what
//     tools/list advertises; arguments are validated against them here, and invalid input is
//     answered with the contract's InvalidArguments envelope naming the field and the rule,
//     never with the SDK's text.
//   - A tool argument's number is judged on its text, not on the float64 it decodes to
//     (numbers.go): one beyond a float64's range or not 0 but nearer 0 than any float64
//     is refused naming its member (rule "range"), and one that is not an integer where
//     the schema takes only integers (90.0000000000000001) is refused as 1.5 is, though
//     its float64 is an integer. Numbers inside a member the schema leaves free are kept
//     as written.
//   - Every tools/call that reaches a handler is answered with a tool result, never a
//     JSON-RPC error: success is the result object, failure the contract's error envelope
//     {"status","code","message","retryable","details"} with isError set; both come as one
//     text content holding the JSON and, byte-identical, as structuredContent, with
//     "status" as the first key. A tool this server does not offer gets UnknownTool.
//   - No input panics a handler; a defect surfaces as an Internal envelope and a log line.
//   - A payload one byte above the cap, as base64 or as text, reaches the Service and is
//     answered with PayloadTooLarge; the transports refuse only messages far above the cap
//     (Options.MaxMessageBytes), unread, with a JSON-RPC invalid request (-32600, HTTP
//     413) whose data names that limit, and the message's id when its first 64 KiB
//     hold it (oversize.go).
//   - A JSON-RPC batch is refused with one invalid-request error (-32600) on both
//     transports (HTTP 400 before the SDK reads the body): each message is one request,
//     so the node's admission limits see every tool call.
//   - An HTTP request keeps every share of the node's memory budget it takes (its
//     message's above 1 MiB, its tool's listing, history, diff or proposal page) until
//     the SDK has written its answer (workbench.Service.HoldAdmissions), as REST does.
//   - Protocol errors are JSON-RPC errors, never the SDK's plain text (message.go,
//     checkInbound): not JSON or nested deeper than maxNestingDepth -32700, not one
//     message -32600, an unknown method -32601 (the table serverMethods), missing or
//     mistyped params -32602. Over stdio each line gets the same checks and answers
//     (checkClean, shared with checkInbound; the text checks speak of a line, not a body),
//     except that a well-formed notification they refuse is dropped unanswered (JSON-RPC
//     2.0 forbids answering a notification), and no line ends the session.
//   - Over HTTP a message is read once before the SDK or the fast lane (inbound.go,
//     scanMessage): the pass accepts exactly the texts json.Valid, strictjson.Check and
//     the depth bound accept, and keeps the members the checks and the fast lane read;
//     a message it refuses is answered by those checks, in their words.
//   - Over stdio, stdout carries only protocol messages; logs go to stderr.
//   - Over stdio, a request of the session protocol sent before initialize is answered
//     (ping aside) with -32600 saying to initialize first, never with the SDK's plain error,
//     which goes out with code 0 (stdioconn.go). Streamable HTTP keeps no session, so it
//     has no such answer (http.go, Handler).
//   - Over stdio, every request the SDK reads gets exactly one answer: when the input
//     ends, the session ends only once the requests read are answered, or
//     stdioDrainTimeout after, answering those still running with -32000 (stdioconn.go).
//   - Request params of the wrong JSON kind are answered with -32602 naming the member
//     ("params.name must be a string"), before the SDK decodes them into Go structs whose
//     names its own errors would show (params.go).
//   - A tool that changes something (not readOnly) runs with the surface "mcp/<tool>",
//     which the Service records with the request's principal as the producer of what it
//     writes, and writes one audit line (workbench.Audit) once answered, in the tool
//     handler: the one place MCP writes them. A stdio session without a principal acts as
//     auth.Local (the user who runs the process).
//   - A request_id (cairn_fork, cairn_merge, cairn_rewind, cairn_discard) used before for
//     another request is refused with InvalidArguments naming request_id, the tool's
//     argument, not the idempotency_key the Service names for REST (fork.go,
//     namingRequestID).
//   - Streamable HTTP serves the stateless lane (MCP 2026-07-28: no initialize, _meta on
//     every request) and the session lane (the initialize handshake of 2025-11-25 and
//     earlier) on the same endpoint, chosen per request by its protocol version; neither
//     keeps server state or issues Mcp-Session-Id, so both authenticate, attribute and
//     limit every request alike (http.go, Handler).
//   - A tools/call of the Workbench profile on the stateless lane, in the shape the go-sdk
//     client sends it, is answered by the same tool handler without the SDK's per-request
//     session (fastcall.go), with the status, headers and bytes the SDK would write
//     (TestFastLaneAnswersAsTheSDKDoes); any other shape goes to the SDK, and a call
//     that reached its tool is never handed on.
//   - Host and Origin are checked by the listener in front (api/server's guard, the same
//     check as REST's); the SDK's loopback-only Host check is off.
//
// All 18 Workbench tools are registered with the hand-written schemas of
// schemas/workbench.json; the profile offers nothing else. Cairn's further tools live in
// the profile "cairn" (cairn.go, diff.go, proposals.go, schemas/cairn.json: cairn_history,
// cairn_read_at, cairn_diff, cairn_workbench_list, cairn_workbench_delete, cairn_propose,
// cairn_proposals, cairn_decide; and, on a node that serves working documents
// (Options.Documents, documents.go), cairn_documents and cairn_document_write, whose owner
// is the key's, as on their HTTP routes, and which in another agent root than the
// owner's tenant answer as a root without documents), a separate server on its own endpoint
// (/v1/agents/{agent}/mcp/cairn), with the same conventions.
package mcp
