package documents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/workbench/diff"
)

// The read routes (docs/documents.md#reads).

// MaxDocumentsListed bounds a page of GET /documents (its limit parameter, and the page
// without one).
const MaxDocumentsListed = 1000

// documentRow is a document as the reads show it: its settled head and the design's
// Kind.
type documentRow struct {
	head
	Source      string `json:"source"`
	ContentType string `json:"contentType"`
	Path        string `json:"path"`
}

func rowOf(hd head) documentRow {
	return documentRow{head: settled(hd), Source: Source, ContentType: "text/markdown", Path: labelPath(hd.DocumentID)}
}

// labelPath is the design's path label of a document (not a filesystem path).
func labelPath(docID string) string { return "documents/" + docID + ".md" }

// listDocuments answers one page of the owner's documents in documentId order: limit
// (1..MaxDocumentsListed, default MaxDocumentsListed) of them after cursor (the
// nextCursor of the page before: the last documentId it showed). truncated says a page
// follows, and nextCursor is where it starts.
func (h *Handler) listDocuments(r *http.Request, o owner) (any, *Error) {
	q := r.URL.Query() // handler.go checked its parameters (queryOnly)
	limit := MaxDocumentsListed
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxDocumentsListed {
			return nil, invalid("limit", RuleFormat, "must be an integer from 1 to %d", MaxDocumentsListed)
		}
		limit = n
	}
	after := ""
	if c := q.Get("cursor"); c != "" {
		if !isRecordID(c) {
			return nil, invalid("cursor", RuleFormat, "must be the nextCursor of a page (a document id, 64 hex digits)")
		}
		after = c + ".json"
	}
	files, more, err := h.store.ReadDir(r.Context(), o.Tenant, Workbench, o.headsDir(), after, limit, maxDirBytes)
	if err != nil {
		return nil, fromStore(err)
	}
	rows := make([]documentRow, 0, len(files))
	for _, f := range files {
		var hd head
		if json.Unmarshal(f.Body, &hd) != nil {
			continue
		}
		rows = append(rows, rowOf(hd))
	}
	page := map[string]any{"documents": rows, "truncated": more}
	if more && len(files) > 0 {
		page["nextCursor"] = strings.TrimSuffix(files[len(files)-1].Name, ".json")
	}
	return page, nil
}

// settled is hd as it reads once its pending mutation is finished: a read never shows a
// half-applied head (the mutation's records exist or will, since whoever reads the head
// for a write finishes it first: settleHead; a read, which may not write, shows them from
// the pending mutation: withPending, pendingBody, and each decision's judgment, written
// last, from its decision: getDocument).
func settled(hd head) head {
	if p := hd.Pending; p != nil {
		hd.Title, hd.VersionID, hd.Sha256, hd.SizeBytes, hd.Versions, hd.UpdatedAt = p.Title, p.VersionID, p.Sha256, p.SizeBytes, p.Versions, p.UpdatedAt
		hd.Pending = nil
	}
	return hd
}

// withPending is evs with the events hd's pending mutation writes (its version event,
// its decision event) that evs lacks: a crash between the mutation's first swap and its
// last leaves them unwritten until the next write of the document finishes it.
func withPending(hd head, evs []Event) []Event {
	p := hd.Pending
	if p == nil {
		return evs
	}
	var pending []Event
	if p.Version != nil {
		pending = append(pending, p.Version.Event)
	}
	if p.Decision != nil {
		pending = append(pending, p.Decision.Event)
	}
	for _, ev := range pending {
		if !slices.ContainsFunc(evs, func(x Event) bool { return x.ID == ev.ID }) {
			evs = append(evs, ev)
		}
	}
	return evs
}

// pendingBody is the body of version v when hd's pending mutation appends it (its row
// may not be written yet); ok false otherwise.
func pendingBody(hd head, v string) (string, bool) {
	if p := hd.Pending; p != nil && p.Version != nil && p.VersionID == v {
		if _, text, ok := splitContent(p.Version.Content); ok {
			return text, true
		}
	}
	return "", false
}

// loadHead reads document id's head; NotFound when it does not exist (or is another
// owner's: it is not in this owner's directory).
func (h *Handler) loadHead(ctx context.Context, o owner, id string) (head, *Error) {
	var hd head
	_, err := records{h.store, o}.get(ctx, o.headPath(id), &hd)
	if errors.Is(err, ErrNotFound) {
		return head{}, notFound("document")
	}
	if err != nil {
		return head{}, fromStore(err)
	}
	return hd, nil
}

