package blob

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"
)

// Encoding is how a blob's payload is stored. It never changes what Get returns.
type Encoding uint8

const (
	// EncodingIdentity stores the bytes as they are.
	EncodingIdentity Encoding = 0
	// EncodingZstd stores one zstd frame (RFC 8878) of the bytes.
	EncodingZstd Encoding = 1
)

// Valid reports whether e is a known encoding.
func (e Encoding) Valid() bool { return e == EncodingIdentity || e == EncodingZstd }

// String returns "identity", "zstd" (the HTTP Content-Encoding tokens), or "encoding(N)".
func (e Encoding) String() string {
	switch e {
	case EncodingIdentity:
		return "identity"
	case EncodingZstd:
		return "zstd"
	default:
		return fmt.Sprintf("encoding(%d)", uint8(e))
	}
}

// Info describes a stored blob.
type Info struct {
	// Size is the length of the uncompressed blob in bytes.
	Size int64
	// StoredBytes is the length of the stored payload in bytes (compressed when Encoding is
	// EncodingZstd), excluding any backend framing such as blob/dir's file header.
	StoredBytes int64
	// Encoding is how the payload is stored.
	Encoding Encoding
	// ModTime is when the blob was stored (the object's or file's modification time). The
	// orphan sweeper compares it with the grace period (docs/architecture.md#blob-storage-and-garbage-collection).
	ModTime time.Time
}

// PutResult is the outcome of a successful Put.
type PutResult struct {
	// Created is false when the blob already existed and nothing was written.
	Created bool
	// StoredBytes is the payload length in bytes of the stored blob (see Info.StoredBytes),
	// whether it was written by this call or existed before.
	StoredBytes int64
	// Encoding is the stored blob's encoding.
	Encoding Encoding
}

// Store is a content-addressed, immutable blob store: one backend (blob/dir, blob/mem,
// blob/s3). All methods are safe for concurrent use. Every method that takes a Key or a root
// first validates it and fails with a *KeyError wrapping ErrInvalidKey. Every method honours
// ctx: a cancelled or expired ctx makes it fail with an error wrapping ctx.Err(). Backend
// failures wrap ErrUnavailable; after Close every method fails with ErrUnavailable.
//
// The package doc lists the invariants; blob/blobtest checks them for every backend.
type Store interface {
	// Put stores data's bytes under key unless a blob is already stored there
	// (put-if-absent). key.Digest must be data.Digest(), else Put fails with
	// ErrDigestMismatch and stores nothing; Put does not hash the bytes again (Hash did).
	// Data of 512 bytes or more is stored zstd-compressed when that saves at least 1/8
	// (Encode). The blob is durable when Put returns nil. Put does not retain data.
	Put(ctx context.Context, key Key, data Hashed) (PutResult, error)

	// Get streams the uncompressed bytes [offset, offset+length) of the blob; length < 0
	// means to the end, and a range past the end is cut at the end. It fails with
	// ErrNotFound if the blob is absent and ErrRange if offset < 0 or offset > size
	// (offset == size yields an empty body). The reader verifies the digest of the whole
	// blob, whatever the range: on a mismatch its Read returns an error wrapping
	// ErrCorrupt, at the latest instead of io.EOF. Cancelling ctx fails later Reads. The
	// caller must Close the reader.
	Get(ctx context.Context, key Key, offset, length int64) (io.ReadCloser, error)

	// Stat describes the blob, or fails with ErrNotFound. It does not verify the payload.
	Stat(ctx context.Context, key Key) (Info, error)

	// Delete removes the blob. Deleting an absent blob is not an error. Readers that
	// already hold a reader from Get may or may not be able to finish (docs/architecture.md#the-read-path: the
	// garbage collector waits out a grace period first).
	Delete(ctx context.Context, key Key) error

	// List calls fn for every blob of root, in ascending digest order, and returns nil when
	// done. A root with no blobs is not an error. The first error fn returns stops the
	// listing and is returned unchanged. fn may call the Store (e.g. Delete the blob it was
	// given); blobs put or deleted during a listing may or may not be seen.
	List(ctx context.Context, root string, fn func(Key, Info) error) error

	// Close releases the store's resources. It is idempotent and does not wait for calls in
	// progress, which may fail.
	Close() error
}

// Presigner is implemented by a store whose objects clients may fetch directly (blob/s3:
// an S3 presigned GET), for direct reads (REST `?redirect`). The URL carries a signature
// valid for expiry and names the object's bucket and key.
type Presigner interface {
	// PresignGet returns a URL that reads key's stored payload without credentials until
	// expiry, and the blob's Info (from one metadata request: the caller serves a direct
	// read only of an EncodingIdentity payload, whose bytes are the blob's). ErrNotFound
	// when the blob is absent.
	PresignGet(ctx context.Context, key Key, expiry time.Duration) (*url.URL, Info, error)
}
