package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// Page bounds of the query tools (docs/workbench.md): the CLI follows cursors with pages of
// at most this many results.
const (
	maxSearchPage = 10
	maxGrepPage   = 300
)

// whereOps maps the operators --where accepts to the contract's: the names themselves
// and the usual comparison symbols.
var whereOps = map[string]string{
	"eq": client.OpEq, "ne": client.OpNe, "in": client.OpIn, "prefix": client.OpPrefix, "suffix": client.OpSuffix,
	"contains": client.OpContains, "gt": client.OpGt, "gte": client.OpGte, "lt": client.OpLt, "lte": client.OpLte,
	"exists": client.OpExists, "not_exists": client.OpNotExists,
	"=": client.OpEq, "==": client.OpEq, "!=": client.OpNe, ">": client.OpGt, ">=": client.OpGte, "<": client.OpLt, "<=": client.OpLte,
}

// symbolOps are the symbols a compact --where ("accuracy>=0.9") may use, longest first.
var symbolOps = []string{">=", "<=", "!=", "==", "=", ">", "<"}

// parseWhere reads one --where condition: "FIELD OP [VALUE]" (FIELD, OP and VALUE
// separated by blanks; VALUE is the rest of the text) or, with a symbol operator, the
// compact "FIELD>=VALUE".
func parseWhere(s string) (client.Predicate, error) {
	s = strings.TrimSpace(s)
	field, rest := cutSpace(s)
	op, value := cutSpace(rest)
	if _, known := whereOps[op]; !known {
		// The compact form: the first symbol operator splits FIELD from VALUE.
		field, op, value = "", "", ""
		for i := 0; i < len(s) && op == ""; i++ {
			for _, sym := range symbolOps {
				if strings.HasPrefix(s[i:], sym) {
					field, op, value = strings.TrimSpace(s[:i]), sym, strings.TrimSpace(s[i+len(sym):])
					break
				}
			}
		}
	}
	name, known := whereOps[op]
	switch {
	case field == "" || !known:
		return client.Predicate{}, usageErrorf("--where %q: want FIELD OP [VALUE] (ops: eq ne in prefix suffix contains gt gte lt lte exists not_exists, or = != > >= < <=)", s)
	case name == client.OpExists || name == client.OpNotExists:
		if value != "" {
			return client.Predicate{}, usageErrorf("--where %q: %s takes no value", s, op)
		}
		return client.Predicate{Field: field, Op: name}, nil
	case value == "":
		return client.Predicate{}, usageErrorf("--where %q: %s needs a value", s, op)
	case name == client.OpIn:
		v := parseValue(value)
		if _, isList := v.([]any); !isList {
			var items []any
			for _, item := range strings.Split(value, ",") {
				items = append(items, parseValue(strings.TrimSpace(item)))
			}
			v = items
		}
		return client.Predicate{Field: field, Op: name, Value: v}, nil
	}
	return client.Predicate{Field: field, Op: name, Value: parseValue(value)}, nil
}

// cutSpace splits s at its first run of blanks.
func cutSpace(s string) (head, tail string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// parseValue reads a --where value as the server reads Cairn-Field-* headers: JSON when
// it is JSON (0.93, 12, true, "quoted text", [1,2]), else the plain text. Numbers keep
// the digits as written.
func parseValue(s string) any {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s
	}
	if _, err := dec.Token(); err != io.EOF {
		return s
	}
	if _, isObject := v.(map[string]any); isObject {
		return s
	}
	return v
}

// parseSort reads one --sort key: FIELD, FIELD:asc or FIELD:desc.
func parseSort(s string) (client.SortKey, error) {
	field, dir, found := strings.Cut(s, ":")
	if field == "" || found && dir != "asc" && dir != "desc" {
		return client.SortKey{}, usageErrorf("--sort %q: want FIELD, FIELD:asc or FIELD:desc", s)
	}
	return client.SortKey{Field: field, Direction: dir}, nil
}

// searchLong is the help text of cairn search: fields, conditions and output.
const searchLong = `Search the indexed metadata of files: in workbench ID, or across every workbench of
the agent root when ID is absent. Every file has the built-in fields artifact.section,
artifact.name, artifact.ext, artifact.size_bytes, artifact.content_type,
artifact.generation, artifact.updated_at, artifact.digest and artifact.producer
(who wrote it, "alice via rest/put"; its parts artifact.producer_principal and
artifact.producer_surface); writers attach more
(cairn put --field NAME=VALUE, or Cairn-Field-NAME headers over REST).

--where FIELD OP VALUE   a condition; repeat for more (all must hold). Quote it as one
                         argument. OP is eq ne gt gte lt lte prefix suffix contains in
                         exists not_exists, or = != > >= < <= (then the blanks are
                         optional: 'accuracy>=0.9'). VALUE is JSON when it parses as JSON
                         (0.9, 12, true, "a b"), else the text as written; for in, a JSON
                         array or a comma-separated list; exists and not_exists take none.
--sort FIELD[:desc]      sort key, most significant first (default ascending).
--facet FIELD            count the values of FIELD over all matches.
--field FIELD            print FIELD with each hit (default: the fields of --where and
                         --sort, else artifact.size_bytes).

Prints one line per file (path, then FIELD=value), the facets, and "N of TOTAL files".
--limit caps the files printed (pages are followed; 0 = all); when more remain, the
last line gives the --cursor that continues. With --json, one page (--limit at most
10) is printed as the server's result object.

  cairn search run-42 --where 'accuracy > 0.9' --sort accuracy:desc --facet owner
  cairn search --where 'artifact.ext eq csv' --where 'owner in alice,bob' --limit 50`

