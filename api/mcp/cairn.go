package mcp

import (
	_ "embed"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench"
)

// The MCP profile "cairn": the 18 Workbench tools plus Cairn's tools beyond the contract
// (docs/workbench.md#beyond-the-contract), served on their own endpoint so that the
// "workbench" profile stays exactly the 18 published tools: /v1/agents/{agent}/mcp/cairn
// (the REST router passes path value "profile" = "cairn"; the agent-less /mcp has no
// cairn profile).

// ProfileCairn names the cairn profile (the path value "profile" of its endpoint).
const ProfileCairn = "cairn"

// cairnSchemaFile holds the hand-written input schemas of the cairn profile's tools.
//
//go:embed schemas/cairn.json
var cairnSchemaFile []byte

var loadCairnSchemas = sync.OnceValues(func() (map[string]*toolSchema, error) {
	return parseSchemas("schemas/cairn.json", cairnSchemaFile)
})

func mustCairnSchema(tool string) *toolSchema {
	return mustSchemaIn("schemas/cairn.json", loadCairnSchemas, tool)
}

// cairnTools are the cairn profile's own tools; the profile serves them after the 18
// Workbench tools (NewCairnServer).
var cairnTools = []toolDef{
	{
		name: "cairn_history", title: "File history", readOnly: true, idempotent: true,
		description: "List the retained versions of a file, newest first: the versions history retention keeps (per agent " +
			"root: the newest versions of the file's current life or every version superseded less than a retention age " +
			"ago, whichever keeps more, capped; by default 100 versions or 30 days) and those snapshots and commits hold, " +
			"with the deletes as tombstones. At most limit (1..1000, default 100) per page; pass next_cursor back as cursor. " +
			"Read one with cairn_read_at. Result: workbench_id, section, relative_path, path, versions [{generation, " +
			"ordinal, tombstone, size_bytes, digest_uri, content_type, at, at_unix_ms, producer {principal, surface} or " +
			"null, proposal (the accepted proposal that published it) or null}], next_cursor (null on the last page), truncated. NotFound when the file has no retained version.",
		run: bind((*workbench.Tools).History),
	},
	{
		name: "cairn_read_at", title: "Read a file version", readOnly: true, idempotent: true,
		description: "Read the retained version of a file with the given generation (cairn_history lists them) exactly as " +
			"workbench_read reads the live file: structured records or a base64 byte range, paginated; cursors stay on " +
			"that version. NotFound with details.field \"generation\" when no retained version has that generation (pruned " +
			"by retention, never one, or a delete's). Result: as workbench_read's.",
		run: bind((*workbench.Tools).ReadAt),
	},
	{
		name: "cairn_workbench_list", title: "List workbenches", readOnly: true, idempotent: true,
		description: "List the workbenches of this agent root in name order, at most limit (1..1000, default 100) per page; " +
			"pass next_cursor back as cursor for the next page. Result: agent, workbenches [{workbench_id, path, revision, " +
			"file_count, size_bytes, created_at, head_commit}], next_cursor (null on the last page), truncated.",
		run: bind((*workbench.Tools).WorkbenchList),
	},
	{
		name: "cairn_workbench_delete", title: "Delete workbench", destructive: true,
		description: "Delete a workbench with its files, snapshots and commits; the name is free at once and the data it " +
			"alone referenced is garbage-collected after the grace period. if_revision makes it conditional (Conflict when " +
			"the workbench changed). Refused (retryable) while a restore reads from it (ForkRetentionActive) or while it is " +
			"a restore's destination (InvalidState). Result: workbench_id, deleted.",
		run: bind((*workbench.Tools).WorkbenchDelete),
	},
	diffTool,
	rewindTool, // rewind.go
}

func init() { cairnTools = append(append(cairnTools, forkTools...), proposalTools...) } // fork.go, proposals.go

// NewCairnServer returns an MCP server of the cairn profile bound to one agent root, with
// the same conventions as NewServer (schema validation, envelopes, UnknownTool).
func NewCairnServer(svc *workbench.Service, agent string, opts Options) *sdk.Server {
	opts = opts.withDefaults(svc)
	srv := newSDKServer(svc, agent, "Cairn lifecycle tools", "Cairn's tools beyond the Workbench contract over the agent root %q, presented at %s. ", opts)
	// The 18 Workbench tools with their contract schemas, then the profile's own
	// (issue 16: "the 18 Workbench tools plus cairn_propose, …").
	defs := append(slices.Clip(tools), cairnTools...)
	if opts.Documents != nil {
		defs = append(defs, documentTools(opts.Documents)...) // documents.go
	}
	register(srv, svc, agent, defs, func(name string) *toolSchema {
		if strings.HasPrefix(name, "cairn_") {
			return mustCairnSchema(name)
		}
		return mustSchema(name)
	}, opts)
	return srv
}
