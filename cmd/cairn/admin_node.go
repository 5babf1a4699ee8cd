package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// nodeRemovePoll is how often `cairn admin node remove` looks at the cluster status while
// it waits for the node's replicas to move.
const nodeRemovePoll = 2 * time.Second

// newAdminNodeCommand is `cairn admin node` and its subcommands.
func newAdminNodeCommand() *cobra.Command {
	node := newGroupCommand("node", "Node lifecycle in a cluster: decommission a node, or take it back")
	var w waitFlags
	remove := &cobra.Command{
		Use:   "remove NODE-ID",
		Short: "Decommission a node: move its replicas to other nodes, then drop it from every shard",
		Long: "Mark NODE-ID as leaving: a node id the cluster knows, or a prefix only one such\n" +
			"id starts with (cairn admin cluster status lists the nodes); the command names the\n" +
			"full id. The cluster's controller gives the node no new replica, adds a\n" +
			"replacement for each replica it holds, and removes it from each shard once the\n" +
			"shard has its replication of voters without it (the node may be the leader: Raft\n" +
			"elects another). With --wait (the default) the command follows the cluster status\n" +
			"until the node holds no replica, then says it can be stopped. The mark is durable:\n" +
			"a leaving node that restarts gets no replica (cairn admin node recommission NODE-ID\n" +
			"clears it). A cluster needs replication + 1 nodes for a node to leave without\n" +
			"losing a replica; with fewer, the node keeps its replicas until another joins.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := newAdminClient(cmd)
			res, err := c.Decommission(cmd.Context(), args[0])
			if err != nil {
				return clusterOnly(cmd, err)
			}
			id := cmp.Or(res.Node, args[0])
			out := cmd.OutOrStdout()
			if res.Gone() {
				_, err := fmt.Fprintf(out, "node %s is not registered and holds no replica: it is already gone (marked leaving, it gets no replica if it starts again)\n", id)
				return err
			}
			fmt.Fprintf(out, "node %s is leaving\n", id)
			if !w.wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), w.timeout)
			defer cancel()
			then := fmt.Sprintf("node %s stays marked leaving and the controller goes on moving its replicas: follow it "+
				"with `cairn admin cluster status` on another node's admin listener (running node remove again is safe)", id)
			err = followStatus(ctx, c, out, nodeRemovePoll, then, func(st *client.ClusterStatus) (bool, string) {
				shards, complete := st.Replicas(id)
				switch {
				case len(shards) == 0 && complete && !st.Registered(id):
					return true, fmt.Sprintf("node %s holds no replica and is not registered: it is gone", id)
				case len(shards) == 0 && complete:
					return true, fmt.Sprintf("node %s holds no replica: it can be stopped now", id)
				case !complete:
					return false, fmt.Sprintf("waiting: node %s holds shards %v; a shard is electing a leader", id, shards)
				case st.Staying() < st.Replication:
					return false, fmt.Sprintf("waiting: node %s still holds shards %v, and the cluster has %d node(s) not leaving for a "+
						"replication of %d: its replicas move once another node joins (cairn admin node recommission %s cancels)",
						id, shards, st.Staying(), st.Replication, id)
				}
				return false, fmt.Sprintf("waiting: node %s still holds shards %v", id, shards)
			})
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
				return &codedError{code: "Timeout", err: fmt.Errorf("node %s still holds replicas after %s (it stays marked leaving "+
					"and the controller goes on moving them; check `cairn admin cluster status`)", id, w.timeout)}
			}
			return err
		},
	}
	w.register(remove, "the node holds no replica", 30*time.Minute)
	recommission := &cobra.Command{
		Use:   "recommission NODE-ID",
		Short: "Clear a node's leaving mark, so it may hold replicas again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := newAdminClient(cmd).Recommission(cmd.Context(), args[0])
			if err != nil {
				return clusterOnly(cmd, err)
			}
			id := cmp.Or(res.Node, args[0])
			if res.WasLeaving != nil && !*res.WasLeaving {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "node %s was not marked leaving: nothing changed\n", id)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "node %s may hold replicas again\n", id)
			return err
		},
	}
	node.AddCommand(remove, recommission)
	return node
}

// clusterOnly words the answer of an embedded node to a cluster command, and a 404 of a
// URL that serves no admin route, as adminURLError.
func clusterOnly(cmd *cobra.Command, err error) error {
	if errors.Is(err, client.ErrNotCluster) || errors.Is(err, client.ErrNoAdminRoutes) {
		return adminURLError{server: adminServer(cmd), err: err}
	}
	return err
}
