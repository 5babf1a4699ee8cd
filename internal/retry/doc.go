// Package retry waits in tests for a condition that becomes true eventually (a leader
// elected, a replica caught up, a counter moved), the way CockroachDB's SucceedsSoon and
// Consul's retry.Run do, so that no test sleeps a guessed time instead.
//
// It is test support: only _test.go files and other test-support packages import it
// (internal/testsupport_test.go checks this).
//
// Invariants tests rely on:
//
//   - Every wait is bounded: SucceedsSoon gives up after DefaultTimeout, Within after the
//     timeout it is given; then the test fails (Fatalf, so from the test goroutine only)
//     with what it waited for, the number of attempts and the condition's last error.
//   - The condition runs at least once, and again after a pause that starts at 5 ms and
//     doubles up to 100 ms, never concurrently with itself.
//   - A condition that returns nil ends the wait at once; nothing is asserted about how
//     long that took (timing belongs in benchmarks).
package retry
