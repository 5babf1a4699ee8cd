package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"

	"github.com/cairnstore/cairn/workbench"
)

// forkTools are cairn_fork, cairn_merge and cairn_discard (issue 31): Attempts.Fork,
// Merge and Discard over MCP. request_id makes a fork, a merge's apply and a discard
// idempotent, as REST's Idempotency-Key does.
var forkTools = []toolDef{{
	name: "cairn_fork", title: "Fork a workbench",
	description: "Make workbench fork, a zero-copy child of workbench id for a parallel attempt, at: live (default; the fork " +
		"pins a snapshot of id so its base is exact), snapshot:<id or name> or commit:<commit_identity>. Merge it back " +
		"with cairn_merge, or release it with cairn_discard. With request_id a retry of a fork that landed answers it " +
		"(replayed true). Result: fork_id, parent_id, base {kind, snapshot_id, commit_id, read_version}, " +
		"pinned_snapshot_id, restored_files, replayed; with mint_key true also key {id, secret, workbench, scopes, " +
		"expires_at, minted_by}: a new API key bound to the fork alone, no broader than yours and expiring no later (key_expires_at, " +
		"RFC 3339, sets its expiry), for a sub-agent working on the attempt; its secret is shown only here (a replay answers key null).",
	run: attemptRun[workbench.ForkRequest, forkArgs]((*workbench.Attempts).Fork),
}, {
	name: "cairn_merge", title: "Merge a fork into its parent", destructive: true,
	description: "Three-way merge of fork id into the workbench it was forked from. A path only the fork changed since the " +
		"base is set on the parent to the fork's file (or deleted); a path both changed differently is a conflict: never " +
		"overwritten, listed in conflicts, and with propose_conflicts (apply) turned into a proposal against the parent's " +
		"head carrying both sides as evidence. First call with dry_run true (changes, conflicts, token); then call again " +
		"with the token (valid one hour): every change lands as one atomic command, only if nothing of the parent changed " +
		"since the preview, else Conflict with details.paths. Result: fork_id, parent_id, base, changes [{path, change, " +
		"from, to}], conflicts [{path, reason (both_changed, both_added, deleted_on_fork, deleted_on_parent, clash), base, " +
		"fork, parent, proposal_id, or not_proposed: why none can carry it}], counts, token (preview), applied, generation, replayed.",
	run: attemptRun[workbench.MergeRequest, mergeArgs]((*workbench.Attempts).Merge),
}, {
	name: "cairn_discard", title: "Discard a fork", destructive: true,
	description: "Release fork id: retire the snapshot of its parent it pinned (a snapshot you named stays; one another fork " +
		"has as its base stays until that fork goes), revoke the keys minted with it (mint_key), and delete the fork with its files; a key bound to the fork alone may " +
		"(retired_snapshot_id is then null: the parent's snapshots are not its to see). With request_id a retry after the fork is gone answers replayed true instead of NotFound. " +
		"Result: fork_id, parent_id, retired_snapshot_id, deleted, replayed.",
	run: func(ctx context.Context, svc *workbench.Service, agent string, args json.RawMessage) (workbench.Result, error) {
		in, werr := decodeArgs[discardArgs](args)
		if werr != nil {
			return nil, werr
		}
		return namingRequestID(svc.Attempts.Discard(ctx, agent, in.ID, in.RequestID))
	},
}}

// attemptRun is the run of cairn_fork, cairn_merge and cairn_rewind: it decodes the
// tool's arguments (A: the workbench input and request_id), builds its request in the
// session's root, and serves it with call (an Attempts method).
func attemptRun[Req any, A interface {
	request(agent string) (Req, *workbench.Error)
}](call func(*workbench.Attempts, context.Context, Req) (workbench.Result, error)) func(context.Context, *workbench.Service, string, json.RawMessage) (workbench.Result, error) {
	return func(ctx context.Context, svc *workbench.Service, agent string, args json.RawMessage) (workbench.Result, error) {
		in, werr := decodeArgs[A](args)
		if werr != nil {
			return nil, werr
		}
		req, rerr := in.request(agent)
		if rerr != nil {
			return nil, rerr
		}
		return namingRequestID(call(svc.Attempts, ctx, req))
	}
}

// namingRequestID answers a request id used before for another request as the tool's
// argument is named. The Service names the id as REST sends it ("idempotency_key", the
// Idempotency-Key header; api/rest/openapi.json); over MCP it is the argument request_id
// (schemas/cairn.json), so the InvalidArguments error names that (docs/workbench.md,
// "Beyond the contract"). Any other outcome is returned as it is.
func namingRequestID(res workbench.Result, err error) (workbench.Result, error) {
	var we *workbench.Error
	if !errors.As(err, &we) || we.Code != workbench.CodeInvalidArguments || we.Details["field"] != "idempotency_key" {
		return res, err
	}
	e := *we
	e.Details = maps.Clone(we.Details)
	e.Details["field"] = "request_id"
	e.Message = "request_id: " + strings.TrimPrefix(we.Message, "idempotency_key: ")
	return nil, &e
}

// requestID is a tool's optional request_id ("" for none).
func requestID(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// forkArgs is cairn_fork's input: workbench.ForkInput and a request id.
type forkArgs struct {
	workbench.ForkInput
	RequestID *string `json:"request_id"`
}

func (a forkArgs) request(agent string) (workbench.ForkRequest, *workbench.Error) {
	return a.Request(agent, requestID(a.RequestID))
}

// mergeArgs is cairn_merge's input: workbench.MergeInput and a request id.
type mergeArgs struct {
	workbench.MergeInput
	RequestID *string `json:"request_id"`
}

func (a mergeArgs) request(agent string) (workbench.MergeRequest, *workbench.Error) {
	return a.Request(agent, requestID(a.RequestID))
}

// discardArgs is cairn_discard's input.
type discardArgs struct {
	ID        string `json:"id"`
	RequestID string `json:"request_id"`
}
