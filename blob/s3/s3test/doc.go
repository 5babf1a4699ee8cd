// Package s3test runs a real MinIO server for tests of blob/s3 and of anything built on
// it: a fresh process on free loopback ports with its own data directory, stopped when the
// test ends.
//
// The server binary is $CAIRN_MINIO_BIN (`make test` sets it), or else the one that
// scripts/minio.sh prints, which builds it from a pinned source version the first time
// (minutes). A test that cannot get a server fails; it never skips.
//
// Invariants tests rely on:
//
//   - Start returns only a live server (its health endpoint answers 200 and the object
//     layer is up), on loopback ports, with an empty data directory of its own; otherwise it
//     fails the test. It retries with new ports when MinIO could not bind the ones picked.
//   - Every server is stopped when the test ends (SIGKILL, then up to 10 s for it to exit,
//     else the test fails); on Linux it also dies with the test process (Pdeathsig), so a
//     crashed or timed-out test leaves none running. A failed test logs the tail of the
//     server's log.
//   - Stop is a crash (SIGKILL) that keeps the data directory; Restart serves the same
//     directory on the same Endpoint. Pause and Resume (SIGSTOP, SIGCONT) make a server
//     that accepts connections and answers nothing, as a hung object store.
//   - Bucket never returns a name used before in the test process; Open closes the store
//     when the test ends.
//
// A Server's methods must be called from the test goroutine.
package s3test
