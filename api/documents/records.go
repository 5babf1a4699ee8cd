package documents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// How the records are stored (docs/documents.md#storage). Every record of an owner
// {tenant, workspace} is a file of the reserved workbench Workbench of the tenant's agent
// root, below the directory named for the workspace:
//
//	<workspace>/heads/<documentId>.json                   the document row (projection), the per-document lock
//	<workspace>/docs/<documentId>/versions/<versionId>.md version content (frontmatter + body)
//	<workspace>/docs/<documentId>/events/<eventId>.json   the six event types, append-only
//	<workspace>/docs/<documentId>/snapshots/<id>.json     context snapshots (canonical JSON)
//	<workspace>/docs/<documentId>/runs/<runId>.json       runner runs
//	<workspace>/docs/<documentId>/judgments/<id>.json     judgments
//	<workspace>/proposals/<proposalEventId>.json          proposal id → document id
//	<workspace>/submissions/<stableKey(submissionId)>.json submission id → its decision
//
// Every file but a head and a run record is written create-only and never changed: a
// record's id is derived from its content or its request, so a replay finds the record
// it would write. Heads and run records change only by compare-and-swap on their
// generation.

// Workbench is the reserved workbench of an agent root that holds its working documents;
// only this surface (Surface) writes it (workbench.Config.ReservedWorkbenches).
const Workbench = "documents"

// Surface names this surface's requests to the Workbench service.
const Surface = "documents"

// Event types (the design's Events table).
const (
	TypeCreated   = "stream.thought.workbench.document.created"
	TypeVersion   = "stream.thought.workbench.document.version"
	TypeSelected  = "stream.thought.workbench.context.selected"
	TypeRequested = "stream.thought.workbench.proposal.requested"
	TypeProposed  = "stream.thought.workbench.proposal.proposed"
	TypeDecision  = "stream.thought.workbench.proposal.decision"
)

// Version reasons.
const (
	ReasonCreated          = "created"
	ReasonOperatorEdit     = "operator-edit"
	ReasonProposalAccepted = "proposal-accepted"
)

// Event is a workbench event as stored and served: the design's envelope and lineage.
type Event struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	Source         string          `json:"source"`
	SourceKind     string          `json:"sourceKind"`
	Privacy        string          `json:"privacy"`
	SchemaVersion  int             `json:"schemaVersion"`
	Actor          string          `json:"actor"`
	OccurredAt     string          `json:"occurredAt"`
	RootEventID    string          `json:"rootEventId"`
	ParentEventID  string          `json:"parentEventId"`
	IdempotencyKey string          `json:"idempotencyKey"`
	Payload        json.RawMessage `json:"payload"`
}

// decodePayload decodes e's payload as a T (the payload type of e.Type). Events are
// written by this package from a T and never changed, so a decoding error is ignored: the
// payload reads as the zero T.
func decodePayload[T any](e Event) T {
	var p T
	_ = json.Unmarshal(e.Payload, &p)
	return p
}

// Payloads, by type.

type createdPayload struct {
	DocumentID    string `json:"documentId"`
	Title         string `json:"title"`
	OriginEventID string `json:"originEventId"`
	VersionID     string `json:"versionId"`
	Sha256        string `json:"sha256"`
	RequestID     string `json:"requestId"`
}

type versionPayload struct {
	DocumentID      string  `json:"documentId"`
	VersionID       string  `json:"versionId"`
	BaseVersionID   *string `json:"baseVersionId"`
	Sha256          string  `json:"sha256"`
	SizeBytes       int     `json:"sizeBytes"`
	Reason          string  `json:"reason"`
	ProposalEventID string  `json:"proposalEventId,omitempty"`
	DecisionEventID string  `json:"decisionEventId,omitempty"`
	RequestID       string  `json:"requestId"`
}

type selectedPayload struct {
	DocumentID         string   `json:"documentId"`
	SelectionID        string   `json:"selectionId"`
	SnapshotVersionID  string   `json:"snapshotVersionId"`
	SelectedEventIDs   []string `json:"selectedEventIds"`
	SelectedVersionIDs []string `json:"selectedVersionIds"`
	RequestID          string   `json:"requestId"`
}

type requestedPayload struct {
	DocumentID        string `json:"documentId"`
	BaseVersionID     string `json:"baseVersionId"`
	BaseSha256        string `json:"baseSha256"`
	SelectionID       string `json:"selectionId"`
	SnapshotVersionID string `json:"snapshotVersionId"`
	RunnerID          string `json:"runnerId"`
	RequestID         string `json:"requestId"`
}

type proposer struct {
	RunnerID          string `json:"runnerId"`
	RunnerRevision    string `json:"runnerRevision"`
	RequestID         string `json:"requestId"`
	RunID             string `json:"runId,omitempty"`
	ContextSnapshotID string `json:"contextSnapshotId"`
}

