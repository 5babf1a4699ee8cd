//go:build linux

// Command bench-report regenerates BENCHMARKS.md from one run on this machine. It starts,
// on loopback, a MinIO server, a three-member etcd cluster (embedded, in a child process)
// and two single-node `cairn serve` processes: the embedded default (blobs in its data
// directory) and one keeping its blobs in the MinIO. It then runs `cairn bench` once per
// scenario with the baselines that have a like-for-like operation (fsync, raw minio-go,
// etcd), an open-loop small-put sweep that finds the knee, and an open-loop phase at the
// knee while it takes a CPU profile of the server (`go tool pprof -top`) and accounts the
// machine's CPU and I/O wait. Last it starts a three-node cluster (`cairn serve --cluster`,
// replication 3) on the same etcd and MinIO and reruns small-put (fsync and etcd baselines),
// small-get, stat and the 1 MiB object path (minio baseline) against it. Every `cairn bench` run leaves its JSON, Markdown and PNG
// report in -out; BENCHMARKS.md summarises them and names the commands that made them.
//
//	make bench-report
//
// which builds bin/cairn with -tags pprof and runs
//
//	go run ./bench/cmd/bench-report -cairn bin/cairn -minio "$(scripts/minio.sh)"
//
// Linux only: it reads /proc for the CPU accounting.
//
// Invariants:
//
//   - Every server it starts (MinIO, the etcd child, the cairn nodes) listens on loopback
//     only, on ports free a moment before, with data under one temporary directory that is
//     removed at the end unless -keep.
//   - Every server it starts is stopped before it returns, also on an error or a signal
//     (SIGTERM, then SIGKILL after 15 s), and is killed with it if it dies first
//     (Pdeathsig); a signal also kills the `cairn bench` run in flight.
//   - The summary (-markdown) is written only after every run succeeded, so a failed or
//     interrupted run leaves the previous BENCHMARKS.md as it was; the reports of the runs
//     that finished stay in -out.
package main
