//go:build linux

// Command bench-report regenerates BENCHMARKS.md from one run on this machine. It starts,
// on loopback, a MinIO server, a three-member etcd cluster (embedded, in a child process)
// and single-node `cairn serve` processes: the embedded default (blobs in its data
// directory), one keeping its blobs in the MinIO and serving the S3 gateway (with an S3 key
// made in its data directory before it starts), and one more with a segment cache. First
// it PUTs one 2 GiB body (generated as it streams) through the MinIO-backed node and GETs
// it back (length and SHA-256 checked), sampling that server's RSS from /proc, then deletes
// the file. It then runs `cairn bench` once per scenario with the baselines that have a
// like-for-like operation (fsync, raw minio-go, a relay, etcd), the cold object jobs also
// through the S3 gateway (`cairn bench --s3-gateway`), an open-loop small-put sweep that
// finds the knee, an open-loop phase at the knee while it takes a CPU profile of the
// server (`go tool pprof -top`) and accounts the machine's CPU and I/O wait, and a
// 64 MiB object-put and cold object-get and a 1 MiB object-put at 16 clients against the
// MinIO-backed node, each while it takes that server's CPU profile the same way. Last it starts a three-node cluster (`cairn
// serve --cluster`, replication 3) on the same etcd and MinIO and reruns small-put (fsync
// and etcd baselines), small-get, stat and the 1 MiB object path (minio baseline) against
// it. Every `cairn bench` run leaves its JSON, Markdown and PNG report in -out, every
// profile its .cpu.pprof; BENCHMARKS.md summarises them and names the commands that made
// them. The run takes about 12 minutes with the default durations, of which the 2 GiB body
// and the three object profiles over one (they do not scale with -duration).
//
//	make bench-report
//
// which builds bin/cairn with -tags pprof and runs
//
//	go run ./bench/cmd/bench-report -cairn bin/cairn -minio "$(scripts/minio.sh)"
//
// Linux only: it reads /proc for the CPU and memory accounting.
//
// Invariants:
//
//   - Every server it starts (MinIO, the etcd child, the cairn nodes) listens on loopback
//     only, on ports free a moment before, with data under one temporary directory that is
//     removed at the end unless -keep.
//   - Every server it starts is stopped before it returns, also on an error or a signal
//     (SIGTERM, then SIGKILL after 15 s), and is killed with it if it dies first
//     (Pdeathsig); a signal also kills the `cairn bench` run in flight.
//   - The large-body phase holds neither body in memory: the PUT's is generated as it
//     streams, the GET's hashed and dropped as it arrives; each transfer has a deadline
//     (rssTransferTimeout), and the file is deleted once it was read back.
//   - The summary (-markdown) is written only after every run succeeded, so a failed or
//     interrupted run leaves the previous BENCHMARKS.md as it was; the reports of the runs
//     that finished stay in -out.
package main
