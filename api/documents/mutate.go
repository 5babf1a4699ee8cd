package documents

import (
	"context"
	"errors"
	"hash/fnv"
	"net/http"
	"time"
)

// Per-document serialization (docs/documents.md#serialization). The design serializes a
// document's mutations in process; Cairn serializes them across the nodes of a cluster
// with the document's head record as the lock: a mutation that changes the head first
// swaps the head (compare-and-swap on its generation, one Raft command) for a copy that
// names the mutation as Pending, with everything needed to finish it; then it writes its
// records (each create-only, so writing one twice is harmless), then swaps the head again
// for the new projection without Pending. Whoever reads a head with a Pending mutation
// (a racing request, a replay, a request after a crash) finishes that mutation first
// (settle), so a mutation is applied entirely or not at all as far as the head says, and
// of two racing mutations only the one whose first swap wins writes anything.

// intent is a head-changing mutation in flight.
type intent struct {
	// Version is a version to append: its content (the version row) and event.
	Version *pendingVersion `json:"version,omitempty"`
	// Decision is a decision to record: its submission record, event and judgment.
	Decision *pendingDecision `json:"decision,omitempty"`
	// The head's projection once done.
	Title     string `json:"title"`
	VersionID string `json:"versionId"`
	Sha256    string `json:"sha256"`
	SizeBytes int    `json:"sizeBytes"`
	Versions  int    `json:"versions"`
	UpdatedAt string `json:"updatedAt"`
}

type pendingVersion struct {
	Content string `json:"content"`
	Event   Event  `json:"event"`
}

type pendingDecision struct {
	Submission submission `json:"submission"`
	Event      Event      `json:"event"`
	Judgment   judgment   `json:"judgment"`
}

// maxMutateAttempts bounds how often a mutation re-reads a head another request changed.
const maxMutateAttempts = 16

// lockOf is this node's stripe lock of document id (fewer swaps lost to local races).
func (h *Handler) lockOf(id string) func() {
	f := fnv.New32a()
	_, _ = f.Write([]byte(id))
	m := &h.locks[f.Sum32()%uint32(len(h.locks))]
	m.Lock()
	return m.Unlock
}

// mutate runs plan against document id's settled head: plan answers the request, and
// the intent (nil: nothing to change) whose application makes that answer true.
func (h *Handler) mutate(ctx context.Context, o owner, id string, plan func(head) (*intent, any, *Error)) (any, *Error) {
	defer h.lockOf(id)()
	rec := records{h.store, o}
	for range maxMutateAttempts {
		var hd head
		gen, err := rec.get(ctx, o.headPath(id), &hd)
		if errors.Is(err, ErrNotFound) {
			return nil, notFound("document")
		}
		if err != nil {
			return nil, fromStore(err)
		}
		if hd.Pending != nil {
			if err := rec.settle(ctx, hd, gen); err != nil {
				return nil, fromStore(err)
			}
			continue
		}
		in, answer, e := plan(hd)
		if e != nil || in == nil {
			return answer, e
		}
		next := hd
		next.Pending = in
		g2, err := rec.swap(ctx, o.headPath(id), gen, next)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fromStore(err)
		}
		if err := rec.settle(ctx, next, g2); err != nil {
			return nil, fromStore(err)
		}
		return answer, nil
	}
	return nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the document changed too often to apply this request"}
}

// settleHead reads document id's head with its pending mutation finished, as mutate does
// before it plans: a write route that builds on the head (a selection's base, a proposal
// request's base text) never builds on a version whose records a crash left unwritten.
func (h *Handler) settleHead(ctx context.Context, o owner, id string) (head, *Error) {
	rec := records{h.store, o}
	for range maxMutateAttempts {
		var hd head
		gen, err := rec.get(ctx, o.headPath(id), &hd)
		if errors.Is(err, ErrNotFound) {
			return head{}, notFound("document")
		}
		if err != nil {
			return head{}, fromStore(err)
		}
		if hd.Pending == nil {
			return hd, nil
		}
		if err := rec.settle(ctx, hd, gen); err != nil {
			return head{}, fromStore(err)
		}
	}
	return head{}, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the document changed too often to apply this request"}
}

// settle finishes hd's Pending mutation (head generation gen): its records in the
// design's order (version row, version event, decision event), the head, then the
// judgment. A lost final swap means another request settled it.
func (r records) settle(ctx context.Context, hd head, gen uint64) error {
	p := hd.Pending
	id := hd.DocumentID
	if v := p.Version; v != nil {
		if _, err := r.createRaw(ctx, r.o.versionPath(id, p.VersionID), []byte(v.Content), "text/markdown"); err != nil {
			return err
		}
		if _, _, err := r.appendEvent(ctx, id, v.Event); err != nil {
			return err
		}
	}
	if d := p.Decision; d != nil {
		if _, err := r.create(ctx, r.o.submissionPath(d.Submission.SubmissionID), d.Submission); err != nil {
			return err
		}
		if _, _, err := r.appendEvent(ctx, id, d.Event); err != nil {
			return err
		}
	}
	next := hd
	next.Pending = nil
	next.Title, next.VersionID, next.Sha256, next.SizeBytes = p.Title, p.VersionID, p.Sha256, p.SizeBytes
	next.Versions, next.UpdatedAt = p.Versions, p.UpdatedAt
	if _, err := r.swap(ctx, r.o.headPath(id), gen, next); err != nil && !errors.Is(err, ErrConflict) {
		return err
	}
	if d := p.Decision; d != nil {
		if _, err := r.create(ctx, r.o.judgmentPath(id, d.Judgment.ID), d.Judgment); err != nil {
			return err
		}
	}
	return nil
}

// newEvent is an event of this surface with the design's envelope; its id is its
// idempotency key (EventID(typ, key…)).
func (h *Handler) newEvent(typ, root, parent string, key []string, payload any, at time.Time) Event {
	id := EventID(typ, key...)
	return Event{ID: id, Type: typ, Source: Source, SourceKind: "system", Privacy: "sensitive", SchemaVersion: 1,
		Actor: h.opt.Actor, OccurredAt: timestamp(at), RootEventID: root, ParentEventID: parent, IdempotencyKey: id,
		Payload: mustJSON(payload)}
}
