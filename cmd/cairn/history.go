package main

import (
	"bufio"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// addHistoryCommands registers `cairn history`; `cairn admin retention` is registered with
// the admin commands.
func addHistoryCommands(root *cobra.Command) { root.AddCommand(newHistoryCommand()) }

// newHistoryCommand is `cairn history [WORKBENCH] PATH`.
func newHistoryCommand() *cobra.Command {
	var (
		asJSON bool
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "history --agent A [--workbench W | WORKBENCH] PATH [--json] [--limit N]",
		Short: "List the retained versions of a file, newest first",
		Long: "List the versions of PATH that history retention (cairn admin retention) and\n" +
			"holds (snapshots, commits, backups) keep, newest first, one per line:\n" +
			"generation, ordinal, size in bytes, time, digest, producer; a delete shows as\n" +
			"\"deleted\". Read one with `cairn cat --generation N` (or `cairn get`). The\n" +
			"workbench is --workbench or the first argument. --limit N stops after N\n" +
			"versions (default: all); --json prints one JSON object per version.",
		Args: argsBetween(1, 2),
	}
	t := addTargetFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per version")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most N versions (0: all)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 2 {
			if t.workbench != "" {
				return usageErrorf("give the workbench once: as --workbench or as the first argument")
			}
			t.workbench, args = args[0], args[1:]
		}
		if err := t.check(); err != nil {
			return err
		}
		if limit < 0 {
			return usageErrorf("--limit must not be negative")
		}
		c := newClient(cmd)
		out := bufio.NewWriter(cmd.OutOrStdout())
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		if !asJSON {
			fmt.Fprintln(tw, "GENERATION\tORDINAL\tSIZE\tTIME\tDIGEST\tPRODUCER")
		}
		cursor, n := "", 0
		for {
			page, err := c.History(cmd.Context(), t.agent, t.workbench, args[0], client.HistoryOptions{Cursor: cursor, Limit: 1000})
			if err != nil {
				return err
			}
			for _, v := range page.Versions {
				if limit > 0 && n == limit {
					break
				}
				n++
				if err := printVersion(tw, v, asJSON); err != nil {
					return err
				}
			}
			if page.NextCursor == "" || limit > 0 && n == limit {
				break
			}
			cursor = page.NextCursor
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return out.Flush()
	}
	return cmd
}

func printVersion(w io.Writer, v client.HistoryVersion, asJSON bool) error {
	if asJSON {
		return printJSONLine(w, v)
	}
	size, digest, producer := "-", "deleted", "-"
	if !v.Tombstone && v.SizeBytes != nil && v.DigestURI != nil {
		size, digest = fmt.Sprint(*v.SizeBytes), *v.DigestURI
	}
	if v.Producer != nil {
		producer = v.Producer.Principal
		if v.Producer.Surface != "" {
			producer += " via " + v.Producer.Surface
		}
	}
	_, err := fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\n", v.Generation, v.Ordinal, size,
		time.UnixMilli(v.AtUnixMs).UTC().Format(time.RFC3339), digest, displayed(producer))
	return err
}

// newAdminRetentionCommand is `cairn admin retention show|set`.
func newAdminRetentionCommand() *cobra.Command {
	ret := newGroupCommand("retention", "Show or set the history retention of an agent root")
	var (
		agent  string
		asJSON bool
	)
	show := &cobra.Command{
		Use:   "show --agent A [--json]",
		Short: "Show the history retention that applies to an agent root",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agent == "" {
				return usageErrorf("--agent is required")
			}
			r, err := newAdminClient(cmd).Retention(cmd.Context(), agent)
			if err != nil {
				return err
			}
			return printRetention(cmd.OutOrStdout(), r, asJSON)
		},
	}
	show.Flags().StringVar(&agent, "agent", "", "agent root (required)")
	show.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	var (
		versions, maxVersions int
		age                   time.Duration
		reset                 bool
	)
	set := &cobra.Command{
		Use:   "set --agent A [--versions N] [--age 720h] [--max-versions N] | --reset",
		Short: "Set the history retention of an agent root",
		Long: "Set the history retention of agent root A: each file keeps its newest --versions\n" +
			"versions and every version superseded less than --age ago, whichever keeps more,\n" +
			"at most --max-versions; snapshots, commits and backups hold what they need\n" +
			"beyond that. A flag not given keeps the root's current value; --reset returns\n" +
			"the root to the server's default (--history-versions, --history-age,\n" +
			"--history-max-versions). The root's files are re-pruned at once: what a lower\n" +
			"policy drops is released to garbage collection and never comes back.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agent == "" {
				return usageErrorf("--agent is required")
			}
			req := client.RetentionRequest{Agent: agent, Reset: reset}
			fl := cmd.Flags()
			if fl.Changed("versions") {
				req.Versions = &versions
			}
			if fl.Changed("max-versions") {
				req.MaxVersions = &maxVersions
			}
			if fl.Changed("age") {
				s := age.String()
				req.Age = &s
			}
			if reset && (req.Versions != nil || req.MaxVersions != nil || req.Age != nil) {
				return usageErrorf("--reset takes no --versions, --age or --max-versions")
			}
			if !reset && req.Versions == nil && req.MaxVersions == nil && req.Age == nil {
				return usageErrorf("give --versions, --age or --max-versions (or --reset)")
			}
			r, err := newAdminClient(cmd).SetRetention(cmd.Context(), req)
			if err != nil {
				return err
			}
			return printRetention(cmd.OutOrStdout(), r, asJSON)
		},
	}
	set.Flags().StringVar(&agent, "agent", "", "agent root (required)")
	set.Flags().IntVar(&versions, "versions", 0, "newest versions of each file kept (1..10000)")
	set.Flags().DurationVar(&age, "age", 0, "keep every version superseded less than this long ago (0: none by age)")
	set.Flags().IntVar(&maxVersions, "max-versions", 0, "most versions kept per file (versions..10000)")
	set.Flags().BoolVar(&reset, "reset", false, "return the root to the server's default")
	set.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	ret.AddCommand(show, set)
	return ret
}

func printRetention(w io.Writer, r *client.Retention, asJSON bool) error {
	if asJSON {
		return printJSONLine(w, r)
	}
	p := r.Retention
	source := "its own"
	if p.Default {
		source = "the server default"
	}
	_, err := fmt.Fprintf(w, "agent root %s (%s)\nversions      %d\nage           %s\nmax versions  %d\n",
		r.Agent, source, p.Versions, p.Age, p.MaxVersions)
	return err
}
