package meta

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// feedModel derives the events a command sequence must produce from the model's answers:
// the naive statement of which change is which event.
type feedModel struct {
	events map[string][]Event // agent → events, oldest first (AtMs left zero)
	ord    map[string]uint64  // agent/ws/path → the path's ordinal
	live   map[string]bool    // agent/ws/path → holds a body
	seen   map[string]bool    // agent/ws → the workbench exists
}

func newFeedModel() *feedModel {
	return &feedModel{events: map[string][]Event{}, ord: map[string]uint64{}, live: map[string]bool{}, seen: map[string]bool{}}
}

// observe records the events of command b at index, given its (model) result.
func (fm *feedModel) observe(index uint64, h Header, b Body, res Result) {
	if res.Err != nil || res.Replayed {
		return
	}
	agent := AgentOf(b)
	var i uint32
	add := func(e Event) {
		e.Position, e.Agent, e.AtMs = FeedPosition{Version: index, Index: i}, agent, 0
		i++
		fm.events[agent] = append(fm.events[agent], e)
	}
	created := func(ws string) {
		if !fm.seen[agent+"/"+ws] {
			fm.seen[agent+"/"+ws] = true
			add(Event{Kind: EventWorkbenchCreate, Workbench: ws, Generation: index})
		}
	}
	file := func(kind EventKind, ws, path string, size int64, digest Digest) {
		k := agent + "/" + ws + "/" + path
		switch {
		case kind == EventFileDelete:
			fm.ord[k]++
			fm.live[k] = false
		case fm.live[k]:
			fm.ord[k]++
		default:
			fm.ord[k] = 1
			fm.live[k] = true
		}
		add(Event{Kind: kind, Workbench: ws, Path: path, Generation: index, Size: size, Digest: digest, Ordinal: fm.ord[k]})
	}
	switch b := b.(type) {
	case CreateWorkspace:
		created(b.Name)
	case Put:
		created(b.Workspace)
		file(EventFilePut, b.Workspace, b.Path, b.Size, b.Digest)
	case Append:
		created(b.Workspace)
		file(EventFileAppend, b.Workspace, b.Path, b.NewSize, b.NewDigest)
	case Delete:
		file(EventFileDelete, b.Workspace, b.Path, 0, Digest{})
	}
}

func (fm *feedModel) filtered(agent string, f EventFilter) []Event {
	var out []Event
	for _, e := range fm.events[agent] {
		if f.match(&e) {
			out = append(out, e)
		}
	}
	return out
}

// readAll pages through agent's retained feed with pages of limit events.
func readAll(t interface{ Fatalf(string, ...any) }, v *View, agent string, f EventFilter, limit int) []Event {
	var out []Event
	after := v.Feed().Floor(agent)
	for {
		page, more, err := v.Feed().Events(agent, after, f, limit)
		if err != nil {
			t.Fatalf("events after %s: %v", after, err)
		}
		out = append(out, page...)
		if !more {
			return out
		}
		if len(page) == 0 {
			t.Fatalf("events after %s: an empty page says more", after)
		}
		after = page[len(page)-1].Position
	}
}

// untimed returns evs with AtMs zeroed (the model does not keep time).
func untimed(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		e.AtMs = 0
		out[i] = e
	}
	return out
}

func sameEvents(got, want []Event) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d events, model %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Errorf("event %d: got %+v, model %+v", i, got[i], want[i])
		}
	}
	return nil
}

