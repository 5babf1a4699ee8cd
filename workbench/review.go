package workbench

// Review is what changed and what is proposed to change: proposals and their decisions
// (Propose, Decide, the artifact proposals of the OpenWOP facade), a file's history,
// diffs of files and of workbench states, and the change feed (Events).
//
// Invariants:
//
//   - Proposals are inert until accepted: no read, listing, grep, search, find or export
//     path reads them (they are not files); deciding needs the review scope, and with
//     Config.RequireDistinctReviewer never the proposer's own.
//   - An accept's readback compares the file's bytes with the stored proposal's (and
//     RFC 8785 equality for JSON, jcs.go).
//   - Diffs, histories and proposal and judgment listings hold their memory estimate of
//     the node's budget while they are built (admission.go, pages.go); a page is cut with
//     a next_cursor where its estimate would pass an eighth of the budget.
//   - The change feed reads its first page linearizably, then follows this node's
//     replica (Core.WaitApplied, Core.ReadViewAt): positions are shard versions, so what
//     it hands out after the first page is what any replica shows at those versions.
type Review struct {
	base *base
	// cfg is its configuration, defaulted and valid (config.go).
	cfg ReviewConfig
}
