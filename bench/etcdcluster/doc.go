// Package etcdcluster runs a three-member etcd cluster on loopback, in this process, for
// the etcd baseline of `cairn bench` (BENCHMARKS.md: a replicated-metadata peer measured
// side by side with Cairn). It is a benchmark fixture, not a deployment: members share one
// machine and one disk, as a local 3-node Cairn cluster would.
//
// Invariants: Start returns either a cluster whose members have all joined and elected a
// leader, or an error with every member it started stopped again; Close stops every member
// and waits for it.
package etcdcluster