// TestFeedMatchesModel: over random command sequences, every root's feed (read in random
// page sizes, with random filters; and its newest events, RecentEvents) equals the events
// the naive model derives from the answers, and a snapshot → restore reproduces the feed
// exactly.
func TestFeedMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, fm := newModel(), newFeedModel()
		f := New(keepEverything())
		n := rapid.IntRange(1, 100).Draw(t, "n")
		index := uint64(0)
		for i := 0; i < n; i++ {
			h, b := genHeader(t, m), genBody(t, m)
			index += uint64(rapid.IntRange(1, 2).Draw(t, "gap"))
			want := m.apply(index, h, b)
			got := f.ApplyBody(index, h, b)
			if err := sameAnswer(got, want); err != nil {
				t.Fatalf("command %d %T: %v", i, b, err)
			}
			fm.observe(index, h, b, want)
		}
		g := restoredWith(t, f, keepEverything())
		filter := EventFilter{
			Workbench: rapid.SampledFrom([]string{"", "w1", "w2"}).Draw(t, "fws"),
			Prefix:    rapid.SampledFrom([]string{"", "x", "d", "x/y"}).Draw(t, "fprefix"),
		}
		limit := rapid.IntRange(1, 7).Draw(t, "limit")
		for _, agent := range genAgents {
			for _, fsm := range []*FSM{f, g} {
				if err := sameEvents(untimed(readAll(t, fsm.View(), agent, EventFilter{}, limit)), fm.filtered(agent, EventFilter{})); err != nil {
					t.Fatalf("agent %s: %v", agent, err)
				}
				if err := sameEvents(untimed(readAll(t, fsm.View(), agent, filter, limit)), fm.filtered(agent, filter)); err != nil {
					t.Fatalf("agent %s filter %+v: %v", agent, filter, err)
				}
				// The feed's end: the newest limit events that keep accepts, oldest first.
				recent, err := fsm.View().Feed().Recent(agent, limit, filter.match)
				if err != nil {
					t.Fatal(err)
				}
				want := fm.filtered(agent, filter)
				if err := sameEvents(untimed(recent), want[max(0, len(want)-limit):]); err != nil {
					t.Fatalf("agent %s: the newest %d with filter %+v: %v", agent, limit, filter, err)
				}
			}
		}
	})
}

// feedHelper applies commands to one FSM at chosen command times.
type feedHelper struct {
	t     *testing.T
	f     *FSM
	index uint64
}

func (h *feedHelper) at(ms int64, b Body) Result {
	h.t.Helper()
	h.index++
	res := h.f.ApplyBody(h.index, Header{TimeMs: ms, Principal: "p", Surface: "test/feed"}, b)
	if res.Err != nil {
		h.t.Fatalf("%T: %v", b, res.Err)
	}
	return res
}

func feedPut(agent, path, data string) Put {
	return Put{Agent: agent, Workspace: "w", Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Digest: digestOf([]byte(data)), Segments: inlineSegs(data)}
}

func kinds(evs []Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind.String())
	}
	return strings.Join(out, " ")
}

// TestFeedEventsOfEachChange: each kind of change is the events it should be, in command
// order and, within a command, in the order it made them.
func TestFeedEventsOfEachChange(t *testing.T) {
	h := &feedHelper{t: t, f: New(Options{FeedRetention: 1000 * time.Hour})}
	h.at(1000, feedPut("a", "input/x", "one"))
	h.at(2000, Append{Agent: "a", Workspace: "w", Path: "input/x", ExpectGeneration: 1, Segments: inlineSegs("+"), AppendedBytes: 1, NewSize: 4, NewDigest: digestOf([]byte("one+"))})
	edit := Header{TimeMs: 2500, Surface: "mcp/workbench_edit"}
	h.index++
	if res := h.f.ApplyBody(h.index, edit, Put{Agent: "a", Workspace: "w", Path: "input/x", Size: 3, Digest: digestOf([]byte("two")), Segments: inlineSegs("two")}); res.Err != nil {
		t.Fatal(res.Err)
	}
	h.at(3000, Delete{Agent: "a", Workspace: "w", Path: "input/x"})
	mint := h.at(4000, SnapshotMint{Agent: "a", Workspace: "w", Name: "s", TTLDays: 1})
	h.at(5000, SnapshotRenew{Agent: "a", Workspace: "w", ID: mint.Snapshot.ID, TTLDays: 2})
	h.at(6000, SnapshotRetire{Agent: "a", Workspace: "w", ID: mint.Snapshot.ID})
	h.at(7000, SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1})
	// Past the lease and its grace, the next command reaps it: the expiry is that
	// command's event, after its own.
	h.at(7000+3*dayMs, CreateWorkspace{Agent: "a", Name: "w2"})
	h.at(8000+3*dayMs, DeleteWorkspace{Agent: "a", Name: "w2"})
	h.at(9000+3*dayMs, PurgeRoot{Agent: "a", Limit: 10})
	evs := readAll(t, h.f.View(), "a", EventFilter{}, MaxEventsPage)
	want := "workbench.create file.put file.append file.edit file.delete snapshot.mint snapshot.renew snapshot.retire snapshot.mint " +
		"workbench.create snapshot.expire workbench.delete workbench.delete root.purge"
	if got := kinds(evs); got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	put, del := evs[1], evs[4]
	if put.Position != (FeedPosition{Version: 1, Index: 1}) || put.Path != "input/x" || put.Size != 3 || put.Digest != digestOf([]byte("one")) ||
		put.Generation != 1 || put.Ordinal != 1 || put.Producer != (Producer{Principal: "p", Surface: "test/feed"}) || put.AtMs != 1000 {
		t.Fatalf("put event %+v", put)
	}
	if del.Ordinal != 4 || del.Generation != 4 || del.Size != 0 {
		t.Fatalf("delete event %+v", del)
	}
	if exp := evs[10]; exp.Position != (FeedPosition{Version: 9, Index: 1}) || exp.Producer != (Producer{}) || exp.SnapshotID != 2 {
		t.Fatalf("expire event %+v", exp)
	}
	if purge := evs[13]; purge.Deleted != 1 || purge.Workbench != "" {
		t.Fatalf("purge event %+v", purge)
	}
	// Other roots' feeds are their own.
	if evs := readAll(t, h.f.View(), "b", EventFilter{}, 10); len(evs) != 0 {
		t.Fatalf("root b: %+v", evs)
	}
}

