package client

import (
	"context"
	"encoding/json"
)

// Query answers an agent root's queries: the client listener's metadata search,
// aggregates, field catalog and workbench find over the root (…/agents/{agent}/search,
// aggregate, catalog, find), and grep of a workbench's contents (…/grep): the
// workbench_search, _aggregate, _catalog, _find and _grep tools. None changes anything,
// so every call is retried within the client's RetryPolicy. A Client builds it
// (Client.Query) on the client's own transport; it is safe for concurrent use.
type Query struct {
	tr *transport
}

// Predicate operators (docs/workbench.md: search predicates).
const (
	OpEq        = "eq"
	OpNe        = "ne"
	OpIn        = "in"
	OpPrefix    = "prefix"
	OpSuffix    = "suffix"
	OpContains  = "contains"
	OpGt        = "gt"
	OpGte       = "gte"
	OpLt        = "lt"
	OpLte       = "lte"
	OpExists    = "exists"
	OpNotExists = "not_exists"
)

// Predicate is one condition of a search or aggregate.
type Predicate struct {
	// Field is an indexed field: a built-in ("artifact.ext", "artifact.size_bytes", ...)
	// or one attached with PutOptions.Fields.
	Field string `json:"field"`
	// Op is one of the Op* constants.
	Op string `json:"op"`
	// Value is the operand: a string, an integer, a float, a bool, or for OpIn a slice
	// of them; nil for OpExists and OpNotExists.
	Value any `json:"value,omitempty"`
}

// SortKey is one sort key, most significant first.
type SortKey struct {
	Field string `json:"field"`
	// Direction is "asc" (or "", the default) or "desc".
	Direction string `json:"direction,omitempty"`
}

// SearchRequest is the input of Search (workbench_search). Zero fields are omitted.
type SearchRequest struct {
	// Workbench limits the search to one workbench; "" searches the whole agent root.
	Workbench string `json:"id,omitempty"`
	// Section and Path narrow the scope to a section and a directory in it.
	Section string `json:"section,omitempty"`
	Path    string `json:"path,omitempty"`
	// Predicates must all hold.
	Predicates []Predicate `json:"predicates,omitempty"`
	// Fields are returned with each hit; none means the built-in fields.
	Fields []string  `json:"fields,omitempty"`
	Sort   []SortKey `json:"sort,omitempty"`
	// Facets are fields whose values are counted over all matches.
	Facets []string `json:"facets,omitempty"`
	// Cursor continues from a previous page's NextCursor.
	Cursor string `json:"cursor,omitempty"`
	// Limit is hits per page, 1..10; 0 means the server's default (10).
	Limit int `json:"limit,omitempty"`
}

// SearchHit is one matching file.
type SearchHit struct {
	WorkbenchID string `json:"workbench_id"`
	// Section is "" for a file outside the five sections.
	Section      string `json:"section"`
	RelativePath string `json:"relative_path"`
	// Path is the presentation path.
	Path string `json:"path"`
	// Values holds the requested fields: strings, json.Number, bools; nil where the
	// file lacks one.
	Values map[string]any `json:"values"`
}

// FullPath is the hit's path inside its workbench ("outputs/model.bin").
func (h SearchHit) FullPath() string { return joinSection(h.Section, h.RelativePath) }

// FacetValue is one value of a facet and how many matches have it.
type FacetValue struct {
	Value any   `json:"value"`
	Count int64 `json:"count"`
}

// Facet counts the values of one field over all matches.
type Facet struct {
	Field string `json:"field"`
	// Values are the most frequent values (at most 20), most frequent first.
	Values []FacetValue `json:"values"`
	// DistinctCount is the number of distinct values among the matches; Truncated says
	// Values lists fewer.
	DistinctCount int64 `json:"distinct_count"`
	Truncated     bool  `json:"truncated"`
	Missing       int64 `json:"missing"`
	Other         int64 `json:"other"`
}

// SearchResult is one page of Search.
type SearchResult struct {
	WorkbenchID string `json:"workbench_id"`
	// Path is the presentation path of the scope searched.
	Path    string      `json:"path"`
	Matches []SearchHit `json:"matches"`
	// MatchCount is the number of matches over all pages.
	MatchCount int64   `json:"match_count"`
	Facets     []Facet `json:"facets"`
	// ReadVersion is the version every hit was read at.
	ReadVersion uint64 `json:"read_version"`
	Truncated   bool   `json:"truncated"`
	// NextCursor continues the search; "" on the last page.
	NextCursor string `json:"next_cursor"`
	RawJSON
}

// Search queries the indexed metadata of files in one workbench or the whole agent root
// (workbench_search), one page at a time.
//
// Errors: *Error InvalidArguments (a bad predicate, field or cursor), NotFound (no such
// workbench), ReadFenceChanged (409, retryable: files in scope changed since the
// cursor's first page).
func (q *Query) Search(ctx context.Context, agent string, req SearchRequest) (*SearchResult, error) {
	return postJSON[SearchResult](ctx, q.tr, q.tr.agentURL(agent)+"/search", req, replayable)
}

