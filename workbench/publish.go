package workbench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// The write path's half of garbage collection (docs/architecture.md#blob-storage-and-garbage-collection): a publish fenced against the
// collector. The sweeper itself, which puts unreferenced and orphaned blobs under delete
// intent, deletes them and records the deletions, runs on the shard leader (shard/worker);
// the FSM's rules are in meta/gc.go. A publish that references a blob under delete intent
// is rejected by the FSM (BlobDeleting), as is one whose upload fence predates a recorded
// deletion of a blob it references without a record: the writer then waits for the
// collector, uploads what is gone again and retries (proposeBlobs).

// gcState is the Service's write-path collection state.
type gcState struct {
	// publishRetries counts publishes that met the collector; nil until Instrument.
	publishRetries atomic.Pointer[prometheus.Counter]
}

// instrument registers cairn_gc_publish_retries_total on reg: the writes whose publish
// met a blob under delete intent (or deleted after their upload) and uploaded again. The
// sweeps' own cairn_gc_* metrics are shard/worker's. Call it once, before the first write.
func (g *gcState) instrument(reg prometheus.Registerer) error {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "gc", Name: "publish_retries_total",
		Help: "Writes whose publish met a blob under delete intent (or deleted after upload) and uploaded again."})
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("workbench: gc metrics: %w", err)
	}
	g.publishRetries.Store(&c)
	return nil
}

const (
	// maxBlobPublishAttempts bounds how often a write re-uploads its blobs after its
	// publish met the garbage collector.
	maxBlobPublishAttempts = 8
	// gcIntentWait bounds how long a write waits for the collector to finish with a blob
	// it references before it gives up with a retryable error.
	gcIntentWait = 30 * time.Second
	// maxRetainedBytes: a body up to this size (one segment) keeps its bytes until its
	// publish, so that it can upload them again if the collector deletes them meanwhile.
	// Larger bodies stream as ever and rely on their objects still being stored; when one
	// is gone they fail retryably and the caller sends the body again.
	maxRetainedBytes = blob.SingleSegmentMaxBytes
)

// gcGaveUp is the answer of a write whose blobs the collector kept deleting.
func gcGaveUp() *Error {
	return &Error{Code: CodeObjectUnavailable, Retryable: true, Details: map[string]any{},
		Message: "the garbage collector is deleting data this body shares with older files; retry the request"}
}

// gcDeletedBody is the answer of a write whose uploaded blob the collector deleted before
// the publish, when the body was too large to keep for another upload.
func gcDeletedBody() *Error {
	return &Error{Code: CodeObjectUnavailable, Retryable: true, Details: map[string]any{},
		Message: "the garbage collector deleted data of this body before the write could publish it (the body is too large to keep for another upload); nothing was written: send the body again"}
}

// retain keeps the bytes of a one-segment body for an upload again, within
// maxRetainedBytes; a larger body keeps nothing.
func (b *ingested) retain(data blob.Hashed) {
	if int64(data.Len()) > maxRetainedBytes {
		return
	}
	if b.retained == nil {
		b.retained = map[meta.Digest]blob.Hashed{}
	}
	b.retained[meta.Digest(data.Digest())] = data
}

// proposeBlobs proposes b, which references the segments of body, fenced against garbage
// collection: the command carries the upload fence body's ingest read before uploading.
// When the FSM rejects it with BlobDeleting, it waits until none of body's blobs is under
// delete intent, makes sure each is stored (uploading it again from the retained bytes),
// and retries with a new fence. It gives up with a retryable ObjectUnavailable. A put under
// a files cap that the cluster-version gate held back is proposed without it
// (withoutFilesCap).
func (s *base) proposeBlobs(ctx context.Context, h meta.Header, b meta.Body, body *ingested) (meta.Result, *Error) {
	for attempt := 1; ; attempt++ {
		h.UploadFence = body.fence
		res, err := s.proposeRaw(ctx, h, b)
		if uncapped, ok := withoutFilesCap(b, err); ok {
			b = uncapped
			res, err = s.proposeRaw(ctx, h, b)
		}
		if err != nil {
			return res, AsError(err)
		}
		if res.Err == nil {
			return res, nil
		}
		if res.Err.Code != meta.CodeBlobDeleting {
			return res, AsError(res.Err)
		}
		if c := s.gc.publishRetries.Load(); c != nil {
			(*c).Inc()
		}
		if attempt == maxBlobPublishAttempts {
			return res, gcGaveUp()
		}
		if werr := s.reupload(ctx, body); werr != nil {
			return res, werr
		}
	}
}

// reupload waits until no blob of body is under delete intent, then makes sure every blob
// without a reference record is stored, and moves body's fence to the view it checked.
func (s *base) reupload(ctx context.Context, body *ingested) *Error {
	deadline := time.Now().Add(gcIntentWait)
	for attempt := 1; ; attempt++ {
		view, err := s.readView(ctx, body.agent)
		if err != nil {
			return AsError(err)
		}
		busy := false
		for _, sg := range body.segments {
			if r, ok := view.Shard().Blob(body.rootUID, sg.Digest); ok && r.Intent && !sg.IsInline() {
				busy = true
				break
			}
		}
		if busy {
			if time.Now().After(deadline) {
				return gcGaveUp()
			}
			if err := backoff(ctx, attempt); err != nil {
				return AsError(err)
			}
			continue
		}
		seen := map[meta.Digest]bool{}
		for _, sg := range body.segments {
			if sg.IsInline() || seen[sg.Digest] {
				continue
			}
			seen[sg.Digest] = true
			if _, ok := view.Shard().Blob(body.rootUID, sg.Digest); ok {
				continue // a record not under intent names a stored object
			}
			key := blob.Key{Root: body.rootUID, Digest: blob.Digest(sg.Digest)}
			if data, ok := body.retained[sg.Digest]; ok {
				if _, err := s.blobs.Put(ctx, key, data); err != nil {
					return AsError(err)
				}
				continue
			}
			if _, err := s.blobs.Stat(ctx, key); errors.Is(err, blob.ErrNotFound) {
				return gcDeletedBody() // deleted, and this body is too large to keep: the caller sends it again
			} else if err != nil {
				return AsError(err)
			}
		}
		body.fence = view.AppliedVersion()
		return nil
	}
}

// withoutFilesCap returns put b without its files cap (meta.Put.MaxWorkbenchFiles) when
// err is the cluster-version gate's refusal of it: a replica of the shard runs a release
// before meta.WorkbenchFilesVersion, which cannot decode the cap, so the gate answered
// UpgradeInProgress before proposing anything. The write then goes on uncapped, as every
// write did before the cap existed (a surface's own check still applies, the OpenWOP
// facade's under its node-local lock), rather than failing until the upgrade ends. Any
// other command or error: ok false.
func withoutFilesCap(b meta.Body, err error) (meta.Body, bool) {
	p, isPut := b.(meta.Put)
	var me *meta.Error
	if !isPut || p.MaxWorkbenchFiles == 0 || !errors.As(err, &me) || me.Code != meta.CodeUpgradeInProgress {
		return nil, false
	}
	p.MaxWorkbenchFiles = 0
	return p, true
}
