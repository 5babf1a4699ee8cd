//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/bench/etcdcluster"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "etcd-cluster" {
		os.Exit(runEtcdCluster(os.Args[2]))
	}
	var o options
	flag.StringVar(&o.cairn, "cairn", "bin/cairn", "the cairn binary (built with -tags pprof for the server profile)")
	flag.StringVar(&o.minio, "minio", os.Getenv("CAIRN_MINIO_BIN"), "the MinIO server binary (default $CAIRN_MINIO_BIN; scripts/minio.sh prints one)")
	flag.StringVar(&o.goCmd, "go", "go", "the go command (for go tool pprof)")
	flag.StringVar(&o.out, "out", "bench/results", "directory for every run's JSON, Markdown and PNG report and the profile")
	flag.StringVar(&o.markdown, "markdown", "BENCHMARKS.md", "the summary to write")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured phase")
	flag.DurationVar(&o.sweepDuration, "sweep-duration", 8*time.Second, "length of each rate of the small-put sweep")
	flag.StringVar(&o.measured, "measured", "bench/measured", "directory of Markdown sections measured by scripts (each says its command), included in the summary as they are")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (server data, logs) instead of removing it")
	flag.Parse()
	if o.minio == "" {
		fmt.Fprintln(os.Stderr, "bench-report: -minio (or CAIRN_MINIO_BIN) is required; scripts/minio.sh prints the binary's path")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "bench-report: %v\n", err)
		os.Exit(1)
	}
}

// runEtcdCluster is the child process of startEtcd: it runs the three members with their
// data under dir, prints their endpoints on one line, and stops them on SIGTERM.
func runEtcdCluster(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := etcdcluster.Start(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s%s\n", etcdReadyPrefix, strings.Join(c.Endpoints(), ","))
	<-ctx.Done()
	c.Close()
	return 0
}
