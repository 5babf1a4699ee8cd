package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/blob"
)

// putMultipart uploads payload as a multipart upload in parts of PartSizeBytes, up to
// partConcurrency of them at once, each retried on its own. opts carries the metadata,
// which S3 takes when the upload is created. Unless overwrite, the completion is
// conditional (If-None-Match: *); created is false when it found an object there.
//
// Whatever ends the upload short (an error, the caller's ctx) aborts it before putMultipart
// returns, on a context of its own bounded by abortTimeout, so no parts are left behind to
// be billed. An abort that fails too leaves the upload noted in the upload journal, and the
// next Open aborts it (RecoverUploads); without a journal nothing aborts it later.
func (s *Store) putMultipart(ctx context.Context, key blob.Key, name string, payload []byte, opts minio.PutObjectOptions, overwrite bool) (created bool, err error) {
	forget, err := s.journal(name)
	if err != nil {
		return false, fmt.Errorf("blob/s3: put %s: upload journal: %w", key, err)
	}
	// Each part goes up with its CRC32C, like a single PUT (doc.go); S3 wants the
	// algorithm named when the upload is created and each part's checksum in the completion.
	opts.UserMetadata[amzChecksumAlgorithm] = checksumAlgorithm
	var uploadID string
	t, err := s.retry(ctx, func() (err error) {
		uploadID, err = s.core.NewMultipartUpload(ctx, s.cfg.Bucket, name, opts)
		return err
	})
	if err != nil {
		forget()
		return false, s.fail(ctx, "put", key, t, err)
	}
	completed := false
	defer func() {
		if !completed && !s.abort(ctx, name, uploadID) {
			return // the journal keeps it: the next start aborts it
		}
		forget()
	}()

	partBytes := s.cfg.PartSizeBytes
	nparts := (int64(len(payload)) + partBytes - 1) / partBytes
	parts := make([]minio.CompletePart, nparts)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(partConcurrency)
	for i := range nparts {
		part := payload[i*partBytes : min(int64(len(payload)), (i+1)*partBytes)]
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // another part failed, or ctx ended: checked below
			}
			sum := s.bodyChecksum(part, 0, false)
			popts := minio.PutObjectPartOptions{DisableContentSha256: true,
				CustomHeader: http.Header{amzChecksumCRC32C: {sum}, amzChecksumAlgorithm: {checksumAlgorithm}}}
			var op minio.ObjectPart
			t, err := s.retry(gctx, func() (err error) {
				op, err = s.core.PutObjectPart(gctx, s.cfg.Bucket, name, uploadID, int(i+1), bytes.NewReader(part), int64(len(part)), popts)
				return err
			})
			if err != nil {
				// Report the caller's ctx, not the group's, which ends on any failure.
				return s.fail(ctx, "put", key, t, err)
			}
			parts[i] = minio.CompletePart{PartNumber: int(i + 1), ETag: op.ETag, ChecksumCRC32C: sum}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, s.fail(ctx, "put", key, tries{}, err)
	}

	cond := minio.PutObjectOptions{}
	if !overwrite {
		cond.SetMatchETagExcept("*")
	}
	t, err = s.retry(ctx, func() error {
		_, err := s.core.CompleteMultipartUpload(ctx, s.cfg.Bucket, name, uploadID, parts, cond)
		return err
	})
	switch f := classify(err); {
	case err == nil:
		completed = true
		return true, nil
	case f.precondition:
		return false, nil
	case f.notFound && t.n > 1:
		// NoSuchUpload after a retried completion: the first attempt most likely
		// completed the upload and its answer was lost. Report the object as found;
		// Put then reads what is stored.
		completed = true
		return false, nil
	default:
		return false, s.fail(ctx, "put", key, t, err)
	}
}

// abort aborts a multipart upload on a context detached from the caller's, which may be
// what ended the upload. It reports whether the upload is gone.
func (s *Store) abort(ctx context.Context, name, uploadID string) bool {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, err := s.retry(actx, func() error {
		err := s.core.AbortMultipartUpload(actx, s.cfg.Bucket, name, uploadID)
		var resp minio.ErrorResponse
		if errors.As(err, &resp) && resp.Code == minio.NoSuchUpload {
			return nil
		}
		return err
	})
	return err == nil
}

// journal notes a multipart upload of object name in the upload journal (durably, before
// the upload starts) and returns the function that forgets it. Without a journal it does
// nothing.
func (s *Store) journal(name string) (forget func(), err error) {
	if s.cfg.UploadJournal == "" {
		return func() {}, nil
	}
	sum := sha256.Sum256([]byte(name))
	path := filepath.Join(s.cfg.UploadJournal, hex.EncodeToString(sum[:16])+"-"+strconv.FormatInt(s.journalSeq.Add(1), 10))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(name)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}

// RecoverUploads aborts every incomplete multipart upload of the objects the upload
// journal names — the leftovers of a process that crashed mid-upload — and forgets the
// entries it settled. It returns how many uploads it aborted; an entry it could not
// settle stays for the next call. Only the journal's object names are listed (MinIO lists
// incomplete uploads by exact object name), so no other writer's upload is touched unless
// it uploads the same object at this moment, which then fails and is retried.
func (s *Store) RecoverUploads(ctx context.Context) (int, error) {
	if s.cfg.UploadJournal == "" {
		return 0, nil
	}
	entries, err := os.ReadDir(s.cfg.UploadJournal)
	if err != nil {
		return 0, fmt.Errorf("blob/s3: upload journal: %w", err)
	}
	aborted := 0
	var firstErr error
	for _, e := range entries {
		path := filepath.Join(s.cfg.UploadJournal, e.Name())
		raw, err := os.ReadFile(path)
		if err != nil || len(raw) == 0 {
			os.Remove(path) // a torn entry: its upload had not started
			continue
		}
		name := string(raw)
		settled := true
		for u := range s.core.ListIncompleteUploads(ctx, s.cfg.Bucket, name, false) {
			if u.Err != nil {
				settled = false
				if firstErr == nil {
					firstErr = s.fail(ctx, "recover-uploads", "journal", tries{}, u.Err)
				}
				break
			}
			if u.Key != name {
				continue
			}
			if s.abort(ctx, name, u.UploadID) {
				aborted++
			} else {
				settled = false
			}
		}
		if settled {
			os.Remove(path)
		}
	}
	return aborted, firstErr
}
