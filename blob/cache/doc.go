// Package cache is a node's local segment cache (docs/architecture.md#the-read-path): a bounded on-disk LRU of
// verified blobs, filled on read and on write, served from the file (so a read of a hot
// segment is a sendfile from the page cache to the connection, no user-space copy and no
// second digest).
//
// A cached blob is a plain file of its uncompressed bytes, <dir>/<root-uid>/<aa>/<hex
// digest>, written to a temporary name and renamed, never fsync'd: the cache is not
// durable state, the object store is. Invariants callers rely on:
//
//   - Bounded: the bytes of the cached files never exceed MaxBytes. A fill first evicts
//     the least recently used entries until it fits (a blob larger than MaxBytes is not
//     cached); an eviction unlinks the file, and a reader that has it open finishes.
//   - Verified once, when filled: Put takes bytes the caller already verified against the
//     key's digest (blob.ReadVerified, or the write path's own hash) and trusts them. An
//     entry found in the directory at Open (a restart) is not trusted until it has been
//     read through its digest once, on its first Get, and the index of such entries is
//     rebuilt from the directory (least recently filled first), so a restart keeps the
//     cache. A crash that left a torn file is caught there.
//   - A cheap check on every Get: the file must be the one verified (same inode), of the
//     blob's size and with the same modification time; a file rewritten, truncated or
//     replaced since is read through its digest again, and a file that fails is removed and
//     reported as a miss (counted in cairn_cache_corrupt_total), so the caller refetches
//     from the object store. Between checks the cache trusts the local disk as the page
//     cache does: silent bit rot under an unchanged inode, size and mtime is not caught
//     (re-verifying every hit would cost the hashing the cache exists to save).
//   - Verified as the object store's copy is: the digest a check reads a file through is
//     the blob's BLAKE3 when its metadata recorded one (the caller passes it to Get),
//     else the SHA-256 of its key (blob.Check, blob.WithBlake3).
//   - Never an error on the data path: a fill that fails (disk full, permissions) is
//     logged and counted, never fails the read or write that caused it; Get returns a hit
//     or a miss.
//
// Content addressing makes invalidation unnecessary: the bytes of a key never change, so
// a cached entry is right for as long as it lives, even after the object store deleted
// the blob (nothing references it then, and the LRU ages it out).
//
// The metrics are cairn_cache_hits_total, cairn_cache_misses_total,
// cairn_cache_served_bytes_total, cairn_cache_filled_bytes_total,
// cairn_cache_evictions_total, cairn_cache_corrupt_total, cairn_cache_fill_errors_total,
// cairn_cache_bytes and cairn_cache_entries (Cache.Register).
package cache
