package workbench

import (
	"context"
	"errors"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// CodeFeedExpired: a change-feed read resumed after a position whose successors the feed's
// retention already dropped (REST 410); details.resume_after is the position to resume
// after from now on, details.oldest_position the oldest event still held (null: none).
const CodeFeedExpired = "FeedExpired"

// Feed follows one agent root's change feed (meta's feed.go) from a position: the first
// page comes from a linearizable view, later ones from this node's replica as it applies
// newer shard versions (Core.WaitApplied), so any node of a cluster serves a feed from its
// own replica. Positions are shard versions and indexes within a command, identical on
// every replica: a reader that resumes after the last position it received, on any node
// and across a leader change, sees every event exactly once.
//
// A Feed is used by one goroutine.
type Feed struct {
	s      *base
	ctx    context.Context // the opening request's: access checks read it
	agent  string
	filter meta.EventFilter
	// after is where the next read starts: the last event handed out, or the end of the
	// last version every matching event of which was read (seen).
	after meta.FeedPosition
	seen  uint64 // the replica's shard version the last read saw
	more  bool   // the last read stopped at the page bound
	buf   []meta.Event
	// unavailableSince is when the replica stopped answering (zero: it answers).
	unavailableSince time.Time
}

// feedRetryPause is how long a Feed waits before it asks an unavailable replica again.
const feedRetryPause = 250 * time.Millisecond

// feedUnavailableLimit is how long a Feed tolerates an unavailable replica before it
// ends with RoutingUnavailable (the reader resumes on another node).
const feedUnavailableLimit = 30 * time.Second

// Events opens agent's change feed after position from (nil: from the oldest event the
// feed holds), narrowed by filter, after a linearizable read: every change acknowledged
// before the call is in the feed it follows. Errors: InvalidArguments (agent, filter),
// InvalidArguments (field "after", rule "ahead_of_feed") for a from past the feed's newest
// version, NotFound for a root that does not exist or that the caller may not use (workbench/auth/doc.go),
// PermissionDenied without the read scope, FeedExpired when retention dropped events
// after from, RoutingUnavailable.
func (s *Review) Events(ctx context.Context, agent string, from *meta.FeedPosition, filter meta.EventFilter) (*Feed, error) {
	view, err := s.base.agentView(ctx, agent)
	if err != nil {
		return nil, err
	}
	if _, ok := view.Root(agent); !ok {
		return nil, newError(CodeNotFound, "agent root %q does not exist", agent)
	}
	f := &Feed{s: s.base, ctx: ctx, agent: agent, filter: filter, after: view.Feed().Floor(agent)}
	if from != nil {
		if from.Version > view.Version() {
			// No event of a later version was handed out before this linearizable view
			// (a moved root's versions exceed every moved one): following after it would
			// silently skip the events up to it.
			e := invalidArgument("after", "position %s is ahead of the change feed (its newest shard version is %d): resume after a position this feed handed out",
				*from, view.Version())
			e.Details["rule"] = "ahead_of_feed"
			e.Details["newest_version"] = view.Version()
			return nil, e
		}
		f.after = *from
	}
	if err := f.read(view); err != nil {
		return nil, err
	}
	return f, nil
}

// read takes the next page of matching events from view.
func (f *Feed) read(view *meta.View) error {
	evs, more, err := view.Feed().Events(f.agent, f.after, f.filter, meta.MaxEventsPage)
	var te *meta.FeedTruncatedError
	if errors.As(err, &te) {
		return feedExpired(te)
	}
	if err != nil {
		return AsError(err)
	}
	f.buf = append(f.buf, evs...)
	if len(evs) > 0 {
		f.after = evs[len(evs)-1].Position
	}
	f.seen = max(f.seen, view.Version())
	f.more = more
	if end := (meta.FeedPosition{Version: f.seen, Index: ^uint32(0)}); !more && f.after.Less(end) {
		f.after = end // every matching event up to seen was read
	}
	return nil
}

func feedExpired(te *meta.FeedTruncatedError) *Error {
	e := newError(CodeFeedExpired, "the change feed of agent root %q no longer holds the events after %s; resume after %s (or from the oldest held event)",
		te.Agent, te.After, te.ResumeAfter)
	e.Details["after"] = te.After.String()
	e.Details["resume_after"] = te.ResumeAfter.String()
	e.Details["oldest_position"] = nil
	if te.Oldest != (meta.FeedPosition{}) {
		e.Details["oldest_position"] = te.Oldest.String()
	}
	return e
}

// Pending reports whether events already in the feed when it was last read wait to be
// handed out (a reader that does not follow stops once it is false).
func (f *Feed) Pending() bool { return len(f.buf) > 0 || f.more }

// Next returns the next events, oldest first, waiting up to wait for one: none (and no
// error) when wait passed first, the moment for a reader's heartbeat. Errors: ctx's when
// it ends, FeedExpired when the reader fell so far behind that retention dropped events it
// has not read, RoutingUnavailable when this node's replica of the root's shard has not
// answered for feedUnavailableLimit.
func (f *Feed) Next(ctx context.Context, wait time.Duration) ([]meta.Event, error) {
	if len(f.buf) > 0 {
		out := f.buf
		f.buf = nil
		return out, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		view, err := f.nextView(wctx)
		if err == nil {
			f.unavailableSince = time.Time{}
			if err := f.read(f.s.visibleView(f.ctx, f.agent, view)); err != nil {
				return nil, err
			}
			if len(f.buf) > 0 {
				out := f.buf
				f.buf = nil
				return out, nil
			}
			continue // newer versions, none of them a matching event of this root
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case wctx.Err() != nil:
			return nil, nil
		case !errors.Is(err, ErrCoreUnavailable):
			return nil, AsError(err)
		}
		if f.unavailableSince.IsZero() {
			f.unavailableSince = time.Now()
		} else if time.Since(f.unavailableSince) > feedUnavailableLimit {
			return nil, RoutingUnavailable("this node's replica of the agent root's shard stopped answering; resume the feed on another node")
		}
		select {
		case <-wctx.Done():
		case <-time.After(feedRetryPause):
		}
	}
}

// nextView waits until the root's replica here applied a version after the last one
// read (unless the last read stopped at the page bound) and returns its view.
func (f *Feed) nextView(ctx context.Context) (*meta.View, error) {
	core, err := coreFor(ctx, f.s, f.agent)
	if err != nil {
		return nil, err
	}
	if !f.more {
		if err := core.WaitApplied(ctx, f.seen+1); err != nil {
			return nil, err
		}
	}
	return core.ReadViewAt(ctx, f.seen)
}
