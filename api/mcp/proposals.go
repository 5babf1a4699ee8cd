package mcp

import "github.com/cairnstore/cairn/workbench"

// proposalTools are the cairn profile's review-gated change tools (workbench
// proposals.go has the rules; REST serves the same under …/proposals).
var proposalTools = []toolDef{
	{
		name: "cairn_propose", title: "Propose a change", idempotent: true,
		description: "Propose a new body for one file of a workbench against an exact base_generation (0: the file must not " +
			"exist; absent: its head now), as text, base64 or an edit (old_string/new_string resolved against the head), with " +
			"a reason and evidence (files at generations, snapshots, commits; each must exist and is frozen with its digest into " +
			"context_digest). The proposal is inert: no read, list, grep, search, find or export shows it until it is accepted. " +
			"The same request_id with the same content answers the first proposal (replayed true); with other content Conflict " +
			"(details.reason request_reused). Result: proposal_id, state, base_generation, head_generation, stale, size_bytes, " +
			"digest_uri, evidence, context_digest, proposer, created_at, judgment (null), replayed.",
		run: bind((*workbench.Tools).Propose),
	},
	{
		name: "cairn_proposals", title: "List or read proposals", readOnly: true, idempotent: true,
		description: "List a workbench's proposals in creation order (filters path and state, paged: pass next_cursor back as " +
			"cursor), or with proposal_id one proposal (include_body: its bytes as text or base64 and its diff against the base), " +
			"or with judgments true the decisions. Every proposal reports stale (its base is not the file's head) and " +
			"head_generation. Result: proposals [...] or judgments [...], next_cursor, truncated; or one proposal's fields.",
		run: bind((*workbench.Tools).Proposals),
	},
	{
		name: "cairn_decide", title: "Accept or reject a proposal", destructive: true, idempotent: true,
		description: "Accept or reject a pending proposal (needs the review scope: PermissionDenied otherwise; on a node with " +
			"--require-distinct-reviewer, the proposer's own decision is PermissionDenied with details.reason self_review). accept publishes " +
			"the proposed bytes only if the file is still at the proposal's base: else Conflict with details.reason stale and " +
			"details.head_generation, nothing written. reject records only. One decision per proposal: the same submission_id and " +
			"content answers the first decision (replayed true); another decision is Conflict (details.reason already_decided). " +
			"Result: the proposal (state accepted or rejected), judgment {proposal_id, disposition, principal, decided_at, " +
			"base_generation, result_generation, context_digest, proposer, submission_id}, result_generation and readback " +
			"{bytes_equal, jcs_equal} for an accept.",
		run: bind((*workbench.Tools).Decide),
	},
}