func newSearchCommand() *cobra.Command {
	var (
		wheres, sorts, facets, fields []string
		cursor                        string
		limit                         int
	)
	cmd := &cobra.Command{
		Use:   "search [ID] [--where 'FIELD OP VALUE']... [--sort FIELD[:desc]]... [--facet FIELD]... [--limit N]",
		Short: "Find files by their metadata fields, in one workbench or all of an agent's",
		Long:  searchLong,
		Args:  argsBetween(0, 1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringArrayVar(&wheres, "where", nil, "condition 'FIELD OP VALUE' (repeatable)")
	cmd.Flags().StringArrayVar(&sorts, "sort", nil, "sort key FIELD[:asc|:desc] (repeatable)")
	cmd.Flags().StringArrayVar(&facets, "facet", nil, "count the values of FIELD (repeatable)")
	cmd.Flags().StringArrayVar(&fields, "field", nil, "print FIELD with each hit (repeatable)")
	scope := addScopeFlags(cmd)
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue from a previous search's cursor (same arguments)")
	cmd.Flags().IntVar(&limit, "limit", maxSearchPage, "files to print, 0 for all (with --json: the page size, 1..10)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if limit < 0 {
			return usageErrorf("--limit must not be negative")
		}
		if len(args) == 1 {
			scope.workbench = args[0]
		}
		req := client.SearchRequest{Workbench: scope.workbench, Section: scope.section, Path: scope.path, Facets: facets, Cursor: cursor}
		var err error
		if req.Predicates, req.Sort, err = parseQuery(wheres, sorts); err != nil {
			return err
		}
		req.Fields = fields
		if len(fields) == 0 && !o.json {
			req.Fields = searchFields(req)
		}
		q := newClient(cmd).Query
		if o.json {
			if cmd.Flags().Changed("limit") {
				req.Limit = limit
			}
			res, err := q.Search(cmd.Context(), o.agent, req)
			if err != nil {
				return err
			}
			if err := checkWhereFields(cmd.Context(), q, o.agent, *scope, wheres, req.Predicates, res.MatchCount); err != nil {
				return err
			}
			return printRaw(cmd.OutOrStdout(), res.Raw)
		}
		return printSearch(cmd, q, o.agent, *scope, wheres, req, limit)
	}
	return cmd
}

// printSearch prints the pages of a search, up to limit files (0 = all): one line per file
// with its fields, the facets of the first page, and "N of TOTAL files" with the cursor
// that continues when more remain.
func printSearch(cmd *cobra.Command, q *client.Query, agent string, scope queryScope, wheres []string, req client.SearchRequest, limit int) error {
	ctx := cmd.Context()
	out := bufio.NewWriter(cmd.OutOrStdout())
	var (
		first   *client.SearchResult
		printed int64
		next    string
	)
	for {
		req.Limit = maxSearchPage
		if limit > 0 {
			req.Limit = min(maxSearchPage, limit-int(printed))
		}
		res, err := q.Search(ctx, agent, req)
		if err != nil {
			return err
		}
		if first == nil {
			first = res
			if err := checkWhereFields(ctx, q, agent, scope, wheres, req.Predicates, res.MatchCount); err != nil {
				return err
			}
		}
		for _, h := range res.Matches {
			name := h.FullPath()
			if req.Workbench == "" {
				name = h.WorkbenchID + "/" + name
			}
			fmt.Fprintf(out, "%s%s\n", displayed(name), formatFields(h.Values, req.Fields))
			printed++
		}
		next = res.NextCursor
		if next == "" || limit > 0 && printed >= int64(limit) {
			break
		}
		req.Cursor = next
	}
	for _, f := range first.Facets {
		fmt.Fprintf(out, "facet %s:%s\n", f.Field, formatFacet(f))
	}
	noun := "files"
	if first.MatchCount == 1 {
		noun = "file"
	}
	fmt.Fprintf(out, "%d of %d %s", printed, first.MatchCount, noun)
	if next != "" {
		fmt.Fprintf(out, "; more with --cursor %s", next)
	}
	fmt.Fprintln(out)
	return out.Flush()
}

// searchFields are the fields printed when --field is not given: the ones the
// conditions and sort keys name (what the user is looking at), else the size.
func searchFields(req client.SearchRequest) []string {
	var fs []string
	add := func(f string) {
		for _, have := range fs {
			if have == f {
				return
			}
		}
		fs = append(fs, f)
	}
	for _, p := range req.Predicates {
		add(p.Field)
	}
	for _, k := range req.Sort {
		add(k.Field)
	}
	if len(fs) == 0 {
		fs = []string{"artifact.size_bytes"}
	}
	return fs
}

// formatFields renders a hit's fields as "  name=value ..." in the order of names.
func formatFields(values map[string]any, names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString("  " + n + "=" + formatValue(values[n]))
	}
	return b.String()
}

