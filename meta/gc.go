package meta

import "strings"

// Garbage collection of blobs (docs/architecture.md#blob-storage-and-garbage-collection), the FSM's half.
//
// A blob of a root is known to the FSM by its reference record (blobRef, keyed
// blobKey(root uid, digest)). The sweeper (shard/worker) deletes objects only through
// this protocol:
//
//  1. GCIntent marks a batch of digests of one root "under delete intent". The FSM
//     re-checks every candidate and accepts only
//     - a zero-count digest: its record exists, Count is 0, it is not under intent and
//     ZeroSinceMs + GraceMs ≤ command time, and no backup hold keeps it (backup.go);
//     - an orphan (an object found in the store with no record at all): there is still no
//     record; the FSM then creates one {Count 0, Intent};
//     - a take-over of a leftover intent (a sweep that crashed or was deposed between
//     intent and deletion): the record is still under the intent of version
//     TakeOverVersion, set at least TakeOverAfterMs ago.
//     Every accepted digest's intent is stamped with the command's version (the token the
//     deletion must name) and command time.
//  2. From then on checkPublishable rejects every publish that references one of them
//     with CodeBlobDeleting (retryable: the writer waits for the deletion to be recorded,
//     uploads again and retries).
//  3. The sweeper deletes the objects (blob.Store.Delete is idempotent).
//  4. GCDeleted removes the records, each only while it is still under the intent of the
//     named version, and stamps the root's BlobsDeletedVersion.
//
// A publish that carries Header.UploadFence (the shard version of a view read before its
// blobs were uploaded) is also rejected when one of its blobs has no record and the root
// recorded a deletion after the fence: the deletion may have removed the object after the
// writer's put-if-absent found it present. Together the two checks give the invariant the
// read path relies on: a record that is not under intent names an object that exists, and
// no successful publish references a deleted object.
//
// Intent implies Count == 0: every path that adds references either goes through
// checkPublishable (put, append, commit, restore finish, compact) or references segments
// that already hold references (restore copy of held versions).

// CodeBlobDeleting: a publish references a blob the garbage collector is deleting, or
// deleted after the writer uploaded it. Retryable by uploading the blob again once no
// intent is left on it (the workbench adapter does this itself).
const CodeBlobDeleting Code = "BlobDeleting"

// MaxGCBatch bounds the digests one GC command carries.
const MaxGCBatch = 4096

// GCCandidate is one digest a GCIntent asks to put under delete intent.
type GCCandidate struct {
	Digest Digest `cbor:"1,keyasint"`
	// Orphan: the object has no reference record (it was uploaded and never published);
	// accepted only while there still is none.
	Orphan bool `cbor:"2,keyasint,omitempty"`
	// TakeOverVersion, when non-zero, takes over a leftover intent: accepted only while the
	// record is under the intent of exactly this version.
	TakeOverVersion uint64 `cbor:"3,keyasint,omitempty"`
}

// GCIntent puts a bounded batch of one root's digests under delete intent (the rules are
// in the comment at the top of gc.go). Result.GC lists the accepted digests and the
// intent version GCDeleted must name.
type GCIntent struct {
	Agent string `cbor:"1,keyasint"`
	// GraceMs is how long, in command time, a digest must have had no reference.
	GraceMs int64 `cbor:"2,keyasint"`
	// TakeOverAfterMs is how old, in command time, an intent must be before another sweep
	// may take it over (the sweep that set it stops deleting well before).
	TakeOverAfterMs int64         `cbor:"3,keyasint"`
	Candidates      []GCCandidate `cbor:"4,keyasint"`
}

// GCBlob names a digest and the version of the intent it is under.
type GCBlob struct {
	Digest        Digest `cbor:"1,keyasint"`
	IntentVersion uint64 `cbor:"2,keyasint"`
}

// GCDeleted records that the objects of Blobs were deleted: each record goes only while
// it is still under the named intent (a late or duplicate proposal changes nothing).
// Result.GC lists the digests whose records went.
type GCDeleted struct {
	Agent string   `cbor:"1,keyasint"`
	Blobs []GCBlob `cbor:"2,keyasint"`
}

func (GCIntent) Op() Op  { return OpGCIntent }
func (GCDeleted) Op() Op { return OpGCDeleted }

// GCResult answers GCIntent and GCDeleted.
type GCResult struct {
	// Accepted are the digests the command applied to, in command order.
	Accepted []Digest `cbor:"1,keyasint,omitempty"`
	// IntentVersion is the version every intent accepted by a GCIntent carries (the
	// command's shard version); 0 for GCDeleted.
	IntentVersion uint64 `cbor:"2,keyasint,omitempty"`
}

// BlobRef describes the reference record of one blob of a root (docs/architecture.md#the-metadata-core: digest →
// count, zero-since). Records are live state: a View shows them as of its applied
// version, whatever version it resolves paths at.
type BlobRef struct {
	Digest Digest
	// Count is the number of references kept versions hold; 0 for a candidate.
	Count int64
	// ZeroSinceMs is the command time Count last reached 0 (0 while referenced).
	ZeroSinceMs int64
	// Intent is set while the garbage collector deletes the blob; IntentVersion and
	// IntentAtMs are the version and command time of the GCIntent that set it.
	Intent        bool
	IntentVersion uint64
	IntentAtMs    int64
}

func exportBlobRef(d Digest, br blobRef) BlobRef {
	return BlobRef{Digest: d, Count: br.Count, ZeroSinceMs: br.ZeroSinceMs, Intent: br.Intent,
		IntentVersion: br.IntentVersion, IntentAtMs: br.IntentAtMs}
}

