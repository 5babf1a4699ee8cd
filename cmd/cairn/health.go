package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// defaultProbeTimeout bounds one `cairn health` probe: below the interval of every
// prober that runs it (Docker's HEALTHCHECK, a Kubernetes exec probe).
const defaultProbeTimeout = 5 * time.Second

// addHealthCommand registers `cairn health`: the probe a container image without curl
// runs against its own node.
func addHealthCommand(root *cobra.Command) {
	var (
		ready   bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "health [--ready] [--timeout D]",
		Short: "Probe a node's /healthz (or /readyz) and exit 0 when it answers ok",
		Long: `Probe the node at --server (CAIRN_SERVER) once: GET /healthz, or /readyz with --ready,
with the global --ca-file, --client-cert and --client-key (no API key is needed). It
prints the node's status and exits 0 when the node answers 200, and 1 otherwise (not
reachable, not ready, or past --timeout). It never retries: the prober that runs it
(a container HEALTHCHECK, an exec probe) repeats on its own schedule.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout must be positive (got %s)", timeout)
			}
			server := defaultServer
			if f := cmd.Flag("server"); f != nil {
				server = f.Value.String()
			}
			path := client.HealthPath
			if ready {
				path = client.ReadyPath
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			h, err := client.New(server, httpClient(cmd, server)).Probe(ctx, path)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", server+path, h.Status)
			return nil
		},
	}
	cmd.Flags().BoolVar(&ready, "ready", false, "probe /readyz (serves writes, object store and disks fine) instead of /healthz")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultProbeTimeout, "give up after this long")
	root.AddCommand(cmd)
}
