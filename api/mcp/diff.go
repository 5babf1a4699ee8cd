package mcp

import "github.com/cairnstore/cairn/workbench"

// diffTool is cairn_diff (issue 16): Review.Diff over MCP, the sides in
// workbench.ParseDiffSide's syntax.
var diffTool = toolDef{
	name: "cairn_diff", title: "Diff two versions", readOnly: true, idempotent: true,
	description: "Compare two versions of one workbench on the server. from and to (default live) each name live, " +
		"generation:<N> (a retained version of the file), snapshot:<id or name> or commit:<commit_identity>. " +
		"With path (e.g. outputs/report.md): the file's unified text diff, context lines around each change (default 3). " +
		"Lines are escaped as text (invalid UTF-8 and control characters as \\xNN, a carriage return before the newline as \\r, " +
		"backslashes doubled in escaped lines); a missing final newline is marked; at most 256 KiB and 1000 hunks (truncated). " +
		"Binary or over-16-MiB bodies get sizes and digests only (text false, reason). A side without the file compares as empty. " +
		"Result: from, to {side, exists, generation, size_bytes, digest_uri}, identical, text, reason, unified, hunks " +
		"[{old_start, old_lines, new_start, new_lines, lines [{op, text, escaped, no_newline}]}], hunk_count, lines_deleted, " +
		"lines_inserted, truncated, approximate. Without path: the paths added, removed or changed between two states (live, " +
		"snapshot, commit), in path order, at most limit (1..1000, default 100) per page: changes [{path, change, old, new " +
		"{digest_uri, size_bytes}}], next_cursor (pass back as cursor), truncated.",
	run: bind((*workbench.Tools).Diff),
}
