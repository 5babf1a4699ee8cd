package documents

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Snapshot is a context snapshot: the design's canonical JSON of the exact evidence the
// operator selected (stored as its RFC 8785 form, never changed).
type Snapshot struct {
	DocumentID       string            `json:"documentId"`
	BaseVersionID    string            `json:"baseVersionId"`
	SelectedEvents   []Observation     `json:"selectedEvents"`
	SelectedVersions []SelectedVersion `json:"selectedVersions"`
}

// SelectedVersion is a selected version of the document.
type SelectedVersion struct {
	DocumentID string `json:"documentId"`
	VersionID  string `json:"versionId"`
	Sha256     string `json:"sha256"`
	Path       string `json:"path"`
}

// SnapshotSource is the source of context snapshots (the design's Identity).
const SnapshotSource = "context:workbench"

type selectAnswer struct {
	DocumentID        string `json:"documentId"`
	SelectionID       string `json:"selectionId"`
	SnapshotVersionID string `json:"snapshotVersionId"`
	SelectedEventID   string `json:"selectedEventId"`
	BaseVersionID     string `json:"baseVersionId"`
}

// selectContext is selectContext: {selectedEventIds, selectedVersionIds?, requestId}
// (selectedVersionIds absent: none).
// Every id must exist now: an event id is an observation the root's feed holds or the
// document's (frozen) origin, a version id a version of the document. The snapshot (at
// the head's version) is written first, then the selected event (parent = the created
// event). Both are create-only and the selection never changes the head, so it takes no
// lock; a replay (the same ids, in any order) answers the first answer, a requestId
// reused with other ids is a ConflictError.
func (h *Handler) selectContext(ctx context.Context, o owner, docID string, b body) (any, *Error) {
	if e := b.only("selectedEventIds", "selectedVersionIds", "requestId"); e != nil {
		return nil, e
	}
	eventIDs, e := b.ids("selectedEventIds", true, MaxSelectedIDs, isObservationID)
	if e != nil {
		return nil, e
	}
	versionIDs, e := b.ids("selectedVersionIds", false, MaxSelectedIDs, isRecordID)
	if e != nil {
		return nil, e
	}
	requestID, e := b.id("requestId")
	if e != nil {
		return nil, e
	}
	hd, e := h.settleHead(ctx, o, docID)
	if e != nil {
		return nil, e
	}
	rec := records{h.store, o}
	selectionID := SelectionID(docID, requestID)
	selectedID := EventID(TypeSelected, selectionID)
	if prior, err := rec.event(ctx, docID, selectedID); err == nil {
		return replayedSelection(ctx, rec, docID, requestID, prior, eventIDs, versionIDs)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, fromStore(err)
	}
	snap := Snapshot{DocumentID: docID, BaseVersionID: hd.VersionID, SelectedEvents: []Observation{}, SelectedVersions: []SelectedVersion{}}
	for i, id := range eventIDs {
		if id == hd.OriginEventID {
			snap.SelectedEvents = append(snap.SelectedEvents, hd.Origin)
			continue
		}
		obs, e := h.observation(ctx, o, id, "selectedEventIds["+strconv.Itoa(i)+"]")
		if e != nil {
			return nil, e
		}
		snap.SelectedEvents = append(snap.SelectedEvents, obs)
	}
	if len(versionIDs) > 0 {
		evs, _, e := h.history(ctx, o, hd)
		if e != nil {
			return nil, e
		}
		versions := versionsOf(evs)
		for i, id := range versionIDs {
			k := slices.IndexFunc(versions, func(v versionRow) bool { return v.VersionID == id })
			if k < 0 {
				return nil, invalid("selectedVersionIds["+strconv.Itoa(i)+"]", RuleExists, "%s is not a version of this document", id)
			}
			snap.SelectedVersions = append(snap.SelectedVersions, SelectedVersion{DocumentID: docID, VersionID: id, Sha256: versions[k].Sha256, Path: labelPath(docID)})
		}
	}
	// The snapshot is a function of what its id hashes (the base and the set of ids): its
	// entries are in id order, whatever order the request named them in.
	slices.SortFunc(snap.SelectedEvents, func(a, b Observation) int { return strings.Compare(a.EventID, b.EventID) })
	slices.SortFunc(snap.SelectedVersions, func(a, b SelectedVersion) int { return strings.Compare(a.VersionID, b.VersionID) })
	snapshotID := SnapshotVersionID(docID, hd.VersionID, eventIDs, versionIDs)
	if _, err := rec.createRaw(ctx, o.snapshotPath(docID, snapshotID), canonical(snap), "application/json"); err != nil {
		return nil, fromStore(err)
	}
	ev := h.newEvent(TypeSelected, hd.OriginEventID, hd.CreatedEventID, []string{selectionID},
		selectedPayload{DocumentID: docID, SelectionID: selectionID, SnapshotVersionID: snapshotID, SelectedEventIDs: eventIDs,
			SelectedVersionIDs: versionIDs, RequestID: requestID}, h.opt.Now())
	stored, same, err := rec.appendEvent(ctx, docID, ev)
	if err != nil {
		return nil, fromStore(err)
	}
	if !same { // a racing request with this requestId wrote first
		return replayedSelection(ctx, rec, docID, requestID, stored, eventIDs, versionIDs)
	}
	return selectAnswer{DocumentID: docID, SelectionID: selectionID, SnapshotVersionID: snapshotID, SelectedEventID: stored.ID, BaseVersionID: hd.VersionID}, nil
}

// replayedSelection answers a selection whose requestId already selected (event prior):
// the first answer when it selected the same ids (in any order, at any base), else a
// ConflictError.
func replayedSelection(ctx context.Context, rec records, docID, requestID string, prior Event, eventIDs, versionIDs []string) (any, *Error) {
	p := decodePayload[selectedPayload](prior)
	if !sameIDs(p.SelectedEventIDs, eventIDs) || !sameIDs(p.SelectedVersionIDs, versionIDs) {
		return nil, conflict("requestId %q was used for another selection of this document", requestID)
	}
	return selectAnswer{DocumentID: docID, SelectionID: p.SelectionID, SnapshotVersionID: p.SnapshotVersionID, SelectedEventID: prior.ID,
		BaseVersionID: snapshotBase(ctx, rec, docID, p.SnapshotVersionID)}, nil
}

// sameIDs reports whether a and b hold the same ids: a selection is a set (its snapshot
// id hashes the sorted ids), so a replay naming them in another order is the same one.
func sameIDs(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// snapshot reads context snapshot id of document doc.
func (r records) snapshot(ctx context.Context, doc, id string) (Snapshot, error) {
	var s Snapshot
	_, err := r.get(ctx, r.o.snapshotPath(doc, id), &s)
	return s, err
}

func snapshotBase(ctx context.Context, rec records, doc, id string) string {
	s, _ := rec.snapshot(ctx, doc, id)
	return s.BaseVersionID
}
