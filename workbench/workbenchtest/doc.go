// Package workbenchtest builds real Workbench services for tests: a single-voter Raft
// replica (shard) and a local blob directory (blob/dir) in temporary directories, and the
// leader workers of the shard (shard/worker, on demand only), closed when the test ends. No part of it is a mock, so the tests of every surface run against
// the real write and read paths.
//
// Replica (a ready single-voter replica) and SweepUntil (garbage sweeps of a worker Set
// until a report is the expected one) also serve the tests of shard/worker, whose GC
// tests drive the same sweeps from below the service.
//
// LogBuffer is the log destination those tests read back: safe for a node's goroutines to
// write while the test reads, and it decodes the audit lines (workbench.Audit) the
// surfaces write.
//
// Invariants tests rely on:
//
//   - New returns only a node whose shard is a ready leader (it waits up to 10 s for
//     that, then fails the test), so a test's first write needs no retry.
//   - Each node has its own shard and blob directories (tb.TempDir), and tb.Cleanup closes
//     its shard and blob store; two nodes never share a directory.
//   - cfg reaches workbench.New unchanged but for a nil CursorKey, which becomes CursorKey,
//     so the nodes built here accept each other's cursors unless a test sets its own key.
//   - Every failure is tb.Fatal: New never returns a half-built node.
//
// Test support only: only _test.go files import it.
package workbenchtest