// versionRow is one version as the reads show it: its version event's payload, the
// event's id and time.
type versionRow struct {
	versionPayload
	EventID    string `json:"eventId"`
	OccurredAt string `json:"occurredAt"`
}

var typeRank = map[string]int{TypeCreated: 0, TypeVersion: 1, TypeSelected: 2, TypeRequested: 3, TypeProposed: 4, TypeDecision: 5}

// history is the events of document hd in order: occurredAt, then the design's order of
// types within one request. Those of hd's pending mutation are among them whether or not
// it wrote them yet (withPending).
func (h *Handler) history(ctx context.Context, o owner, hd head) ([]Event, bool, *Error) {
	evs, truncated, err := records{h.store, o}.events(ctx, hd.DocumentID)
	if err != nil {
		return nil, false, fromStore(err)
	}
	evs = withPending(hd, evs)
	slices.SortFunc(evs, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.OccurredAt, b.OccurredAt), cmp.Compare(typeRank[a.Type], typeRank[b.Type]), cmp.Compare(a.ID, b.ID))
	})
	return evs, truncated, nil
}

func versionsOf(evs []Event) []versionRow {
	out := []versionRow{}
	for _, e := range evs {
		if e.Type != TypeVersion {
			continue
		}
		out = append(out, versionRow{versionPayload: decodePayload[versionPayload](e), EventID: e.ID, OccurredAt: e.OccurredAt})
	}
	return out
}

func (h *Handler) listVersions(r *http.Request, o owner, id string) (any, *Error) {
	hd, e := h.loadHead(r.Context(), o, id)
	if e != nil {
		return nil, e
	}
	evs, truncated, e := h.history(r.Context(), o, hd)
	if e != nil {
		return nil, e
	}
	return map[string]any{"documentId": id, "versions": versionsOf(evs), "truncated": truncated}, nil
}

// proposalRow is a proposal with its state (the design's Proposal state).
type proposalRow struct {
	ProposalEventID string          `json:"proposalEventId"`
	State           string          `json:"state"` // pending, stale, accepted, rejected
	Stale           bool            `json:"stale"`
	HeadVersionID   string          `json:"headVersionId"`
	Proposal        proposedPayload `json:"proposal"`
	DecisionEventID string          `json:"decisionEventId,omitempty"`
	ResultVersionID string          `json:"resultVersionId,omitempty"`
	// Diff is between the base version's body and proposedText (frontmatter excluded),
	// for an undecided proposal.
	Diff *diff.Result `json:"diff,omitempty"`
}

func (h *Handler) getDocument(r *http.Request, o owner, id string) (any, *Error) {
	ctx := r.Context()
	hd, e := h.loadHead(ctx, o, id)
	if e != nil {
		return nil, e
	}
	evs, truncated, e := h.history(ctx, o, hd)
	if e != nil {
		return nil, e
	}
	raw := hd
	hd = settled(hd)
	text, pending := pendingBody(raw, hd.VersionID)
	if !pending {
		if text, e = h.versionBody(ctx, o, id, hd.VersionID); e != nil {
			return nil, e
		}
	}
	decisions := map[string]decisionPayload{}
	decisionIDs := map[string]string{}
	decisionEvents := map[string]Event{}
	selections, runs := []selectedPayload{}, []run{}
	for _, ev := range evs {
		switch ev.Type {
		case TypeDecision:
			p := decodePayload[decisionPayload](ev)
			decisions[p.ProposalEventID], decisionIDs[p.ProposalEventID], decisionEvents[p.ProposalEventID] = p, ev.ID, ev
		case TypeSelected:
			selections = append(selections, decodePayload[selectedPayload](ev))
		case TypeRequested:
			p := decodePayload[requestedPayload](ev)
			var rn run
			if _, err := (records{h.store, o}).get(ctx, o.runPath(id, RunID(id, p.RequestID)), &rn); err == nil {
				runs = append(runs, rn)
			}
		}
	}
	proposals := []proposalRow{}
	derived := []judgment{}
	for _, ev := range evs {
		if ev.Type != TypeProposed {
			continue
		}
		p := decodePayload[proposedPayload](ev)
		if d, ok := decisions[ev.ID]; ok {
			derived = append(derived, h.judgmentOf(id, p, decisionEvents[ev.ID], d))
		}
		row := proposalRow{ProposalEventID: ev.ID, HeadVersionID: hd.VersionID, Proposal: p, Stale: hd.VersionID != p.Target.BaseVersionID}
		if d, ok := decisions[ev.ID]; ok {
			row.State, row.DecisionEventID, row.ResultVersionID = map[string]string{"accept": "accepted", "reject": "rejected"}[d.Disposition], decisionIDs[ev.ID], d.ResultVersionID
		} else {
			row.State = "pending"
			if row.Stale {
				row.State = "stale"
			}
			base, e := h.versionBody(ctx, o, id, p.Target.BaseVersionID)
			if e != nil {
				return nil, e
			}
			d, err := diff.Text([]byte(base), []byte(p.ProposedText), diff.DefaultOptions())
			if err == nil {
				row.Diff = d
			}
		}
		proposals = append(proposals, row)
	}
	files, _, err := h.store.ReadDir(ctx, o.Tenant, Workbench, o.docDir(id)+"/judgments", "", MaxEventsPerDocument, maxDirBytes)
	if err != nil {
		return nil, fromStore(err)
	}
	judgments := []judgment{}
	for _, f := range files {
		var j judgment
		if json.Unmarshal(f.Body, &j) == nil {
			judgments = append(judgments, j)
		}
	}
	// The judgment is a decision's last record (decide.go): one a crash left unwritten
	// reads as the replay that finishes the decision writes it.
	for _, j := range derived {
		if !slices.ContainsFunc(judgments, func(x judgment) bool { return x.ID == j.ID }) {
			judgments = append(judgments, j)
		}
	}
	slices.SortFunc(judgments, func(a, b judgment) int { return cmp.Compare(a.ID, b.ID) })
	return map[string]any{"document": rowOf(hd), "body": text, "versions": versionsOf(evs), "selections": selections,
		"proposals": proposals, "runs": runs, "judgments": judgments, "events": evs, "truncated": truncated}, nil
}

