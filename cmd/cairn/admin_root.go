package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// rootMovePoll is how often `cairn admin root move` looks at its move while it waits.
const rootMovePoll = 250 * time.Millisecond

// moveSteps numbers a move's steps for its progress lines (docs/architecture.md, "Moving
// a root").
var moveSteps = map[string]int{"requested": 1, "importing": 2, "fenced": 3, "copied": 4, "finished": 5,
	"switched": 6, "confirmed": 7, "done": 8}

// newAdminRootCommand is `cairn admin root` and its subcommands.
func newAdminRootCommand() *cobra.Command {
	return newGroupCommand("root", "Agent roots in a cluster: move a root to another shard", newRootMoveCommand(), newRootMovesCommand())
}

// newRootMoveCommand is `cairn admin root move ROOT --to SHARD`.
func newRootMoveCommand() *cobra.Command {
	var (
		w  waitFlags
		to int
	)
	move := &cobra.Command{
		Use:   "move ROOT --to SHARD",
		Short: "Move an agent root to another shard, online",
		Long: "Move agent root ROOT to shard SHARD while the cluster serves it. The cluster's\n" +
			"controller drives the move: the target shard begins an import, the root's shard\n" +
			"fences it (writes answer a retryable RoutingUnavailable for about as long as the\n" +
			"copy takes; reads go on), the root's records are copied by metadata only (no file\n" +
			"body is copied), the placement switches in one etcd transaction, the target takes\n" +
			"writes and the old shard releases the root. A move that fails before the switch\n" +
			"rolls back and changes nothing; after it, it completes. Every node must run a\n" +
			"release of cluster version 5. With --wait (the default) the command prints each\n" +
			"step until the move ends, and fails with Timeout if it has not ended by --timeout\n" +
			"(the move goes on: follow it with `cairn admin root moves`).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("to") {
				return usageErrorf("--to is required: the shard to move the root to")
			}
			if to < 0 {
				return usageErrorf("--to must be a shard number, 0 or more, got %d", to)
			}
			c := newAdminClient(cmd)
			m, err := c.StartRootMove(cmd.Context(), args[0], to)
			if err != nil {
				return clusterOnly(cmd, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "move %s: agent root %s from shard %d to shard %d\n", m.ID, m.Root, m.Source, m.Target)
			if !w.wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), w.timeout)
			defer cancel()
			return followMove(ctx, c, out, m, w.timeout)
		},
	}
	move.Flags().IntVar(&to, "to", -1, "the shard to move the root to (required)")
	w.register(move, "the move ends", 10*time.Minute)
	return move
}

// followMove prints each step m reaches until it ends: nil when done, a *rootMoveError
// when it rolled back or the wait ran out, and Unavailable when the admin server has not
// answered for adminUnansweredLimit (the move goes on without the command).
func followMove(ctx context.Context, c *client.Admin, out io.Writer, m *client.RootMove, wait time.Duration) error {
	last := ""
	cur := *m
	var u unanswered
	for {
		if cur.Step != last {
			fmt.Fprintln(out, moveLine(cur))
			last = cur.Step
		}
		switch {
		case cur.Done():
			fmt.Fprintf(out, "moved: %d records in %d chunks in %s\n", cur.Records, cur.Chunks,
				cur.Updated.Sub(cur.Started).Round(time.Millisecond))
			return nil
		case cur.Ended:
			return &rootMoveError{move: cur}
		}
		select {
		case <-ctx.Done():
			return &rootMoveError{move: cur, after: wait, err: ctx.Err(), unanswered: u}
		case <-time.After(rootMovePoll):
		}
		list, err := c.RootMoves(ctx, m.ID)
		if ctx.Err() != nil {
			continue // the wait ran out: reported above, with the polls as they were
		}
		if e := (*client.Error)(nil); err != nil && errors.As(err, &e) && !e.Retryable {
			return err
		}
		if err == nil && len(list) == 1 {
			cur = list[0]
		}
		line, over := u.note(err)
		if line != "" {
			fmt.Fprintln(out, line)
		}
		if over {
			return u.gone(fmt.Sprintf("move %s was at step %s when it last answered, and goes on without this command: "+
				"follow it with `cairn admin root moves` on another node's admin listener (starting the move again is safe: "+
				"a second move of the root is refused while this one is unfinished)", cur.ID, cur.Step))
		}
	}
}

// moveLine is a progress line of a move.
func moveLine(m client.RootMove) string {
	if n, ok := moveSteps[m.Step]; ok {
		return fmt.Sprintf("step %d of 8: %s", n, m.Step)
	}
	line := m.Step
	if m.Reason != "" {
		line += ": " + m.Reason
	}
	return line
}

// rootMoveError is a move that rolled back (err nil) or that had not ended when the wait
// ran out (err: the context's). Reported with the code MoveRolledBack or Timeout.
type rootMoveError struct {
	move       client.RootMove
	after      time.Duration
	err        error
	unanswered unanswered // the polls failing when the wait ran out, if they were
}

func (e *rootMoveError) Unwrap() error { return e.err }

func (e *rootMoveError) Error() string {
	if e.err != nil && !e.unanswered.since.IsZero() {
		return fmt.Sprintf("after %s move %s was at step %s when the admin server last answered (it has not since %s: %v); "+
			"it goes on: follow it with `cairn admin root moves`", e.after, e.move.ID, e.move.Step,
			e.unanswered.since.Format(time.TimeOnly), e.unanswered.err)
	}
	if e.err != nil {
		return fmt.Sprintf("after %s move %s is at step %s; it goes on: follow it with `cairn admin root moves`", e.after, e.move.ID, e.move.Step)
	}
	return fmt.Sprintf("move %s rolled back, the root stays on shard %d: %s", e.move.ID, e.move.Source, e.move.Reason)
}

// code is the code the CLI reports the error with.
func (e *rootMoveError) code() string {
	if e.err != nil {
		return "Timeout"
	}
	return "MoveRolledBack"
}

// newRootMovesCommand is `cairn admin root moves`.
func newRootMovesCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "moves",
		Short: "List the cluster's root moves and how far each got",
		Long: "List every move of an agent root between shards, oldest first: its id, root,\n" +
			"source and target shard, the last step done (1 requested … 8 done; rolling_back,\n" +
			"rolled_back with the reason), the records its copy moved and when it started.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := newAdminClient(cmd).RootMoves(cmd.Context(), "")
			if err != nil {
				return clusterOnly(cmd, err)
			}
			if asJSON {
				return printJSONLine(cmd.OutOrStdout(), map[string]any{"moves": list})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tROOT\tFROM\tTO\tSTEP\tRECORDS\tSTARTED\tREASON")
			for _, m := range list {
				step := m.Step
				if n, ok := moveSteps[m.Step]; ok {
					step = strconv.Itoa(n) + " " + m.Step
				}
				reason := m.Reason
				if m.Lasting {
					reason = "(lasting: the rebalancer leaves the root alone for an hour) " + reason
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\n", m.ID, m.Root, m.Source, m.Target, step, m.Records,
					m.Started.Format(time.RFC3339), reason)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the moves as JSON")
	return cmd
}
