// Package blobtest is the conformance suite every blob.Store backend runs (DESIGN.md §11,
// layer 2): one behavioural contract, checked the same way against blob/dir, blob/mem and
// blob/s3.
//
// The suite only uses the blob.Store interface, so it checks what callers can observe:
// round trips of empty, tiny, compressible, incompressible and multi-segment-sized blobs;
// put-if-absent; digest checks; ranged reads and ErrRange; Stat; idempotent Delete; List per
// root; key validation; concurrency (run it with -race); context cancellation; Close.
// Damage to stored data is backend-specific and is tested by each backend itself.
//
// It never touches anything but the stores open returns, and never asserts on timing.
package blobtest
