package main

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// maxAggregateGroups is the most groups one aggregate returns (docs/workbench.md).
const maxAggregateGroups = 100

// addMetadataCommands registers the commands over indexed metadata besides search:
// aggregate, catalog and find.
func addMetadataCommands(root *cobra.Command) {
	root.AddCommand(newAggregateCommand(), newCatalogCommand(), newFindCommand())
}

// queryScope is the scope flags search, aggregate and catalog share: an optional
// workbench ID argument, --section and --path.
type queryScope struct {
	workbench, section, path string
}

func addScopeFlags(cmd *cobra.Command) *queryScope {
	s := &queryScope{}
	cmd.Flags().StringVar(&s.section, "section", "", "only files in this section")
	cmd.Flags().StringVar(&s.path, "path", "", "only files under this directory of --section")
	return s
}

// checkWhereFields explains a result of zero matches: a --where condition on a field that no file
// in scope has (a typo, most likely) is an error naming the condition, not "0 files".
// not_exists conditions are exempt (they match files that lack the field). Built-in
// fields (artifact.*) are checked by the server itself.
func checkWhereFields(ctx context.Context, q *client.Query, agent string, scope queryScope, wheres []string, preds []client.Predicate, matches int64) error {
	if matches > 0 {
		return nil
	}
	var suspect []int
	for i, p := range preds {
		if p.Op != client.OpNotExists && !strings.HasPrefix(p.Field, "artifact.") {
			suspect = append(suspect, i)
		}
	}
	if len(suspect) == 0 {
		return nil
	}
	cat, err := q.Catalog(ctx, agent, client.CatalogRequest{Workbench: scope.workbench, Section: scope.section, Path: scope.path})
	if err != nil {
		return nil // the empty result stands; the catalog was only to explain it
	}
	var known []string
	for _, f := range cat.Catalog.Fields {
		if !f.Builtin {
			known = append(known, f.Field)
		}
	}
	for _, i := range suspect {
		if slices.Contains(known, preds[i].Field) {
			continue
		}
		hint := "no file in scope has any field of its own"
		if len(known) > 0 {
			hint = "fields in scope: " + strings.Join(known[:min(len(known), 12)], ", ")
			if len(known) > 12 {
				hint += ", ..."
			}
		}
		return usageErrorf("--where %q: no file in scope has the field %q (%s; see cairn catalog)", wheres[i], preds[i].Field, hint)
	}
	return nil
}