// Measure is one aggregate measure.
type Measure struct {
	Name string `json:"name"`
	// Op is "count", "sum", "avg", "min" or "max".
	Op string `json:"op"`
	// Field is the field to aggregate; "" for count.
	Field string `json:"field,omitempty"`
}

// AggregateRequest is the input of Aggregate (workbench_aggregate).
type AggregateRequest struct {
	Measures   []Measure   `json:"measures"`
	Workbench  string      `json:"id,omitempty"`
	Section    string      `json:"section,omitempty"`
	Path       string      `json:"path,omitempty"`
	Predicates []Predicate `json:"predicates,omitempty"`
	Sort       []SortKey   `json:"sort,omitempty"`
	GroupBy    []string    `json:"group_by,omitempty"`
	// Limit is groups to return, 1..100; 0 means the server's default (100).
	Limit int `json:"limit,omitempty"`
}

// AggregateGroup is one group of an aggregate.
type AggregateGroup struct {
	// Key holds the group-by values by field.
	Key   map[string]any `json:"key"`
	Count int64          `json:"count"`
	// Values holds the measure values by name (nil where undefined).
	Values map[string]any `json:"values"`
}

// AggregateResult is the result of Aggregate.
type AggregateResult struct {
	WorkbenchID string           `json:"workbench_id"`
	Path        string           `json:"path"`
	Groups      []AggregateGroup `json:"groups"`
	// GroupCount is the number of groups in all; RowCount those returned.
	GroupCount int64 `json:"group_count"`
	RowCount   int64 `json:"row_count"`
	// InputMatchCount is the number of files that matched the predicates.
	InputMatchCount int64  `json:"input_match_count"`
	ReadVersion     uint64 `json:"read_version"`
	Truncated       bool   `json:"truncated"`
	RawJSON
}

// Aggregate computes measures over matching files, grouped (workbench_aggregate).
func (q *Query) Aggregate(ctx context.Context, agent string, req AggregateRequest) (*AggregateResult, error) {
	return postJSON[AggregateResult](ctx, q.tr, q.tr.agentURL(agent)+"/aggregate", req, replayable)
}

// CatalogRequest is the input of Catalog (workbench_catalog).
type CatalogRequest struct {
	Workbench     string `json:"id,omitempty"`
	Section       string `json:"section,omitempty"`
	Path          string `json:"path,omitempty"`
	FieldPrefix   string `json:"field_prefix,omitempty"`
	IncludeFacets bool   `json:"include_facets,omitempty"`
}

// CatalogField describes one indexed field.
type CatalogField struct {
	Field   string `json:"field"`
	Builtin bool   `json:"builtin"`
	// Types are the JSON types the field holds ("string", "integer", "number", "boolean").
	Types     []string `json:"types"`
	FileCount int64    `json:"file_count"`
	// Operators are the predicate operators that can match the field.
	Operators []string `json:"operators"`
}

// CatalogFilter is a set of fields that accept the same predicate operators.
type CatalogFilter struct {
	Fields    []string `json:"fields"`
	Operators []string `json:"operators"`
}

// Catalog is what a scope's files can be queried by.
type Catalog struct {
	Facetable  []string        `json:"facetable"`
	Sortable   []string        `json:"sortable"`
	Filterable []CatalogFilter `json:"filterable"`
	// Facets are the fields' top values, with CatalogRequest.IncludeFacets.
	Facets []Facet `json:"facets"`
	// Fields describes each field.
	Fields []CatalogField `json:"fields"`
}

// CatalogResult is the result of Catalog.
type CatalogResult struct {
	WorkbenchID string  `json:"workbench_id"`
	Path        string  `json:"path"`
	FileCount   int64   `json:"file_count"`
	Catalog     Catalog `json:"catalog"`
	// CatalogEmpty says no file in scope has any field.
	CatalogEmpty bool   `json:"catalog_empty"`
	ReadVersion  uint64 `json:"read_version"`
	Truncated    bool   `json:"truncated"`
	RawJSON
}

// Catalog lists the fields present in scope and the operators each accepts
// (workbench_catalog).
func (q *Query) Catalog(ctx context.Context, agent string, req CatalogRequest) (*CatalogResult, error) {
	return postJSON[CatalogResult](ctx, q.tr, q.tr.agentURL(agent)+"/catalog", req, replayable)
}

// FindRequest is the input of Find (workbench_find).
type FindRequest struct {
	// Committed, when set, keeps only committed (true) or uncommitted (false) workbenches.
	Committed *bool `json:"committed,omitempty"`
	// ManifestPattern keeps workbenches whose stored run manifest contains it
	// (case-insensitive literal).
	ManifestPattern string `json:"manifest_pattern,omitempty"`
	// IncludeManifest returns each committed workbench's run manifest envelope.
	IncludeManifest bool   `json:"include_manifest,omitempty"`
	Cursor          string `json:"cursor,omitempty"`
	// Limit is workbenches per page, 1..100; 0 means the server's default (100).
	Limit int `json:"limit,omitempty"`
}

