package documents

import (
	"context"
	"errors"
)

// createAnswer is the answer of createWorkingDocument (its replays answer the same).
type createAnswer struct {
	DocumentID     string `json:"documentId"`
	VersionID      string `json:"versionId"`
	CreatedEventID string `json:"createdEventId"`
	VersionEventID string `json:"versionEventId"`
}

// create is createWorkingDocument: {originEventId, title, body, requestId}. The walk:
// the origin must be an observation the feed holds (frozen into the head); then the
// version row, the created event (root and parent = the origin), the version event
// (reason created, parent = the created event), and the head, each create-only. A
// replay (same requestId: same documentId) answers the first answer; a requestId reused
// with other content is a ConflictError. A create cut short is finished by its replay.
func (h *Handler) create(ctx context.Context, o owner, b body) (any, *Error) {
	if e := b.only("originEventId", "title", "body", "requestId"); e != nil {
		return nil, e
	}
	originID, e := b.str("originEventId", true, 64)
	if e != nil {
		return nil, e
	}
	title, text, requestID, e := b.versionMembers()
	if e != nil {
		return nil, e
	}
	if !isObservationID(originID) {
		return nil, invalid("originEventId", RuleFormat, "must be an observation id (cairn:feed:<shard version>.<index>)")
	}
	docID := DocumentID(originID, requestID)
	content := Content(title, text)
	versionID := VersionID(docID, content)
	rec := records{h.store, o}
	defer h.lockOf(docID)()

	replay := func(hd head) (any, *Error) {
		created, err := rec.event(ctx, docID, hd.CreatedEventID)
		if err != nil {
			return nil, fromStore(err)
		}
		p := decodePayload[createdPayload](created)
		if p.VersionID != versionID {
			return nil, conflict("requestId %q was used to create this document with other content", requestID)
		}
		return createAnswer{DocumentID: docID, VersionID: p.VersionID, CreatedEventID: created.ID,
			VersionEventID: EventID(TypeVersion, docID, ReasonCreated, requestID)}, nil
	}
	var hd head
	_, err := rec.get(ctx, o.headPath(docID), &hd)
	switch {
	case err == nil:
		return replay(hd)
	case !errors.Is(err, ErrNotFound):
		return nil, fromStore(err)
	}
	origin, e := h.observation(ctx, o, originID, "originEventId")
	if e != nil {
		return nil, e
	}
	now := h.opt.Now()
	sha := sha256Hex(content)
	created := h.newEvent(TypeCreated, originID, originID, []string{docID},
		createdPayload{DocumentID: docID, Title: title, OriginEventID: originID, VersionID: versionID, Sha256: sha, RequestID: requestID}, now)
	version := h.newEvent(TypeVersion, originID, created.ID, []string{docID, ReasonCreated, requestID},
		versionPayload{DocumentID: docID, VersionID: versionID, Sha256: sha, SizeBytes: len(content), Reason: ReasonCreated, RequestID: requestID}, now)
	if _, err := rec.createRaw(ctx, o.versionPath(docID, versionID), []byte(content), "text/markdown"); err != nil {
		return nil, fromStore(err)
	}
	for _, ev := range []Event{created, version} {
		_, same, err := rec.appendEvent(ctx, docID, ev)
		if err != nil {
			return nil, fromStore(err)
		}
		if !same {
			return nil, conflict("requestId %q was used to create this document with other content", requestID)
		}
	}
	hd = head{ID: DocumentRowID(docID), DocumentID: docID, Title: title, OriginEventID: originID, Origin: origin,
		VersionID: versionID, Sha256: sha, SizeBytes: len(content), Versions: 1, CreatedEventID: created.ID,
		CreateRequestID: requestID, CreatedAt: timestamp(now), UpdatedAt: timestamp(now)}
	exists, err := rec.create(ctx, o.headPath(docID), hd)
	if err != nil {
		return nil, fromStore(err)
	}
	if exists {
		if _, err := rec.get(ctx, o.headPath(docID), &hd); err != nil {
			return nil, fromStore(err)
		}
		return replay(hd)
	}
	return createAnswer{DocumentID: docID, VersionID: versionID, CreatedEventID: created.ID, VersionEventID: version.ID}, nil
}