// TestFeedCommitAndRestore: a commit is a manifest put and a commit event; a restore is
// restore.begin, then (its copies are invisible staging) restore.finish carrying the
// destination's commit.
func TestFeedCommitAndRestore(t *testing.T) {
	h := &feedHelper{t: t, f: New(Options{})}
	h.at(1000, feedPut("a", "input/x", "one"))
	env := FileBody{Size: 2, Digest: digestOf([]byte("{}")), ContentType: "application/json", Segments: inlineSegs("{}")}
	id := strings.Repeat("ab", 32)
	uri := "sha256:" + strings.Repeat("cd", 32)
	ws, _ := h.f.View().Workspace("a", "w")
	h.at(2000, Commit{Agent: "a", Workspace: "w", ExpectRevision: ws.Revision, Identity: id, ContentDigestURI: uri, ManifestDigestURI: uri, TreeDigestURI: uri, Envelope: env})
	op := strings.Repeat("01", 32)
	h.at(3000, RestoreBegin{Agent: "a", OpID: op, Source: "w", SourceIncarnation: ws.Incarnation, CommitIdentity: id, Destination: "w3"})
	h.at(4000, RestoreCopy{Agent: "a", OpID: op, Limit: 100})
	id2 := strings.Repeat("ef", 32)
	h.at(5000, RestoreFinish{Agent: "a", OpID: op, Manifest: env, Identity: id2, ContentDigestURI: uri, ManifestDigestURI: uri, TreeDigestURI: uri, Envelope: env})
	evs := readAll(t, h.f.View(), "a", EventFilter{}, MaxEventsPage)
	if got, want := kinds(evs), "workbench.create file.put file.put commit restore.begin restore.finish"; got != want {
		t.Fatalf("kinds:\n got %s\nwant %s", got, want)
	}
	if evs[2].Path != RunManifestPath || evs[3].Commit != id || evs[3].Generation != 2 {
		t.Fatalf("commit events %+v %+v", evs[2], evs[3])
	}
	if fin := evs[5]; fin.Workbench != "w3" || fin.Source != "w" || fin.Operation != op || fin.Commit != id2 {
		t.Fatalf("restore.finish %+v", fin)
	}
}

// TestFeedResumeNeverSkipsNorRepeats: reading after any event's position returns exactly
// the events after it, those of the same command included; a bare shard version resumes
// after every event of that command.
func TestFeedResumeNeverSkipsNorRepeats(t *testing.T) {
	h := &feedHelper{t: t, f: New(Options{})}
	for i := range 5 {
		h.at(int64(1000*(i+1)), feedPut("a", fmt.Sprintf("f%d", i), "x")) // the first is two events
	}
	v := h.f.View()
	all := readAll(t, v, "a", EventFilter{}, MaxEventsPage)
	for i, e := range all {
		p, perr := ParseFeedPosition("after", e.Position.String())
		if perr != nil || p != e.Position {
			t.Fatalf("position %s parses as %v, %v", e.Position, p, perr)
		}
		rest, _, err := v.Feed().Events("a", p, EventFilter{}, MaxEventsPage)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameEvents(rest, all[i+1:]); err != nil {
			t.Fatalf("after %s: %v", p, err)
		}
	}
	p, _ := ParseFeedPosition("after", "1")
	rest, _, _ := v.Feed().Events("a", p, EventFilter{}, MaxEventsPage)
	if len(rest) != 4 || rest[0].Position.Version != 2 {
		t.Fatalf("after bare version 1: %+v", rest)
	}
	for _, bad := range []string{"", "x", "1.", ".1", "1.2.3", "-1", "+1", "1.99999999999"} {
		if _, err := ParseFeedPosition("after", bad); err == nil || err.Field != "after" {
			t.Fatalf("position %q: %v", bad, err)
		}
	}
	if _, _, err := v.Feed().Events("a", FeedPosition{}, EventFilter{}, 0); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("limit 0: %v", err)
	}
	if _, _, err := v.Feed().Events("a", FeedPosition{}, EventFilter{Prefix: "../x"}, 1); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("bad prefix: %v", err)
	}
	// A view at an older version shows only the events up to it.
	old, _ := v.At(2)
	if evs := readAll(t, old, "a", EventFilter{}, 10); len(evs) != 3 {
		t.Fatalf("view at 2: %s", kinds(evs))
	}
}

