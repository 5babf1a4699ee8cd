package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/btree"
)

// The change feed (docs/architecture.md#the-metadata-core): every committed change of an agent root is one or more
// Events, ordered by position, kept per root for Options.FeedRetention of command time and
// at most Options.FeedMaxPerRoot events. The FSM maintains it like every other record:
// events come from the commands (no command of their own), their time is command time,
// and two replicas that applied the same log hold the same feed, so a FeedPosition means the
// same event on every replica (a client that follows the feed across a leader change
// dedupes by it).

// FeedPosition orders a root's events: the shard version of the command that produced the
// event and the event's index within that command. The zero FeedPosition is before every
// event. Positions of one root are strictly increasing in feed order.
type FeedPosition struct {
	Version uint64 `cbor:"1,keyasint"`
	Index   uint32 `cbor:"2,keyasint,omitempty"`
}

// String renders p as "<shard version>.<index>", what ParseFeedPosition reads.
func (p FeedPosition) String() string {
	return strconv.FormatUint(p.Version, 10) + "." + strconv.FormatUint(uint64(p.Index), 10)
}

// Less reports whether p comes before q.
func (p FeedPosition) Less(q FeedPosition) bool {
	return p.Version < q.Version || p.Version == q.Version && p.Index < q.Index
}

// ParseFeedPosition reads "<shard version>.<index>" (FeedPosition.String). A bare "<shard
// version>" (a write's result version) is the position after every event of that command:
// reading after it starts with the next command's events. InvalidArguments naming field
// otherwise.
func ParseFeedPosition(field, s string) (FeedPosition, *Error) {
	v, i, dotted := strings.Cut(s, ".")
	ver, err := strconv.ParseUint(v, 10, 64)
	if err != nil || v == "" || v[0] == '+' {
		return FeedPosition{}, invalidArg(field, "must be a feed position \"<shard version>.<index>\", got %q", s)
	}
	idx := uint64(^uint32(0))
	if dotted {
		if idx, err = strconv.ParseUint(i, 10, 32); err != nil || i == "" || i[0] == '+' {
			return FeedPosition{}, invalidArg(field, "must be a feed position \"<shard version>.<index>\", got %q", s)
		}
	}
	return FeedPosition{Version: ver, Index: uint32(idx)}, nil
}

// EventKind says what an Event is about. The numbers are part of the snapshot format:
// never renumber.
type EventKind uint8

// Event kinds; String gives their wire names.
const (
	EventFilePut         EventKind = 1  // a body written over or at a path (Put, a manifest of a commit)
	EventFileAppend      EventKind = 2  // bytes appended (Append)
	EventFileEdit        EventKind = 3  // a Put whose surface is an edit tool (Header.Surface ends in "edit")
	EventFileDelete      EventKind = 4  // a tombstone (Delete)
	EventCommit          EventKind = 5  // a commit sealed (Commit, RestoreFinish)
	EventSnapshotMint    EventKind = 6  // a snapshot minted
	EventSnapshotRenew   EventKind = 7  // a snapshot's lease moved later
	EventSnapshotRetire  EventKind = 8  // a snapshot retired
	EventSnapshotExpire  EventKind = 9  // an expired snapshot reaped after its grace period
	EventRestoreBegin    EventKind = 10 // a restore began (its destination is staging)
	EventRestoreFinish   EventKind = 11 // a restore's destination became visible
	EventWorkbenchCreate EventKind = 12 // a workbench created (explicitly or by a first write)
	EventWorkbenchDelete EventKind = 13 // a workbench deleted (DeleteWorkspace, PurgeRoot)
	EventRootPurge       EventKind = 14 // a PurgeRoot step (Event.Deleted workbenches)
	EventProposalDecide  EventKind = 15 // a proposal accepted or rejected: its judgment (proposal.go)
)

var eventNames = [...]string{
	EventFilePut: "file.put", EventFileAppend: "file.append", EventFileEdit: "file.edit",
	EventFileDelete: "file.delete", EventCommit: "commit", EventSnapshotMint: "snapshot.mint",
	EventSnapshotRenew: "snapshot.renew", EventSnapshotRetire: "snapshot.retire",
	EventSnapshotExpire: "snapshot.expire", EventRestoreBegin: "restore.begin",
	EventRestoreFinish: "restore.finish", EventWorkbenchCreate: "workbench.create",
	EventWorkbenchDelete: "workbench.delete", EventRootPurge: "root.purge",
	EventProposalDecide: "proposal.decide",
}

