package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairnstore/cairn/internal/pause"
)

// maxEventFrameBytes bounds one server-sent event (its lines together): the server's
// frames are a few hundred bytes.
const maxEventFrameBytes = 1 << 20

// EventsOptions narrow and position a change-feed stream (GET /v1/agents/{agent}/events).
type EventsOptions struct {
	// Workbench keeps the events of one workbench; Prefix the file events at or below a
	// path (component-wise).
	Workbench string
	Prefix    string
	// After resumes after a frame's id (FeedEvent.ID), sent as Last-Event-ID: the stream
	// goes on with the frame that followed it, never repeating nor skipping one. "" starts
	// with the oldest event the feed holds. An id older than the feed's retention fails
	// with a FeedExpired *Error (410) whose Details name resume_after and oldest_position.
	After string
	// NoFollow ends the stream once it sent the events the feed held when it was opened
	// (?follow=false); Next then returns io.EOF.
	NoFollow bool
}

// FeedEvent is one frame of a change-feed stream.
type FeedEvent struct {
	// ID is the frame's position: what EventsOptions.After resumes after.
	ID string
	// Event is the frame's type: a Cairn event kind (file.put, commit, snapshot.mint, …)
	// or OpenWOP's workspace.updated.
	Event string
	// Data is the frame's JSON object.
	Data json.RawMessage
}

// EventStream reads a change-feed stream. It is used by one goroutine; Close it.
type EventStream struct {
	body   io.ReadCloser
	r      *bufio.Reader
	lastID string
}

// Events opens agent's change feed as a server-sent event stream. ctx bounds the whole
// stream (cancel it to stop following). Errors: the server's *Error (NotFound for a root
// that does not exist or the key may not use, FeedExpired, InvalidArguments), transport
// errors.
func (c *Client) Events(ctx context.Context, agent string, opts EventsOptions) (*EventStream, error) {
	q := url.Values{}
	if opts.Workbench != "" {
		q.Set("workbench", opts.Workbench)
	}
	if opts.Prefix != "" {
		q.Set("prefix", opts.Prefix)
	}
	if opts.NoFollow {
		q.Set("follow", "false")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, withQuery(c.tr.agentURL(agent)+"/events", q), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if opts.After != "" {
		req.Header.Set("Last-Event-ID", opts.After)
	}
	resp, err := c.tr.openStream(req, replayable)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		closeBody(resp)
		return nil, fmt.Errorf("client: GET %s: the answer is %q, not an event stream", req.URL.Path, ct)
	}
	return &EventStream{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 16<<10), lastID: opts.After}, nil
}

// Next returns the next event, skipping comments (heartbeats) and other fields. Errors:
// io.EOF when the server ended the stream (it shut down: resume on any node after
// LastID), the server's *Error when it ended it with an error frame, a transport error
// (the connection broke or ctx ended).
func (s *EventStream) Next() (FeedEvent, error) {
	var ev FeedEvent
	var data bytes.Buffer
	size, fields := 0, 0
	for {
		line, err := s.r.ReadSlice('\n')
		size += len(line)
		if errors.Is(err, bufio.ErrBufferFull) || size > maxEventFrameBytes {
			return FeedEvent{}, fmt.Errorf("client: an event frame is longer than %d bytes", maxEventFrameBytes)
		}
		if err != nil {
			if errors.Is(err, io.EOF) && (len(line) > 0 || fields > 0) {
				err = io.ErrUnexpectedEOF // a frame cut off
			}
			return FeedEvent{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if fields == 0 {
				continue // a comment's end, or a blank line
			}
			if ev.ID != "" {
				s.lastID = ev.ID
			}
			ev.Data = json.RawMessage(bytes.Clone(data.Bytes()))
			if ev.Event == "error" {
				return FeedEvent{}, frameError(ev.Data)
			}
			if ev.Event == "" && ev.ID == "" {
				ev, fields, size = FeedEvent{}, 0, 0 // a field-only frame (retry:)
				data.Reset()
				continue
			}
			return ev, nil
		}
		if line[0] == ':' {
			if fields == 0 {
				size = 0
			}
			continue // a comment: the server's heartbeat
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		fields++
		switch string(name) {
		case "id":
			ev.ID = string(value)
		case "event":
			ev.Event = string(value)
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		}
	}
}

// LastID returns the id of the last event Next returned (or EventsOptions.After before
// any): where a new stream resumes without a gap.
func (s *EventStream) LastID() string { return s.lastID }

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

// frameError decodes an `event: error` frame's envelope.
func frameError(data []byte) error {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil || env.Code == "" {
		return fmt.Errorf("client: the event stream ended with an undecodable error frame %q", snippet(data))
	}
	return &Error{Code: env.Code, Message: env.Message, Retryable: env.Retryable, Details: env.Details}
}

// Reconnection delays of FollowEvents: the first retry waits followMinBackoff, each
// further one twice as long, at most followMaxBackoff.
const (
	followMinBackoff = 200 * time.Millisecond
	followMaxBackoff = 5 * time.Second
)

// FollowEvents reads agent's change feed and calls fn with every event, oldest first.
// When the stream ends or breaks (the node shut down or restarted, the connection
// dropped, a retryable answer) it opens it again after the last event fn received
// (EventsOptions.After), so fn sees every event exactly once. It returns when ctx ends
// (ctx's error), when fn returns an error (that error), on a non-retryable answer (the
// server's *Error: NotFound, FeedExpired, InvalidArguments), and with opts.NoFollow once
// the stream sent what the feed held (nil).
func (c *Client) FollowEvents(ctx context.Context, agent string, opts EventsOptions, fn func(FeedEvent) error) error {
	backoff := followMinBackoff
	for {
		s, err := c.Events(ctx, agent, opts)
		if err == nil {
			for {
				var ev FeedEvent
				if ev, err = s.Next(); err != nil {
					break
				}
				backoff = followMinBackoff
				if ferr := fn(ev); ferr != nil {
					s.Close()
					return ferr
				}
				opts.After = ev.ID
			}
			s.Close()
			if errors.Is(err, io.EOF) && opts.NoFollow {
				return nil
			}
		}
		var ce *Error
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &ce) && !ce.Retryable:
			return err
		}
		if err := pause.For(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, followMaxBackoff)
	}
}
