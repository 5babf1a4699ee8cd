package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// newAdminClusterCommand is `cairn admin cluster` and its subcommands.
func newAdminClusterCommand() *cobra.Command {
	cluster := newGroupCommand("cluster", "Cluster operations (cairn serve --cluster)")
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's nodes, shards, leaders and applied-index lag",
		Long: "Show the cluster as the node at --admin-server sees it: the nodes (up while\n" +
			"registered in etcd; a shard member that is not registered is down), and for every\n" +
			"shard its leader and each replica's role and lag (log entries its applied index is\n" +
			"behind the leader's commit index; ? when the replica did not answer, down when its\n" +
			"node is down); a shard whose leader does not answer lists its members as its etcd\n" +
			"record has them (role \"(record)\"), each down or ?. An embedded node (cairn serve\n" +
			"without --cluster) has no cluster status: the command says so and exits 1.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := newAdminClient(cmd).ClusterStatus(cmd.Context())
			if err != nil {
				return clusterOnly(cmd, err)
			}
			if asJSON {
				return printRaw(cmd.OutOrStdout(), st.Raw)
			}
			return printClusterStatus(cmd.OutOrStdout(), st)
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	cluster.AddCommand(status)
	return cluster
}

// waitFlags are a cluster command's --wait and --timeout: whether it follows the cluster
// status (followStatus) until its change is done, and for how long.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

// register adds the flags to cmd: --wait (default true) "wait until <until>", and
// --timeout of timeout.
func (f *waitFlags) register(cmd *cobra.Command, until string, timeout time.Duration) {
	cmd.Flags().BoolVar(&f.wait, "wait", true, "wait until "+until)
	cmd.Flags().DurationVar(&f.timeout, "timeout", timeout, "how long --wait waits")
}

// adminUnansweredLimit is how long a waiting cluster command goes on reading an admin
// listener that does not answer (a refused or broken connection, a retryable error)
// before it ends with Unavailable: the node it talks to may be gone for good (killed,
// decommissioned), and the change it follows goes on in the cluster without it. A
// variable so that tests can shorten it.
var adminUnansweredLimit = time.Minute

// unanswered tracks the polls of a wait that found no answer: since when, and the last
// error. The zero value is a wait whose last poll was answered.
type unanswered struct {
	since time.Time
	err   error
}

// note records a poll's error (nil: answered). It returns a progress line when the polls
// begin to fail, and whether they have failed for adminUnansweredLimit.
func (u *unanswered) note(err error) (line string, over bool) {
	if err == nil {
		u.since, u.err = time.Time{}, nil
		return "", false
	}
	u.err = err
	if u.since.IsZero() {
		u.since = time.Now()
		return fmt.Sprintf("the admin server does not answer (%v); still waiting", err), false
	}
	return "", time.Since(u.since) >= adminUnansweredLimit
}

// gone is the error of a wait whose admin server stopped answering: code Unavailable,
// naming since when, the last error and what goes on meanwhile (then).
func (u *unanswered) gone(then string) error {
	return &codedError{code: "Unavailable", err: fmt.Errorf("the admin server has not answered since %s (last: %v); %s",
		u.since.Format(time.TimeOnly), u.err, then)}
}

// followStatus reads the cluster status every poll until check says done, printing each
// new line check returns (the progress) to out. A status that fails with a retryable
// error (a node electing, etcd away) or no answer is read again, for at most
// adminUnansweredLimit in a row: then it ends with Unavailable saying then (what goes on
// without the command, and whether running it again is safe); any other error ends it.
// It returns ctx's error when ctx ends first.
func followStatus(ctx context.Context, c *client.Admin, out io.Writer, poll time.Duration, then string,
	check func(*client.ClusterStatus) (done bool, line string)) error {
	last := ""
	var u unanswered
	for {
		st, err := c.ClusterStatus(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e := (*client.Error)(nil); err != nil && errors.As(err, &e) && !e.Retryable {
			return err
		}
		line, over := u.note(err)
		if err == nil {
			var done bool
			done, line = check(st)
			if done {
				if line != last {
					fmt.Fprintln(out, line)
				}
				return nil
			}
		}
		if line != "" && line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if over {
			return u.gone(then)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// adminURLError is a cluster command's answer from a node that cannot serve it: an
// embedded node (err wraps client.ErrNotCluster and the node's 409 InvalidState), or a URL
// that serves no admin route (client.ErrNoAdminRoutes, a 404: a node's client port, most
// likely). Reported with the code of the answer, in words an operator reads at once.
type adminURLError struct {
	server string
	err    error
}

func (e adminURLError) Unwrap() error { return e.err }

func (e adminURLError) Error() string {
	if errors.Is(e.err, client.ErrNotCluster) {
		return fmt.Sprintf("the node at %s is not a cluster node (it runs embedded, cairn serve without --cluster): it has no cluster to show or change", e.server)
	}
	return fmt.Sprintf("%s serves no admin routes: is it the node's --admin-listen address (not its client port)?", e.server)
}

// printClusterStatus prints the nodes, then one line per shard replica.
func printClusterStatus(w io.Writer, st *client.ClusterStatus) error {
	fmt.Fprintf(w, "cluster %s: %d shards, replication %d (answered by node %s)\n", st.ClusterID, st.Shards, st.Replication, st.Node)
	if st.Controller != "" {
		fmt.Fprintf(w, "controller: node %s\n", st.Controller)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tCLIENT URL\tPEER ADDRESS\tSTARTED")
	state := func(id, s string) string {
		if st.IsLeaving(id) {
			return s + ", leaving"
		}
		return s
	}
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.ID, state(n.ID, "up"), n.ClientURL, n.PeerAddr, n.StartedAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	for _, id := range downNodes(st) {
		fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\n", id, state(id, "down"))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SHARD\tNODE\tROLE\tLAG")
	for _, s := range st.ShardStatus {
		if s.Error != "" {
			fmt.Fprintf(tw, "%d\t-\tno leader answered\t%s\n", s.Shard, s.Error)
		}
		if s.Closed {
			fmt.Fprintf(tw, "%d\t-\tbeing built, takes no root yet\t-\n", s.Shard)
		}
		for _, m := range s.Members {
			role := "nonvoter"
			switch {
			case m.ID == s.Leader:
				role = "leader"
			case m.Voter:
				role = "voter"
			}
			if s.FromRecord {
				role += " (record)" // no leader answered: the member as etcd records it
			}
			lag := "?"
			switch {
			case !st.Registered(m.ID):
				lag = "down"
			case m.Lag >= 0:
				lag = fmt.Sprint(m.Lag)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Shard, m.ID, role, lag)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SHARD\tROOTS\tSTORED\tCOMMANDS/S")
	for _, s := range st.ShardStatus {
		stored, rate := "-", "-" // no leader answered
		if s.StoredBytes != nil && s.WriteRate != nil {
			stored, rate = humanize.IBytes(uint64(max(*s.StoredBytes, 0))), fmt.Sprintf("%.2f", *s.WriteRate)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", s.Shard, s.Roots, stored, rate)
	}
	return tw.Flush()
}

// downNodes are the shard members that are not registered nodes (their lease expired:
// stopped, crashed or cut off), each once, in order of first appearance.
func downNodes(st *client.ClusterStatus) []string {
	var down []string
	seen := map[string]bool{}
	for _, s := range st.ShardStatus {
		for _, m := range s.Members {
			if !seen[m.ID] && !st.Registered(m.ID) {
				down = append(down, m.ID)
			}
			seen[m.ID] = true
		}
	}
	return down
}
