package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench"
)

// DefaultMaxPayloadBytes is the default cap on a decoded MCP payload (docs/workbench.md#common-rules
// rules: "Payload cap for MCP: configurable, default 16 MiB").
const DefaultMaxPayloadBytes = 16 << 20

// DefaultAgent is the agent root of the endpoint that names none (`/mcp`; workbench/auth/doc.go).
const DefaultAgent = "default"

// messageOverheadBytes is what the transports allow on top of the encoded payload for the
// JSON-RPC envelope, the other arguments and JSON string escaping.
const messageOverheadBytes = 1 << 20

// Options configures the MCP surface. The zero value is usable: every field has a default.
type Options struct {
	// MaxPayloadBytes is the largest decoded text/base64 payload, in bytes, the transports
	// must carry to the Service so that a larger one is answered with the contract's
	// PayloadTooLarge envelope rather than a transport failure. The cap itself is enforced
	// by the Service (workbench.Config.MCPMaxPayloadBytes). 0 (or negative) means the
	// Service's cap, which defaults to DefaultMaxPayloadBytes.
	MaxPayloadBytes int64
	// MaxMessageBytes bounds one inbound JSON-RPC message, in bytes: the HTTP request body
	// (streamable HTTP) or one line (stdio). A message above it is not read whole: it is
	// answered with a JSON-RPC invalid request naming this limit (oversize.go; over HTTP
	// with status 413), and a stdio session goes on. 0 (or negative) means
	// 3 × MaxPayloadBytes + 1 MiB, which carries a MaxPayloadBytes+1 payload in base64 (4/3 of its size) or as text
	// whose non-ASCII characters a client escaped as \uXXXX (Python's json.dumps default:
	// 6 bytes for a 2-byte UTF-8 character).
	MaxMessageBytes int64
	// Logger receives the surface's own failures (Internal errors, recovered panics) and the
	// SDK's warnings and errors (its per-session Info lines are dropped). nil means
	// slog.Default().
	Logger *slog.Logger
	// Version is the server version reported in the MCP handshake. Default "dev".
	Version string
	// Metrics counts the tool calls (NewMetrics). Nil: not counted.
	Metrics *Metrics
	// Documents, when set, serves the cairn profile's working-documents tools
	// (documents.go: cairn_documents, cairn_document_write). Nil: the profile has none.
	Documents DocumentsCaller
}