// TestFeedRetention: events older than FeedRetention and beyond FeedMaxPerRoot go, in
// bounded steps, even on an idle root; a read after a dropped position is a
// FeedTruncatedError naming where to resume; a snapshot keeps the floor.
func TestFeedRetention(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		puts     int
		finalMs  int64 // the time of a last Tick on another root
		wantKept int
	}{
		{name: "by count, the oldest go first", opts: Options{FeedMaxPerRoot: 5}, puts: 10, wantKept: 5},
		{name: "by time, on an idle root too", opts: Options{FeedRetention: time.Minute, RetentionBatch: 4}, puts: 10, finalMs: 9_500 + 60_000, wantKept: 1},
		{name: "by time, everything", opts: Options{FeedRetention: time.Minute, RetentionBatch: 4}, puts: 10, finalMs: 10_000 + 60_000, wantKept: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &feedHelper{t: t, f: New(tc.opts)}
			for i := range tc.puts {
				h.at(int64(1000*(i+1)), feedPut("a", fmt.Sprintf("f%02d", i), "x"))
			}
			// Bounded steps: the retention batch per command, so tick until it settles.
			for range 10 {
				if tc.finalMs > 0 {
					h.at(tc.finalMs, CreateRoot{Agent: "b"})
				}
			}
			v := h.f.View()
			kept := readAll(t, v, "a", EventFilter{}, MaxEventsPage)
			if len(kept) != tc.wantKept {
				t.Fatalf("kept %d events (%s), want %d", len(kept), kinds(kept), tc.wantKept)
			}
			floor := v.Feed().Floor("a")
			if floor == (FeedPosition{}) {
				t.Fatalf("no floor after dropping events")
			}
			_, _, err := v.Feed().Events("a", FeedPosition{}, EventFilter{}, 10)
			var te *FeedTruncatedError
			if !errors.As(err, &te) || !errors.Is(err, ErrFeedTruncated) || te.ResumeAfter != floor {
				t.Fatalf("read from the start: %v", err)
			}
			if oldest, ok := v.Feed().Oldest("a"); ok != (tc.wantKept > 0) || ok && (oldest != kept[0].Position || te.Oldest != oldest) {
				t.Fatalf("oldest %v %v, kept %+v", oldest, ok, kept)
			}
			if got, _, err := v.Feed().Events("a", floor, EventFilter{}, MaxEventsPage); err != nil || len(got) != tc.wantKept {
				t.Fatalf("read after the floor: %d events, %v", len(got), err)
			}
			g := restoredCopy(t, h.f, tc.opts)
			if g.StateDigest() != h.f.StateDigest() || g.View().Feed().Floor("a") != floor {
				t.Fatalf("snapshot → restore changed the feed")
			}
			// The restored feed keeps pruning alike.
			h2 := &feedHelper{t: t, f: g, index: h.index}
			for _, x := range []*feedHelper{h, h2} {
				x.at(tc.finalMs+1000*60_000, CreateRoot{Agent: "b"})
			}
			if g.StateDigest() != h.f.StateDigest() {
				t.Fatalf("diverged after restore")
			}
		})
	}
	// The retention queue stays bounded: one pending item per root with events.
	h := &feedHelper{t: t, f: New(Options{})}
	for i := range 50 {
		h.at(int64(1000*(i+1)), feedPut("a", fmt.Sprintf("f%02d", i), "x"))
	}
	n := 0
	h.f.Snapshot().st.retention.Scan(func(_, v string) bool {
		if v[0] == retainFeed {
			n++
		}
		return true
	})
	if n != 1 {
		t.Fatalf("%d feed retention items for one root", n)
	}
}
