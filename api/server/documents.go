package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench"
)

// DocumentStore adapts the Workbench service to documents.Store: the working-documents
// surface's records are ordinary files of the reserved workbench documents.Workbench,
// written and read as that surface (workbench.WithSurface), so every Cairn rule (access,
// reserved workbenches, quotas, replication) applies to them. Keep it thin: it only
// translates calls and error codes.
type DocumentStore struct{ Svc *workbench.Service }

func docCtx(ctx context.Context) context.Context {
	return workbench.WithSurface(ctx, documents.Surface)
}

// docErr maps the service's error codes to documents' sentinels.
func docErr(err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	switch e := workbench.AsError(err); e.Code {
	case workbench.CodeNotFound, workbench.CodeSnapshotNotFound:
		sentinel = documents.ErrNotFound
	case workbench.CodeAlreadyExists:
		sentinel = documents.ErrExists
	case workbench.CodeConflict:
		sentinel = documents.ErrConflict
	case workbench.CodePayloadTooLarge:
		sentinel = documents.ErrTooLarge
	case workbench.CodePermissionDenied:
		sentinel = documents.ErrForbidden
	case workbench.CodeResourceExhausted:
		sentinel = documents.ErrRateLimited
	case workbench.CodeRoutingUnavailable, workbench.CodeObjectUnavailable, workbench.CodeOutcomeUnknown:
		sentinel = documents.ErrUnavailable
	default:
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// ReadFile implements documents.Store.
func (d DocumentStore) ReadFile(ctx context.Context, agent, ws, path string, maxBytes int64) ([]byte, uint64, error) {
	f, err := d.Svc.Reads.Open(docCtx(ctx), agent, ws, path)
	if err != nil {
		return nil, 0, docErr(err)
	}
	b, err := f.ReadAll(ctx, maxBytes)
	return b, f.Info.Generation, docErr(err)
}

// WriteFile implements documents.Store.
func (d DocumentStore) WriteFile(ctx context.Context, agent, ws, path string, body []byte, contentType string, ifGeneration uint64) (uint64, error) {
	req := workbench.WriteRequest{Agent: agent, Workbench: ws, Path: path, Body: bytes.NewReader(body), SizeHint: int64(len(body)),
		ContentType: contentType, CreateWorkbench: true, Cond: meta.CondCreateOnly}
	if ifGeneration != 0 {
		req.Cond, req.IfGeneration = meta.CondIfGeneration, ifGeneration
	}
	res, err := d.Svc.Writes.Write(docCtx(ctx), req)
	if err != nil && ifGeneration != 0 && errors.Is(docErr(err), documents.ErrNotFound) {
		return 0, fmt.Errorf("%w: %w", documents.ErrConflict, err)
	}
	return res.Generation, docErr(err)
}

// ReadDir implements documents.Store.
func (d DocumentStore) ReadDir(ctx context.Context, agent, ws, dir, after string, maxFiles int, maxBytes int64) ([]documents.StoredFile, bool, error) {
	ctx = docCtx(ctx)
	v, w, _, err := d.Svc.Reads.ViewAt(ctx, agent, ws, workbench.At{})
	if errors.Is(docErr(err), documents.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, docErr(err)
	}
	var out []documents.StoredFile
	var total int64
	for {
		page, more, err := v.List(w, dir, after, 1000)
		if errors.Is(docErr(err), documents.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, docErr(err)
		}
		for _, e := range page {
			after = e.Name
			if e.Entry == nil {
				continue
			}
			if len(out) == maxFiles {
				return out, true, nil
			}
			if total += e.Entry.Size; total > maxBytes {
				return nil, false, fmt.Errorf("%s holds more than %d bytes: %w", dir, maxBytes, documents.ErrTooLarge)
			}
			b, err := d.Svc.Reads.ReadEntry(ctx, agent, e.Entry, e.Entry.Size)
			if err != nil {
				return nil, false, docErr(err)
			}
			out = append(out, documents.StoredFile{Name: e.Name, Body: b, Generation: e.Entry.Generation})
		}
		if !more {
			return out, false, nil
		}
	}
}

// feedPageWait bounds how long a feed read waits for a page already in the feed.
const feedPageWait = time.Second

// RecentEvents implements documents.Store: from a linearizable view of the root (read
// through the documents workbench, so a key bound to one workbench sees what it may), the
// feed's newest events (meta.FeedView.Recent). Before the root has that workbench, it
// follows the feed from its oldest held event and keeps the newest limit (the feed holds
// at most meta's FeedMaxPerRoot events).
func (d DocumentStore) RecentEvents(ctx context.Context, agent, skip string, limit int) ([]meta.Event, error) {
	ctx = docCtx(ctx)
	keep := func(e *meta.Event) bool { return e.Workbench != skip }
	v, _, _, err := d.Svc.Reads.ViewAt(ctx, agent, documents.Workbench, workbench.At{})
	if err == nil {
		return v.Feed().Recent(agent, limit, keep)
	}
	if !errors.Is(docErr(err), documents.ErrNotFound) {
		return nil, docErr(err)
	}
	f, err := d.Svc.Review.Events(ctx, agent, nil, meta.EventFilter{})
	if err != nil {
		return nil, docErr(err)
	}
	var ring []meta.Event
	for f.Pending() {
		evs, err := f.Next(ctx, feedPageWait)
		if err != nil {
			return nil, docErr(err)
		}
		for _, e := range evs {
			if !keep(&e) {
				continue
			}
			if ring = append(ring, e); len(ring) > 2*limit {
				ring = append(ring[:0], ring[len(ring)-limit:]...)
			}
		}
	}
	if len(ring) > limit {
		ring = ring[len(ring)-limit:]
	}
	return ring, nil
}

// Event implements documents.Store.
func (d DocumentStore) Event(ctx context.Context, agent string, pos meta.FeedPosition) (meta.Event, error) {
	before := meta.FeedPosition{Version: pos.Version, Index: pos.Index - 1}
	if pos.Index == 0 {
		if pos.Version == 0 {
			return meta.Event{}, documents.ErrNotFound
		}
		before = meta.FeedPosition{Version: pos.Version - 1, Index: math.MaxUint32}
	}
	f, err := d.Svc.Review.Events(docCtx(ctx), agent, &before, meta.EventFilter{})
	if err != nil {
		if we := workbench.AsError(err); we.Code == workbench.CodeFeedExpired || we.Details["rule"] == "ahead_of_feed" {
			return meta.Event{}, documents.ErrNotFound // dropped, or not yet an event
		}
		return meta.Event{}, docErr(err)
	}
	if !f.Pending() {
		return meta.Event{}, documents.ErrNotFound
	}
	evs, err := f.Next(ctx, feedPageWait)
	if err != nil {
		return meta.Event{}, docErr(err)
	}
	if len(evs) == 0 || evs[0].Position != pos {
		return meta.Event{}, documents.ErrNotFound
	}
	return evs[0], nil
}

// documentsOptions configures the working-documents surface from the node's settings:
// the owner of the Local principal, the HTTP runner when a URL is set, and admission as
// on every surface (the principal's request rate; memory shares kept until the answer is
// written).
func documentsOptions(cfg ops.Config, svc *workbench.Service, log *slog.Logger) documents.Options {
	tenant, workspace := cfg.Documents.OwnerParts()
	opt := documents.Options{Tenant: tenant, Workspace: workspace, Logger: log, Admit: func(ctx context.Context) (context.Context, func(), error) {
		ctx, release := svc.HoldAdmissions(docCtx(ctx))
		if err := svc.AllowRequest(ctx); err != nil {
			release()
			return nil, nil, docErr(err)
		}
		return ctx, release, nil
	}}
	if cfg.Documents.RunnerURL != "" {
		opt.Runners = []documents.Runner{documents.HTTPRunner{RunnerID: ops.DocumentsHTTPRunnerID, URL: cfg.Documents.RunnerURL,
			Timeout: cfg.Documents.RunnerTimeout}}
	}
	return opt
}

// surfaceRoute names the requests of the surfaces in front of REST for its metrics:
// working documents ("documents"), then OpenWOP's.
func surfaceRoute(r *http.Request) (string, bool) {
	if p := r.URL.EscapedPath(); documents.Owns(p) {
		return "documents", true
	}
	return openwop.Route(r)
}

// lateDocuments is the cairn MCP profile's way to the working-documents surface: the MCP
// handler is built inside REST, before the surface that wraps REST exists, so the node
// sets h once it does, before it serves anything.
type lateDocuments struct{ h *documents.Handler }

func (l *lateDocuments) Call(ctx context.Context, root, method, route string, body []byte) (int, []byte) {
	return l.h.Call(ctx, root, method, route, body)
}