// withDefaults fills the zero fields from the Service's configuration.
func (o Options) withDefaults(svc *workbench.Service) Options {
	if o.MaxPayloadBytes <= 0 {
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
		if svc != nil && svc.Config().MCPMaxPayloadBytes > 0 {
			o.MaxPayloadBytes = svc.Config().MCPMaxPayloadBytes
		}
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 3*o.MaxPayloadBytes + messageOverheadBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o
}

// sdkLogger passes the SDK's warnings and errors to log; a stateless endpoint would
// otherwise log several Info lines per request.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

// minLevel is a slog.Handler that drops records below level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}

// runner decodes validated arguments and runs one tool on the Service.
type runner func(ctx context.Context, svc *workbench.Service, agent string, args json.RawMessage) (workbench.Result, error)

// bind adapts a Service tool method (a method expression such as
// (*workbench.Tools).Read) to a runner.
func bind[In any](method func(*workbench.Tools, context.Context, string, In) (workbench.Result, error)) runner {
	return func(ctx context.Context, svc *workbench.Service, agent string, args json.RawMessage) (workbench.Result, error) {
		in, werr := decodeArgs[In](args)
		if werr != nil {
			return nil, werr
		}
		return method(svc.Tools, ctx, agent, in)
	}
}

// toolDef is one registered tool.
type toolDef struct {
	name, title, description string
	readOnly, idempotent     bool
	destructive              bool
	run                      runner
}

// tools are the 18 Workbench tools, in contract order (docs/workbench.md#the-18-tools-inputs).
var tools = []toolDef{
	{
		name: "workbench_create", title: "Create workbench", idempotent: true,
		description: "Create a workbench (a working directory with the sections input, scripts, outputs, logs and metadata) " +
			"in this agent root. Creating one that exists succeeds with the same result. " +
			"Result: workbench_id, path, sections.",
		run: bind((*workbench.Tools).Create),
	},
	{
		name: "workbench_put_file", title: "Write file", destructive: true,
		description: "Write a whole file from text or base64 (exactly one). replace=false (default) only creates: " +
			"AlreadyExists (details.current_generation) if the file exists. replace=true only replaces: NotFound if it does not. " +
			"With replace=true, expected_generation (from an earlier result or stat) applies the write only at that generation: " +
			"Conflict with details.current_generation if the file moved on (re-read, then decide). Never an upsert. A missing workbench is created. Payloads above the cap fail with PayloadTooLarge. " +
			"Result: workbench_id, section, relative_path, path, size_bytes, generation, digest_uri, content_type, replace.",
		run: bind((*workbench.Tools).PutFile),
	},
	{
		name: "workbench_append", title: "Append to file",
		description: "Append text or base64 (exactly one) to a file, creating the file (and workbench) when missing; " +
			"concurrent appends are serialized, none is lost. Not idempotent: a retried call appends again. " +
			"Result: appended_bytes, size_bytes (total), generation, created, digest (SHA-256 of the appended bytes only).",
		run: bind((*workbench.Tools).Append),
	},
	{
		name: "workbench_edit", title: "Edit file", destructive: true,
		description: "Replace an exact UTF-8 string in a file. old_string must occur exactly once (AmbiguousEdit with " +
			"details.matches otherwise) unless replace_all is true; NoMatch when absent; InvalidUtf8 for a binary file. " +
			"An edit that changes nothing returns no_change: true and makes no new generation. " +
			"Result: replacements, size_bytes, generation, no_change.",
		run: bind((*workbench.Tools).Edit),
	},
	{
		name: "workbench_list", title: "List directory", readOnly: true, idempotent: true,
		description: "List the direct children of a workbench, section or directory, in name order, cursor-paginated " +
			"(limit default 100). Result: workbench_id, workbench_path, path, section and relative_path of the listed directory " +
			"(null for the section itself or the workbench top), at_snapshot when given, entry_count, entries, next_cursor, truncated. " +
			"Entries: name, path, section, relative_path, kind (file|directory), size_bytes, entry_count (null for a file), generation (files). " +
			"Pass next_cursor with otherwise identical arguments for the next page; ReadFenceChanged (retryable) means the " +
			"workbench changed since the first page: list again. Listing a file fails with NotDirectory.",
		run: bind((*workbench.Tools).List),
	},
	{
		name: "workbench_stat", title: "Describe path", readOnly: true, idempotent: true,
		description: "Describe the workbench (no section), a section, a directory or a file without reading its body: " +
			"workbench_id, workbench_path, path, section, relative_path, at_snapshot when given, and card: name, path, section, " +
			"relative_path, kind (workbench|directory|file), size_bytes, entry_count (null for a file), generation, content_type and " +
			"digest_uri (files; null otherwise), manifest_id (the identity of the head commit that seals the workbench or the file's " +
			"current revision, else null), producer (who wrote the revision: \"<principal> via <surface>\", \"\" when unknown; Cairn adds producer_principal and producer_surface), record_count " +
			"(always null: stat does not read the body); Cairn adds executable and modified_at_unix_ms (files), file_count, sections.",
		run: bind((*workbench.Tools).Stat),
	},
	{
		name: "workbench_read", title: "Read file", readOnly: true, idempotent: true,
		description: "Read a file. format=structured (default) returns records: a JSON object (json_object) or the " +
			"elements of a JSON array (json_array), a YAML mapping (yaml_mapping), otherwise UTF-8 text lines (text_lines); " +
			"limit counts records (default 100, max 300). format=bytes returns up to limit bytes (default and max 300) as base64 " +
			"from offset. Continue with next_cursor. if_none_match equal to the current generation returns " +
			"{not_modified: true, generation} without the body. Result: workbench_id, workbench_path, section, relative_path, path, " +
			"at_snapshot when given, cursor (the one given, else null), generation, content_type, digest_uri, total_size_bytes, format; " +
			"structured: record_type, record_count, items [{index, value}], bytes and bytes_encoding null; bytes: bytes (base64), " +
			"bytes_encoding \"base64\", offset, returned_bytes; next_cursor, truncated.",
		run: bind((*workbench.Tools).Read),
	},
	{
		name: "workbench_grep", title: "Search file contents", readOnly: true, idempotent: true,
		description: "Case-insensitive literal search (not regex) of file contents: OR over up to 16 patterns (a pattern " +
			"with '|' and no patterns list is split), optional basename glob (* and ?), recursive or direct children only. " +
			"Skips files containing NUL. limit counts matching lines; work per call is bounded, continue with next_cursor. " +
			"Result: workbench_id, workbench_path, path, section and relative_path of the scope (null when not given), pattern, " +
			"recursive, matches [{path, section, relative_path, line_number, snippet}], files_scanned, next_cursor, truncated, " +
			"scanned_bytes, scan_complete (false: the search has not reached the end of its scope, so a page without matches " +
			"does not mean no match; continue with next_cursor).",
		run: bind((*workbench.Tools).Grep),
	},
	{
		name: "workbench_search", title: "Search file metadata", readOnly: true, idempotent: true,
		description: "Query indexed file metadata in one workbench (id) or the whole agent root (id omitted): " +
			"predicates over built-in fields (artifact.section, artifact.name, artifact.ext, artifact.size_bytes, " +
			"artifact.content_type, artifact.generation, artifact.updated_at, artifact.digest, artifact.producer " +
			"[as workbench_stat's card.producer], artifact.producer_principal, artifact.producer_surface) and fields writers attach; " +
			"ops eq ne in prefix suffix contains gt gte lt lte exists not_exists; sort, facets, cursor paging (limit 1..10). " +
			"Result: path (the scope), workbench_id (null root-wide), match_count (all pages), matches [{workbench_id, path, " +
			"section, relative_path, values (the requested fields, null where absent)}], facets [{field, values [{value, count}], " +
			"distinct_count, truncated, missing, other}], read_version, next_cursor, truncated.",
		run: bind((*workbench.Tools).Search),
	},
	{
		name: "workbench_aggregate", title: "Aggregate file metadata", readOnly: true, idempotent: true,
		description: "Compute measures (count, sum, avg, min, max) over the files matching predicates, optionally grouped " +
			"by fields, in one workbench or the whole agent root. Result: path (the scope), workbench_id, groups [{key (group_by " +
			"values by field), values (measures by name), count}], group_count (all groups), row_count (groups returned), " +
			"input_match_count (files matching the predicates), read_version, truncated.",
		run: bind((*workbench.Tools).Aggregate),
	},
	{
		name: "workbench_catalog", title: "List searchable fields", readOnly: true, idempotent: true,
		description: "List the metadata fields present in a workbench or the agent root, their types, how many files carry " +
			"each, and the operators each accepts; include_facets adds their most common values. Result: path (the scope), " +
			"workbench_id, catalog {facetable, sortable (every field can be both), filterable [{fields, operators}] (fields " +
			"grouped by the operators they accept), facets, fields [{field, builtin, types, file_count, operators}]}, " +
			"catalog_empty (no file in scope), child_catalogs (always []: one catalog covers the whole scope), file_count, " +
			"read_version, truncated.",
		run: bind((*workbench.Tools).Catalog),
	},
	{
		name: "workbench_find", title: "Find workbenches", readOnly: true, idempotent: true,
		description: "Find workbenches in this agent root by committed state and a case-insensitive literal match over " +
			"their stored run manifest; include_manifest returns it. Cursor-paginated (limit 1..100). Result: path (the agent " +
			"root), entry_count (workbenches examined by this call), match_count, matches [{workbench_id, path, committed, " +
			"commit_identity, commit_identity_verified (the stored manifest is the one the head commit sealed and names its " +
			"identity), content_digest_uri, manifest_digest_uri, envelope_digest_uri, manifest_path, manifest_generation, " +
			"manifest_size_bytes, manifest_summary {schema, workbench_id, commit_identity, committed_at_unix_seconds, " +
			"content_digest_uri, manifest_digest_uri, manifest_keys, manifest_task}, manifest}] (commit fields null when " +
			"uncommitted), next_cursor, truncated.",
		run: bind((*workbench.Tools).Find),
	},
	{
		name: "workbench_commit", title: "Commit workbench", idempotent: true,
		description: "Seal the workbench's current files under a deterministic commit identity and publish " +
			"metadata/run_manifest.json (schema nokv.workbench.run_manifest.v1). An exact retry returns the stored result " +
			"with idempotent_replay: true; a different commit is WorkbenchCommitConflict unless replace is true. " +
			"A conflict's details name requested_replace and stored_generation (the head's run manifest generation). " +
			"Result: workbench_id, workbench_path, path, size_bytes, generation, content_digest_uri, manifest_digest_uri, commit_identity, " +
			"envelope_digest_uri, tree_digest_uri, replace, idempotent_replay.",
		run: bind((*workbench.Tools).Commit),
	},
	{
		name: "workbench_snapshot", title: "Snapshot workbench",
		description: "Mint a leased, frozen read point of the workbench (ttl_days default 7, max 90), optionally named and " +
			"annotated (reason, metadata). Read it with at_snapshot in list, stat and read. Result: snapshot_id, name, " +
			"read_version, lease_expires_at and lease_expires_unix_ms (both milliseconds since the epoch), annotation, state, " +
			"retire_annotation (null until retired), workbench_id, path, ttl_days.",
		run: bind((*workbench.Tools).Snapshot),
	},
	{
		name: "workbench_snapshot_renew", title: "Renew snapshot lease", idempotent: true,
		description: "Extend a snapshot's lease to now + ttl_days, by snapshot_id or name; never shortens it. Revives an " +
			"expired snapshot; fails with SnapshotExpired once it was reaped. Result: the snapshot's fields and renewed (the " +
			"lease moved later; false for a renew that would have shortened it).",
		run: bind((*workbench.Tools).SnapshotRenew),
	},
	{
		name: "workbench_snapshot_retire", title: "Retire snapshot", idempotent: true, destructive: true,
		description: "End a snapshot at once, by snapshot_id or name. The first success reports retired: true, an exact retry " +
			"retired: false with the original reason. ForkRetentionActive while a restore still reads from it, or while it is " +
			"a fork's pin a live fork has as its base (details.reason fork_base, not retryable: discard the fork first). " +
			"Result: the snapshot's fields, retired, retire_annotation {reason, metadata: null}.",
		run: bind((*workbench.Tools).SnapshotRetire),
	},
	{
		name: "workbench_snapshot_list", title: "List snapshots", readOnly: true, idempotent: true,
		description: "Every snapshot of the workbench with its state (alive, expired, retired, reaped), aliases, annotation " +
			"and lease evidence. Result: workbench_id, path, snapshot_count, snapshots [{snapshot_id, name, state, read_version, " +
			"lease_expires_at, annotation, retire_annotation, aliases, consumers, …}].",
		run: bind((*workbench.Tools).SnapshotList),
	},
	{
		name: "workbench_restore", title: "Restore into a new workbench", idempotent: true,
		description: "Create destination_id in this agent root from a snapshot (at_snapshot) or a commit (at_commit), " +
			"without copying file bodies. The destination must not exist; it stays invisible until complete. An exact retry " +
			"returns idempotent_replay: true; a retry while it runs is a retryable Conflict with details.operation_id. " +
			"Writes metadata/restore_manifest.json (schema nokv.workbench.restore_manifest.v2; restored_from.source names the " +
			"snapshot or commit). Result: state, operation_id, source_workbench_id, destination_workbench_id, snapshot_id " +
			"(null from a commit), commit_id (null from a snapshot), read_version, destination_generation, idempotent_replay, " +
			"cleanup_pending (always false: a completed restore holds nothing), restore_manifest (its presentation path).",
		run: bind((*workbench.Tools).Restore),
	},
}

// NewServer returns an MCP server whose tools work inside one agent root (docs/workbench.md
// §Session binding). It registers the implemented Workbench tools with raw handlers: each
// validates its arguments against the hand-written schema (InvalidArguments naming the field
// and rule), decodes them, calls the Service, and answers with the result object both as a
// text content (its JSON) and as structuredContent; errors are the contract's envelope the
// same way, with isError set. A call to any other tool is answered with the UnknownTool
// envelope. agent should satisfy meta.ValidateName; with an invalid one every call fails
// with InvalidArguments naming "agent".
func NewServer(svc *workbench.Service, agent string, opts Options) *sdk.Server {
	srv, _ := newWorkbenchServer(svc, agent, opts)
	return srv
}

// newWorkbenchServer is NewServer with the fast lane of its tools (fastcall.go).
func newWorkbenchServer(svc *workbench.Service, agent string, opts Options) (*sdk.Server, *fastLane) {
	opts = opts.withDefaults(svc)
	srv := newSDKServer(svc, agent, "Cairn Workbench", "Workbench tools over the agent root %q, presented at %s. Each workbench "+
		"has the sections input, scripts, outputs, logs and metadata; paths are relative to the section. ", opts)
	handlers := register(srv, svc, agent, tools, mustSchema, opts)
	return srv, newFastLane(serverImplementation("Cairn Workbench", opts), handlers)
}

// newSDKServer returns the SDK server of one profile, titled title, whose instructions are
// intro (a format of the agent root and its presented path) followed by the conventions
// of results and errors every profile shares.
func newSDKServer(svc *workbench.Service, agent, title, intro string, opts Options) *sdk.Server {
	return sdk.NewServer(serverImplementation(title, opts), &sdk.ServerOptions{
		Logger: sdkLogger(opts.Logger),
		Instructions: fmt.Sprintf(intro, agent, strings.TrimSuffix(svc.Tools.WorkbenchPath(agent, ""), "/")) +
			"Every result is a JSON object with \"status\": \"success\"; every error is " +
			"{\"status\":\"error\",\"code\",\"message\",\"retryable\",\"details\"}.",
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
}

// serverImplementation is the server's name, title and version of a profile.
func serverImplementation(title string, opts Options) *sdk.Implementation {
	return &sdk.Implementation{Name: "cairn", Title: title, Version: opts.Version}
}

// register adds the tools defs to srv, each with its schema (schemaOf) and a raw handler
// counted in opts.Metrics, and answers calls of any other tool with UnknownTool. It returns
// the registered handlers by tool name.
func register(srv *sdk.Server, svc *workbench.Service, agent string, defs []toolDef, schemaOf func(string) *toolSchema, opts Options) map[string]sdk.ToolHandler {
	known := make(map[string]bool, len(defs))
	handlers := make(map[string]sdk.ToolHandler, len(defs))
	for _, d := range defs {
		ts := schemaOf(d.name)
		destructive := d.destructive
		h := opts.Metrics.instrument(d.name, handler(svc, agent, d, ts, opts.Logger))
		srv.AddTool(&sdk.Tool{
			Name:        d.name,
			Title:       d.title,
			Description: d.description,
			InputSchema: ts.raw,
			Annotations: &sdk.ToolAnnotations{
				Title:           d.title,
				ReadOnlyHint:    d.readOnly,
				IdempotentHint:  d.idempotent,
				DestructiveHint: &destructive,
				OpenWorldHint:   new(false),
			},
		}, h)
		known[d.name] = true
		handlers[d.name] = h
	}
	srv.AddReceivingMiddleware(unknownToolMiddleware(known))
	return handlers
}

// handler is the raw tool handler of one tool. It never returns a protocol error and never
// panics: every outcome is a tool result. A tool that changes something runs with its
// surface named ("mcp/<tool>", recorded with the principal as the producer of what it
// writes) and gets one audit line once it is answered: the one place MCP writes them.
func handler(svc *workbench.Service, agent string, d toolDef, ts *toolSchema, log *slog.Logger) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		audit := workbench.Audit{Surface: "mcp/" + d.name, Agent: agent, Outcome: workbench.CodeInternal}
		defer func() {
			if p := recover(); p != nil {
				log.Error("mcp: tool handler panicked", "tool", d.name, "agent", agent, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = errorResult(internalError()), nil
			}
			if !d.readOnly {
				audit.Log(ctx, log)
			}
		}()
		if !d.readOnly {
			ctx = workbench.WithSurface(ctx, audit.Surface)
		}
		args := req.Params.Arguments
		if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
			args = json.RawMessage("{}")
		}
		decoded := decodeCallArgs(args)
		audit.Workbench, audit.Path = decoded.auditTarget()
		if werr := ts.validate(decoded); werr != nil {
			audit.Outcome = werr.Code
			return errorResult(werr), nil
		}
		r, err := d.run(ctx, svc, agent, args)
		if err != nil {
			we := workbench.AsError(err)
			if we.Code == workbench.CodeInternal {
				log.Error("mcp: tool failed", "tool", d.name, "agent", agent, "error", err)
			}
			audit.Outcome = we.Code
			return errorResult(we), nil
		}
		audit.Outcome, audit.Generation = workbench.OutcomeOK, r.Generation()
		body, err := encodeObject(r, "status")
		if err != nil {
			log.Error("mcp: encoding a tool result failed", "tool", d.name, "agent", agent, "error", err)
			return errorResult(internalError()), nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(body)}}, StructuredContent: json.RawMessage(body)}, nil
	}
}

