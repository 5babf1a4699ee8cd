package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cairnstore/cairn/bench"
)

// benchGCPercent is the load generator's GOGC when the environment sets none.
const benchGCPercent = 400

// benchLong is the help text of cairn bench: its scenarios, loops and baselines.
var benchLong = `Measure a running Cairn over HTTP (REST; MCP for the mcp scenario), as a user would,
and report throughput,
latency percentiles (HdrHistogram, 1 µs..60 s), errors by class and a per-second series.

Scenarios: ` + strings.Join(bench.Scenarios, ", ") + `.
  small-put   PUT a new --size (1 KiB) file per operation
  small-get   GET one of --files (256) pre-written files
  stat        HEAD one of --files (256) pre-written files
  mixed       GET with probability --read-ratio, else overwrite, over --files (256)
  append-log  append a --size (128 B) record to one of --files (4) log files
  object-put  PUT a new --size (1 MiB) file per operation, streamed
  object-get  GET one of --files (4) pre-written --size (1 MiB) files
  list        list a directory of --files (100) entries, every page
  snapshot    mint a snapshot of a workbench of --files (100) files
  restore     restore a snapshot of a workbench of --files (100) files into a new one
  mcp         an agent's MCP tool mix over streamable HTTP (go-sdk client) on --files
              (64) text files: read 30%, stat 15%, list 15%, put_file 15%, append 10%,
              grep 10%, search 5%; latency also broken down by tool

The load generator shares the machine with the server it measures: it runs its garbage
collector at GOGC=400 (unless GOGC is set), spending memory to spend less CPU.

Closed loop (default): --concurrency clients, each sending its next request when the
previous one returns. Open loop (--rate R): one request due every 1/R s, at most
--max-in-flight at once, latency measured from each request's due time so a stall
is not hidden (requests never sent by the end of --drain-timeout count as "not sent").
--sweep runs the open loop once per rate to show where latency turns up.

--baseline runs each named baseline right after each Cairn phase, with the same load
and payloads, and reports the Cairn/baseline ratios:
  fsync  write the same bytes to a new file + fsync, append a log record + fsync, in a
         temporary directory under --baseline-dir (small-put, append-log, object-put)
  minio  raw minio-go PutObject/GetObject of the same bytes against
         --baseline-minio-endpoint, bucket --baseline-minio-bucket, credentials from
         AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (small-put, small-get, object-put,
         object-get)
  etcd   clientv3 Put of the same bytes to the etcd cluster at
         --baseline-etcd-endpoints (small-put, append-log)

--s3-gateway URL also runs the scenario through the server's S3 gateway (cairn serve
--s3-listen) with the AWS SDK for Go v2 (path style, its default checksums), right after
the REST phase with the same load, and reports its ratios to REST and to each baseline
(small-put, small-get, object-put, object-get). It signs with an S3 key of --agent's root
(cairn admin key create --s3), from CAIRN_BENCH_S3_ACCESS_KEY_ID and
CAIRN_BENCH_S3_SECRET_ACCESS_KEY.

Progress goes to stderr; the results table to stdout; --out, --markdown and --plot
write the full report as JSON, Markdown and a PNG plot.`

func newBenchCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	var size, out, markdown, plotPath string
	cmd := &cobra.Command{
		Use:   "bench --scenario S [--concurrency N | --rate R | --sweep R1,R2,...]",
		Short: "Measure a running Cairn over HTTP (closed or open loop, REST and its S3 gateway) next to fsync, MinIO and etcd baselines",
		Long:  benchLong,
		Example: `  cairn bench --scenario small-put --concurrency 64 --duration 10s --baseline fsync
  cairn bench --scenario small-put --concurrency 64 --baseline fsync,etcd --baseline-etcd-endpoints 127.0.0.1:2379
  AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... cairn bench --scenario object-get --size 64MiB \
      --concurrency 4 --baseline minio --baseline-minio-endpoint http://127.0.0.1:9000 \
      --baseline-minio-bucket bench --out r.json --markdown r.md --plot r.png
  cairn bench --scenario stat --sweep 1000,5000,10000,20000 --duration 10s
  CAIRN_BENCH_S3_ACCESS_KEY_ID=CAIRN... CAIRN_BENCH_S3_SECRET_ACCESS_KEY=... cairn bench \
      --scenario object-put --size 64MiB --concurrency 2 --s3-gateway http://127.0.0.1:9100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f := cmd.Flag("server"); f != nil {
				cfg.Server = f.Value.String()
			}
			if size != "" {
				n, err := bench.ParseSize(size)
				if err != nil {
					return usageError{err}
				}
				if n == 0 {
					return usageErrorf("--size must be > 0")
				}
				cfg.SizeBytes = n
			}
			cfg.MinIO.AccessKey, cfg.MinIO.SecretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
			cfg.S3Gateway.AccessKeyID, cfg.S3Gateway.SecretAccessKey = os.Getenv("CAIRN_BENCH_S3_ACCESS_KEY_ID"), os.Getenv("CAIRN_BENCH_S3_SECRET_ACCESS_KEY")
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			// The load generator shares the machine with what it measures: it spends memory
			// to spend less CPU collecting garbage, baselines and Cairn alike.
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(benchGCPercent)
			}
			stderr := cmd.ErrOrStderr()
			tty := stderr == os.Stderr && term.IsTerminal(int(os.Stderr.Fd()))
			rep, runErr := bench.Run(cmd.Context(), cfg, bench.RunOptions{Progress: stderr, Terminal: tty})
			if rep == nil {
				return runErr
			}
			// An interrupted run still writes what it measured.
			err := errors.Join(runErr, writeReport(out, rep.WriteJSON), writeReport(markdown, rep.WriteMarkdown), writeReport(plotPath, rep.WritePNG))
			fmt.Fprintln(cmd.OutOrStdout())
			if werr := rep.WriteSummary(cmd.OutOrStdout()); werr != nil {
				err = errors.Join(err, werr)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Agent, "agent", envOr("CAIRN_AGENT", cfg.Agent), "agent root the benchmark workbench lives under (env CAIRN_AGENT)")
	f.StringVar(&cfg.Workbench, "workbench", "", "workbench to work in (default: a fresh bench-<time>-<random>)")
	f.StringVar(&cfg.Scenario, "scenario", bench.ScenarioSmallPut, "scenario: "+strings.Join(bench.Scenarios, ", "))
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "closed loop: concurrent clients")
	f.Float64Var(&cfg.Rate, "rate", 0, "open loop: requests per second (0 = closed loop)")
	f.IntVar(&cfg.MaxInFlight, "max-in-flight", cfg.MaxInFlight, "open loop: bound on requests in flight")
	f.Float64SliceVar(&cfg.SweepRates, "sweep", nil, "open loop once per rate, e.g. 100,200,400 (requests per second)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each phase")
	f.StringVar(&size, "size", "", "body size: 1KiB, 1MiB, 64MiB, ... (default: the scenario's)")
	f.IntVar(&cfg.Files, "files", 0, "files the scenario chooses from (default: the scenario's)")
	f.Float64Var(&cfg.ReadRatio, "read-ratio", cfg.ReadRatio, "mixed: fraction of requests that are reads, 0..1")
	f.StringSliceVar(&cfg.Baselines, "baseline", nil, "also run these baselines with the same load, comma-separated: "+strings.Join(bench.Baselines, ", "))
	f.StringVar(&cfg.BaselineDir, "baseline-dir", "", "fsync baseline: parent of its temporary directory (default: the system temp dir; use the server's disk)")
	f.StringVar(&cfg.MinIO.Endpoint, "baseline-minio-endpoint", "", "minio baseline: the object store, http://host:port or https://host[:port] (credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	f.StringVar(&cfg.MinIO.Bucket, "baseline-minio-bucket", "", "minio baseline: bucket to write to, under the prefix cairn-bench-baseline/ (created when missing)")
	f.StringVar(&cfg.MinIO.Region, "baseline-minio-region", "", "minio baseline: region requests are signed for (default us-east-1)")
	f.StringVar(&cfg.RelayEndpoint, "baseline-relay-endpoint", "", "relay baseline: URL of a `cairn bench relay` to the --baseline-minio-endpoint store (bucket and credentials as the minio baseline's)")
	f.StringSliceVar(&cfg.EtcdEndpoints, "baseline-etcd-endpoints", nil, "etcd baseline: the cluster's client endpoints, host:port,...")
	f.StringVar(&cfg.S3Gateway.Endpoint, "s3-gateway", "", "also run the scenario through the server's S3 gateway at this URL (credentials from CAIRN_BENCH_S3_ACCESS_KEY_ID, CAIRN_BENCH_S3_SECRET_ACCESS_KEY)")
	f.StringVar(&cfg.S3Gateway.Region, "s3-gateway-region", "", "region the S3 gateway's requests are signed for, its --s3-region (default us-east-1)")
	f.StringVar(&cfg.Backend, "backend", "", "the measured server's blob backend (dir, s3, ...), recorded in the report")
	f.IntVar(&cfg.Nodes, "nodes", 0, "the measured server's node count, recorded in the report")
	f.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "open loop: how long late requests are still sent after --duration")
	f.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "bound on each request")
	f.BoolVar(&cfg.LeanHTTP, "lean-http", false, "stat, list and mcp: send the HEADs, the listing GETs or the tool calls over a lean HTTP/1.1 client (fasthttp) instead of Cairn's Go client or the MCP go-sdk's, so the generator takes less of a shared machine's CPU; http:// servers only")
	f.StringVar(&out, "out", "", "write the JSON report to this file")
	f.StringVar(&markdown, "markdown", "", "write the Markdown report to this file")
	f.StringVar(&plotPath, "plot", "", "write a PNG plot of latency percentiles and throughput over time (a sweep: against the offered rate) to this file")
	cmd.AddCommand(newBenchRelayCommand())
	return cmd
}

// newBenchRelayCommand is `cairn bench relay`: the relay baseline's server.
func newBenchRelayCommand() *cobra.Command {
	var listen, target string
	cmd := &cobra.Command{
		Use:   "relay --target OBJECT-STORE-URL [--listen ADDR]",
		Short: "Relay every request to an object store and do nothing else (the relay baseline's server)",
		Long: "Serve on --listen a relay that passes every request to --target (an S3 endpoint such as\n" +
			"http://127.0.0.1:9000) and streams its answer back, with no hashing, chunking or\n" +
			"metadata: the floor of a server process that moves every byte between its clients\n" +
			"and that store. Prints the address it listens on, then serves until SIGINT or SIGTERM.\n" +
			"`cairn bench --baseline relay --baseline-relay-endpoint http://ADDR` measures through it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" {
				return usageErrorf("--target is required")
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "relay listening on http://%s to %s\n", ln.Addr(), target)
			return bench.ServeRelay(cmd.Context(), ln, target)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	cmd.Flags().StringVar(&target, "target", "", "the object store's URL, http://host:port or https://host[:port]")
	return cmd
}

// writeReport writes one report file with write; "" writes nothing.
func writeReport(path string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
