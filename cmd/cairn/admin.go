package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// addAdminCommands registers `cairn admin` and its subcommands.
func addAdminCommands(root *cobra.Command) {
	admin := newGroupCommand("admin", "Operator commands against a running server",
		newAdminGCCommand(), newAdminClusterCommand(), newAdminKeyCommand(),
		newAdminBackupCommand(), newAdminRestoreCommand(), newAdminScrubCommand(),
		newAdminQuotaCommand(), newAdminPurgeCommand(), newAdminNodeCommand(), newAdminRetentionCommand(),
		newAdminShardCommand(), newAdminShardsCommand(), newAdminRootCommand(), newAdminRebalanceCommand())
	admin.PersistentFlags().String("admin-server", envOr("CAIRN_ADMIN_SERVER", defaultAdminServer),
		"URL of the server's admin listener, --admin-listen: admin routes are not served on --server (env CAIRN_ADMIN_SERVER)")
	root.AddCommand(admin)
}

// defaultAdminServer is the admin listener of a server on the default --listen: the
// client port + 1 (ops.Config.AdminAddress).
const defaultAdminServer = "http://127.0.0.1:7071"

// adminServer returns the --admin-server of cmd.
func adminServer(cmd *cobra.Command) string {
	if f := cmd.Flag("admin-server"); f != nil {
		return f.Value.String()
	}
	return defaultAdminServer
}

// newAdminClient returns an admin client for the --admin-server of cmd, with the same CA,
// client certificate and API key and retrying as every client command does.
func newAdminClient(cmd *cobra.Command) *client.Admin {
	server := adminServer(cmd)
	return client.NewAdmin(server, httpClient(cmd, server)).WithRetry(client.DefaultRetryPolicy())
}

func newAdminGCCommand() *cobra.Command {
	var (
		dryRun   bool
		agent    string
		maxBatch int
		asJSON   bool
		verbose  bool
	)
	cmd := &cobra.Command{
		Use:   "gc [--dry-run] [--agent A]",
		Short: "Run one garbage-collection sweep on the server",
		Long: "Run one garbage-collection sweep (docs/architecture.md#blob-storage-and-garbage-collection) with the server's grace period\n" +
			"(--gc-grace): blobs unreferenced for longer, and blobs uploaded but never\n" +
			"published for longer, are deleted. --dry-run lists what would go and deletes\n" +
			"nothing. The server must be the shard leader.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxBatch < 0 {
				return usageErrorf("--max-batch must not be negative")
			}
			rep, err := newAdminClient(cmd).CollectGarbage(cmd.Context(), client.GCRequest{DryRun: dryRun, Agent: agent, MaxBatch: maxBatch})
			if err != nil {
				return err
			}
			if asJSON {
				return printRaw(cmd.OutOrStdout(), rep.Raw)
			}
			printGCReport(cmd.OutOrStdout(), *rep, verbose)
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be deleted; delete nothing")
	cmd.Flags().StringVar(&agent, "agent", "", "sweep only this agent root (default: every root)")
	cmd.Flags().IntVar(&maxBatch, "max-batch", 0, "most blobs collected per agent root (0: the server's default)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON report")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every candidate blob")
	return cmd
}

// printGCReport prints a sweep report: one summary line, then one line per agent root.
func printGCReport(w io.Writer, rep client.GCReport, verbose bool) {
	if rep.DryRun {
		fmt.Fprintf(w, "dry run: %d blobs (%d stored bytes) would be deleted\n", rep.Candidates, rep.CandidateBytes)
	} else {
		fmt.Fprintf(w, "deleted %d blobs (%d stored bytes, %d orphans) of %d candidates\n", rep.Deleted, rep.DeletedBytes, rep.Orphans, rep.Candidates)
	}
	for _, r := range rep.Roots {
		orphans := 0
		for _, c := range r.Candidates {
			if c.Orphan {
				orphans++
			}
		}
		line := fmt.Sprintf("  %s: %d candidates (%d orphans)", r.Agent, len(r.Candidates), orphans)
		if !rep.DryRun {
			line += fmt.Sprintf(", %d deleted (%d stored bytes)", r.Deleted, r.DeletedBytes)
		}
		if r.More {
			line += ", more remain"
		}
		fmt.Fprintln(w, line)
		if verbose {
			for _, c := range r.Candidates {
				var tags []string
				if c.Orphan {
					tags = append(tags, "orphan")
				}
				if c.TakenOver {
					tags = append(tags, "taken over")
				}
				fmt.Fprintf(w, "    %s %d %s\n", c.Digest, c.StoredBytes, strings.Join(tags, ","))
			}
		}
	}
	if rep.More {
		fmt.Fprintln(w, "more candidates remain: run again")
	}
}
