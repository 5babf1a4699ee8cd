// Package etcdtest runs real etcd servers inside the test process (go.etcd.io/etcd's
// embed package) for the tests of the control plane, of cluster nodes and of the
// end-to-end cluster scenarios: one member or a cluster of several, on free loopback
// ports, each with a data directory of its own under the test's temp dir.
//
// It is test support: only _test.go files and other test-support packages import it
// (internal/testsupport_test.go checks this).
//
// Invariants tests rely on:
//
//   - Start and StartCluster return only serving members (ReadyNotify fired within 30 s),
//     otherwise they fail the test. Every member is stopped when the test ends.
//   - Members tick fast (25 ms ticks, 250 ms elections, so etcd's minimum lease TTL is
//     short) and skip fsync; neither changes the semantics a test observes through a
//     client, only how fast it runs on a shared machine.
//   - Stop(i) stops member i and waits until it has stopped; a stopped member keeps its
//     ports and data, and Restart(i) serves them again. Stop of a stopped member does
//     nothing.
//   - A Cluster's methods must be called from the test goroutine.
package etcdtest
