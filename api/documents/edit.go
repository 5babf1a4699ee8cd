package documents

import (
	"context"
	"errors"
)

// editAnswer is the answer of saveOperatorEdit. VersionEventID is null when the content
// was identical to the head's (a no-op).
type editAnswer struct {
	DocumentID     string  `json:"documentId"`
	VersionID      string  `json:"versionId"`
	VersionEventID *string `json:"versionEventId"`
}

// edit is saveOperatorEdit: {baseVersionId, title, body, requestId}. Under the document's
// lock (mutate.go): a replayed requestId answers its first answer (after settling a
// mutation the head still names as pending); a base that is not the head is a
// StaleBaseError naming the head; content identical to the head's is a no-op; otherwise
// the version row and the version event (reason operator-edit, parent = the created
// event), then the head.
func (h *Handler) edit(ctx context.Context, o owner, docID string, b body) (any, *Error) {
	if e := b.only("baseVersionId", "title", "body", "requestId"); e != nil {
		return nil, e
	}
	base, e := b.recordID("baseVersionId", "version")
	if e != nil {
		return nil, e
	}
	title, text, requestID, e := b.versionMembers()
	if e != nil {
		return nil, e
	}
	rec := records{h.store, o}
	content := Content(title, text)
	versionID := VersionID(docID, content)
	eventID := EventID(TypeVersion, docID, ReasonOperatorEdit, requestID)
	return h.mutate(ctx, o, docID, func(hd head) (*intent, any, *Error) {
		prior, err := rec.event(ctx, docID, eventID)
		switch {
		case err == nil:
			p := decodePayload[versionPayload](prior)
			if p.VersionID != versionID || p.BaseVersionID == nil || *p.BaseVersionID != base {
				return nil, nil, conflict("requestId %q was used for another edit of this document", requestID)
			}
			return nil, editAnswer{DocumentID: docID, VersionID: p.VersionID, VersionEventID: &prior.ID}, nil
		case !errors.Is(err, ErrNotFound):
			return nil, nil, fromStore(err)
		}
		if base != hd.VersionID {
			return nil, nil, staleBase(hd.VersionID)
		}
		if versionID == hd.VersionID {
			return nil, editAnswer{DocumentID: docID, VersionID: versionID}, nil
		}
		now := h.opt.Now()
		sha := sha256Hex(content)
		ev := h.newEvent(TypeVersion, hd.OriginEventID, hd.CreatedEventID, []string{docID, ReasonOperatorEdit, requestID},
			versionPayload{DocumentID: docID, VersionID: versionID, BaseVersionID: &base, Sha256: sha, SizeBytes: len(content),
				Reason: ReasonOperatorEdit, RequestID: requestID}, now)
		in := &intent{Version: &pendingVersion{Content: content, Event: ev}, Title: title, VersionID: versionID, Sha256: sha,
			SizeBytes: len(content), Versions: hd.Versions + 1, UpdatedAt: timestamp(now)}
		return in, editAnswer{DocumentID: docID, VersionID: versionID, VersionEventID: &ev.ID}, nil
	})
}
