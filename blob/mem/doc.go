// Package mem is an in-memory blob.Store for tests: the same semantics as every other
// backend (blob/blobtest checks them), no durability.
//
// It must never be used to hold data anyone wants back: everything is gone when the Store
// is dropped. Stored payloads are private copies, immutable once stored, so readers never
// hold a lock while they stream. Compression follows blob.Encode like the real backends, so
// PutResult and Info report what blob/dir and blob/s3 would. Store.Corrupt damages a stored
// payload for tests of what readers and writers do with bad data (blobtest.RunDamage).
package mem
