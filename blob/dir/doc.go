// Package dir is the local-directory blob.Store, the embedded default backend (docs/architecture.md#blob-storage-and-garbage-collection).
//
// Layout under the directory given to Open:
//
//	roots/<root uid>/blobs/<aa>/<sha256 hex>
//
// where aa is the first byte of the digest in hex. Each file is a 16-byte header (magic
// "CRNB", format version 1, encoding, two zero bytes, uncompressed size as a big-endian
// uint64; see header.go) followed by the payload, stored as blob.Encode chose.
//
// Invariants:
//
//   - A file under its final name is always whole: Put writes a temporary file
//     (".tmp-*") in the same directory, fsyncs it, renames it into place and fsyncs the
//     directory. Every directory the store creates or first uses has its parent fsynced, so
//     the path to a blob survives a machine crash once Put returns.
//   - Put never rewrites a valid blob, and trusts an existing file only after reading it
//     whole and checking its digest; a damaged file is replaced. Puts and Deletes of one
//     key are serialized within the process; exactly one of several concurrent Puts of a
//     new key reports Created.
//   - Open removes stray temporary files. Open never deletes or rewrites anything else; a
//     file under a final name whose header or payload is invalid is reported as
//     blob.ErrCorrupt and replaced by the next Put of its key.
//   - Options.MinFreeBytes is kept free: a Put whose file would leave less on the file
//     system, counting the Puts in flight, fails with blob.ErrStorageFull before it
//     writes (reserve.go). A node passes the Raft log's reserve, so bodies never take the
//     room the log on the same disk keeps for its term, vote and snapshots.
//   - One Store per directory. A second process writing the same directory corrupts
//     nothing, but its in-flight Puts may fail when this one's Open removes their temporary
//     files.
//
// Directories are never removed, even when empty: at most 256 per root.
package dir
