// Package framework lets one end-to-end scenario run against a Cairn cluster built two
// ways, as etcd's tests/framework does: nodes inside the test process (api/server's
// cluster nodes, fast to start, seen by the race detector) and real `cairn serve
// --cluster` processes (Processes, which can also be killed with SIGKILL and
// frozen). A scenario takes a Cluster and talks to its nodes over HTTP only, so the same
// body exercises both.
//
// It is test support: only _test.go files import it (internal/testsupport_test.go checks
// this). Process is one `cairn serve` child process (StartProcess: an embedded node, or a
// cluster node when its arguments say so) that a test stops, kills with SIGKILL, freezes
// and restarts on its data directory; Processes is a Cluster of them (StartProcesses,
// OnProcesses) and InProcess one of api/server's nodes, using only its exported API.
// Both take what their nodes share from Stores (StartStores: the etcd, the MinIO bucket,
// the nodes' `cairn serve` arguments or ops.Config), as do the integration tests that
// build a cluster or an s3-backed node of their own. The binary a Process runs is the
// caller's (BuildCairn builds one); children get the test's environment without CAIRN_*
// variables (ChildEnv) and die with the test process on Linux.
//
// Invariants scenarios rely on:
//
//   - A Cluster's nodes share one real etcd (internal/etcdtest) and one MinIO bucket
//     (blob/s3/s3test), replicate each shard to three nodes, listen on loopback ports
//     picked at start, and are stopped when the test ends.
//   - Nodes are numbered from 0 in the order they were started; a stopped node keeps its
//     number and its data directory, and Restart(i) serves them again (on new ports:
//     ClientURL and AdminURL always answer for the running incarnation).
//   - Stop is a graceful stop (the node hands over the leaderships it holds, as on
//     SIGTERM); no Cluster method returns before the node is up or down.
//   - A Cluster's methods, and a Process's, must be called from the test goroutine.
//   - A Process that exited non-zero after SIGTERM, or whose output holds a data race
//     report (DataRaceMarker), fails its test; its output's tail is logged when the test
//     failed.
package framework
