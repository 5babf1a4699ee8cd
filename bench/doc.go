// Package bench is `cairn bench`: a load generator that measures a running Cairn the way
// its users meet it, over HTTP, and reports latency and throughput next to a raw baseline
// run by the same harness in the same process (DESIGN.md §12).
//
// The package has three layers:
//
//   - The harness core (RunLoad, Load, Op, Clock, Phase) knows nothing of Cairn. It drives
//     an Op in a closed loop (Concurrency workers, each issuing the next operation when
//     the previous one finishes) or an open loop (a constant Rate of operations on a
//     fixed schedule, at most MaxInFlight at once), and records every latency in an
//     HdrHistogram (1 µs resolution, 1 µs..60 s).
//   - Scenarios (small-put, small-get, stat, mixed, append-log, object-put, object-get,
//     list) turn an Op into REST calls through api/client, and the fsync baseline turns
//     it into "write the bytes to a file + fsync, append a log record + fsync" in a
//     temporary directory.
//   - Run assembles phases (one run, a baseline, or a rate sweep) into a Report, written
//     as JSON and Markdown with the environment it was measured in.
//
// What bench must never do:
//
//   - Import Cairn's storage or server packages (meta, blob, shard, api/workbench,
//     api/rest, api/mcp, api/server, ops) outside tests. It talks to Cairn only over
//     HTTP, like any user, through api/client; a number it reports is a number a user
//     can reproduce. (TestHarnessTalksToCairnOnlyOverHTTP checks the imports.)
//   - Hide coordinated omission. In the open loop every operation has an intended send
//     time on a fixed schedule and its latency is measured from that time, not from when
//     a free worker got round to sending it. An operation that could not be sent by the
//     end of the drain period is still recorded, from its intended time to the moment the
//     run gave up on it, and counted under the error class "not sent".
//   - Assert performance. Targets live in reports (DESIGN.md §11.5), never in tests.
//
// Invariants callers rely on: RunLoad reads time only through its Clock and blocks only
// in the Clock or the Op, so a simulated clock and a modelled Op make a run deterministic;
// every goroutine RunLoad starts has returned when it returns; Run removes the baseline's
// temporary directory and closes its idle HTTP connections before it returns.
package bench
