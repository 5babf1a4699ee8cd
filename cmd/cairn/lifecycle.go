package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// addLifecycleCommands registers `cairn workbench list|delete` and `cairn usage`.
func addLifecycleCommands(root *cobra.Command) {
	wb := newGroupCommand("workbench", "List and delete the workbenches of an agent root",
		newWorkbenchListCommand(), newWorkbenchDeleteCommand())
	root.AddCommand(wb, newUsageCommand())
}

func newWorkbenchListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--agent A] [--json]",
		Short: "List the workbenches of an agent root",
		Long: "List the workbenches of the agent root in name order, one per line: id, files,\n" +
			"bytes, revision (the precondition of `workbench delete --if-revision`) and head\n" +
			"commit. --json prints one JSON object per workbench.",
		Args: cobra.NoArgs,
	}
	o := addOutputFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		out := cmd.OutOrStdout()
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		if !o.json {
			fmt.Fprintln(tw, "WORKBENCH\tFILES\tBYTES\tREVISION\tHEAD")
		}
		err := newClient(cmd).WalkWorkbenches(cmd.Context(), o.agent, func(w client.WorkbenchSummary) error {
			if o.json {
				return printJSONLine(out, w)
			}
			head := "-"
			if w.HeadCommit != nil {
				head = *w.HeadCommit
			}
			_, err := fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", w.ID, w.FileCount, w.SizeBytes, w.Revision, head)
			return err
		})
		if ferr := tw.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	return cmd
}

func newWorkbenchDeleteCommand() *cobra.Command {
	var ifRevision uint64
	cmd := &cobra.Command{
		Use:   "delete ID [--agent A] [--if-revision N]",
		Short: "Delete a workbench with its files, snapshots and commits",
		Long: "Delete workbench ID: its files, snapshots and commits go, the name is free at\n" +
			"once, and the data only it referenced is garbage-collected after the grace\n" +
			"period. --if-revision deletes only if the workbench is still at that revision\n" +
			"(see `workbench list`). Refused while a restore reads from it or restores into it.",
		Args: argsBetween(1, 1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().Uint64Var(&ifRevision, "if-revision", 0, "delete only at this revision (0: unconditional)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := newClient(cmd).DeleteWorkbench(cmd.Context(), o.agent, args[0], ifRevision); err != nil {
			return err
		}
		if o.json {
			return printRaw(cmd.OutOrStdout(), json.RawMessage(`{"status":"success","workbench_id":`+strconv.Quote(args[0])+`,"deleted":true}`))
		}
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "deleted workbench %s\n", args[0])
		return err
	}
	return cmd
}

func newUsageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage [--agent A] [--json]",
		Short: "Show what an agent root holds and its quotas",
		Args:  cobra.NoArgs,
	}
	o := addOutputFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		u, err := newClient(cmd).Usage(cmd.Context(), o.agent)
		if err != nil {
			return err
		}
		return printUsage(cmd.OutOrStdout(), u, o.json)
	}
	return cmd
}

// printUsage prints a root's usage against its quotas, one dimension a line.
func printUsage(w io.Writer, u *client.RootUsage, asJSON bool) error {
	if asJSON {
		return printRaw(w, u.Raw)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "agent root %s\n", u.Agent)
	fmt.Fprintln(tw, "\tUSAGE\tQUOTA")
	for _, d := range []struct {
		name  string
		used  int64
		limit *int64
	}{{"bytes", u.Usage.Bytes, u.Quota.Bytes}, {"files", u.Usage.Files, u.Quota.Files},
		{"workbenches", u.Usage.Workbenches, u.Quota.Workbenches}, {"snapshots", u.Usage.Snapshots, u.Quota.Snapshots}} {
		limit := "none"
		if d.limit != nil {
			limit = strconv.FormatInt(*d.limit, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", d.name, d.used, limit)
	}
	return tw.Flush()
}

// newAdminQuotaCommand is `cairn admin quota set|get`.
func newAdminQuotaCommand() *cobra.Command {
	quota := newGroupCommand("quota", "Read or set the quotas of an agent root")
	var asJSON bool
	get := &cobra.Command{
		Use:   "get AGENT [--json]",
		Short: "Show an agent root's usage and quotas",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := newAdminClient(cmd).Quota(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printUsage(cmd.OutOrStdout(), u, asJSON)
		},
	}
	get.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	var req client.QuotaRequest
	set := &cobra.Command{
		Use:   "set AGENT [--max-bytes N] [--max-files N] [--max-workbenches N] [--max-snapshots N]",
		Short: "Replace an agent root's quotas",
		Long: "Replace the quotas of agent root AGENT: every limit not given (or 0) is lifted. A\n" +
			"request that would grow a dimension past its quota is refused whole with\n" +
			"ResourceExhausted (HTTP 429) naming the quota, its limit and the usage. A quota\n" +
			"below the usage is accepted: from then on only what does not grow it succeeds.",
		Args: argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for flag, v := range map[string]int64{"--max-bytes": req.MaxBytes, "--max-files": req.MaxFiles,
				"--max-workbenches": req.MaxWorkbenches, "--max-snapshots": req.MaxSnapshots} {
				if v < 0 {
					return usageErrorf("%s must not be negative (0 lifts the limit)", flag)
				}
			}
			req.Agent = args[0]
			u, err := newAdminClient(cmd).SetQuota(cmd.Context(), req)
			if err != nil {
				return err
			}
			return printUsage(cmd.OutOrStdout(), u, asJSON)
		},
	}
	set.Flags().Int64Var(&req.MaxBytes, "max-bytes", 0, "most bytes of live files (0: no limit)")
	set.Flags().Int64Var(&req.MaxFiles, "max-files", 0, "most live files (0: no limit)")
	set.Flags().Int64Var(&req.MaxWorkbenches, "max-workbenches", 0, "most workbenches (0: no limit)")
	set.Flags().Int64Var(&req.MaxSnapshots, "max-snapshots", 0, "most snapshots holding history (0: no limit)")
	set.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	quota.AddCommand(get, set)
	return quota
}

// newAdminPurgeCommand is `cairn admin purge AGENT`.
func newAdminPurgeCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "purge AGENT --yes",
		Short: "Delete every workbench of an agent root",
		Long: "Delete every workbench of agent root AGENT with its files, snapshots and commits;\n" +
			"the data is garbage-collected after the grace period. The root keeps its quotas.\n" +
			"Refused while a restore of the root is in progress. --yes is required.",
		Args: argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return usageErrorf("purging deletes every workbench of %s: pass --yes", args[0])
			}
			n, err := newAdminClient(cmd).PurgeRoot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "purged agent root %s: %d workbenches deleted\n", args[0], n)
			return err
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the purge")
	return cmd
}
