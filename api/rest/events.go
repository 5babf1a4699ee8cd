package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// The change feed as server-sent events (issue 15 item 5; meta's feed.go):
//
//	GET /v1/agents/{agent}/events[?workbench=W][&prefix=P][&after=POS][&follow=false]   (Last-Event-ID: POS)
//
// Every event of the root's feed is a frame
//
//	id: <shard version>.<index>
//	event: <kind>                  file.put, file.append, file.edit, file.delete, commit,
//	data: {…}                      snapshot.mint/renew/retire/expire, restore.begin/finish,
//	                               workbench.create/delete, root.purge
//
// and every file event is followed by OpenWOP's frame (api/openwop/doc.go)
//
//	id: <shard version>.<index>.1
//	event: workspace.updated
//	data: {"path":…,"version":<the path's Ordinal>}
//
// A client resumes with the id of the last frame it received (Last-Event-ID, as an
// EventSource does, or ?after=; the header wins): after "V.I" the stream starts with the
// workspace.updated frame of event V.I when it has one, after "V.I.1" with the next
// event, after a bare shard version "V" with the first event of a later command. So a
// resume never skips a frame nor repeats one, on any node (positions are shard
// versions, the same on every replica). Without a position the stream starts at the
// oldest event the feed holds. With follow=false the stream ends once it sent the events
// the feed held when it was opened. A position older than the feed's retention is 410
// FeedExpired with details.resume_after and details.oldest_position.
//
// An idle stream carries a comment every Options.FeedHeartbeat (so proxies and the
// per-write deadline keep it open); every frame is flushed as it is written; the stream
// ends, cleanly, when the node shuts down (EndStreams; one asked for after that is a
// retryable 503 RoutingUnavailable) or the client goes away, and with
// an `event: error` frame carrying the error envelope when the feed cannot go on (the
// reader fell behind retention: reconnecting gets the 410).

// DefaultFeedHeartbeat is Options.FeedHeartbeat's default.
const DefaultFeedHeartbeat = 15 * time.Second

// feedRetryMs is the reconnection delay the stream asks EventSource clients for.
const feedRetryMs = 1000

// openwopFrame is the id suffix of a file event's workspace.updated frame.
const openwopFrame = ".1"

// EndStreams ends every change-feed stream, now and from now on: the node calls it when
// it begins to shut down (http.Server.RegisterOnShutdown), since a shutdown waits for
// streams that would otherwise never end.
func (h *Handler) EndStreams() { h.endStreams.Do(func() { close(h.closing) }) }

// feedResume is where a stream starts: after from (nil: the oldest held event), and
// whether the first event, when it is at position openwopOf, sends only its
// workspace.updated frame (its own frame was received).
type feedResume struct {
	from      *meta.FeedPosition
	openwopOf *meta.FeedPosition
}

// parseResume reads a resume id: "V.I.1", "V.I" or "V" (field names the header or query
// parameter it came in).
func parseResume(field, id string) (feedResume, error) {
	if base, ok := strings.CutSuffix(id, openwopFrame); ok && strings.Count(base, ".") == 1 {
		p, err := meta.ParseFeedPosition(field, base)
		if err != nil {
			return feedResume{}, workbench.AsError(err)
		}
		return feedResume{from: &p}, nil
	}
	p, err := meta.ParseFeedPosition(field, id)
	if err != nil {
		return feedResume{}, workbench.AsError(err)
	}
	if !strings.Contains(id, ".") || p == (meta.FeedPosition{}) {
		return feedResume{from: &p}, nil
	}
	// Its own frame was received, its workspace.updated frame may not have been: start
	// just before it.
	prev := meta.FeedPosition{Version: p.Version, Index: p.Index - 1}
	if p.Index == 0 {
		prev = meta.FeedPosition{Version: p.Version - 1, Index: ^uint32(0)}
	}
	return feedResume{from: &prev, openwopOf: &p}, nil
}

// eventsRequest is a parsed GET of the change feed.
type eventsRequest struct {
	filter meta.EventFilter
	resume feedResume
	follow bool
	// resumeField names where the resume position came from (Last-Event-ID or after).
	resumeField string
}

