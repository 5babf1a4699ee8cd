// Package freeport picks loopback ports for test servers that must be told their address
// before they start (etcd's peer and client URLs, MinIO's --address, a node's peer port
// behind a fault proxy).
//
// It is test support: only _test.go files and other test-support packages import it
// (internal/testsupport_test.go checks this).
//
// Invariants tests rely on:
//
//   - An address it returns was free a moment ago (it was bound, then released), on the
//     host asked for; another process may take it before the caller binds it, so a
//     caller that can bind port 0 itself should, and one that cannot should retry on
//     "address in use" (as blob/s3/s3test does).
//   - It never returns an address off loopback unless the caller names another host.
//   - It fails the test (Fatalf) when no port can be bound.
package freeport
