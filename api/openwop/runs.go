package openwop

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Runs (RFC 0059 §D). Cairn executes no workflow: a run is the workspace's read snapshot
// taken at run.started, held for Options.RunTTLDays, with the run record in the
// snapshot's annotation. Any non-empty workflowId of at most 256 bytes is accepted
// (conformance-noop included); the run stays "pending" (nothing executes it) until its
// lease ends, after which it no longer exists (run_not_found).

// runPrefix starts every run id, and names the run's snapshot.
const runPrefix = "run-"

// maxWorkflowIDBytes bounds a workflowId.
const maxWorkflowIDBytes = 256

// runRequest is POST /v1/runs's body (RunOptions' top-level fields; closed). Only
// workflowId and inputs are recorded.
type runRequest struct {
	WorkflowID   *string         `json:"workflowId"`
	Inputs       json.RawMessage `json:"inputs"`
	Tags         json.RawMessage `json:"tags"`
	Metadata     json.RawMessage `json:"metadata"`
	Configurable json.RawMessage `json:"configurable"`
}

// runRecord is what a run's snapshot annotation holds.
type runRecord struct {
	WorkflowID string          `json:"workflowId"`
	StartedAt  string          `json:"startedAt"`
	Inputs     json.RawMessage `json:"inputs,omitempty"`
}

// runCreated is POST /v1/runs's 201 body.
type runCreated struct {
	RunID      string `json:"runId"`
	Status     string `json:"status"`
	WorkflowID string `json:"workflowId"`
	StartedAt  string `json:"startedAt"`
	EventsURL  string `json:"eventsUrl"`
	StatusURL  string `json:"statusUrl"`
}

// runSummary is a run as GET /v1/runs lists it; expiresAt (the end of the snapshot's
// lease) is Cairn's extension.
type runSummary struct {
	RunID      string `json:"runId"`
	WorkflowID string `json:"workflowId"`
	Status     string `json:"status"`
	StartedAt  string `json:"startedAt"`
	ExpiresAt  string `json:"expiresAt"`
}

// runSnapshot is GET /v1/runs/{runId}'s body (run-snapshot.schema.json, which admits
// extensions: workspace, the files frozen at run.started, is RFC 0059 §D's).
type runSnapshot struct {
	runSummary
	Inputs    json.RawMessage `json:"inputs,omitempty"`
	Workspace []runFile       `json:"workspace"`
}

type runFile struct {
	Path    string `json:"path"`
	Version uint64 `json:"version"`
}

const runPending = "pending"

// serveRuns routes rest of /v1/runs: "" (create, list), "/{runId}",
// "/{runId}/workspace/files[/{path}]", "/{runId}/events".
func (h *Handler) serveRuns(w http.ResponseWriter, r *http.Request, o Owner, rest string) {
	if rest == "" {
		serveCollection(w, r, "/v1/runs", func() { h.listRuns(w, r, o) }, func() { h.createRun(w, r, o) })
		return
	}
	rawID, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	id, err := decodeRunID(rawID)
	if err != nil {
		WriteError(w, err)
		return
	}
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET", "a run answers GET")
		return
	}
	at := workbench.AtSnapshotName(id)
	switch {
	case sub == "":
		h.getRun(w, r, o, id)
	case sub == "events":
		WriteError(w, fail(http.StatusNotImplemented, CodeCapabilityNotProvided, "this host executes no workflow and streams no run events"))
	case sub == "workspace/files":
		if _, _, _, err := h.runView(r.Context(), o, id); err != nil {
			WriteError(w, err)
			return
		}
		files, lerr := h.list(r.Context(), o, at, r.URL.Query().Get("prefix"))
		if lerr != nil {
			WriteError(w, runMissing(lerr, id))
			return
		}
		writeJSON(w, http.StatusOK, fileList{Files: files})
	case strings.HasPrefix(sub, "workspace/files/"):
		path, perr := DecodePath(strings.TrimPrefix(sub, "workspace/files/"))
		if perr != nil {
			WriteError(w, perr)
			return
		}
		if _, _, _, err := h.runView(r.Context(), o, id); err != nil {
			WriteError(w, err)
			return
		}
		h.serveGet(w, r, o, at, path)
	default:
		WriteError(w, notFound("no such route"))
	}
}

// decodeRunID decodes a run id once; anything that is not a run id is an unknown run.
func decodeRunID(raw string) (string, *Error) {
	id, err := url.PathUnescape(raw)
	if err != nil || !strings.HasPrefix(id, runPrefix) || len(id) > meta.MaxSnapshotNameBytes {
		return "", runNotFound(raw)
	}
	return id, nil
}

func runNotFound(id string) *Error {
	return fail(http.StatusNotFound, CodeRunNotFound, "No such run: "+id)
}

