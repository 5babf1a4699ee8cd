package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// The readiness probe (GET /readyz): every probeInterval the node stats a blob that
// never exists under probeTimeout, and checks the free space of its disks. A store that
// does not answer NotFound in time, or a disk with less than minFreeBytes free, makes
// the node not ready until a later probe passes.
const (
	probeInterval = 2 * time.Second
	probeTimeout  = 2 * time.Second
	// minFreeBytes is the reserve the Raft logs and the blob directory keep: below it
	// writes are refused, so the node is not ready for them.
	minFreeBytes = shard.DefaultMinFreeBytes
)

// The blob sample (a node restored from a backup without its blobs serves every body
// above the inline limit as an error): once the node serves, the probe stats up to
// blobSampleSize referenced blobs drawn at random from its replicas' state; any missing
// makes the node not ready, naming how many, and the sample is drawn again at most
// every blobResampleInterval until one passes. A sample that passed is not drawn again.
const (
	blobSampleSize        = 64
	blobResampleInterval  = 30 * time.Second
	blobSampleStatTimeout = probeTimeout
)

// blobSample is one draw: how many referenced blobs were stat'ed and how many of those
// the store does not hold. ok is false when the draw could not decide: the node does not
// serve yet, or retry (true) after blobResampleInterval: the store failed a stat (the
// store probe reports that), or the replicas reference no blob yet.
type blobSample struct {
	sampled, missing int
	ok, retry        bool
}

// probeKey names no blob: shards assign root uids starting with "r" or "s"
// (meta.Options.RootUIDPrefix), never "p".
var probeKey = blob.Key{Root: "probe"}

// health runs the readiness probe and holds its last findings.
type health struct {
	blobs blob.Store
	dirs  map[string]string // what → directory whose free space is checked
	log   *slog.Logger

	// sample draws the blob sample (Node.sampleBlobs); nil: no sample.
	sample func(ctx context.Context) blobSample

	sampleMu     sync.Mutex // serializes draws; guards the three fields below
	samplePassed bool
	sampledAt    time.Time
	sampleFail   string // the failing entry of the last draw that found blobs missing

	mu      sync.Mutex
	failing []string
}

// probeSample draws the blob sample when one is due and returns the failing entry it
// keeps ("" when none). Failing calls it too, so the first /readyz after the node serves
// waits for the first draw instead of answering ready before it.
func (h *health) probeSample(ctx context.Context) string {
	if h.sample == nil {
		return ""
	}
	h.sampleMu.Lock()
	defer h.sampleMu.Unlock()
	if h.samplePassed {
		return ""
	}
	if !h.sampledAt.IsZero() && time.Since(h.sampledAt) < blobResampleInterval {
		return h.sampleFail
	}
	s := h.sample(ctx)
	if s.retry {
		h.sampledAt = time.Now()
	}
	if !s.ok {
		return h.sampleFail
	}
	h.sampledAt = time.Now()
	if s.missing == 0 {
		h.samplePassed, h.sampleFail = true, ""
		return ""
	}
	if h.sampleFail == "" && h.log != nil {
		h.log.Warn("referenced blobs are missing from the blob store", "missing", s.missing, "sampled", s.sampled)
	}
	h.sampleFail = fmt.Sprintf("blob store: %d of %d sampled referenced blobs are missing (a restore without the node's blobs? `cairn admin scrub` lists every missing blob)", s.missing, s.sampled)
	return h.sampleFail
}

// run probes at once and then every probeInterval until ctx ends.
func (h *health) run(ctx context.Context) {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		h.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *health) probe(ctx context.Context) {
	var failing []string
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	_, err := h.blobs.Stat(pctx, probeKey)
	cancel()
	if ctx.Err() != nil {
		return
	}
	var te *blob.TimeoutError
	switch {
	case err == nil, errors.Is(err, blob.ErrNotFound):
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &te):
		failing = append(failing, fmt.Sprintf("blob store: did not answer a probe within %v", probeTimeout))
	default:
		failing = append(failing, fmt.Sprintf("blob store: failed a probe (%s)", blob.ErrorKind(err)))
	}
	h.probeSample(ctx) // Failing adds its entry
	for what, dir := range h.dirs {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			failing = append(failing, fmt.Sprintf("%s: free space unknown: %v", what, err))
			continue
		}
		if free := int64(st.Bavail) * int64(st.Bsize); free < minFreeBytes {
			failing = append(failing, fmt.Sprintf("%s: disk full (%d bytes free, at least %d needed)", what, free, minFreeBytes))
		}
	}
	h.mu.Lock()
	changed := fmt.Sprint(failing) != fmt.Sprint(h.failing)
	h.failing = failing
	h.mu.Unlock()
	if changed && h.log != nil {
		if len(failing) > 0 {
			h.log.Warn("not ready", "failing", failing)
		} else {
			h.log.Info("ready again")
		}
	}
}

// Failing returns what the last probe found wrong, and the blob sample's finding
// (nil: nothing).
func (h *health) Failing() []string {
	h.mu.Lock()
	failing := slices.Clone(h.failing)
	h.mu.Unlock()
	if f := h.probeSample(context.Background()); f != "" {
		failing = append(failing, f)
	}
	return failing
}

// sampleBlobs draws the readiness probe's blob sample (health.go): up to blobSampleSize
// referenced blobs, uniformly at random (reservoir sampling) over the roots of every
// local replica's applied state, each stat'ed in the blob store. Undecided (ok false)
// until the node serves and while it holds no replica; undecided for a while (retry)
// while the replicas reference no blob, or when a stat fails otherwise than NotFound.
func (n *Node) sampleBlobs(ctx context.Context) blobSample {
	if !n.ready() {
		return blobSample{}
	}
	replicas := n.host.Replicas()
	if len(replicas) == 0 {
		return blobSample{}
	}
	var keys []blob.Key
	seen := 0
	for _, r := range replicas {
		view := r.AppliedView()
		view.Shard().Roots(func(root *meta.Root) bool {
			view.Shard().Blobs(root.UID, func(b meta.BlobRef) bool {
				if b.Count <= 0 {
					return true
				}
				seen++
				k := blob.Key{Root: root.UID, Digest: blob.Digest(b.Digest)}
				if len(keys) < blobSampleSize {
					keys = append(keys, k)
				} else if i := rand.IntN(seen); i < blobSampleSize {
					keys[i] = k
				}
				return true
			})
			return true
		})
	}
	if len(keys) == 0 {
		return blobSample{retry: true}
	}
	s := blobSample{sampled: len(keys), ok: true}
	for _, k := range keys {
		sctx, cancel := context.WithTimeout(ctx, blobSampleStatTimeout)
		_, err := n.blobs.Stat(sctx, k)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, blob.ErrNotFound):
			s.missing++
		default:
			return blobSample{retry: true}
		}
	}
	return s
}
