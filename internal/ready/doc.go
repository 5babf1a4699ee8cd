// Package ready waits for a server process started by a test or a tool to answer its
// health endpoint: MinIO's /minio/health/live, Cairn's /readyz. It is not test-only:
// bench-report (a command) and blob/s3/s3test both use it.
//
// Invariants: a wait always ends — the endpoint answers, the process exits (exited is
// closed), ctx ends, or timeout passes — and it never reuses a connection (a server
// restarting on the same port is asked afresh).
package ready