func parseEventsRequest(r *http.Request) (eventsRequest, error) {
	req := eventsRequest{follow: true}
	q, err := queryParams(r, "workbench", "prefix", "after", "follow")
	if err == nil && q.Has("follow") {
		switch q.Get("follow") {
		case "true":
		case "false":
			req.follow = false
		default:
			err = invalidArg("follow", "must be true or false")
		}
	}
	if err == nil && q.Has("workbench") {
		req.filter.Workbench = q.Get("workbench")
		err = validName("workbench", req.filter.Workbench)
	}
	if err == nil && q.Has("prefix") {
		req.filter.Prefix = q.Get("prefix")
		if werr := workbench.ValidatePath("prefix", req.filter.Prefix); werr != nil {
			err = werr
		}
	}
	switch id := r.Header.Get("Last-Event-ID"); {
	case err != nil:
	case len(r.Header.Values("Last-Event-ID")) > 1:
		err = invalidArg("Last-Event-ID", "must be sent once")
	case id != "":
		req.resumeField = "Last-Event-ID"
		req.resume, err = parseResume(req.resumeField, id)
	case q.Has("after"):
		req.resumeField = "after"
		req.resume, err = parseResume(req.resumeField, q.Get("after"))
	}
	return req, err
}

// resumeSent is the resume position as the request sent it (Last-Event-ID before after).
func resumeSent(r *http.Request) string {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	return r.URL.Query().Get("after")
}

