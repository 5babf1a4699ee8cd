package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
			n, err := parseShardsToAdd(args[0])
			if err != nil {
				return err
			}
			c := newAdminClient(cmd)
			st, err := c.ClusterStatus(cmd.Context())
			if err != nil {
				return clusterOnly(cmd, err)
			}
			res, err := c.AddShards(cmd.Context(), n, st.Shards)
			if err != nil {
				return clusterOnly(cmd, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cluster grows from %d to %d shards (created with %d)\n", st.Shards, res.Shards, res.InitialShards)
			if !w.wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), w.timeout)
			defer cancel()
			deadline, _ := ctx.Deadline()
			var last growProgress
			then := fmt.Sprintf("the count has grown to %d and the controller goes on building the new shards: follow it "+
				"with `cairn admin cluster status` on another node's admin listener (do not run shards add again: "+
				"it would add more)", res.Shards)
			err = followStatus(ctx, c, out, shardsAddPoll, then, func(st *client.ClusterStatus) (bool, string) {
				// Another grow may have run meanwhile: wait for the cluster's count, and say
				// which part of it this command added.
				count := max(res.Shards, st.Shards)
				last = newGrowProgress(st, count)
				if len(last.pending) > 0 {
					return false, fmt.Sprintf("waiting until %s for every new shard to have %d voters: %s",
						deadline.Format(time.TimeOnly), last.replication, last)
				}
				if count != res.Shards {
					return true, fmt.Sprintf("every shard has a leader and takes roots: %d shards (this command added %d)", count, res.Added)
				}
				return true, fmt.Sprintf("every shard has a leader and takes roots: %d shards", count)
			})
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
				return &shardsClosedError{after: w.timeout, progress: last, err: err}
			}
			return err
		},
	}
	w.register(add, "every new shard has a leader and takes roots", 10*time.Minute)
	return add
}

// parseShardsToAdd parses N of `cairn admin shards add N`: a whole number from 1 to
// client.MaxClusterShards (the cluster's count after the grow must stay within it too,
// which the server checks). Errors are usage errors (InvalidArguments).
func parseShardsToAdd(arg string) (int, error) {
	n, err := strconv.Atoi(arg)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && n > client.MaxClusterShards:
		if !strings.HasPrefix(arg, "-") {
			return 0, usageErrorf("shards to add must be at most %d in total (the cluster's maximum shard count), got %q", client.MaxClusterShards, arg)
		}
	case err == nil && n >= 1:
		return n, nil
	}
	return 0, usageErrorf("shards to add must be a whole number, at least 1, got %q", arg)
}

// growProgress is what the shards of a grow wait for, as a cluster status reports it: a
// new shard opens only once its leader reports --replication voters on live nodes
// (shard/control/plan.go, Plan), so a node that is down keeps it closed.
type growProgress struct {
	replication int
	pending     []int          // shards below the count not open yet, in order
	why         map[int]string // per pending shard: what it lacks
	down        []string       // shard members whose node is not registered
	live        int            // registered nodes
}

// newGrowProgress reads st for the shards below count: a shard with no answering leader, or
// closed, is pending (a status of fewer shards counts the missing ones as pending).
func newGrowProgress(st *client.ClusterStatus, count int) growProgress {
	p := growProgress{replication: st.Replication, why: map[int]string{}, down: downNodes(st), live: len(st.Nodes)}
	seen := map[int]bool{}
	for _, s := range st.ShardStatus {
		seen[s.Shard] = true
		switch {
		case s.Error != "":
			p.why[s.Shard] = "no leader yet"
		case s.Closed:
			voters := 0
			for _, m := range s.Members {
				if m.Voter && st.Registered(m.ID) {
					voters++
				}
			}
			p.why[s.Shard] = fmt.Sprintf("%d of %d voters", voters, st.Replication)
		default:
			continue
		}
		p.pending = append(p.pending, s.Shard)
	}
	for s := range count {
		if !seen[s] {
			p.pending = append(p.pending, s)
			p.why[s] = "not created yet"
		}
	}
	return p
}

// String says, per pending shard, what it lacks, and what holds it back.
func (p growProgress) String() string {
	parts := make([]string, 0, len(p.pending))
	for _, s := range p.pending {
		parts = append(parts, fmt.Sprintf("shard %d %s", s, p.why[s]))
	}
	return strings.Join(parts, ", ") + p.blocker()
}

// blocker says why the shards cannot reach their voters, if the status shows why: nodes
// down, or fewer live nodes than the replication.
func (p growProgress) blocker() string {
	switch {
	case len(p.down) > 0:
		return fmt.Sprintf("; down: %s (a new shard opens only with %d voters: bring the node back)", strings.Join(p.down, ", "), p.replication)
	case p.live > 0 && p.live < p.replication:
		return fmt.Sprintf("; %d live nodes, fewer than the replication %d", p.live, p.replication)
	}
	return ""
}

// shardsClosedError is `cairn admin shards add --wait` that ran out of time with new
// shards still closed: the count has grown and the controller goes on; progress says what
// the shards lack and why (a node down). Reported with the code Timeout.
type shardsClosedError struct {
	after    time.Duration
	progress growProgress
	err      error // context.DeadlineExceeded
}

func (e *shardsClosedError) Unwrap() error { return e.err }

func (e *shardsClosedError) Error() string {
	return fmt.Sprintf("after %s shards %v still take no roots: %s; the count has grown and the controller opens each "+
		"shard once its leader reports %d voters (check `cairn admin cluster status`)",
		e.after, e.progress.pending, e.progress, e.progress.replication)
}
