package server

import (
	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/shard"
)

// Errors of a node's start (Open) that a caller tells apart — cmd/cairn prints
// a code for each — besides ErrDataDirLocked. They are the values of the parts that fail,
// under this package's names (as os.ErrNotExist is fs.ErrNotExist), so errors.Is matches
// the parts' wrapped errors and the caller imports neither a blob store nor the
// replication layer.
var (
	// ErrStorageDamaged: a replica's Raft log or snapshot failed its integrity check
	// (shard.ErrDamaged; the error names the file and what to do).
	ErrStorageDamaged = shard.ErrDamaged
	// ErrBucketMissing: the s3:// blob store's bucket does not exist and the node may not
	// create it (s3.ErrBucketMissing).
	ErrBucketMissing = s3.ErrBucketMissing
	// ErrObjectStoreUnavailable: the object store cannot be reached or refuses the
	// credentials (blob.ErrUnavailable).
	ErrObjectStoreUnavailable = blob.ErrUnavailable
)
