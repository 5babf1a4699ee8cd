package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard"
)

// blobOpenTimeout bounds opening the blob store at start (for s3: reaching the endpoint,
// checking and perhaps creating the bucket, with retries), so that an unreachable object
// store fails the start instead of hanging it.
const blobOpenTimeout = 30 * time.Second

// openBlobs opens the blob store cfg.Blob names and instruments it on the node's
// registry (cairn_blob_* metrics).
func (n *Node) openBlobs(ctx context.Context) error {
	target, err := n.cfg.BlobTarget()
	if err != nil {
		return err
	}
	var store blob.Store
	dirs := map[string]string{"data directory": n.cfg.DataDir}
	switch target.Kind {
	case ops.BlobDir:
		dirs["blob store"] = target.Dir
		// The blob directory keeps free what the Raft logs keep (shard.Config.MinFreeBytes,
		// left at its default): on the disk they usually share, a body's segments must not
		// take the room the log needs for its term, vote and snapshots.
		ds, err := dir.OpenWith(target.Dir, dir.Options{MinFreeBytes: shard.DefaultMinFreeBytes})
		if err != nil {
			return fmt.Errorf("blob store %s: %w", n.cfg.Blob, err)
		}
		store = ds
	case ops.BlobS3:
		scheme := "http://"
		if target.Secure {
			scheme = "https://"
		}
		where := fmt.Sprintf("blob store %s at %s%s", n.cfg.Blob, scheme, target.Endpoint)
		if !n.creds.HasS3() {
			n.log.Warn("no S3 credentials: requests to the object store are anonymous (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", "blob", n.cfg.Blob)
		}
		sc := s3.DefaultConfig()
		sc.Endpoint = target.Endpoint
		sc.Secure = target.Secure
		sc.Bucket = target.Bucket
		sc.Prefix = target.Prefix
		sc.Region = target.Region
		sc.CreateBucket = target.CreateBucket
		sc.AccessKey = n.creds.S3AccessKey
		sc.SecretKey = n.creds.S3SecretKey
		// Multipart uploads in flight are noted here; a restart aborts a crash's leftovers.
		sc.UploadJournal = filepath.Join(n.cfg.DataDir, "s3-uploads")
		octx, cancel := context.WithTimeout(ctx, blobOpenTimeout)
		ss, err := s3.Open(octx, sc)
		cancel()
		switch {
		case errors.Is(err, s3.ErrBucketMissing):
			return fmt.Errorf("%s: bucket %q does not exist and --s3-create-bucket (CAIRN_S3_CREATE_BUCKET) is false: create it or allow Cairn to: %w", where, target.Bucket, err)
		case err != nil:
			return fmt.Errorf("%s: %w", where, err)
		}
		store = ss
		if n.cfg.S3DirectReads {
			n.directReads = ss
		}
	default:
		return fmt.Errorf("blob store %s: unknown kind %q", n.cfg.Blob, target.Kind)
	}
	// Every call has a deadline: a stalled store answers ObjectUnavailable (503), and the
	// readiness probe (health.go) reports it.
	store = blob.WithDeadline(store, n.cfg.BlobTimeout)
	n.health = &health{blobs: store, dirs: dirs, log: n.log}
	n.blobs, err = blob.Instrument(store, n.registry, string(target.Kind))
	if err != nil {
		store.Close()
		return err
	}
	return nil
}
