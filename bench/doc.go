// Package bench is `cairn bench`: a load generator that measures a running Cairn the way
// its users meet it, over HTTP, and reports latency and throughput next to raw baselines
// run by the same harness in the same process, with the same load and payloads
// (BENCHMARKS.md).
//
// The package has three layers:
//
//   - The harness core (RunLoad, Load, Op, Clock, Phase) knows nothing of Cairn. It drives
//     an Op in a closed loop (Concurrency workers, each issuing the next operation when
//     the previous one finishes) or an open loop (a constant Rate of operations on a
//     fixed schedule, at most MaxInFlight at once), and records every latency in an
//     HdrHistogram (1 µs resolution, 1 µs..60 s).
//   - Scenarios (small-put, small-get, stat, mixed, append-log, object-put, object-get,
//     list, snapshot, restore) turn an Op into REST calls through api/client (stat and
//     list, with Config.LeanHTTP, into HEADs or GETs of every page of the same URLs over
//     fasthttp's lean HTTP/1.1 client, lean.go and lean_list.go, so that the generator
//     takes less of a machine it shares); the mcp
//     scenario into an agent's tool mix over MCP streamable HTTP with the official go-sdk
//     client (with Config.LeanHTTP, the same tools/call requests over fasthttp on the
//     protocol version a go-sdk session negotiated, lean_mcp.go); with Config.S3Gateway, the put and get scenarios also into PutObject and
//     GetObject through Cairn's S3 gateway with the AWS SDK for Go v2 (s3gateway.go), a
//     phase right after the REST one. The baselines turn the same Op into "write the
//     bytes to a file + fsync, append a log record + fsync" in a temporary directory
//     (fsync), raw minio-go PutObject/GetObject (minio; the same objectPhases as the S3
//     gateway's, objects.go) and clientv3 Put to an etcd cluster (etcd).
//   - Run assembles phases (one run, or a rate sweep, each Cairn phase followed by every
//     baseline under the same load) into a Report, written as JSON, Markdown and a PNG
//     plot (gonum.org/v1/plot) with the environment it was measured in.
//
// bench/etcdcluster runs a three-member etcd cluster on loopback for the etcd baseline,
// and bench/cmd/bench-report regenerates BENCHMARKS.md from one run of every scenario
// (`make bench-report`).
//
// What bench must never do:
//
//   - Import Cairn's storage or server packages (meta, blob, shard, workbench,
//     api/rest, api/mcp, api/server, ops) outside tests. It talks to Cairn only over
//     HTTP, like any user, through api/client and the MCP go-sdk client (and a plain
//     HTTP/1.1 client for the lean lanes); a number it
//     reports is a number a user can reproduce. (TestHarnessTalksToCairnOnlyOverHTTP
//     checks the imports.)
//   - Leave its baselines' data behind: the fsync baseline's directory, the minio
//     baseline's objects and the etcd baseline's keys are removed after each phase (and
//     so are the S3 gateway phase's objects).
//   - Hide coordinated omission. In the open loop every operation has an intended send
//     time on a fixed schedule and its latency is measured from that time, not from when
//     a free worker got round to sending it. An operation that could not be sent by the
//     end of the drain period is still recorded, from its intended time to the moment the
//     run gave up on it, and counted under the error class "not sent".
//   - Assert performance. Targets live in reports (BENCHMARKS.md), never in tests.
//
// Invariants callers rely on: RunLoad reads time only through its Clock and blocks only
// in the Clock or the Op, so a simulated clock and a modelled Op make a run deterministic;
// every goroutine RunLoad starts has returned when it returns; Run removes what its
// baselines wrote and closes its MCP sessions and idle connections before it returns.
package bench
