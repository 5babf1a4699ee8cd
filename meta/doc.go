// Package meta is Cairn's metadata core: the deterministic state machine (FSM) of one
// shard, its records, its commands and its MVCC reads.
//
// The FSM is pure. Apply never reads the clock, never does I/O, never draws randomness and
// never allocates ids from anything but counters in its own state: time arrives in the
// command (stamped by the leader), the shard version is the Raft log index handed to Apply
// plus the shard's version shift (0 until a root moved in, move_import.go).
// Two replicas that apply the same log hold identical state, byte for byte, and give the
// same answer to every command (the property tests in this package check exactly that
// against a naive model).
//
// Invariants callers rely on:
//
//   - A generation is the shard version of the command that made a body visible, so it is
//     strictly increasing per shard and never reused, even after delete and re-create.
//   - A path is a file or an implicit directory, never both (docs/architecture.md#the-metadata-core).
//   - A command either applies whole or not at all: every check runs before any mutation.
//   - Records reachable from a View are never mutated; writers replace them. A View is an
//     O(1) copy-on-write snapshot that stays consistent while applies go on.
//     A View is never mutated either, so FSM.View hands the same one to every caller
//     until the next Apply or Restore.
//   - Restore replaces all state; Snapshot streams it without one giant allocation, in the
//     oldest snapshot format that holds the state, so that a replica of the previous
//     release can install it during a rolling upgrade until a command only the newer
//     format holds (a quota, a backup hold, a workbench deletion, a proposal) was applied.
//   - Attribution comes from the command: every revision (Entry), workbench revision,
//     snapshot, commit and restore record names the Producer (principal id and surface) of
//     the command that made it (Header.Principal, Header.Surface), except the revisions a
//     restore writes, which name the producer that began it, whoever proposes its later
//     steps. Data written before producers existed decodes with the zero Producer.
//   - Every agent root's Usage (workbenches, live files and their bytes, held snapshots)
//     equals at every version a recomputation from the workbench records and held
//     snapshots, and a command that would grow a dimension past the root's Quota is
//     rejected whole with ResourceExhausted naming the quota, its limit and the usage
//     (quota.go). Quotas and usage are part of the Raft snapshot. Likewise a Put under a
//     cap on its workbench's live files (Put.MaxWorkbenchFiles, the proposer's
//     configuration) that would create a file in a workbench holding that many is
//     rejected whole (quota files_per_workbench); a Put that replaces a live file never is.
//   - Every path keeps the elements its root's history retention retains (retention.go:
//     the newest Versions of its current life or everything superseded less than Age ago,
//     at most MaxVersions, a prefix of its history that only shrinks) plus what holds pin;
//     everything else is pruned in bounded retention steps that release its blob
//     references. HistoryView.Versions and HistoryView.FileAt read exactly what is
//     retained.
//   - Deleting a workbench frees its name at once; its incarnation's records go in bounded
//     retention steps that release their blob references (purge.go). No record of a
//     deleted incarnation ever resolves under a new workbench of the same name.
//   - Proposals are records of their own (proposal.go): nothing of one reaches the path
//     chains, directory counters or secondary index until a decision accepts it, as one
//     compare-and-swap publish at its base generation in the same command. While kept, its
//     body's blobs hold references and its evidence holds pin history, so neither is
//     collected or pruned; exactly one decision is ever recorded per proposal.
//   - Every committed change of an agent root is one or more change-feed events
//     (feed.go) at positions (shard version, index within the command), the same on every
//     replica; the feed keeps Options.FeedRetention of command time and at most
//     Options.FeedMaxPerRoot events per root, pruned in bounded retention steps, and
//     remembers the newest position it dropped, so a read after an older one is a
//     FeedTruncatedError, never a silent gap.
//   - A root moves between shards by its records (move.go): from a source's fence to the
//     target's confirmation no command but the move's applies to it on either shard, and
//     no blob reference count changes because of the move. The version shift only grows,
//     and after an import every version of the shard exceeds every version the imported
//     records name. A record larger than a move chunk travels in parts and lands only with
//     its last one (move_parts.go): no table ever holds part of a record.
//
// meta imports nothing else of Cairn's; the shard package feeds it Raft log entries and the
// api package reads it through Views.
//
// Both halves are cut by concern. A command is applied by an applier made for it, whose
// parts (files, feed, lifecycle, proposals, purge, moves) share one per-command context
// (fsm.go, applier). A View answers a workbench's files itself and hands out facets for
// the rest (History, Queries, Feed, Proposals, Lifecycle, Moves, Shard; view.go), each
// reading only through its View.
//
// # Queries
//
// Version-consistent queries over file metadata: the engine behind workbench_search,
// workbench_aggregate and workbench_catalog (docs/workbench.md "search / aggregate / catalog").
// Every query reads one View, so it sees exactly the files visible at one shard version.
//
// # Query fields
//
// Every file has the built-in fields below (BuiltinFields) plus the fields its writer
// attached (Entry.Fields, names validated by ValidateFieldName):
//
//	artifact.section       string  first path component when it is input, scripts,
//	                               outputs, logs or metadata and the file lies below it;
//	                               absent otherwise (null on the wire)
//	artifact.name          string  the last path component
//	artifact.ext           string  the basename's text after its last '.', ASCII lower-case;
//	                               absent when the basename has no '.', starts with its only
//	                               '.' (".bashrc") or ends with '.'
//	artifact.size_bytes    int     bytes
//	artifact.content_type  string
//	artifact.generation    int     the shard version that published the body
//	artifact.updated_at    string  RFC 3339 UTC with milliseconds (2026-11-29T23:17:56.123Z),
//	                               so byte order is time order
//	artifact.digest        string  "sha256:" + 64 lower-case hex digits
//	artifact.producer      string  who wrote the revision, as workbench_stat's card.producer
//	                               shows it (Producer.String: "alice via rest/put");
//	                               absent when unknown (revisions written before producers
//	                               were recorded, or by the node's own work)
//	artifact.producer_principal  string  its principal id; absent when none
//	artifact.producer_surface    string  its surface and tool ("rest/put",
//	                                     "mcp/workbench_append"); absent when none
//
// # Query scope
//
// A Scope is one workbench or every visible workbench of an agent root (not staging, and
// created at or before the view's version), optionally narrowed to a path subtree compared
// component-wise: Path "a" holds the file "a" and everything below "a/", never "ab".
//
// # Query predicates (all must hold)
//
// Values are JSON scalars: strings, numbers (Go integers, floats, json.Number; an integral
// literal that fits int64 is an int, anything else a float), booleans, or for "in" an array
// of 1..MaxInValues scalars. Strings are at most MaxPredicateStringBytes bytes.
//
//	eq, ne              a scalar. Numbers are equal when numerically equal (3 = 3.0, exactly,
//	                    also beyond 2^53); strings when byte-equal; booleans when equal;
//	                    values of different types are never equal. ne is exactly "has the
//	                    field and not eq".
//	in                  an array of scalars: eq to any of them.
//	prefix, suffix,     a string; matches string values only (bytes, no case folding).
//	contains
//	gt, gte, lt, lte    a number (matches numeric values, compared numerically across int and
//	                    float) or a string (matches string values, compared byte-wise). A
//	                    boolean is InvalidArguments.
//	exists, not_exists  no value (nil).
//
// A file lacking the field matches only not_exists (SQL-like: a missing field is neither
// equal nor unequal to anything). On an attached field, whose type may differ from file to
// file, a value of another type simply does not match. On a built-in field, whose type is
// fixed, an operator or value that could never match is InvalidArguments (so a typo like
// artifact.size_bytes gt "10" is reported, not silently empty). Errors name the argument:
// "predicates[2].value", "predicates[0].op", "predicates[1].value[3]".
//
// # Query order and paging
//
// Sort keys compare values of one type as above; across types numbers come before strings,
// strings before booleans (false before true); desc reverses that. A file lacking a sort
// field sorts after every file that has it, in both directions. Ties (and the default order
// without sort keys) go by workbench name, then path component-wise, both ascending, so the
// order is total. A page ends with a Position (the last hit's sort values and identity);
// the caller seals it into its cursor and passes it back as Query.After to resume strictly
// after it. At a fixed shard version, paging visits every match exactly once.
//
// Facets count values over all matches, not only the page: numerically equal values count
// as one (reported as an int when integral), at most MaxFacetValues per field, most
// frequent first, ties by value order.
//
// # Query aggregates
//
// Matches are grouped by the group_by fields (a file lacking one groups under null, Kind 0);
// without group_by there is exactly one group, even over no matches. Measures:
//
//	count          files in the group (with a field: files in the group that have it)
//	sum            sum of the numeric values: an int when every value is an int and the sum
//	               fits int64, else a float; null when the group has no numeric value (or a
//	               float sum overflows); non-numeric values are ignored
//	avg            float mean of the numeric values; null when there are none
//	min, max       over the numeric values when the group has any, else over the string
//	               values (byte order); booleans are ignored; null when nothing qualifies
//
// Values are folded in the canonical order (workbench, path), so float sums are identical
// whichever plan produced the matches. Groups sort by the sort keys (measure names or
// group_by fields; nulls last in both directions), then by group key ascending; at most
// limit groups are returned and TotalGroups says how many there were. An aggregate that
// would form more than MaxAggregateGroups groups is ResourceExhausted (Field group_by).
//
// # Query cost
//
// Every query is bounded by its scope. A scan visits each file in scope once (B-tree steps,
// one version-chain walk per path). On a live view, Search and Aggregate may instead take
// candidates from the index range of the most selective indexable predicate (eq, in,
// prefix, gt, gte, lt, lte, exists); estimating selectivity counts at most as many index
// keys as there are live files in scope, so a query costs at most about twice a scan.
// Views at older versions (snapshots) always scan. Then O(M) to check and facet the M
// candidates and O(M log limit) to page. Catalog always scans; with facets it keeps one
// counter per distinct (field, value) in scope. Memory is at most one match, one group and
// one counter per facet for each file in scope: ScopeFiles counts those files from the
// directory counters, without visiting one, so a caller can bound a query before it runs.
package meta
