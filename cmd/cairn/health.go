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
		wait    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "health [--ready] [--timeout D] [--wait D]",
		Short: "Probe a node's /healthz (or /readyz) and exit 0 when it answers ok",
		Long: `Probe the node at --server (CAIRN_SERVER) once: GET /healthz, or /readyz with --ready,
with the global --ca-file, --client-cert and --client-key (no API key is needed). It
prints the node's status and exits 0 when the node answers 200, and 1 otherwise (not
reachable, not ready, or past --timeout). By default it never retries: the prober that runs it
(a container HEALTHCHECK, an exec probe) repeats on its own schedule. --wait D probes
again, every 250 ms, until the node answers 200 or D has passed (a script that has just
started a node waits for it with "cairn health --ready --wait 30s"); each probe is still
bounded by --timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout must be positive (got %s)", timeout)
			}
			if wait < 0 {
				return usageErrorf("--wait must not be negative (got %s)", wait)
			}
			server := defaultServer
			if f := cmd.Flag("server"); f != nil {
				server = f.Value.String()
			}
			path := client.HealthPath
			if ready {
				path = client.ReadyPath
			}
			c := client.New(server, httpClient(cmd, server))
			probe := func() (*client.Health, error) {
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				return c.Probe(ctx, path)
			}
			h, err := probeUntil(cmd.Context(), wait, probe)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", server+path, h.Status)
			return nil
		},
	}
	cmd.Flags().BoolVar(&ready, "ready", false, "probe /readyz (serves writes, object store and disks fine) instead of /healthz")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultProbeTimeout, "give up on one probe after this long")
	cmd.Flags().DurationVar(&wait, "wait", 0, "probe again until the node answers ok or this long has passed (0: probe once)")
	root.AddCommand(cmd)
}

// healthPollInterval is the pause between the probes of `cairn health --wait`.
const healthPollInterval = 250 * time.Millisecond

// probeUntil runs probe until it succeeds or wait has passed (wait 0: once), and returns
// the last probe's answer and error.
func probeUntil(ctx context.Context, wait time.Duration, probe func() (*client.Health, error)) (*client.Health, error) {
	deadline := time.Now().Add(wait)
	for {
		h, err := probe()
		if err == nil || !time.Now().Add(healthPollInterval).Before(deadline) {
			return h, err
		}
		select {
		case <-ctx.Done():
			return h, err
		case <-time.After(healthPollInterval):
		}
	}
}