// String returns the kind's wire name ("file.put", "snapshot.mint", …).
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "event-" + strconv.Itoa(int(k))
}

// IsFile reports whether the kind is about one file (put, append, edit, delete).
func (k EventKind) IsFile() bool { return k >= EventFilePut && k <= EventFileDelete }

// Event is one entry of a root's change feed. Fields a kind does not use are zero.
type Event struct {
	Position FeedPosition `cbor:"1,keyasint"`
	Kind     EventKind    `cbor:"2,keyasint"`
	Agent    string       `cbor:"3,keyasint"`
	// AtMs is the command time of the change, Unix milliseconds.
	AtMs int64 `cbor:"4,keyasint"`
	// Workbench is the workbench the change is in (a restore's destination; "" for
	// root.purge).
	Workbench string `cbor:"5,keyasint,omitempty"`
	// Path, Generation, Digest, Size and Ordinal describe a file event: the path, the
	// generation the change gave it (a delete: the delete's version), the body's digest
	// and size (zero for a delete) and the path's Ordinal after the change (records.go).
	Path       string `cbor:"6,keyasint,omitempty"`
	Generation uint64 `cbor:"7,keyasint,omitempty"`
	Digest     Digest `cbor:"8,keyasint,omitempty"`
	Size       int64  `cbor:"9,keyasint,omitempty"`
	Ordinal    uint64 `cbor:"10,keyasint,omitempty"`
	// Producer is who made the change (Header.Principal and Header.Surface; a restore's
	// steps: the producer that began it).
	Producer Producer `cbor:"11,keyasint,omitempty"`
	// Commit is the identity of a commit event's commit (also set on restore.finish).
	Commit string `cbor:"12,keyasint,omitempty"`
	// SnapshotID and SnapshotName name a snapshot event's snapshot; restore.begin's
	// source snapshot when it restores one.
	SnapshotID   uint64 `cbor:"13,keyasint,omitempty"`
	SnapshotName string `cbor:"14,keyasint,omitempty"`
	// Operation and Source are a restore's operation id and source workbench.
	Operation string `cbor:"15,keyasint,omitempty"`
	Source    string `cbor:"16,keyasint,omitempty"`
	// Deleted counts the workbenches a root.purge step deleted.
	Deleted int64 `cbor:"17,keyasint,omitempty"`
	// Proposal and Disposition are a proposal.decide event's proposal id and decision
	// ("accept" or "reject"); its Path is the proposal's path, Generation the accept's
	// result generation (0 for a reject) and Producer the principal who decided.
	Proposal    string `cbor:"18,keyasint,omitempty"`
	Disposition string `cbor:"19,keyasint,omitempty"`
}

// EventFilter narrows a feed read: events of one workbench, and/or file events at or below
// a path (component-wise: "a" holds "a" and "a/…", never "ab"). With a Prefix, only file
// events match.
type EventFilter struct {
	Workbench string
	Prefix    string
}

func (f EventFilter) validate() *Error {
	if f.Workbench != "" {
		if err := ValidateName("workbench", f.Workbench); err != nil {
			return err
		}
	}
	if f.Prefix != "" {
		if err := ValidatePath("prefix", f.Prefix); err != nil {
			return err
		}
	}
	return nil
}

func (f EventFilter) match(e *Event) bool {
	if f.Workbench != "" && e.Workbench != f.Workbench {
		return false
	}
	if f.Prefix != "" {
		return e.Kind.IsFile() && (e.Path == f.Prefix || strings.HasPrefix(e.Path, f.Prefix+"/"))
	}
	return true
}

// MaxEventsPage bounds the events one Events call returns.
const MaxEventsPage = 1000

// ErrFeedTruncated is matched (errors.Is) by the *FeedTruncatedError of a read after a
// position whose successors the feed's retention already dropped.
var ErrFeedTruncated = errors.New("meta: the change feed no longer holds the events after that position")

// FeedTruncatedError is the answer to Events after a position older than the feed keeps:
// events after After were dropped (retention by time or count). ResumeAfter is the
// position a reader may resume after without a gap from now on (the newest dropped one);
// Oldest is the oldest event still held (zero when none is).
type FeedTruncatedError struct {
	Agent       string
	After       FeedPosition
	ResumeAfter FeedPosition
	Oldest      FeedPosition
}

