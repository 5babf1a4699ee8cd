// Package internal holds no code: it is the home of the module's internal packages and of
// the test that keeps its test support out of binaries.
//
// Below it: retry (bounded waits instead of sleeps), freeport, etcdtest (an embedded etcd),
// certtest (throw-away TLS material), metricstest (reads Prometheus series) — test
// support — and ready (waits for a process's health endpoint; used by a command too) and
// tidy (the repository's tidy tests, see its doc.go).
//
// Invariant: no package of the module imports a test-support package (the list in
// testsupport_test.go) from a non-test file; testsupport_test.go checks it with go list.
package internal
