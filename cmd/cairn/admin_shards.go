package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// shardsAddPoll is how often `cairn admin shards add` looks at the cluster status while it
// waits for the new shards to open.
const shardsAddPoll = time.Second

// newAdminShardsCommand is `cairn admin shards` and its subcommands.
func newAdminShardsCommand() *cobra.Command {
	return newGroupCommand("shards", "The cluster's shards: add shards to a running cluster", newShardsAddCommand())
}

// newShardsAddCommand is `cairn admin shards add N`.
func newShardsAddCommand() *cobra.Command {
	var w waitFlags
	add := &cobra.Command{
		Use:   "add N",
		Short: "Add N shards to the running cluster",
		Long: "Raise the cluster's shard count by N (one etcd transaction). The cluster's\n" +
			"controller creates each new shard's Raft group on live nodes with the cluster's\n" +
			"replication, then opens it to placement; new agent roots go to the least-loaded\n" +
			"open shard, so the new, empty shards fill first. Roots already placed stay where\n" +
			"they are. Every node must run a release that follows a growing shard count\n" +
			"(cluster version 4): while one does not, the command says which and changes\n" +
			"nothing. The request carries the count read just before, so sending it again never\n" +
			"adds twice. With --wait (the default) the command follows the cluster status until\n" +
			"every new shard has a leader and is open.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return fmt.Errorf("shards to add must be a whole number, at least 1, got %q", args[0])
			}
			c := newAdminClient(cmd)
			st, err := c.ClusterStatus(cmd.Context())
			if err != nil {
				return clusterOnly(cmd, err)
			}
			res, err := c.AddShards(cmd.Context(), n, st.Shards)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cluster grows from %d to %d shards (created with %d)\n", st.Shards, res.Shards, res.InitialShards)
			if !w.wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), w.timeout)
			defer cancel()
			err = followStatus(ctx, c, out, shardsAddPoll, func(st *client.ClusterStatus) (bool, string) {
				if pending := pendingShards(st, res.Shards); len(pending) > 0 {
					return false, fmt.Sprintf("waiting: shards %v are being built", pending)
				}
				return true, fmt.Sprintf("every shard has a leader and takes roots: %d shards", res.Shards)
			})
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
				return fmt.Errorf("shards are still being built after %s (the count has grown; the controller goes on: check `cairn admin cluster status`): %w", w.timeout, err)
			}
			return err
		},
	}
	w.register(add, "every new shard has a leader and takes roots", 10*time.Minute)
	return add
}

// pendingShards are the shards below count that have no answering leader or are still
// closed to placement, as st reports them (a status of fewer shards counts the missing
// ones as pending).
func pendingShards(st *client.ClusterStatus, count int) []int {
	var out []int
	seen := map[int]bool{}
	for _, s := range st.ShardStatus {
		seen[s.Shard] = true
		if s.Error != "" || s.Closed {
			out = append(out, s.Shard)
		}
	}
	for s := range count {
		if !seen[s] {
			out = append(out, s)
		}
	}
	return out
}
