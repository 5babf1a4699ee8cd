// Package s3 is Cairn's S3-compatible surface (docs/architecture.md, "Packages"; README
// "S3 gateway"). Handler serves the S3 API path-style over the Workbench service: a bucket
// is a workbench of the one agent root of the API key whose S3 credential signed the
// request (Keys), an object key is a file's path in it. Handler routes each request and
// serves the bucket and object operations itself; it hands the multipart operations to a
// part of their own (multipart, multipart.go), and both resolve what a request names — its
// bucket, objects, versions — through lookup (lookup.go). The package authenticates
// requests and reads their bodies as S3 clients send them:
//
//   - Verifier checks AWS Signature Version 4, in the Authorization header or in a
//     presigned URL's query: the canonical request is built from the request as it came
//     (the path exactly as sent, the query re-encoded and sorted, the signed headers'
//     trimmed values, x-amz-content-sha256; a value holding a tab is trimmed both ways
//     the SDKs trim it, botocore's and the AWS SDK for Go v2's, checkRequest; the
//     request's own headers are never changed), and its HMAC-SHA256 under the key of the
//     credential's day, region and service is compared in constant time. The clock may
//     differ by at most MaxClockSkew; a presigned URL lives at most MaxPresignExpiry and
//     not past its X-Amz-Expires. Every x-amz-* header must be signed.
//   - Signed.Body reads the object's bytes: an aws-chunked body decoded (signed chunks,
//     STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER], and STREAMING-UNSIGNED-PAYLOAD-TRAILER),
//     each chunk's and the trailer's signature checked as it ends, and every digest the
//     request promises — a hex x-amz-content-sha256, Content-MD5, one flexible checksum
//     (CRC32, CRC32C, CRC64NVME, SHA-1, SHA-256) in a header or the trailer — checked at
//     the end. As on S3, a checksum value that is not the base64 of one digest of its
//     algorithm's length (an empty one too), and an x-amz-sdk-checksum-algorithm that is
//     empty or names none of those algorithms (even beside a checksum value), are
//     InvalidRequest (a header's before a byte of the body is read); BadDigest is only a
//     well-formed value the body does not match (checksum.go).
//
// Why the canonical request is built here and not by a maintained signer: the AWS SDK
// for Go v2's v4 signer, the natural one to recompute a signature with, leaves
// content-length out of what it signs when the length is 0, while botocore (boto3, the
// aws CLI) signs content-length:0 on every empty PUT; recomputing with it refuses those.
// The maintained signers are the tests' oracles instead: requests signed by the AWS SDK
// for Go v2 (its S3 client over HTTP and TLS with every checksum, its presigner, its
// signer), minio-go's streaming signer, and botocore (testdata/botocore_signed.json,
// made by testdata/botocore_sign.py) all verify, and any change to what they signed is
// refused.
//
// Invariants:
//
//   - A bucket or object another root holds, or one the key's binding does not reach,
//     answers exactly as a missing one (NoSuchBucket, NoSuchKey): the service decides
//     reach (workbench/auth.Principal.ReachIn) and the gateway maps its NotFound. That
//     holds under x-amz-expected-bucket-owner too, whose check reads nothing of the bucket.
//   - The owner of every bucket and object a key reaches is its agent root, the one owner
//     the gateway presents (rootOwner, ID and DisplayName): in ListBuckets, on each object
//     of ListObjects (V1) and, with fetch-owner=true, of ListObjectsV2 (S3 leaves it out of
//     V2 by default), on each version, and as a multipart upload's owner. A request on a
//     bucket or object (every operation but ListBuckets and CreateBucket) whose
//     x-amz-expected-bucket-owner — or a copy's x-amz-source-expected-bucket-owner — in a
//     header or a presigned URL's query names any other owner, an empty one too, is
//     AccessDenied, as on S3 (checkExpectedOwners): compared with the key's root before the
//     bucket is read, so a missing bucket and another root's answer alike.
//   - Listings read one linearizable view and emit keys in S3's byte order of whole keys
//     (list.go), so a listing paged by continuation token or marker neither repeats nor
//     skips a key that did not change.
//   - A version is an element of the path's history (versions.go): a body, or a delete's
//     tombstone as S3's delete marker. Versioning is always Enabled. A version id is 32
//     hex digits, the generation of the version and a tag of bucket and key, so it names
//     exactly one version of one key, is the same on every node and is never reused; an
//     id that names no retained version of the key is NoSuchVersion, one this gateway
//     never issues InvalidArgument. History is immutable: no request deletes a version.
//   - ListObjectVersions walks every key with a retained version (meta.HistoryView.List)
//     in the same byte order as the listings, from one view, and pages each key's
//     versions newest first (meta.HistoryView.Versions), so a page holds at most max-keys
//     items and key-marker with version-id-marker resume it without repeating or
//     skipping.
//   - If-None-Match: * and If-Match on PUT are the write's own compare-and-swap (create
//     only; replace only the generation whose ETag matched), never a read then a write.
//     If-Match on a key with no current object (never written, or deleted) is NoSuchKey,
//     404, as on S3, not PreconditionFailed (PutObject, CopyObject, Complete).
//   - A body's bytes reach the caller before a later chunk's signature or the final
//     digest is checked; a failed check ends the read with an *Error instead of io.EOF,
//     so a caller that commits only at io.EOF (Cairn's write path publishes a file only
//     after its body ended) never commits unverified bytes. The one exception is
//     explicit: a body opened with Signed.ObjectBody leaves its SHA-256 promises to the
//     write path's own SHA-256 of the bytes (one hash per byte), checked by
//     Body.CheckSHA256 in WriteRequest.AfterBody, before the file is published.
//   - An object's metadata is its file's fields (metadata.go), and its ETag a function of
//     the revision alone: the MD5 a PUT's Content-MD5 promised and its body matched, else
//     "sha256-" and the hex SHA-256. What the gateway checked of a body (that MD5, the
//     flexible checksum answered on read) is recorded bound to the body's SHA-256, so it
//     never outlives those bytes. No byte is hashed for a digest the client did not send
//     or name. The checksum is answered only with the whole object's bytes (a 200 or a
//     HEAD): never on a range, a part, a 304, a 412 or a 416, whose body a client would
//     check against it.
//   - Memory per request is bounded: a chunk header or trailer line is at most
//     maxChunkLine bytes, a trailer at most maxTrailerLines lines; chunk data streams. An
//     XML document (DeleteObjects, CompleteMultipartUpload, CreateBucketConfiguration,
//     PutBucketVersioning) is read to its bound and no further (readXMLBody): a body
//     declared or sent longer is MaxMessageLengthExceeded, as on S3.
//   - An error answered before an authenticated request's body ended (a length declared
//     past its bound, MaxMessageLengthExceeded or EntityTooLarge, or any refusal found
//     first) goes out at once, whole (Content-Length), with "Connection: close"; then
//     what is left of the body is read and discarded, at most maxDiscardBytes within
//     discardTimeout (answerError, unread.go), so a client that writes its whole body
//     before it reads gets the answer rather than a reset. A request that asked for 100
//     Continue and never got it is not read on.
//   - Names follow S3's rules where clients rely on them (names.go): a key past
//     MaxKeyBytes (1,024 bytes of UTF-8) is KeyTooLongError on every request that names
//     it (its path, a copy source, a DeleteObjects entry); CreateBucket refuses a name S3
//     refuses (InvalidBucketName), except for S3's least length. A key that is no Cairn
//     path (a folder marker "dir/", "a//b") names no object: reads answer NoSuchKey,
//     deletes delete nothing, writes are InvalidArgument saying why.
//   - A read's response-* parameters set only header values (UTF-8 text without a
//     control character, C1's NEL included, or a line or paragraph separator;
//     response-expires an HTTP date), InvalidArgument naming the parameter otherwise; an
//     empty one sets nothing (headers.go).
//   - Root (routing.go) names a request's agent root only once its signature verified
//     and its key is live and acts in one root, and reads none of its body: a router
//     (api/server's, on a cluster node) can still serve it here or forward it whole, and
//     the handler that serves it verifies everything again. Unavailable is the one
//     answer for a request no node can serve right now: 503 ServiceUnavailable with
//     Retry-After.
//   - Every error is an *Error with an S3 code (WriteError answers it as S3's XML); no
//     error names the secret, the expected signature or an internal name.
//
// Multipart uploads (multipart.go: the type multipart owns them). An upload is files of
// the root's UploadsWorkbench, reserved to this surface
// (workbench.Config.ReservedWorkbenches: the surface speaks as "s3/<operation>", which
// the reservation takes as "s3"): "<bucket>/<upload id>/upload" is its record (key,
// content type, start, principal), "<bucket>/<upload id>/00001" …
// "10000" its parts. A part is an ordinary file, written by Writes.Write from Signed.ObjectBody
// exactly as PutObject writes (CDC, dedupe, one hash per byte, the same admission and
// checks; nothing holds a whole part), so its ETag is an object's (objectETag: the MD5 a
// Content-MD5 promised and the body matched, else "sha256-<hex>").
// UploadPartCopy of a whole source is Writes.Copy (the same segments, no byte moved);
// with x-amz-copy-source-range the range is read and written through the write path
// (the chunker then dedupes what it cuts alike), since a range rarely falls on segment
// boundaries. CompleteMultipartUpload checks the listed parts against one view
// (InvalidPartOrder, InvalidPart for a missing part or another ETag, EntityTooSmall for a
// part but the last below Config.MinPartSize) and publishes the object with
// workbench.Writes.Compose: one command whose segments are the parts' segments in order,
// each part pinned at the generation checked, fenced at the view it read (a part deleted
// and collected meanwhile fails the publish, changing nothing), under the request's
// If-None-Match: * or If-Match like PutObject, with the x-amz-meta-* fields
// CreateMultipartUpload named. Its SHA-256 resumes the first part's stored hash state and
// streams the other parts back from the object store (bounded memory; a Complete reads
// all but the first part once). The object's ETag is objectETag's "sha256-<hex>" of the
// whole body (no MD5 of it was ever promised), not S3's "<md5>-<parts>", so If-Match and
// conditional reads work with the ETag Complete answers, and Complete answers the new
// version's x-amz-version-id like any write. An upload is completed once (complete.go): a
// Complete claims the upload by a compare-and-swap on its record's generation (of racing
// Completes, or a Complete and an Abort, one wins; a loser answers OperationAborted while
// the winner publishes, NoSuchUpload after; a claim an earlier run of the same node
// (Config.Instance) made is taken over at once, since no Complete of it runs any more), the object it publishes names the upload
// (fieldUpload), and every attempt to publish first looks for that name among the key's
// newest versions and then publishes under a compare-and-swap on the key's generation: a
// Complete cut off by a crash after it published, retried, answers what it published and
// never publishes the parts again over a newer object. A completed upload's record keeps
// the answer for completedRetention: a Complete sent again with the same parts repeats
// it, as on S3; every other request names no upload (NoSuchUpload). A Complete that
// publishes longer than Config.CompleteKeepAlive answers 200 at once and a space every
// interval until its result (or error) follows in the body, as S3 does, so no client's
// read timeout cuts a large upload's Complete. When
// every part but the last has one size, the object records its parts' layout (parts.go),
// so GET and HEAD serve ?partNumber=.
//
//   - An upload belongs to its bucket and key: the gateway reaches the bucket first
//     (NoSuchBucket, exactly as for any object) and answers NoSuchUpload for an upload id
//     of another bucket or key (or of another incarnation of its bucket: one deleted and
//     created again, told apart by the version that created the bucket, which a move of
//     the root to another shard keeps), so a key bound to one workbench, which reaches
//     UploadsWorkbench through this surface, reaches only its own bucket's uploads.
//   - A key bound to path prefixes (auth.Principal.Prefixes) reaches an upload by its
//     target object key, not by the upload's own paths (multipart_access.go): the gateway
//     checks the key against the caller's prefixes with the caller's principal
//     (workbench.Writes.MayWrite at Create and again before Complete publishes,
//     auth.Reach.ShowsPath for every other request) and only then reads and writes the
//     upload's files, and publishes, with the caller's principal less its prefixes. An
//     upload of a key outside them is AccessDenied at Create, as a PUT of it; one another
//     key started there is left out of ListMultipartUploads and answers ListParts,
//     UploadPart, Complete and Abort exactly as an upload id never issued (NoSuchUpload).
//     UploadPartCopy reads its source with the caller's principal (NoSuchKey outside).
//   - UploadsWorkbench is no bucket: every request naming it answers NoSuchBucket
//     (CreateBucket: InvalidBucketName), as does a copy source in it, and ListBuckets
//     omits it.
//   - Aborting deletes the record first (the upload is gone from then on), then the
//     parts (a part whose write ends after that began looks at the record again once
//     written: without one, it deletes itself and answers NoSuchUpload); completing
//     rewrites the record as completed, then deletes the parts; both through the
//     ordinary delete: the collector reclaims blobs no other
//     file references after its grace. An upload older than Config.UploadDeadline answers
//     NoSuchUpload and is removed (a completed one completedRetention after it completed)
//     lazily (by CreateMultipartUpload and
//     ListMultipartUploads in its bucket) and by the sweep (RunReclaim, started with the
//     gateway's listener by api/server), each at most reclaimPerRound uploads per bucket
//     a round; part directories without a record (a crash between the two deletes) go
//     too. The sweep visits the roots this process served a multipart request in: after a
//     restart a root's expired uploads wait for its next multipart request.
package s3
