// Package s3 is the blob.Store over an S3-compatible object store (docs/architecture.md#blob-storage-and-garbage-collection): MinIO,
// AWS S3, Ceph RGW, SeaweedFS, through github.com/minio/minio-go/v7.
//
// Layout: one object per blob, named
//
//	<Prefix>/roots/<root uid>/blobs/<aa>/<sha256 hex>
//
// (no "<Prefix>/" when Prefix is empty), where aa is the first byte of the digest in hex.
// The object holds the payload exactly as blob.Encode chose it; its user metadata
// x-amz-meta-cairn-encoding ("identity" or "zstd") and x-amz-meta-cairn-size (uncompressed
// bytes, decimal) describe it, so Stat and List read no payload.
//
// Invariants:
//
//   - An object under a blob's name is always whole: S3 makes a PUT or a completed
//     multipart upload visible atomically, and every body (each part of a multipart
//     upload) is sent with its CRC32C in x-amz-checksum-crc32c, which the store verifies
//     before it stores anything, so it refuses a body damaged in transit (Put sends it
//     again). When Put returns nil the object is stored (S3 acknowledges only durable
//     writes).
//   - Put never rewrites a valid blob: it HEADs first and uploads nothing when the blob is
//     there and reads back whole to its digest (a dedupe hit costs a GET), and its upload is conditional (If-None-Match: *, S3 conditional writes), so of
//     concurrent Puts of a new key, in this process or any other, exactly one creates it
//     (Puts and Deletes of one key are also serialized within the process). A store that
//     ignores the condition at worst rewrites the same bytes. An object whose metadata is
//     missing or bad, or whose payload does not verify, is reported as blob.ErrCorrupt and
//     overwritten by the next Put of its key.
//   - A failed or cancelled multipart upload is aborted before Put returns.
//   - Get verifies the whole blob (blob.NewReader): it streams the object from its first
//     byte whatever the range asked for.
//   - List is in digest order (S3 lists names in lexicographic order) and fails closed on
//     an object with bad metadata.
//   - Requests that fail transiently (no connection, timeouts, 5xx, 429, SlowDown) are
//     retried with bounded, jittered exponential backoff (RetryConfig), within the
//     caller's ctx. What still fails is an *ObjectUnavailableError wrapping
//     blob.ErrUnavailable, whose message never names the endpoint, the bucket or any object
//     name, root or digest. No error of this package but a *ConfigError names the endpoint
//     or the bucket.
//   - The package never deletes anything but the object Delete names and the multipart
//     uploads its own failed Puts started: a Put that fails aborts its upload before it
//     returns, and with Config.UploadJournal an upload whose abort failed too, or whose
//     process crashed, is aborted by the next Open (RecoverUploads; an entry it cannot
//     settle waits for the start after). Deleting unreferenced and orphaned blobs is the
//     garbage collector's: the FSM's rules in meta (gc.go), the sweeper in shard/worker
//     (gc.go), run on each shard's leader.
//
// Transfer integrity without a second SHA-256: the write path hashes each byte once for
// its content address (blob.Hashed), and this package does not hash the payload again.
// Requests carry x-amz-content-sha256: UNSIGNED-PAYLOAD (minio-go's DisableContentSha256:
// the signature covers the headers, the checksum among them, not the body) and the
// body's CRC32C, computed here in one cheap pass (hardware CRC32C). Without
// DisableContentSha256, minio-go over plain HTTP stream-signs the body
// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) and hashes it with SHA-256 itself, whatever
// SHA-256 the caller passed. What the stores do with the checksum: MinIO verifies
// x-amz-checksum-crc32c on PutObject and UploadPart and answers a mismatch with 400
// XAmzContentChecksumMismatch (TestObjectStoreRefusesABodyWithAWrongChecksum runs it
// against a real MinIO). AWS S3 verifies it the same way (its documented answer to a
// mismatch is 400 BadDigest), takes UNSIGNED-PAYLOAD on PutObject and UploadPart, and
// wants a multipart upload created with x-amz-checksum-algorithm: CRC32C and each part's
// checksum in CompleteMultipartUpload, which putMultipart does. AWS documents
// UNSIGNED-PAYLOAD for HTTPS, where TLS protects the body as well: use Config.Secure with
// AWS. Both mismatch codes are retried as transient. The checksum protects the transfer
// only; what is stored is verified on every read by its SHA-256 (blob.NewReader).
package s3