func (e *FeedTruncatedError) Error() string {
	return fmt.Sprintf("agent root %q: the change feed dropped events after %s (it holds only those after %s)", e.Agent, e.After, e.ResumeAfter)
}

// Unwrap makes errors.Is(err, ErrFeedTruncated) hold.
func (e *FeedTruncatedError) Unwrap() error { return ErrFeedTruncated }

// feedState is the change feed of a shard: its events and, per agent root, the count and
// the newest dropped position.
type feedState struct {
	events *btree.Map[string, *Event] // feedKey(agent, position)
	roots  *btree.Map[string, feedRoot]
}

// feedRoot is the feed bookkeeping of one agent root. Count is derived from the events
// (rebuilt on restore); Floor, the newest position retention dropped, is not.
type feedRoot struct {
	Count int64
	Floor FeedPosition
}

func newFeedState() *feedState {
	return &feedState{events: new(btree.Map[string, *Event]), roots: new(btree.Map[string, feedRoot])}
}

func (f *feedState) copy() *feedState {
	return &feedState{events: f.events.Copy(), roots: f.roots.Copy()}
}

func feedKey(agent string, p FeedPosition) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], p.Version)
	binary.BigEndian.PutUint32(b[8:], p.Index)
	return agent + "\x00" + string(b[:])
}

// retainFeed is the retention item kind of a root's feed pruning: 'f' agent. A root has
// exactly one pending item while its feed holds an event (scheduled by the first event
// into an empty feed, rescheduled by each step that leaves events).
const retainFeed = 'f'

// feedApplier writes a command's change-feed events and runs the feed's pruning steps.
// It numbers the events of one command 0, 1, 2… in the order they are emitted (next), so
// an event's position depends only on the log; it is the only writer of st.feed.
type feedApplier struct {
	*applyCtx
	// next is the index within the command the next event gets.
	next uint32
}

// feedOn reports whether the shard keeps a feed (Options.FeedMaxPerRoot ≥ 0).
func (a *feedApplier) feedOn() bool { return a.opts.FeedMaxPerRoot >= 0 }

// emit appends e to agent's feed at the next index of the command being applied, after
// the root's oldest events beyond FeedMaxPerRoot (at most RetentionBatch per call).
func (a *feedApplier) emit(agent string, e Event) {
	if !a.feedOn() {
		return
	}
	s := a.st
	e.Agent, e.AtMs = agent, s.nowMs
	e.Position = FeedPosition{Version: s.version, Index: a.next}
	a.next++
	fs := s.feed
	fs.events.Set(feedKey(agent, e.Position), &e)
	r, _ := fs.roots.Get(agent)
	if r.Count == 0 {
		a.scheduleFeedPrune(agent, e.AtMs)
	}
	r.Count++
	for i := 0; r.Count > int64(a.opts.FeedMaxPerRoot) && i < a.opts.RetentionBatch; i++ {
		a.dropOldestEvent(agent, &r)
	}
	fs.roots.Set(agent, r)
}

func (a *feedApplier) scheduleFeedPrune(agent string, oldestAtMs int64) {
	s := a.st
	s.seq++
	s.retention.Set(retentionKey(oldestAtMs+a.opts.FeedRetention.Milliseconds(), s.seq), string(rune(retainFeed))+agent)
}

// dropOldestEvent removes agent's oldest event, moving r's floor to it.
func (a *feedApplier) dropOldestEvent(agent string, r *feedRoot) {
	key, old, ok := firstEvent(a.st.feed.events, agent+"\x00")
	if !ok {
		r.Count = 0
		return
	}
	a.st.feed.events.Delete(key)
	r.Floor = old.Position
	r.Count--
}

// pruneFeed is agent's retention step: it drops up to RetentionBatch events older than
// FeedRetention and schedules the next step while events remain.
func (a *feedApplier) pruneFeed(agent string) {
	s := a.st
	r, ok := s.feed.roots.Get(agent)
	if !ok || r.Count == 0 {
		return
	}
	window := a.opts.FeedRetention.Milliseconds()
	prefix := agent + "\x00"
	for i := 0; i < a.opts.RetentionBatch && r.Count > 0; i++ {
		_, oldest, ok := firstEvent(s.feed.events, prefix)
		if !ok || oldest.AtMs+window > s.nowMs {
			break
		}
		a.dropOldestEvent(agent, &r)
	}
	s.feed.roots.Set(agent, r)
	if _, oldest, ok := firstEvent(s.feed.events, prefix); ok && r.Count > 0 {
		a.scheduleFeedPrune(agent, oldest.AtMs)
	}
}