func (h *Handler) events(w http.ResponseWriter, r *http.Request, agent string) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	req, err := parseEventsRequest(r)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	// The stream's context also ends when the node begins to shut down (EndStreams); a
	// stream asked for after that is a retryable 503, to be opened on another node.
	ctx, cancel := context.WithCancel(r.Context())
	select {
	case <-h.closing:
		cancel()
	default:
	}
	defer cancel()
	go func() {
		select {
		case <-h.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	feed, err := h.svc.Review.Events(ctx, agent, req.resume.from, req.filter)
	if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
		err = workbench.RoutingUnavailable("this node is shutting down; open the feed on another node")
	}
	if err != nil {
		h.writeError(w, r, resumeFieldOf(frameIDs(err), req, resumeSent(r)), noPrecondition)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no") // reverse proxies: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	h.stream(ctx, &sseWriter{w: w, ctl: http.NewResponseController(w)}, feed, req)
}

// stream writes feed's events to s until ctx ends, the client goes away, the feed fails
// (an error frame) or, without req.follow, the feed has nothing more to hand out.
func (h *Handler) stream(ctx context.Context, s *sseWriter, feed *workbench.Feed, req eventsRequest) {
	s.buf.WriteString("retry: " + strconv.Itoa(feedRetryMs) + "\n\n") // EventSource's reconnection delay
	if !s.flush() {
		return
	}
	openwopOf := req.resume.openwopOf
	for {
		if ctx.Err() != nil || !req.follow && !feed.Pending() {
			return
		}
		evs, err := feed.Next(ctx, h.heartbeat())
		if err != nil {
			if ctx.Err() == nil {
				s.frame("", "error", workbench.AsError(frameIDs(err)).Envelope())
				s.flush()
			}
			return
		}
		if err := auth.Recheck(ctx); err != nil {
			// The key that opened the stream was revoked or expired since (a fork's key
			// goes with the fork's discard): nothing more for it.
			s.frame("", "error", (&workbench.Error{Code: workbench.CodeUnauthenticated,
				Message: "the API key that opened this stream is no longer valid (revoked or expired)"}).Envelope())
			s.flush()
			return
		}
		if len(evs) == 0 {
			s.comment("keep-alive")
		}
		for _, e := range evs {
			if openwopOf == nil || e.Position != *openwopOf {
				s.frame(e.Position.String(), e.Kind.String(), eventJSON(e))
			}
			openwopOf = nil
			if e.Kind.IsFile() {
				s.frame(e.Position.String()+openwopFrame, "workspace.updated", workspaceUpdated{Path: e.Path, Version: e.Ordinal})
			}
			if !s.flush() {
				return
			}
		}
		if !s.flush() {
			return
		}
	}
}

// frameIDs states a FeedExpired's resume position as a frame id: details.resume_after is
// the id to resume after (the whole of the newest dropped event).
func frameIDs(err error) error {
	e := workbench.AsError(err)
	if e.Code != workbench.CodeFeedExpired {
		return err
	}
	if p, ok := e.Details["resume_after"].(string); ok {
		e.Details["resume_after"] = p + openwopFrame
	}
	return e
}

func (h *Handler) heartbeat() time.Duration {
	hb := h.opts.FeedHeartbeat
	if hb >= h.opts.WriteTimeout {
		hb = h.opts.WriteTimeout / 2 // a heartbeat must come before the write deadline
	}
	return hb
}

// workspaceUpdated is OpenWOP's workspace.updated payload, a closed object (api/openwop/doc.go).
type workspaceUpdated struct {
	Path    string `json:"path"`
	Version uint64 `json:"version"`
}

// eventJSON is the data of a Cairn event frame: the fields its kind uses.
func eventJSON(e meta.Event) map[string]any {
	m := map[string]any{"position": e.Position.String(), "kind": e.Kind.String(), "agent": e.Agent,
		"at": time.UnixMilli(e.AtMs).UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	if e.Workbench != "" {
		m["workbench"] = e.Workbench
	}
	if e.Generation != 0 {
		m["generation"] = e.Generation
	}
	if e.Kind.IsFile() {
		m["path"], m["version"] = e.Path, e.Ordinal
		if e.Kind != meta.EventFileDelete {
			m["size"], m["digest"] = e.Size, workbench.DigestURI(e.Digest)
		}
	}
	if e.Producer != (meta.Producer{}) {
		m["producer"] = map[string]any{"principal": e.Producer.Principal, "surface": e.Producer.Surface}
	}
	if e.Commit != "" {
		m["commit_identity"] = e.Commit
	}
	if e.SnapshotID != 0 {
		m["snapshot_id"] = e.SnapshotID
	}
	if e.SnapshotName != "" {
		m["snapshot_name"] = e.SnapshotName
	}
	if e.Operation != "" {
		m["operation_id"], m["source"] = e.Operation, e.Source
	}
	if e.Kind == meta.EventRootPurge {
		m["deleted"] = e.Deleted
	}
	if e.Kind == meta.EventProposalDecide {
		m["path"], m["proposal_id"], m["disposition"] = e.Path, e.Proposal, e.Disposition
	}
	return m
}

// sseWriter frames server-sent events into a buffer and writes it on flush.
type sseWriter struct {
	w   http.ResponseWriter
	ctl *http.ResponseController
	buf bytes.Buffer
	err error
}

// frame adds one event; id "" sends none (the client keeps its last one).
func (s *sseWriter) frame(id, event string, data any) {
	if id != "" {
		s.buf.WriteString("id: " + id + "\n")
	}
	s.buf.WriteString("event: " + event + "\ndata: ")
	enc := json.NewEncoder(&s.buf) // one line: JSON escapes every newline inside strings
	enc.SetEscapeHTML(false)
	_ = enc.Encode(data)
	s.buf.WriteString("\n")
}

func (s *sseWriter) comment(text string) { s.buf.WriteString(": " + text + "\n\n") }

// flush writes and flushes what is buffered; false once the client is gone.
func (s *sseWriter) flush() bool {
	if s.err != nil {
		return false
	}
	if s.buf.Len() > 0 {
		if _, s.err = s.w.Write(s.buf.Bytes()); s.err == nil {
			s.err = s.ctl.Flush()
		}
		s.buf.Reset()
	}
	return s.err == nil
}

// resumeFieldOf names in err the header or parameter the resume position came in, and
// the position as the client sent it, for a refusal of the position as ahead of the feed
// (workbench.Review.Events names it "after", as the position it resumes after).
func resumeFieldOf(err error, req eventsRequest, sent string) error {
	var we *workbench.Error
	if req.resumeField == "" || !errors.As(err, &we) || we.Code != workbench.CodeInvalidArguments || we.Details["rule"] != "ahead_of_feed" {
		return err
	}
	e := *we
	e.Details = maps.Clone(we.Details)
	e.Details["field"] = req.resumeField
	e.Message = fmt.Sprintf("%s: position %q is ahead of the change feed (its newest shard version is %v): resume after a position this feed handed out",
		req.resumeField, sent, we.Details["newest_version"])
	return &e
}
