package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/mcp"
	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/internal/gcfloor"
	"github.com/cairnstore/cairn/ops"
)

func addServerCommands(root *cobra.Command) {
	root.AddCommand(newServeCommand(), newMCPCommand())
	root.AddCommand(newBenchCommand())
	addHealthCommand(root)
}

func newServeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a Cairn node (embedded default: ./cairn-data, http://127.0.0.1:7070)",
		Long: `Run a Cairn node. With no flags it is the embedded default: one node, data in
./cairn-data (locked against a second process), a local-directory blob store, a
single-voter Raft log, REST and MCP on http://127.0.0.1:7070, plus /metrics,
/healthz and /readyz. Settings come from flags, CAIRN_* environment variables and an
optional YAML file (--config), in that order of precedence.

Blobs go to an S3-compatible object store (MinIO, AWS S3, Ceph RGW, SeaweedFS) with
--blob s3://BUCKET[/PREFIX] --s3-endpoint http://HOST:PORT (https:// for TLS); the
credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY only.

With --cluster the node joins a replicated cluster (etcd control plane at --etcd, Raft
and request forwarding on --peer-listen, blobs in an s3:// store): any node accepts any
request and forwards it to the leader of its root's shard. On SIGTERM a node hands the
leadership of the shards it leads to another replica before it exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, creds, log, err := loadNode(cmd)
			if err != nil {
				return err
			}
			// The process is the node's: it may set the collector's goal (ops.Config
			// HeapFloorBytes). Nodes opened by tests or embedding programs leave it alone.
			defer gcfloor.Start(uint64(cfg.HeapFloorBytes)).Stop()
			if cfg.Cluster {
				return serveCluster(cmd.Context(), cfg, creds, log)
			}
			node, err := openNode(cmd.Context(), cfg, creds, log)
			if err != nil {
				return err
			}
			defer node.Close()
			// Accept connections only once the shard serves writes, so that a script that
			// waits for the port (or /healthz) does not meet a not-ready node.
			rctx, cancel := context.WithTimeout(cmd.Context(), cfg.ShutdownTimeout+30*time.Second)
			err = node.WaitReady(rctx)
			cancel()
			if err != nil {
				return err
			}
			return node.Serve(cmd.Context(), func(addr net.Addr) {
				log.Info("cairn is serving", "url", cfg.ClientScheme()+"://"+addr.String(), "admin_url", cfg.ClientScheme()+"://"+node.AdminAddr().String(),
					"data_dir", cfg.DataDir, "blob", cfg.Blob)
			})
		},
	}
	ops.BindFlags(cmd.Flags())
	return cmd
}

// loadNode reads a node's settings from cmd's flags, the environment and --config, and its
// credentials from the environment (a bad one of any is a usage error), and makes the
// node's logger the default, so that what still logs to the default does so in
// --log-format too.
func loadNode(cmd *cobra.Command) (ops.Config, ops.Credentials, *slog.Logger, error) {
	cfg, err := ops.LoadConfig(cmd.Flags(), os.Getenv)
	if err != nil {
		return ops.Config{}, ops.Credentials{}, nil, usageError{err}
	}
	creds, err := ops.LoadCredentials(os.Getenv)
	if err != nil {
		return ops.Config{}, ops.Credentials{}, nil, usageError{err}
	}
	log := ops.NewLogger(cfg, os.Stderr)
	slog.SetDefault(log)
	return cfg, creds, log, nil
}

// openNode is server.Open with the settings it refuses (a TLS file that does not load, a
// data directory this process cannot write, a setting that contradicts the cluster or
// this host) as usage errors: they are the operator's, as a flag the parser refused.
func openNode(ctx context.Context, cfg ops.Config, creds ops.Credentials, log *slog.Logger) (*server.Node, error) {
	node, err := server.Open(ctx, cfg, creds, log)
	if ce := (*ops.ConfigError)(nil); errors.As(err, &ce) {
		return nil, usageError{err}
	}
	return node, err
}

// serveCluster runs a cluster node until ctx ends (SIGTERM), then transfers the leadership
// of the shards it leads and stops.
func serveCluster(ctx context.Context, cfg ops.Config, creds ops.Credentials, log *slog.Logger) error {
	node, err := openNode(ctx, cfg, creds, log)
	if err != nil {
		return err
	}
	defer node.Close()
	return node.Serve(ctx, func(addr net.Addr) {
		log.Info("cairn is serving", "url", cfg.ClientScheme()+"://"+addr.String(), "admin_url", cfg.ClientScheme()+"://"+node.AdminAddr().String(),
			"data_dir", cfg.DataDir, "blob", cfg.Blob, "cluster", true, "node", node.NodeID())
	})
}

func newMCPCommand() *cobra.Command {
	var agent, profile string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Workbench MCP tools over stdio for one agent",
		Long: `Serve the Workbench MCP tools over stdio (stdout carries only protocol messages;
logs go to stderr). With --server (or CAIRN_SERVER) it proxies to a running Cairn over
streamable HTTP, with --ca-file, --client-cert/--client-key and --api-key (or
CAIRN_API_KEY) as every client command; otherwise it runs an embedded node on
--data-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agent == "" {
				agent = envOr("CAIRN_AGENT", "default")
			}
			ctx := cmd.Context()
			if cmd.Flags().Changed("server") || os.Getenv("CAIRN_SERVER") != "" {
				url, _ := cmd.Flags().GetString("server")
				hc, err := client.NewHTTPClient(url, transportOptions(cmd))
				if err != nil {
					return transportError(err)
				}
				return mcp.ServeStdioProxyProfile(ctx, url, agent, profile, hc, cmd.InOrStdin(), cmd.OutOrStdout())
			}
			cfg, creds, log, err := loadNode(cmd)
			if err != nil {
				return err
			}
			node, err := openNode(ctx, cfg, creds, log)
			if err != nil {
				if errors.Is(err, server.ErrDataDirLocked) {
					return fmt.Errorf("%w (is `cairn serve` running on it? use --server to proxy to it)", err)
				}
				return err
			}
			defer node.Close()
			if err := node.WaitReady(ctx); err != nil {
				return err
			}
			return mcp.ServeStdioProfile(ctx, node.Service(), agent, profile, node.Documents(), cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent id whose root the session works in (env CAIRN_AGENT, default \"default\")")
	cmd.Flags().StringVar(&profile, "profile", "workbench", "tools to serve: workbench (the 18 Workbench tools) or cairn (those plus Cairn's own: history, diff, proposals, lifecycle)")
	ops.BindFlags(cmd.Flags())
	return cmd
}