type target struct {
	DocumentID    string `json:"documentId"`
	BaseVersionID string `json:"baseVersionId"`
	BaseSha256    string `json:"baseSha256"`
}

type proposedPayload struct {
	ProposalState       string   `json:"proposalState"`
	Proposer            proposer `json:"proposer"`
	Target              target   `json:"target"`
	Operation           string   `json:"operation"`
	ProposedText        string   `json:"proposedText"`
	ProposedTextChars   int      `json:"proposedTextChars"`
	ProposedTextSha256  string   `json:"proposedTextSha256"`
	Reason              string   `json:"reason"`
	EvidenceEventIDs    []string `json:"evidenceEventIds"`
	PublicationEligible bool     `json:"publicationEligible"`
}

type decisionPayload struct {
	ProposalEventID string `json:"proposalEventId"`
	Disposition     string `json:"disposition"`
	SubmissionID    string `json:"submissionId"`
	Authority       string `json:"authority"`
	ResultVersionID string `json:"resultVersionId,omitempty"`
}

// Observation is an origin or selected event as frozen from the change feed (the
// snapshot's selectedEvents element).
type Observation struct {
	EventID     string `json:"eventId"`
	Type        string `json:"type"`
	Source      string `json:"source"`
	OccurredAt  string `json:"occurredAt"`
	PayloadHash string `json:"payloadHash"`
	Excerpt     string `json:"excerpt"`
}

// head is the document row: the projection of its version events, and the lock that
// serializes the document's mutations (Pending, mutate.go).
type head struct {
	ID              string      `json:"id"` // DocumentRowID
	DocumentID      string      `json:"documentId"`
	Title           string      `json:"title"`
	OriginEventID   string      `json:"originEventId"`
	Origin          Observation `json:"origin"`
	VersionID       string      `json:"versionId"`
	Sha256          string      `json:"sha256"`
	SizeBytes       int         `json:"sizeBytes"`
	Versions        int         `json:"versions"`
	CreatedEventID  string      `json:"createdEventId"`
	CreateRequestID string      `json:"createRequestId"`
	CreatedAt       string      `json:"createdAt"`
	UpdatedAt       string      `json:"updatedAt"`
	// Pending is a mutation that took the lock and has not finished; whoever reads it
	// finishes it first (settle).
	Pending *intent `json:"pending,omitempty"`
}

// run is a runner run (the design's AgentRun row).
type run struct {
	ID              string          `json:"id"`
	DocumentID      string          `json:"documentId"`
	RunnerID        string          `json:"runnerId"`
	RunnerRevision  string          `json:"runnerRevision"`
	Status          string          `json:"status"` // running, failed, completed
	TriggerEventID  string          `json:"triggerEventId"`
	OutputEventIDs  []string        `json:"outputEventIds"`
	ContextManifest contextManifest `json:"contextManifest"`
	ErrorClass      string          `json:"errorClass,omitempty"`
	ErrorText       string          `json:"errorText,omitempty"`
	StartedAt       string          `json:"startedAt"`
	EndedAt         string          `json:"endedAt,omitempty"`
}

type contextManifest struct {
	ContextSnapshot string `json:"contextSnapshot"`
}

// Run states.
const (
	RunRunning   = "running"
	RunFailed    = "failed"
	RunCompleted = "completed"
)

// judgment is the record of one decision (the design's Judgment lineage).
type judgment struct {
	ID                     string `json:"id"`
	Criterion              string `json:"criterion"`
	Kind                   string `json:"kind"`
	QualityEligible        bool   `json:"qualityEligible"`
	ExternalExportEligible bool   `json:"externalExportEligible"`
	FeedbackSourceEventID  string `json:"feedbackSourceEventId"`
	Source                 string `json:"source"`
	DocumentID             string `json:"documentId"`
	ProposalEventID        string `json:"proposalEventId"`
	BaseVersionID          string `json:"baseVersionId"`
	ResultVersionID        string `json:"resultVersionId,omitempty"`
	ContextSnapshotID      string `json:"contextSnapshotId"`
	RunID                  string `json:"runId"`
	RecordedAt             string `json:"recordedAt"`
}

// Criterion and source of every judgment.
const (
	JudgmentCriterion = "workbench-document-proposal@1"
	JudgmentSource    = "judgment:workbench-documents"
)

// proposalIndex maps a proposal event to its document.
type proposalIndex struct {
	DocumentID string `json:"documentId"`
}

// submission records which decision a submission id made.
type submission struct {
	SubmissionID    string `json:"submissionId"`
	ProposalEventID string `json:"proposalEventId"`
	Disposition     string `json:"disposition"`
}

