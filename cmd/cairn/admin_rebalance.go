package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// newAdminRebalanceCommand is `cairn admin rebalance [on|off]`.
func newAdminRebalanceCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rebalance [on|off]",
		Short: "Show, or turn on or off, the moving of roots from hot shards to cold ones",
		Long: "Without an argument, show whether the cluster rebalances. With on, the elected\n" +
			"controller moves a few roots at a time from shards whose load (roots, stored\n" +
			"bytes, write rate: the load table of `cairn admin cluster status`) is above the\n" +
			"mean by more than the threshold to the least loaded shards, at most one round a\n" +
			"minute, only while the cluster is settled and no move is under way (`cairn admin\n" +
			"root moves` lists them). With off, no round starts; moves under way finish. The\n" +
			"switch is durable and off until set.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := newAdminClient(cmd)
			var sw *client.RebalanceSwitch
			var err error
			switch {
			case len(args) == 0:
				sw, err = c.Rebalance(cmd.Context())
			case args[0] == "on" || args[0] == "off":
				sw, err = c.SetRebalance(cmd.Context(), args[0] == "on")
			default:
				return usageErrorf("%s: the argument must be on or off, got %q", cmd.CommandPath(), args[0])
			}
			if err != nil {
				return clusterOnly(cmd, err)
			}
			return printRebalance(cmd.OutOrStdout(), sw)
		},
	}
}

// printRebalance prints the switch in one line.
func printRebalance(out io.Writer, sw *client.RebalanceSwitch) error {
	state := "off"
	if sw.Enabled {
		state = "on"
	}
	since := " (never set)"
	if sw.Since != nil {
		since = " since " + sw.Since.UTC().Format(time.RFC3339)
	}
	_, err := fmt.Fprintf(out, "rebalance %s%s\n", state, since)
	return err
}