// FoundWorkbench is one workbench Find reports.
type FoundWorkbench struct {
	WorkbenchID string `json:"workbench_id"`
	Path        string `json:"path"`
	Committed   bool   `json:"committed"`
	FileCount   int64  `json:"file_count"`
	SizeBytes   int64  `json:"size_bytes"`
	// CommitIdentity, CommittedAtUnixSeconds and ManifestGeneration (the generation of
	// the run manifest the head commit wrote) describe the head commit; zero when
	// uncommitted. CommitIdentityVerified says the stored manifest is the one the commit
	// sealed and names its identity.
	CommitIdentity         string `json:"commit_identity"`
	CommitIdentityVerified bool   `json:"commit_identity_verified"`
	CommittedAtUnixSeconds int64  `json:"committed_at_unix_seconds"`
	ManifestGeneration     uint64 `json:"manifest_generation"`
	ContentDigestURI       string `json:"content_digest_uri"`
	ManifestDigestURI      string `json:"manifest_digest_uri"`
	EnvelopeDigestURI      string `json:"envelope_digest_uri"`
	// Manifest is the run manifest envelope (with FindRequest.IncludeManifest).
	Manifest json.RawMessage `json:"manifest"`
}

// FindResult is one page of Find.
type FindResult struct {
	Matches    []FoundWorkbench `json:"matches"`
	MatchCount int              `json:"match_count"`
	// EntryCount is the number of workbenches this call examined.
	EntryCount int    `json:"entry_count"`
	Truncated  bool   `json:"truncated"`
	NextCursor string `json:"next_cursor"`
	RawJSON
}

// Find lists the workbenches of agent in name order, filtered by committed state and run
// manifest contents (workbench_find). A page may hold fewer than Limit workbenches and
// still have a NextCursor: each call examines a bounded number.
func (q *Query) Find(ctx context.Context, agent string, req FindRequest) (*FindResult, error) {
	return postJSON[FindResult](ctx, q.tr, q.tr.agentURL(agent)+"/find", req, replayable)
}

// GrepRequest is the input of Grep (workbench_grep without id).
type GrepRequest struct {
	// Pattern is a case-insensitive literal (not a regex). Without Patterns, '|'
	// separates alternatives.
	Pattern string `json:"pattern"`
	// Patterns are more literal alternatives ('|' is then an ordinary character).
	Patterns []string `json:"patterns,omitempty"`
	// Recursive searches the whole subtree; otherwise only the files directly in the
	// target directory.
	Recursive bool `json:"recursive"`
	// Section and Path select what to search: a section, a directory or a file in it;
	// both "" search the whole workbench.
	Section string `json:"section,omitempty"`
	Path    string `json:"path,omitempty"`
	// Glob selects files by base name ('*', '?').
	Glob   string `json:"glob,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	// Limit is matching lines per page, 1..300; 0 means the server's default (100).
	Limit int `json:"limit,omitempty"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	// Path is the file's presentation path.
	Path         string `json:"path"`
	Section      string `json:"section"`
	RelativePath string `json:"relative_path"`
	LineNumber   int64  `json:"line_number"`
	// Snippet is the line, or at most 240 characters of it around the first match.
	Snippet string `json:"snippet"`
}

// FullPath is the match's file path inside the workbench ("logs/run.log").
func (m GrepMatch) FullPath() string { return joinSection(m.Section, m.RelativePath) }

// GrepResult is one page of Grep.
type GrepResult struct {
	WorkbenchID   string      `json:"workbench_id"`
	WorkbenchPath string      `json:"workbench_path"`
	Matches       []GrepMatch `json:"matches"`
	FilesScanned  int64       `json:"files_scanned"`
	// NextCursor continues the search; "" when it is done. A page may hold fewer
	// matches than Limit (even none) and still have one: each call does bounded work.
	NextCursor string `json:"next_cursor"`
	Truncated  bool   `json:"truncated"`
	RawJSON
}

// Grep searches the contents of workbench wb's live files (workbench_grep).
//
// Errors: *Error InvalidArguments (empty pattern, bad glob or cursor), NotFound,
// ReadFenceChanged (409, retryable: the workbench changed since the cursor's first page).
func (q *Query) Grep(ctx context.Context, agent, wb string, req GrepRequest) (*GrepResult, error) {
	return postJSON[GrepResult](ctx, q.tr, q.tr.workbenchURL(agent, wb)+"/grep", req, replayable)
}

// joinSection builds a path inside a workbench from a result's section and relative path.
func joinSection(section, rel string) string {
	switch {
	case section == "":
		return rel
	case rel == "":
		return section
	}
	return section + "/" + rel
}
