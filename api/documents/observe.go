package documents

import (
	"context"
	"encoding/hex"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/cairnstore/cairn/meta"
)

// Observations (docs/documents.md#observations). An observation is an event of the
// owner's root's change feed. Its id is "cairn:feed:<shard version>.<index>", its
// position, the same on every replica; its payload is the event's fields as a JSON
// object, its payloadHash the hex SHA-256 of that object's RFC 8785 form, its excerpt
// the payload as "name: value" lines (plain text, never HTML), at most MaxExcerptChars.
// A document freezes its origin's observation when it is created, so it outlives the
// feed's retention; a selection freezes what it selects.

const observationPrefix = "cairn:feed:"

var observationPattern = regexp.MustCompile(`^cairn:feed:[0-9]{1,20}\.[0-9]{1,10}$`)

func isObservationID(s string) bool {
	_, ok := positionOf(s)
	return ok
}

// ObservationID is the id of the feed event at p.
func ObservationID(p meta.FeedPosition) string { return observationPrefix + p.String() }

// positionOf parses an observation id (ok false when it is not one). Only the form
// ObservationID writes is one: "cairn:feed:034.0" names the event of "cairn:feed:34.0"
// but is refused, so one event has one id in every record that names it (an origin and
// the rootEventId of its document's events, a selection's set of ids, evidence).
func positionOf(id string) (meta.FeedPosition, bool) {
	if !observationPattern.MatchString(id) {
		return meta.FeedPosition{}, false
	}
	p, err := meta.ParseFeedPosition("id", strings.TrimPrefix(id, observationPrefix))
	return p, err == nil && ObservationID(p) == id
}

// payloadOf is the observation payload of e: the fields its kind uses.
func payloadOf(e meta.Event) map[string]any {
	p := map[string]any{"kind": e.Kind.String(), "agent": e.Agent, "atMs": e.AtMs}
	add := func(k string, v any, keep bool) {
		if keep {
			p[k] = v
		}
	}
	add("workbench", e.Workbench, e.Workbench != "")
	add("path", e.Path, e.Path != "")
	add("generation", strconv.FormatUint(e.Generation, 10), e.Generation != 0)
	add("digest", "sha256:"+hex.EncodeToString(e.Digest[:]), e.Digest != meta.Digest{})
	add("size", e.Size, e.Size != 0)
	add("ordinal", strconv.FormatUint(e.Ordinal, 10), e.Ordinal != 0)
	add("principal", e.Producer.Principal, e.Producer.Principal != "")
	add("surface", e.Producer.Surface, e.Producer.Surface != "")
	add("commit", e.Commit, e.Commit != "")
	add("snapshotId", strconv.FormatUint(e.SnapshotID, 10), e.SnapshotID != 0)
	add("snapshotName", e.SnapshotName, e.SnapshotName != "")
	add("operation", e.Operation, e.Operation != "")
	add("source", e.Source, e.Source != "")
	add("deleted", e.Deleted, e.Deleted != 0)
	add("proposal", e.Proposal, e.Proposal != "")
	add("disposition", e.Disposition, e.Disposition != "")
	return p
}

// observe freezes feed event e.
func observe(e meta.Event) Observation {
	p := payloadOf(e)
	source := "cairn:root"
	if e.Workbench != "" {
		source = "cairn:workbench:" + e.Workbench
	}
	var lines []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range p {
			if !yield(k) {
				return
			}
		}
	}) {
		lines = append(lines, k+": "+plain(strconv.Quote(toString(p[k]))))
	}
	return Observation{EventID: ObservationID(e.Position), Type: "cairn.feed." + e.Kind.String(), Source: source,
		OccurredAt: timestamp(time.UnixMilli(e.AtMs)), PayloadHash: sha256Hex(string(canonical(p))),
		Excerpt: truncateChars(strings.Join(lines, "\n"), MaxExcerptChars)}
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// plain removes the quotes strconv.Quote added (the escaping of control characters
// stays: an excerpt line never holds a raw control character).
func plain(q string) string { return q[1 : len(q)-1] }

// truncateChars cuts s to at most max characters (UTF-16 units), never inside a
// surrogate pair.
func truncateChars(s string, max int) string {
	n := 0
	for i, r := range s {
		if n+utf16.RuneLen(r) > max {
			return s[:i]
		}
		n += utf16.RuneLen(r)
	}
	return s
}

// observation returns the observation id names, as the feed holds it now; the document
// origin (frozen) when id is the origin of doc (nil: none). NotFound answer otherwise.
func (h *Handler) observation(ctx context.Context, o owner, id string, field string) (Observation, *Error) {
	pos, ok := positionOf(id)
	if !ok {
		return Observation{}, invalid(field, RuleFormat, "must be an observation id (cairn:feed:<shard version>.<index>)")
	}
	e, err := h.store.Event(ctx, o.Tenant, pos)
	switch {
	case errors.Is(err, ErrNotFound), err == nil && e.Workbench == Workbench:
		return Observation{}, invalid(field, RuleExists, "%s is not an observation of the root's change feed", id)
	case err != nil:
		return Observation{}, fromStore(err)
	}
	return observe(e), nil
}

// recentObservations are the root's newest CandidateWindow observations, newest first.
func (h *Handler) recentObservations(ctx context.Context, o owner) ([]Observation, *Error) {
	evs, err := h.store.RecentEvents(ctx, o.Tenant, Workbench, CandidateWindow)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fromStore(err)
	}
	out := make([]Observation, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		out = append(out, observe(evs[i]))
	}
	return out, nil
}