// firstEvent returns the first event of m whose key starts with prefix (a root's oldest).
func firstEvent(m *btree.Map[string, *Event], prefix string) (k string, e *Event, ok bool) {
	m.Ascend(prefix, func(key string, ev *Event) bool {
		if strings.HasPrefix(key, prefix) {
			k, e, ok = key, ev, true
		}
		return false
	})
	return k, e, ok
}

// fileEventKind is the kind of a file change the command being applied makes.
func (a *feedApplier) fileEventKind(e *Entry) EventKind {
	switch {
	case e == nil:
		return EventFileDelete
	case a.op == OpAppend:
		return EventFileAppend
	case a.op == OpPut && strings.HasSuffix(a.hdr.Surface, "edit"):
		return EventFileEdit
	}
	return EventFilePut
}

// emitFile records a change of path in ws (e nil: a delete) with the path's new Ordinal.
// Changes inside a staging workbench (a restore copying) are not events: the workbench
// is invisible until restore.finish.
func (a *feedApplier) emitFile(ws *Workspace, path string, e *Entry, ord uint64) {
	if ws.State == WorkspaceStaging {
		return
	}
	ev := Event{Kind: a.fileEventKind(e), Workbench: ws.Name, Path: path, Generation: a.st.version, Ordinal: ord, Producer: a.prod}
	if e != nil {
		ev.Generation, ev.Digest, ev.Size = e.Generation, e.Digest, e.Size
	}
	a.emit(ws.Agent, ev)
}

// emitSnapshot records a lifecycle change of snap made by prod (Generation: the
// snapshot's read version).
func (a *feedApplier) emitSnapshot(kind EventKind, snap *WorkbenchSnapshot, prod Producer) {
	a.emit(snap.Agent, Event{Kind: kind, Workbench: snap.Workspace, SnapshotID: snap.ID, SnapshotName: snap.Name,
		Generation: snap.ReadVersion, Producer: prod})
}

// emitCommit records a sealed commit of ws; a restore's destination (staging while it
// is sealed) reports its commit on restore.finish instead.
func (a *feedApplier) emitCommit(ws *Workspace, rec *CommitRecord) {
	if ws.State == WorkspaceStaging {
		return
	}
	a.emit(ws.Agent, Event{Kind: EventCommit, Workbench: ws.Name, Commit: rec.Identity, Generation: rec.Version, Producer: a.prod})
}

// emitRestore records the beginning or the end of restore op.
func (a *feedApplier) emitRestore(kind EventKind, op *RestoreOp, commit string) {
	a.emit(op.Agent, Event{Kind: kind, Workbench: op.Destination, Source: op.Source, Operation: op.ID,
		SnapshotID: op.SnapshotID, Commit: commit, Generation: a.st.version, Producer: a.prod})
}

// FeedView is the change-feed reads of one View (View.Feed): a root's events after a
// position, its newest events, the oldest retained position and the floor retention left.
// It shows the events the View shows (Only, OnlyPaths) up to the View's version, reading
// only through its View, as every facet does.
type FeedView struct{ v *View }

// Events returns up to limit (1..MaxEventsPage) events of agent's feed after position
// after that match f, oldest first, as of the view's version; more reports that further
// matching events follow. A root without events (or unknown) has none; a view restricted
// to some of agent's workbenches (Only) shows the events of those only (a restore's, when
// it shows its source too; a root purge's never). Errors:
// InvalidArguments (limit, filter), *FeedTruncatedError when retention dropped events
// after after (errors.Is ErrFeedTruncated).
func (fv FeedView) Events(agent string, after FeedPosition, f EventFilter, limit int) ([]Event, bool, error) {
	if limit < 1 || limit > MaxEventsPage {
		return nil, false, invalidArg("limit", "must be between 1 and %d", MaxEventsPage)
	}
	if err := f.validate(); err != nil {
		return nil, false, err
	}
	fs := fv.v.st.feed
	if r, ok := fs.roots.Get(agent); ok && after.Less(r.Floor) {
		oldest, _ := fv.Oldest(agent)
		return nil, false, &FeedTruncatedError{Agent: agent, After: after, ResumeAfter: r.Floor, Oldest: oldest}
	}
	prefix := agent + "\x00"
	var out []Event
	more := false
	fs.events.Ascend(feedKey(agent, after), func(k string, e *Event) bool {
		if !strings.HasPrefix(k, prefix) || e.Position.Version > fv.v.at {
			return false
		}
		if !after.Less(e.Position) || !f.match(e) || !fv.shows(agent, e) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, *e)
		return true
	})
	return out, more, nil
}

