package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/server"
)

// newAdminClusterCommand is `cairn admin cluster` and its subcommands.
func newAdminClusterCommand() *cobra.Command {
	cluster := &cobra.Command{
		Use:   "cluster",
		Short: "Cluster operations (cairn serve --cluster)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's nodes, shards, leaders and applied-index lag",
		Long: "Show the cluster as the node at --server sees it: the registered nodes, and for\n" +
			"every shard its leader and each replica's role and lag (log entries its applied\n" +
			"index is behind the leader's commit index; ? when the replica did not answer).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := adminGet(cmd, server.ClusterStatusPath)
			if err != nil {
				return err
			}
			if asJSON {
				_, err := cmd.OutOrStdout().Write(raw)
				return err
			}
			var st server.ClusterStatus
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("admin cluster status: decoding the answer: %w", err)
			}
			return printClusterStatus(cmd.OutOrStdout(), st)
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	cluster.AddCommand(status)
	return cluster
}

// printClusterStatus prints the nodes, then one line per shard replica.
func printClusterStatus(w io.Writer, st server.ClusterStatus) error {
	fmt.Fprintf(w, "cluster %s: %d shards, replication %d (answered by node %s)\n\n", st.ClusterID, st.Shards, st.Replication, st.Node)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCLIENT URL\tPEER ADDRESS\tSTARTED")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.ID, n.ClientURL, n.PeerAddr, n.StartedAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SHARD\tNODE\tROLE\tLAG")
	for _, s := range st.ShardStatus {
		if s.Error != "" {
			fmt.Fprintf(tw, "%d\t-\tno leader answered\t%s\n", s.Shard, s.Error)
			continue
		}
		for _, m := range s.Members {
			role := "nonvoter"
			switch {
			case m.ID == s.Leader:
				role = "leader"
			case m.Voter:
				role = "voter"
			}
			lag := "?"
			if m.Lag >= 0 {
				lag = fmt.Sprint(m.Lag)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Shard, m.ID, role, lag)
		}
	}
	return tw.Flush()
}

// adminGet gets path from the --admin-server of cmd and returns the 2xx answer; any other
// answer is a *client.Error built from the server's error envelope.
func adminGet(cmd *cobra.Command, path string) ([]byte, error) {
	srv := adminServer(cmd)
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, strings.TrimSuffix(srv, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminResponseBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return raw, nil
	}
	e := &client.Error{HTTPStatus: resp.StatusCode, Code: "Internal", Message: http.StatusText(resp.StatusCode)}
	var env struct {
		Code      string         `json:"code"`
		Message   string         `json:"message"`
		Retryable bool           `json:"retryable"`
		Details   map[string]any `json:"details"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Code != "" {
		e.Code, e.Message, e.Retryable, e.Details = env.Code, env.Message, env.Retryable, env.Details
	}
	return nil, e
}