// formatValue prints a field value: numbers and booleans as JSON, strings bare unless
// they would read as something else (empty, blanks, '='), null as "null".
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if x == "" || strings.ContainsAny(x, " \"=") || strings.ContainsFunc(x, func(r rune) bool { return !unicode.IsPrint(r) }) {
			return strconv.Quote(x)
		}
		return x
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(buf.String())
}

func formatFacet(f client.Facet) string {
	var b strings.Builder
	for i, v := range f.Values {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %d", formatValue(v.Value), v.Count)
	}
	if f.Other > 0 {
		fmt.Fprintf(&b, ", other %d", f.Other)
	}
	if f.Missing > 0 {
		fmt.Fprintf(&b, ", missing %d", f.Missing)
	}
	return b.String()
}

func newGrepCommand() *cobra.Command {
	var (
		section, path, glob, cursor string
		recursive                   bool
		limit                       int
	)
	cmd := &cobra.Command{
		Use:   "grep ID PATTERN [--section S] [--path P] [--glob G] [-r] [--limit N]",
		Short: "Search the contents of a workbench's files",
		Long: `Print the lines of workbench ID's files that contain PATTERN: a case-insensitive
literal (not a regular expression); '|' separates alternatives ('error|warn').
Files containing NUL bytes are skipped.

What is searched: the files directly in --path of --section (both absent: the workbench
top, which normally holds no files), or with -r everything below it; --path may also
name a single file. --glob keeps files whose base name matches ('*' and '?').

Prints PATH:LINE:TEXT per match, PATH inside the workbench (TEXT is at most 240
characters around the first match). Exits 0 when a line matched, 1 when none did, 2 on
an error, as grep(1) does. --limit caps the matches printed (pages are
followed; 0 = all); when more remain, stderr gives the --cursor that continues.
With --json, one page (--limit at most 300) is printed as the server's result object.

  cairn grep run-42 'loss|nan' -r --section logs
  cairn grep run-42 TODO -r --glob '*.py'`,
		Args:        argsBetween(2, 2),
		Annotations: map[string]string{errorExitAnnotation: "2"},
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&section, "section", "", "search this section (default: the whole workbench)")
	cmd.Flags().StringVar(&path, "path", "", "search this directory or file of --section")
	cmd.Flags().StringVar(&glob, "glob", "", "only files whose base name matches ('*', '?')")
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "search subdirectories too")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue from a previous grep's cursor (same arguments)")
	cmd.Flags().IntVar(&limit, "limit", 100, "matches to print, 0 for all (with --json: the page size, 1..300)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if limit < 0 {
			return usageErrorf("--limit must not be negative")
		}
		wb := args[0]
		req := client.GrepRequest{Pattern: args[1], Recursive: recursive, Section: section, Path: path, Glob: glob, Cursor: cursor}
		q := newClient(cmd).Query
		if o.json {
			if cmd.Flags().Changed("limit") {
				req.Limit = limit
			}
			res, err := q.Grep(cmd.Context(), o.agent, wb, req)
			if err != nil {
				return err
			}
			if err := printRaw(cmd.OutOrStdout(), res.Raw); err != nil {
				return err
			}
			if len(res.Matches) == 0 && res.NextCursor == "" {
				return errNoMatch
			}
			return nil
		}
		out := bufio.NewWriter(cmd.OutOrStdout())
		printed := 0
		for {
			req.Limit = maxGrepPage
			if limit > 0 {
				req.Limit = min(maxGrepPage, limit-printed)
			}
			res, err := q.Grep(cmd.Context(), o.agent, wb, req)
			if err != nil {
				out.Flush()
				return err
			}
			for _, m := range res.Matches {
				fmt.Fprintf(out, "%s:%d:%s\n", displayed(m.FullPath()), m.LineNumber, m.Snippet)
				printed++
			}
			if res.NextCursor == "" {
				break
			}
			if limit > 0 && printed >= limit {
				if err := out.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: more matches; continue with --cursor %s\n", res.NextCursor)
				return nil
			}
			req.Cursor = res.NextCursor
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if printed == 0 {
			return errNoMatch
		}
		return nil
	}
	return cmd
}
