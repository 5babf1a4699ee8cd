package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cairnstore/cairn/api/client"
)

// newAdminShardCommand is `cairn admin shard` and its subcommands.
func newAdminShardCommand() *cobra.Command {
	group := newGroupCommand("shard", "One shard of a cluster: recover it after it lost a majority of its voters")
	var (
		from string
		yes  bool
	)
	recoverCmd := &cobra.Command{
		Use:   "recover SHARD --from NODE [--yes]",
		Short: "Make a surviving replica the only voter of a shard that lost a majority of its voters",
		Long: "Run against the survivor's admin listener (--admin-server), NODE being its id. The\n" +
			"command first shows what the survivor holds and what may be lost: every entry of its\n" +
			"log survives (those it did not know committed become committed); entries the lost\n" +
			"members committed after its last one are gone, acknowledged writes among them. It\n" +
			"asks for confirmation (--yes skips it; without a terminal, --yes is required), then\n" +
			"the survivor becomes the shard's only voter and elects itself, and the controller adds\n" +
			"replicas back on other live nodes. Refused while the shard has a leader or a majority\n" +
			"of its voters are registered (docs/runbook.md, \"Recover a shard that lost a majority\").",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.Atoi(args[0])
			if err != nil || id < 0 {
				return usageErrorf("SHARD must be a shard number, got %q", args[0])
			}
			if from == "" {
				return usageErrorf("--from NODE is required: the id of the surviving node")
			}
			c := newAdminClient(cmd)
			plan, err := c.PlanShardRecovery(cmd.Context(), id, from)
			if err != nil {
				return clusterOnly(cmd, err)
			}
			out := cmd.OutOrStdout()
			printRecoveryPlan(out, plan)
			if !yes {
				in, ok := cmd.InOrStdin().(*os.File)
				if !ok || !term.IsTerminal(int(in.Fd())) {
					return usageErrorf("not a terminal: give --yes to recover shard %d from %s", id, from)
				}
				fmt.Fprintf(out, "Recover shard %d from %s? Type yes: ", id, from)
				line, _ := bufio.NewReader(in).ReadString('\n')
				if strings.TrimSpace(line) != "yes" {
					return fmt.Errorf("not confirmed: shard %d unchanged", id)
				}
			}
			res, err := c.RecoverShard(cmd.Context(), id, from)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "shard %d recovered: %s is its only voter (log through index %d, term %d; shard version %d; epoch %d); the controller adds replicas back\n",
				id, from, res.Recovered.LastIndex, res.Recovered.LastTerm, res.Recovered.Version, res.Plan.Epoch)
			return err
		},
	}
	recoverCmd.Flags().StringVar(&from, "from", "", "id of the surviving node, the one --admin-server reaches")
	recoverCmd.Flags().BoolVar(&yes, "yes", false, "recover without asking")
	group.AddCommand(recoverCmd)
	return group
}

// printRecoveryPlan writes what a recovery keeps and may lose.
func printRecoveryPlan(w io.Writer, p *client.ShardRecoveryPlan) {
	fmt.Fprintf(w, "shard %d on %s: term %d, applied index %d (shard version %d), commit index %d, last log index %d\n",
		p.Shard, p.Node, p.Term, p.AppliedIndex, p.AppliedVersion, p.CommitIndex, p.LastIndex)
	for _, m := range p.Members {
		role, state := "non-voter", "not registered (lost)"
		if m.Voter {
			role = "voter"
		}
		if m.Registered {
			state = "registered"
		}
		if m.ID == p.Node {
			state = "the survivor"
		}
		fmt.Fprintf(w, "  %s  %s, %s\n", m.ID, role, state)
	}
	fmt.Fprintf(w, "Kept: every entry through index %d.", p.LastIndex)
	if p.LastIndex > p.CommitIndex {
		fmt.Fprintf(w, " Entries %d to %d were not known committed here and become committed.", p.CommitIndex+1, p.LastIndex)
	}
	fmt.Fprintf(w, "\nMay be lost: whatever the other members committed after index %d, acknowledged writes included.\n", p.LastIndex)
}
