// Package corestest is the conformance suite of workbench.Cores, the router that finds the
// metadata core of an agent root (docs/architecture.md, "Replication and placement"): one
// behavioural contract, run against every implementation — workbench.SingleCore over a
// single-voter replica, the embedded shard host, and the cluster shard host (shard/host)
// over an in-process three-replica cluster, with its roots placed up front or left
// unplaced until their first write.
//
// The suite reaches the cores only through workbench.Cores and workbench.Core, and the
// faults only through the Harness's methods, so it checks what the Workbench adapter can
// observe. Every Harness runs the subtests that read and write; a Cluster harness (several
// replicas) also the check of forwarding to the leader; a Faults harness (a Cluster that
// injects faults) also the subtests of the read index of a lagging follower, a leader lost
// mid-call, routing after a leader change and a node cut off from its shard's log.
//
// Invariants checked:
//
//   - A command proposed through any node applies on its root only, and a linearizable
//     read (Core.ReadView) through any node sees every write acknowledged before it began:
//     a follower waits until its replica applied the leader's read index, and while it
//     cannot, it answers an error, never an older state.
//   - A read at an applied version (ReadViewAt, WaitApplied) returns once that version is
//     applied, and ends with ctx otherwise.
//   - A root never written reads as empty on every node, and reads never place it; its
//     first write creates (and places) it.
//   - A command repeated under its request id is answered from the first one's result
//     (meta.Result.Replayed), through any node, and applies once.
//   - A command through a follower is forwarded to the leader (the leader's peer API
//     serves it) and succeeds without the caller retrying.
//   - A leader lost after it applied a forwarded command and before it answered ends the
//     call with an error matching workbench.ErrOutcomeUnknown once the caller's node
//     learns of the loss (within 10 s, not at the call's deadline); under a request id the
//     cores retry it themselves at the next leader and answer the first result.
//   - While the leadership moves, no call through any node answers ErrCoreUnavailable (the
//     cores wait for the election themselves, bounded); once it moved, every node routes
//     to the new leader at once. A node cut off from its shard's log answers an error
//     matching ErrCoreUnavailable or ErrOutcomeUnknown within bounds, never a success.
//
// The suite's plain writes and reads retry retryable errors (writes under their request
// id) as a client does, since a loaded machine may move a leader at any time; the checks of
// forwarding, of a leader move, of a lost leader and of a lagging or cut-off node make
// single attempts and judge the one answer.
//
// Every wait of the suite is bounded (a context deadline, or a watchdog that fails the
// test), so a core that hangs fails the suite instead of stalling it. Test support only:
// only _test.go files import it.
package corestest