// ShardView is the shard-wide reads of one View (View.Shard), which no restriction
// narrows: every root the shard holds, blob reference records, backup holds and
// compaction candidates — what the node's background work (garbage collection,
// compaction, backups) and routing read. It reads only through its View, as every facet
// does.
type ShardView struct{ v *View }

// Blob returns the reference record of digest d in the root with uid rootUID; false when
// there is none (never published, or its deletion was recorded).
func (sv ShardView) Blob(rootUID string, d Digest) (BlobRef, bool) {
	br, ok := sv.v.st.blobs.Get(blobKey(rootUID, d))
	if !ok {
		return BlobRef{}, false
	}
	return exportBlobRef(d, br), true
}

// Blobs calls fn for the reference records of the root with uid rootUID, in ascending
// digest order, until fn returns false.
func (sv ShardView) Blobs(rootUID string, fn func(BlobRef) bool) {
	prefix := rootUID + "\x00"
	sv.v.st.blobs.Ascend(prefix, func(k string, br blobRef) bool {
		if !strings.HasPrefix(k, prefix) || len(k) != len(prefix)+len(Digest{}) {
			return false
		}
		var d Digest
		copy(d[:], k[len(prefix):])
		return fn(exportBlobRef(d, br))
	})
}

// Roots calls fn for every agent root in agent order until fn returns false.
func (sv ShardView) Roots(fn func(*Root) bool) {
	sv.v.st.roots.Scan(func(_ string, r *Root) bool { return fn(r) })
}

// checkPublishable fails a publish that references a blob of agent's root under delete
// intent, or (when the command carries Header.UploadFence) a blob with no record after
// the root recorded a deletion past the fence (docs/architecture.md#blob-storage-and-garbage-collection). Inline segments never touch
// the object store and always pass.
func (a *fileApplier) checkPublishable(agent string, segs []Segment) *Error {
	root, ok := a.st.roots.Get(agent)
	if !ok {
		return nil // no root yet: nothing of it was ever collected
	}
	fence := a.hdr.UploadFence
	for _, sg := range segs {
		if sg.IsInline() {
			continue
		}
		br, ok := a.st.blobs.Get(blobKey(root.UID, sg.Digest))
		switch {
		case ok && br.Intent:
			return errorf(CodeBlobDeleting, "a blob of this body is being deleted by the garbage collector; upload it again and retry")
		case !ok && fence != 0 && root.BlobsDeletedVersion > fence:
			return errorf(CodeBlobDeleting, "the garbage collector deleted blobs after this body was uploaded; upload it again and retry")
		}
	}
	return nil
}

func validateGCAgent(a *applier, agent string) (*Root, *Error) {
	if err := ValidateName("agent", agent); err != nil {
		return nil, err
	}
	root, ok := a.st.roots.Get(agent)
	if !ok {
		return nil, errorf(CodeNotFound, "agent root %q does not exist", agent)
	}
	return root, nil
}

func (a *applier) gcIntent(c GCIntent) Result {
	root, err := validateGCAgent(a, c.Agent)
	if err != nil {
		return Result{Err: err}
	}
	if len(c.Candidates) == 0 || len(c.Candidates) > MaxGCBatch {
		return Result{Err: invalidArg("candidates", "must hold 1 to %d digests, not %d", MaxGCBatch, len(c.Candidates))}
	}
	if c.GraceMs < 0 {
		return Result{Err: invalidArg("grace_ms", "must not be negative")}
	}
	if c.TakeOverAfterMs <= 0 {
		return Result{Err: invalidArg("take_over_after_ms", "must be positive")}
	}
	s := a.st
	now := s.nowMs
	res := &GCResult{IntentVersion: s.version}
	for _, cand := range c.Candidates {
		k := blobKey(root.UID, cand.Digest)
		br, ok := s.blobs.Get(k)
		var accept bool
		switch {
		case cand.TakeOverVersion != 0:
			accept = ok && br.Intent && br.IntentVersion == cand.TakeOverVersion && br.IntentAtMs+c.TakeOverAfterMs <= now
		case cand.Orphan:
			accept = !ok
		default:
			accept = ok && !br.Intent && br.Count == 0 && br.ZeroSinceMs+c.GraceMs <= now && !s.backupHeld(br.ZeroSinceMs)
		}
		if !accept {
			continue
		}
		br.Intent, br.IntentVersion, br.IntentAtMs = true, s.version, now
		s.blobs.Set(k, br)
		res.Accepted = append(res.Accepted, cand.Digest)
	}
	return Result{GC: res, RootUID: root.UID}
}

func (a *applier) gcDeleted(c GCDeleted) Result {
	root, err := validateGCAgent(a, c.Agent)
	if err != nil {
		return Result{Err: err}
	}
	if len(c.Blobs) == 0 || len(c.Blobs) > MaxGCBatch {
		return Result{Err: invalidArg("blobs", "must hold 1 to %d digests, not %d", MaxGCBatch, len(c.Blobs))}
	}
	s := a.st
	res := &GCResult{}
	for _, b := range c.Blobs {
		k := blobKey(root.UID, b.Digest)
		br, ok := s.blobs.Get(k)
		if !ok || !br.Intent || br.IntentVersion != b.IntentVersion || br.Count != 0 {
			continue
		}
		s.blobs.Delete(k)
		res.Accepted = append(res.Accepted, b.Digest)
	}
	if len(res.Accepted) > 0 {
		nr := *root
		nr.BlobsDeletedVersion = s.version
		s.roots.Set(c.Agent, &nr)
	}
	return Result{GC: res, RootUID: root.UID}
}
