package mcp

import (
	"github.com/cairnstore/cairn/workbench"
)

// rewindTool is cairn_rewind (issue 31): Attempts.Rewind over MCP, the target in
// workbench.ParseRewindTarget's syntax. request_id makes an apply idempotent, as REST's
// Idempotency-Key does.
var rewindTool = toolDef{
	name: "cairn_rewind", title: "Rewind a workbench", destructive: true,
	description: "Return a workbench's files — all, those at or below prefix (a directory such as outputs, or one file), or the listed paths — " +
		"to target, in place, as one atomic change: snapshot:<id or name>, commit:<commit_identity>, or time:<RFC 3339 or " +
		"Unix ms> (within the root's history retention). First call with dry_run true: the answer lists the changes " +
		"(added, removed, changed; with file_diffs the text diffs of the first 20) and a token. Then call again with the " +
		"same target and scope and that token (valid one hour): it applies only if nothing in the scope changed since the " +
		"preview, else Conflict with details.paths naming what changed (preview again). Each rewound path becomes a new " +
		"version; its history keeps the old ones. At most 4096 changed paths per rewind. Result: workbench_id, target, " +
		"scope, dry_run, changes [{path, change, from, to {generation, digest_uri, size_bytes} or null, diff}], counts " +
		"{added, removed, changed}, token (preview), applied, generation (apply), replayed.",
	run: attemptRun[workbench.RewindRequest, rewindArgs]((*workbench.Attempts).Rewind),
}

// rewindArgs is cairn_rewind's input: workbench.RewindInput and a request id.
type rewindArgs struct {
	workbench.RewindInput
	RequestID *string `json:"request_id"`
}

func (a rewindArgs) request(agent string) (workbench.RewindRequest, *workbench.Error) {
	return a.Request(agent, requestID(a.RequestID))
}