// versionBody returns the body (frontmatter excluded) of version v of document id.
func (h *Handler) versionBody(ctx context.Context, o owner, id, v string) (string, *Error) {
	b, _, err := h.store.ReadFile(ctx, o.Tenant, Workbench, o.versionPath(id, v), maxRecordBytes)
	if errors.Is(err, ErrNotFound) {
		return "", notFound("version")
	}
	if err != nil {
		return "", fromStore(err)
	}
	_, text, ok := splitContent(string(b))
	if !ok {
		return "", &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "a stored version is not of the design's form"}
	}
	return text, nil
}

// candidate is one entry of GET /candidates: an observation or a version of the document.
type candidate struct {
	Kind string `json:"kind"` // observation, version
	*Observation
	VersionID  string `json:"versionId,omitempty"`
	DocumentID string `json:"documentId,omitempty"`
	Sha256     string `json:"sha256,omitempty"`
	Path       string `json:"path,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

func (h *Handler) candidates(r *http.Request, o owner) (any, *Error) {
	q := r.URL.Query() // handler.go checked its parameters (queryOnly)
	obs, e := h.recentObservations(r.Context(), o)
	if e != nil {
		return nil, e
	}
	out := []candidate{}
	for i := range obs {
		out = append(out, candidate{Kind: "observation", Observation: &obs[i]})
	}
	id := q.Get("documentId")
	if id == "" {
		return map[string]any{"candidates": out}, nil
	}
	if !isRecordID(id) {
		return nil, notFound("document")
	}
	hd, e := h.loadHead(r.Context(), o, id)
	if e != nil {
		return nil, e
	}
	if !slices.ContainsFunc(obs, func(x Observation) bool { return x.EventID == hd.OriginEventID }) {
		origin := hd.Origin
		out = append(out, candidate{Kind: "observation", Observation: &origin})
	}
	evs, _, e := h.history(r.Context(), o, hd)
	if e != nil {
		return nil, e
	}
	return map[string]any{"documentId": id, "candidates": append(out, versionCandidates(id, versionsOf(evs))...)}, nil
}

// versionCandidates are document id's versions as candidates, one for each versionId.
// An edit back to earlier content appends a second version event with the same
// versionId (identical content is one version: ids.go), so the history holds it twice;
// a selection names each version once, so a candidate stands for the version where it
// last became the head, with that event's reason.
func versionCandidates(id string, versions []versionRow) []candidate {
	out := make([]candidate, 0, len(versions))
	seen := make(map[string]bool, len(versions))
	for _, v := range slices.Backward(versions) {
		if !seen[v.VersionID] {
			seen[v.VersionID] = true
			out = append(out, candidate{Kind: "version", VersionID: v.VersionID, DocumentID: id, Sha256: v.Sha256, Path: labelPath(id), Reason: v.Reason})
		}
	}
	slices.Reverse(out)
	return out
}