// unknownToolMiddleware answers tools/call for a tool this server does not offer with the
// contract's UnknownTool envelope (a tool error), instead of the SDK's JSON-RPC
// "invalid params" error.
func unknownToolMiddleware(known map[string]bool) sdk.Middleware {
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	slices.Sort(names)
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				if r, ok := req.(*sdk.CallToolRequest); ok && r.Params != nil && !known[r.Params.Name] {
					return errorResult(&workbench.Error{
						Code:    workbench.CodeUnknownTool,
						Message: fmt.Sprintf("unknown tool %q; this server offers %s", truncate(r.Params.Name, 128), strings.Join(names, ", ")),
						Details: map[string]any{"tool": truncate(r.Params.Name, 128)},
					}), nil
				}
			}
			return next(ctx, method, req)
		}
	}
}

func internalError() *workbench.Error {
	return &workbench.Error{Code: workbench.CodeInternal, Message: "internal error", Details: map[string]any{}}
}

// errorResult is a tool error: the envelope as text and as structuredContent, isError set.
func errorResult(e *workbench.Error) *sdk.CallToolResult {
	body, err := encodeObject(e.Envelope(), "status", "code", "message", "retryable", "details")
	if err != nil {
		// Only details can fail to encode; the envelope without them always does.
		e2 := &workbench.Error{Code: e.Code, Message: e.Message, Retryable: e.Retryable}
		body, _ = encodeObject(e2.Envelope(), "status", "code", "message", "retryable", "details")
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
		IsError:           true,
	}
}

// encodeObject encodes m as a JSON object whose keys come in the order given by first (those
// present), then the rest in byte order, so that every result starts with "status"
// (docs/workbench.md#common-rules). HTML characters are not escaped.
func encodeObject(m map[string]any, first ...string) ([]byte, error) {
	if m == nil {
		m = map[string]any{} // "{}", as ever, not null
	}
	e := resultEncoders.Get().(*resultEncoder)
	defer e.release()
	if err := e.object(m, first); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// auditTarget reads the workbench id and the full path inside it (section/path) from a
// tool's arguments for its audit line; what does not decode as strings is left out.
func auditTarget(args json.RawMessage) (id, path string) {
	var t struct {
		ID      any `json:"id"`
		Section any `json:"section"`
		Path    any `json:"path"`
	}
	if json.Unmarshal(args, &t) != nil {
		return "", ""
	}
	id, _ = t.ID.(string)
	path, _ = t.Path.(string)
	if sec, ok := t.Section.(string); ok && sec != "" {
		path = strings.TrimSuffix(sec+"/"+path, "/")
	}
	return id, path
}