// Bounds of what one read holds.
const (
	// MaxEventsPerDocument bounds the events one read of a document holds (each edit,
	// selection, request, proposal and decision is one); a read of a document with more
	// shows the first ones by id and says it is truncated.
	MaxEventsPerDocument = 2000
	// maxRecordBytes bounds one record file (a proposed event holds up to MaxBodyChars
	// characters, at most 3 UTF-8 bytes per UTF-16 unit, JSON-escaped up to 6).
	maxRecordBytes = 1 << 20
	// maxDirBytes bounds the bytes one directory read holds.
	maxDirBytes = 256 << 20
)

// owner is where a request's records live: a tenant (agent root) and a workspace (the
// directory of Workbench named for the principal's workbench).
type owner struct{ Tenant, Workspace string }

func (o owner) docDir(id string) string   { return o.Workspace + "/docs/" + id }
func (o owner) headPath(id string) string { return o.Workspace + "/heads/" + id + ".json" }
func (o owner) headsDir() string          { return o.Workspace + "/heads" }
func (o owner) versionPath(doc, v string) string {
	return o.docDir(doc) + "/versions/" + v + ".md"
}
func (o owner) eventPath(doc, e string) string { return o.docDir(doc) + "/events/" + e + ".json" }
func (o owner) snapshotPath(doc, s string) string {
	return o.docDir(doc) + "/snapshots/" + s + ".json"
}
func (o owner) runPath(doc, r string) string      { return o.docDir(doc) + "/runs/" + r + ".json" }
func (o owner) judgmentPath(doc, j string) string { return o.docDir(doc) + "/judgments/" + j + ".json" }
func (o owner) proposalPath(p string) string      { return o.Workspace + "/proposals/" + p + ".json" }
func (o owner) submissionPath(s string) string {
	return o.Workspace + "/submissions/" + StableKey("submission", s) + ".json"
}

// records reads and writes an owner's record files through the Store.
type records struct {
	store Store
	o     owner
}

// get decodes the JSON record at path into v; ErrNotFound when absent.
func (r records) get(ctx context.Context, path string, v any) (uint64, error) {
	b, gen, err := r.store.ReadFile(ctx, r.o.Tenant, Workbench, path, maxRecordBytes)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return 0, fmt.Errorf("record %s: %w", path, err)
	}
	return gen, nil
}

// create writes v at path create-only. exists reports that the path already held a
// record (then nothing was written).
func (r records) create(ctx context.Context, path string, v any) (exists bool, err error) {
	return r.createRaw(ctx, path, mustJSON(v), "application/json")
}

func (r records) createRaw(ctx context.Context, path string, body []byte, contentType string) (exists bool, err error) {
	_, err = r.store.WriteFile(ctx, r.o.Tenant, Workbench, path, body, contentType, 0)
	if errors.Is(err, ErrExists) {
		return true, nil
	}
	return false, err
}

// swap replaces the record at path, generation gen, with v: ErrConflict when another
// write came first.
func (r records) swap(ctx context.Context, path string, gen uint64, v any) (uint64, error) {
	return r.store.WriteFile(ctx, r.o.Tenant, Workbench, path, mustJSON(v), "application/json", gen)
}

// event reads event id of document doc; ErrNotFound when absent.
func (r records) event(ctx context.Context, doc, id string) (Event, error) {
	var e Event
	_, err := r.get(ctx, r.o.eventPath(doc, id), &e)
	return e, err
}

// appendEvent writes e create-only. When an event of its id exists, the stored one is
// returned (same reports whether its payload is e's: a replay, not a conflict).
func (r records) appendEvent(ctx context.Context, doc string, e Event) (stored Event, same bool, err error) {
	exists, err := r.create(ctx, r.o.eventPath(doc, e.ID), e)
	if err != nil || !exists {
		return e, true, err
	}
	if stored, err = r.event(ctx, doc, e.ID); err != nil {
		return Event{}, false, err
	}
	return stored, string(canonical(stored.Payload)) == string(canonical(e.Payload)), nil
}

// events reads the events of document doc, the first MaxEventsPerDocument by id (more:
// the document holds further ones).
func (r records) events(ctx context.Context, doc string) (evs []Event, more bool, err error) {
	files, more, err := r.store.ReadDir(ctx, r.o.Tenant, Workbench, r.o.docDir(doc)+"/events", "", MaxEventsPerDocument, maxDirBytes)
	if err != nil {
		return nil, false, err
	}
	out := make([]Event, 0, len(files))
	for _, f := range files {
		var e Event
		if err := json.Unmarshal(f.Body, &e); err != nil {
			return nil, false, fmt.Errorf("event %s: %w", f.Name, err)
		}
		out = append(out, e)
	}
	return out, more, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// timestamp renders t as the design's occurredAt: RFC 3339, UTC, milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