// Recent returns agent's newest events as of the view that the view shows and keep
// accepts (nil: all), at most limit (1..MaxEventsPage), oldest first: a bounded read of
// the feed's end that never walks its start.
func (fv FeedView) Recent(agent string, limit int, keep func(*Event) bool) ([]Event, error) {
	if limit < 1 || limit > MaxEventsPage {
		return nil, invalidArg("limit", "must be between 1 and %d", MaxEventsPage)
	}
	prefix := agent + "\x00"
	var out []Event
	fv.v.st.feed.events.Descend(feedKey(agent, FeedPosition{Version: ^uint64(0), Index: ^uint32(0)}), func(k string, e *Event) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if e.Position.Version > fv.v.at || !fv.shows(agent, e) || keep != nil && !keep(e) {
			return true
		}
		out = append(out, *e)
		return len(out) < limit
	})
	slices.Reverse(out)
	return out, nil
}

// shows reports whether the view shows e (Only): every event, or for a restricted
// root the events of the workbenches it shows.
func (fv FeedView) shows(agent string, e *Event) bool {
	if fv.v.showsRoot(agent) {
		return true
	}
	return e.Workbench != "" && fv.v.shows(agent, e.Workbench) && (e.Source == "" || fv.v.shows(agent, e.Source)) &&
		(e.Path == "" || fv.v.ShowsPath(agent, e.Path))
}

// Oldest returns the position of agent's oldest retained event as of the view (ok
// false when the feed holds none).
func (fv FeedView) Oldest(agent string) (oldest FeedPosition, ok bool) {
	_, e, ok := firstEvent(fv.v.st.feed.events, agent+"\x00")
	if !ok || e.Position.Version > fv.v.at {
		return FeedPosition{}, false
	}
	return e.Position, true
}

// Floor returns the newest position of agent's feed that retention dropped (zero:
// none): events after it are all held.
func (fv FeedView) Floor(agent string) FeedPosition {
	r, _ := fv.v.st.feed.roots.Get(agent)
	return r.Floor
}

// feedRecord is the snapshot record (tag recFeed) of the feed: an event, or a root's
// floor (K the agent).
type feedRecord struct {
	Event *Event        `cbor:"1,keyasint,omitempty"`
	Floor *FeedPosition `cbor:"2,keyasint,omitempty"`
}

// recFeed is the snapshot record tag of the change feed (never renumber).
const recFeed uint8 = 34

// writeFeed emits the feed's snapshot records: every root's floor, then the events.
// One record, feed record and floor serve every emit (snapTable.write).
func (f *feedState) writeFeed(emit func(string, *snapRecord) bool) {
	var (
		fr  feedRecord
		fl  FeedPosition
		rec = snapRecord{T: recFeed, Feed: &fr}
	)
	ok := true
	f.roots.Scan(func(k string, r feedRoot) bool {
		if r.Floor != (FeedPosition{}) {
			fl = r.Floor
			fr = feedRecord{Floor: &fl}
			ok = emit(k, &rec)
		}
		return ok
	})
	if !ok {
		return
	}
	f.events.Scan(func(k string, e *Event) bool {
		fr = feedRecord{Event: e}
		return emit(k, &rec)
	})
}

// readFeed restores one feed record; false when it is malformed.
func (f *feedState) readFeed(k []byte, rec *feedRecord) bool {
	switch {
	case rec == nil:
		return false
	case rec.Event != nil:
		e := rec.Event
		if string(k) != feedKey(e.Agent, e.Position) {
			return false
		}
		f.events.Set(string(k), e)
		r, _ := f.roots.Get(e.Agent)
		r.Count++
		f.roots.Set(e.Agent, r)
	case rec.Floor != nil:
		r, _ := f.roots.Get(string(k))
		r.Floor = *rec.Floor
		f.roots.Set(string(k), r)
	default:
		return false
	}
	return true
}
