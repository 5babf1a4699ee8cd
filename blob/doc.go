// Package blob is Cairn's content-addressed, immutable blob storage (docs/architecture.md#blob-storage-and-garbage-collection) and the
// segmenter of the write path (docs/architecture.md#the-write-path).
//
// A blob is a byte string named by a Key: the agent root that owns it and the SHA-256 of its
// uncompressed bytes. The package knows nothing of metadata: it never decides whether a blob
// is referenced, never reads paths, workbenches or revisions, and never deletes anything on
// its own. Reference counting and delete intents are the FSM's (meta/gc.go); the sweeper
// that deletes unreferenced and orphaned blobs is shard/worker's (gc.go), which runs on
// each shard's leader; the write path's retry of a publish that met it is workbench's
// (publish.go).
//
// Invariants callers rely on, for every Store implementation (blob/blobtest checks them):
//
//   - Content addressing: Put takes a Hashed, bytes with the digest Hash computed for them,
//     so a backend never hashes them again; a Put whose key.Digest is not that digest fails
//     with ErrDigestMismatch and stores nothing. A stored blob never changes; Put of an existing,
//     intact key is a no-op that reports Created=false.
//   - Put-if-absent verifies before it trusts: Put reads an existing blob back whole and
//     checks it against the BLAKE3 of data (Hashed.Blake3, the bytes that hash to the key)
//     before it reports Created=false; a blob that fails (damaged payload, header or
//     metadata) is overwritten with data. So the next upload of the same content repairs a
//     blob a read found corrupt, and no write ever dedupes onto damaged bytes. A dedupe hit
//     costs one full read of the blob.
//   - Durability: when Put returns nil the blob survives a crash of the process and of the
//     machine (for backends that have a disk). A failed or interrupted Put leaves at most an
//     unreferenced whole blob, never a partial one under its final name.
//   - Verification: every Get verifies the whole decompressed blob, whatever range was
//     asked for: against the BLAKE3 its caller gives for it (WithBlake3: the digest the
//     metadata recorded when the write path hashed the bytes), else against its SHA-256. A mismatch, a truncated or over-long payload, or an undecodable
//     payload surfaces as an error wrapping ErrCorrupt from the reader's Read, at the latest
//     in place of io.EOF. A reader never reports a clean io.EOF over bad data. The bytes
//     of a range are handed out before the blob's end is verified, so a caller that must
//     not pass on unverified bytes reads to io.EOF before it uses any (ReadVerified; the
//     Workbench read path and the compactor do).
//     Reads verify by a cryptographic digest, never by a checksum: the object store is not
//     trusted (another tenant's credentials, a tampered bucket), and only a
//     collision-resistant digest of the bytes, recorded where the store cannot reach it,
//     binds them to the key the metadata names; CRC32C or XXH3 catch accidental damage
//     only. The SHA-256 content address costs ~0.59 CPU-ms/MiB with SHA-NI, BLAKE3 (AVX2)
//     0.26 to 0.34 (BenchmarkSegmentChecksum), so a segment whose metadata recorded its
//     BLAKE3 is verified by it (Blake3).
//   - Isolation: blobs are namespaced per root. The same bytes stored under two roots are
//     two blobs; Delete and List of one root never see another root's blobs.
//   - Encoding is invisible to readers: blobs of 512 bytes or more are stored
//     zstd-compressed when that saves at least 1/8 (Encode; from 256 KiB on, a compressed
//     sample decides first whether zstd runs on the whole); Get always yields the
//     original bytes.
//   - Chunking is versioned (ChunkFormat): a format cuts the same bytes at the same places
//     forever, new writes use CurrentChunkFormat, and the write path records each cut
//     segment's format in its metadata, so data cut by an older format keeps reading and
//     deduping against itself. Dedupe across a format change costs one full copy of each
//     large body re-uploaded after it (chunkformat.go).
//
// WithDeadline bounds every call of a Store (a stalled backend fails a call with a
// *TimeoutError, wrapping ErrUnavailable, never hangs it); the node wraps its store in it.
//
// Errors are the sentinels of errors.go wrapped with context (use errors.Is); bad keys are
// *KeyError values that wrap ErrInvalidKey. Backends live in sub-packages: blob/dir (local
// directory, the embedded default), blob/mem (tests) and, per docs/architecture.md#blob-storage-and-garbage-collection, blob/s3. They
// share Encode (the compression rule) and NewReader (decoding, ranges and verification).
// blob/blobtest is the conformance suite every backend runs.
package blob
