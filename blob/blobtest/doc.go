// Package blobtest is the conformance suite every blob.Store backend runs (README.md#testing,
// layer 2): one behavioural contract, checked the same way against blob/dir, blob/mem and
// blob/s3.
//
// The suite only uses the blob.Store interface, so it checks what callers can observe:
// round trips of empty, tiny, compressible, incompressible and multi-segment-sized blobs;
// put-if-absent; digest checks; ranged reads and ErrRange; Stat; idempotent Delete; List per
// root; key validation; concurrency (run it with -race); context cancellation; Close.
//
// RunDamage checks what a damaged blob does: every read fails with ErrCorrupt, whatever
// the range, and the next Put of the same content repairs it (put-if-absent verifies
// before it trusts). Damaging stored bytes is backend-specific, so each backend passes a
// Damage function; other damage (headers, metadata) is tested by each backend itself.
//
// Hooked wraps a real store for the tests of its callers (the collector in shard/worker,
// the write path in workbench): its List and Delete can fail, List can wait at a gate, and
// Put and Delete call the test's hooks; Stored checks whether a store holds a key. Dir is
// the real store those tests run over: a blob/dir store in the test's temporary directory,
// closed when the test ends.
//
// It never touches anything but the stores open returns, and never asserts on timing.
package blobtest