// parseEach parses every value of a repeated flag with parse, in order; the first error
// stops it. No values: nil.
func parseEach[T any](values []string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, v := range values {
		x, err := parse(v)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// parseQuery parses every --where condition and every --sort key of search and aggregate.
func parseQuery(wheres, sorts []string) ([]client.Predicate, []client.SortKey, error) {
	preds, err := parseEach(wheres, parseWhere)
	if err != nil {
		return nil, nil, err
	}
	keys, err := parseEach(sorts, parseSort)
	if err != nil {
		return nil, nil, err
	}
	return preds, keys, nil
}

// measureOps are the aggregate measure operators.
var measureOps = []string{"count", "sum", "avg", "min", "max"}

// parseMeasure reads one --measure: [NAME=]OP[:FIELD] ("count", "sum:artifact.size_bytes",
// "best=max:accuracy"). The default NAME is OP, or OP_FIELD with FIELD's dots as '_'.
func parseMeasure(s string) (client.Measure, error) {
	name, spec, named := strings.Cut(s, "=")
	if !named {
		spec = s
	}
	op, field, _ := strings.Cut(spec, ":")
	switch {
	case !slices.Contains(measureOps, op):
		return client.Measure{}, usageErrorf("--measure %q: want [NAME=]OP[:FIELD] with OP one of %s", s, strings.Join(measureOps, ", "))
	case op == "count" && field != "":
		return client.Measure{}, usageErrorf("--measure %q: count takes no field", s)
	case op != "count" && field == "":
		return client.Measure{}, usageErrorf("--measure %q: %s needs a field (%s:FIELD)", s, op, op)
	}
	if !named {
		name = op
		if field != "" {
			name = op + "_" + strings.ReplaceAll(field, ".", "_")
		}
	}
	if name == "" {
		return client.Measure{}, usageErrorf("--measure %q: the name before = is empty", s)
	}
	return client.Measure{Name: name, Op: op, Field: field}, nil
}

func newAggregateCommand() *cobra.Command {
	var (
		measures, groupBy, wheres, sorts []string
		limit                            int
	)
	cmd := &cobra.Command{
		Use:   "aggregate [ID] [--measure [NAME=]OP[:FIELD]]... [--group-by FIELD]... [--where COND]...",
		Short: "Count, sum, average, min and max metadata fields over matching files, grouped",
		Long: `Compute measures over the files matching every --where (workbench_aggregate): in
workbench ID, or across every workbench of the agent root when ID is absent.

--measure [NAME=]OP[:FIELD]  OP is count (no FIELD), sum, avg, min or max; repeatable;
                             default: count. NAME defaults to OP or OP_FIELD.
--group-by FIELD             one group per distinct value (combination); repeatable.
--where, --sort              as in cairn search (sort by group-by fields or measure names).

Prints one row per group (the group-by values, then the measures) and "N groups over M
files". --limit caps the groups (1..100). --json prints the server's result object.

  cairn aggregate run-42 --group-by artifact.ext --measure count --measure sum:artifact.size_bytes
  cairn aggregate --where 'accuracy exists' --measure best=max:accuracy --group-by owner`,
		Args: argsBetween(0, 1),
	}
	o := addOutputFlags(cmd)
	scope := addScopeFlags(cmd)
	cmd.Flags().StringArrayVar(&measures, "measure", nil, "measure [NAME=]OP[:FIELD] (repeatable; default count)")
	cmd.Flags().StringArrayVar(&groupBy, "group-by", nil, "group by FIELD (repeatable)")
	cmd.Flags().StringArrayVar(&wheres, "where", nil, "condition 'FIELD OP VALUE' (repeatable)")
	cmd.Flags().StringArrayVar(&sorts, "sort", nil, "sort key FIELD[:asc|:desc] (repeatable)")
	cmd.Flags().IntVar(&limit, "limit", 0, "most groups, 1..100 (0: the server's default, 100)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if limit < 0 || limit > maxAggregateGroups {
			return usageErrorf("--limit must be between 0 and %d", maxAggregateGroups)
		}
		if len(args) == 1 {
			scope.workbench = args[0]
		}
		if len(measures) == 0 {
			measures = []string{"count"}
		}
		req := client.AggregateRequest{Workbench: scope.workbench, Section: scope.section, Path: scope.path, GroupBy: groupBy, Limit: limit}
		var err error
		if req.Measures, err = parseEach(measures, parseMeasure); err != nil {
			return err
		}
		if req.Predicates, req.Sort, err = parseQuery(wheres, sorts); err != nil {
			return err
		}
		q := newClient(cmd).Query
		res, err := q.Aggregate(cmd.Context(), o.agent, req)
		if err != nil {
			return err
		}
		if err := checkWhereFields(cmd.Context(), q, o.agent, *scope, wheres, req.Predicates, res.InputMatchCount); err != nil {
			return err
		}
		if o.json {
			return printRaw(cmd.OutOrStdout(), res.Raw)
		}
		return printAggregate(cmd, req, res)
	}
	return cmd
}

func printAggregate(cmd *cobra.Command, req client.AggregateRequest, res *client.AggregateResult) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	var head []string
	head = append(head, req.GroupBy...)
	for _, m := range req.Measures {
		head = append(head, m.Name)
	}
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(head, "\t")))
	for _, g := range res.Groups {
		var row []string
		for _, f := range req.GroupBy {
			row = append(row, displayed(formatValue(g.Key[f])))
		}
		for _, m := range req.Measures {
			row = append(row, formatValue(g.Values[m.Name]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d of %d groups over %d files", res.RowCount, res.GroupCount, res.InputMatchCount)
	if res.Truncated {
		fmt.Fprint(out, " (truncated: raise --limit or narrow the scope)")
	}
	fmt.Fprintln(out)
	return out.Flush()
}

func newCatalogCommand() *cobra.Command {
	var (
		prefix string
		facets bool
	)
	cmd := &cobra.Command{
		Use:   "catalog [ID] [--section S] [--path P] [--prefix P] [--facets]",
		Short: "List the metadata fields files in scope have, and how they can be queried",
		Long: "List the indexed fields of the files in workbench ID, or of every workbench of the\n" +
			"agent root when ID is absent (workbench_catalog): per field, whether it is built in,\n" +
			"its types, how many files have it and the --where operators it accepts. --prefix\n" +
			"keeps fields starting with it; --facets adds each field's most frequent values.",
		Args: argsBetween(0, 1),
	}
	o := addOutputFlags(cmd)
	scope := addScopeFlags(cmd)
	cmd.Flags().StringVar(&prefix, "prefix", "", "only fields whose name starts with this")
	cmd.Flags().BoolVar(&facets, "facets", false, "show each field's most frequent values")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			scope.workbench = args[0]
		}
		res, err := newClient(cmd).Query.Catalog(cmd.Context(), o.agent, client.CatalogRequest{Workbench: scope.workbench,
			Section: scope.section, Path: scope.path, FieldPrefix: prefix, IncludeFacets: facets})
		if err != nil {
			return err
		}
		if o.json {
			return printRaw(cmd.OutOrStdout(), res.Raw)
		}
		out := bufio.NewWriter(cmd.OutOrStdout())
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FIELD\tKIND\tTYPES\tFILES\tOPERATORS")
		for _, f := range res.Catalog.Fields {
			kind := "attached"
			if f.Builtin {
				kind = "built-in"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", displayed(f.Field), kind, strings.Join(f.Types, ","), f.FileCount, strings.Join(f.Operators, " "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, f := range res.Catalog.Facets {
			fmt.Fprintf(out, "facet %s:%s\n", displayed(f.Field), formatFacet(f))
		}
		fmt.Fprintf(out, "%s over %s", plural(len(res.Catalog.Fields), "field"), plural(int(res.FileCount), "file"))
		if res.Truncated {
			fmt.Fprint(out, " (truncated)")
		}
		fmt.Fprintln(out)
		return out.Flush()
	}
	return cmd
}

func newFindCommand() *cobra.Command {
	var (
		committed, uncommitted bool
		pattern, cursor        string
		limit                  int
	)
	cmd := &cobra.Command{
		Use:   "find [--committed|--uncommitted] [--manifest-pattern TEXT] [--limit N]",
		Short: "List the workbenches of an agent root, by commit state and run manifest",
		Long: "List the workbenches of the agent root in name order (workbench_find), one per line:\n" +
			"id, committed or uncommitted, file count, size in bytes and, when committed, the\n" +
			"commit identity. --committed / --uncommitted keep one state; --manifest-pattern keeps\n" +
			"workbenches whose run manifest contains TEXT (case-insensitive). --limit caps the\n" +
			"workbenches printed (0 = all); --json prints one page as the server's result object.",
		Args: cobra.NoArgs,
	}
	o := addOutputFlags(cmd)
	cmd.Flags().BoolVar(&committed, "committed", false, "only committed workbenches")
	cmd.Flags().BoolVar(&uncommitted, "uncommitted", false, "only uncommitted workbenches")
	cmd.Flags().StringVar(&pattern, "manifest-pattern", "", "only workbenches whose run manifest contains TEXT")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue from a previous find's cursor (same arguments)")
	cmd.Flags().IntVar(&limit, "limit", 0, "workbenches to print, 0 for all (with --json: the page size, 1..100)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if committed && uncommitted {
			return usageErrorf("--committed and --uncommitted exclude each other")
		}
		if limit < 0 {
			return usageErrorf("--limit must not be negative")
		}
		req := client.FindRequest{ManifestPattern: pattern, Cursor: cursor}
		if committed || uncommitted {
			req.Committed = &committed
		}
		q := newClient(cmd).Query
		if o.json {
			req.Limit = limit
			res, err := q.Find(cmd.Context(), o.agent, req)
			if err != nil {
				return err
			}
			return printRaw(cmd.OutOrStdout(), res.Raw)
		}
		out := bufio.NewWriter(cmd.OutOrStdout())
		printed := 0
		for {
			res, err := q.Find(cmd.Context(), o.agent, req)
			if err != nil {
				out.Flush()
				return err
			}
			for _, m := range res.Matches {
				if limit > 0 && printed == limit {
					if err := out.Flush(); err != nil {
						return err
					}
					_, err := fmt.Fprintln(cmd.ErrOrStderr(), "cairn: more workbenches; raise --limit")
					return err
				}
				state, identity := "uncommitted", ""
				if m.Committed {
					state, identity = "committed", " "+m.CommitIdentity
				}
				fmt.Fprintf(out, "%s %s %d files %d bytes%s\n", displayed(m.WorkbenchID), state, m.FileCount, m.SizeBytes, identity)
				printed++
			}
			if res.NextCursor == "" {
				break
			}
			req.Cursor = res.NextCursor
		}
		return out.Flush()
	}
	return cmd
}

// plural is "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