// runMissing turns a missing snapshot into run_not_found.
func runMissing(e *Error, id string) *Error {
	if e.Code == CodeNotFound {
		return runNotFound(id)
	}
	return e
}

func (h *Handler) createRun(w http.ResponseWriter, r *http.Request, o Owner) {
	var in runRequest
	if tooLarge, err := readClosed(w, r, 2*meta.MaxSnapshotMetadataBytes+4096, &in); tooLarge {
		WriteError(w, invalid("the body must be at most "+itoa(2*meta.MaxSnapshotMetadataBytes+4096)+" bytes"))
		return
	} else if err != nil {
		WriteError(w, invalid(err.Error()))
		return
	}
	if in.WorkflowID == nil || *in.WorkflowID == "" || len(*in.WorkflowID) > maxWorkflowIDBytes {
		WriteError(w, invalid("workflowId MUST be a non-empty string of at most 256 bytes."))
		return
	}
	if len(in.Inputs) > 0 && !bytes.HasPrefix(bytes.TrimSpace(in.Inputs), []byte("{")) && string(bytes.TrimSpace(in.Inputs)) != "null" {
		WriteError(w, invalid("inputs MUST be an object."))
		return
	}
	ctx := r.Context()
	if _, err := h.svc.Lifecycle.CreateWorkbench(ctx, o.Tenant, o.Workspace, ""); err != nil {
		WriteError(w, fromStore(err))
		return
	}
	id := runPrefix + uuid.NewString()
	rec := runRecord{WorkflowID: *in.WorkflowID, StartedAt: timestamp(time.Now().UnixMilli())}
	if s := bytes.TrimSpace(in.Inputs); len(s) > 0 && string(s) != "null" {
		rec.Inputs = s
	}
	md, _ := json.Marshal(rec)
	days := h.opt.RunTTLDays
	if _, err := h.svc.Lifecycle.RunSnapshot(ctx, o.Tenant, workbench.SnapshotInput{ID: o.Workspace, Name: &id, TTLDays: &days,
		Reason: ptr("openwop run"), Metadata: md}); err != nil {
		WriteError(w, fromStore(err))
		return
	}
	writeJSON(w, http.StatusCreated, runCreated{RunID: id, Status: runPending, WorkflowID: rec.WorkflowID, StartedAt: rec.StartedAt,
		EventsURL: runsPrefix + "/" + id + "/events", StatusURL: runsPrefix + "/" + id})
}

func ptr[T any](v T) *T { return &v }

// runView returns the view of run id's snapshot; run_not_found when o has no such live
// run.
func (h *Handler) runView(ctx context.Context, o Owner, id string) (*meta.View, *meta.Workspace, *meta.WorkbenchSnapshot, *Error) {
	v, ws, snap, err := h.view(ctx, o, workbench.AtSnapshotName(id))
	if err != nil {
		return nil, nil, nil, runMissing(err, id)
	}
	if ws == nil || snap == nil {
		return nil, nil, nil, runNotFound(id)
	}
	return v, ws, snap, nil
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request, o Owner, id string) {
	v, ws, snap, err := h.runView(r.Context(), o, id)
	if err != nil {
		WriteError(w, err)
		return
	}
	release, aerr := h.admitFiles(r.Context(), v, ws, "", runFileBytes)
	if aerr != nil {
		WriteError(w, aerr)
		return
	}
	defer release()
	rec := recordOf(snap)
	out := runSnapshot{runSummary: summaryOf(snap, rec), Inputs: rec.Inputs,
		Workspace: files(v, ws, "", func(path string, fv meta.FileVersion) runFile { return runFile{Path: path, Version: fv.Ordinal} })}
	writeJSON(w, http.StatusOK, out)
}

// recordOf reads a run's record from its snapshot's annotation.
func recordOf(snap *meta.WorkbenchSnapshot) runRecord {
	var rec runRecord
	_ = json.Unmarshal(snap.Metadata, &rec)
	return rec
}

func summaryOf(snap *meta.WorkbenchSnapshot, rec runRecord) runSummary {
	return runSummary{RunID: snap.Name, WorkflowID: rec.WorkflowID, Status: runPending, StartedAt: rec.StartedAt,
		ExpiresAt: timestamp(snap.LeaseExpiresMs)}
}

// listRuns answers the live runs of o's workspace, oldest first.
func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request, o Owner) {
	v, ws, _, err := h.view(r.Context(), o, workbench.At{})
	if err != nil {
		WriteError(w, err)
		return
	}
	runs := []runSummary{}
	if ws != nil {
		for _, snap := range v.Lifecycle().Snapshots(o.Tenant, o.Workspace) {
			if strings.HasPrefix(snap.Name, runPrefix) && snap.StateAt(v.NowMs()) == meta.SnapshotAlive {
				runs = append(runs, summaryOf(snap, recordOf(snap)))
			}
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].StartedAt < runs[j].StartedAt })
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
}
