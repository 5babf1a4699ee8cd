package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// At selects what a read sees: the live workbench (the zero value) or a snapshot of it,
// by id or by name.
type At struct {
	SnapshotID   uint64
	SnapshotName string
	set          bool
}

// AtSnapshotID and AtSnapshotName select a snapshot.
func AtSnapshotID(id uint64) At     { return At{SnapshotID: id, set: true} }
func AtSnapshotName(name string) At { return At{SnapshotName: name, set: true} }

// Live reports whether the selector means live state.
func (a At) Live() bool { return !a.set }

// String renders the selector for cursors and messages: "" (live), "#<id>" or "@<name>".
func (a At) String() string {
	switch {
	case !a.set:
		return ""
	case a.SnapshotName != "":
		return "@" + a.SnapshotName
	}
	return "#" + strconv.FormatUint(a.SnapshotID, 10)
}

// ParseAtSnapshot decodes the contract's at_snapshot argument: an integer ≥ 0 (a snapshot
// id), a string (a snapshot name), or absent/null (live state). Anything else is
// InvalidArguments naming at_snapshot.
func ParseAtSnapshot(raw json.RawMessage) (At, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return At{}, nil
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil || name == "" {
			return At{}, invalidArgument("at_snapshot", "must be a snapshot id (integer ≥ 0) or a non-empty snapshot name")
		}
		return AtSnapshotName(name), nil
	}
	id, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return At{}, invalidArgument("at_snapshot", "must be a snapshot id (integer ≥ 0) or a snapshot name")
	}
	return AtSnapshotID(id), nil
}

// resolve returns the view and workbench a read at `at` sees: a linearizable live view,
// or a view frozen at the snapshot's read version. Errors: NotFound (workbench),
// SnapshotNotFound, SnapshotExpired (with details.state).
func (s *base) resolve(ctx context.Context, agent, id string, at At) (*meta.View, *meta.Workspace, *meta.WorkbenchSnapshot, error) {
	view := s.appliedSnapshotView(ctx, agent, id, at)
	if view == nil {
		var err error
		if view, err = s.readView(ctx, agent); err != nil {
			return nil, nil, nil, AsError(err)
		}
	}
	if at.Live() {
		ws, err := view.Workspace(agent, id)
		if err != nil {
			return nil, nil, nil, AsError(err)
		}
		return view, ws, nil, nil
	}
	if _, err := view.Workspace(agent, id); err != nil {
		return nil, nil, nil, AsError(err)
	}
	if at.SnapshotName == "" && at.SnapshotID == 0 {
		return nil, nil, nil, newError(CodeSnapshotNotFound, "snapshot 0 does not exist (snapshot ids start at 1)")
	}
	sv, ws, snap, err := view.Lifecycle().SnapshotView(agent, id, at.SnapshotID, at.SnapshotName)
	if err != nil {
		return nil, nil, nil, AsError(err)
	}
	return sv, ws, snap, nil
}

// Reads at a snapshot id from the serving replica's applied state (docs/architecture.md#the-read-path: "reads at
// a fixed shard version may be served by any replica that has applied that version"). A
// read at a snapshot id is answered from Core.ReadViewAt, without a leader round trip, when
// that view holds the snapshot alive and is recent; otherwise (a name, a snapshot the
// replica has not applied or no longer holds, a stale replica) from a linearizable view.
//
// Why this is safe:
//
//   - A snapshot pins its read version: until it is retired or reaped, no replica's FSM
//     prunes the history it reads, and the FSM is deterministic, so a replica that applied
//     the mint holds exactly the tree the leader holds at that version. What a version
//     shows never changes, so the answer does not depend on how far the replica lags.
//   - The check and the read use one view (a copy-on-write copy of the applied state):
//     applies that land during the read do not change what it sees.
//   - Only ids, never names: a name resolves to the newest snapshot minted with it, and a
//     lagging replica could resolve it to an older one.
//   - Bodies live in the blob store, which the leader's garbage collector sweeps. It
//     deletes a blob only after it has had no reference for GCGrace of command time, and
//     every blob the view reads is referenced at the view's command time. A replica serves
//     only while its applied command time is less than GCGrace/2 behind the wall clock,
//     which leaves the read at least GCGrace/2 to finish (the grace is longer than the
//     longest read stream); with no leader the applied time stops, so a cut-off replica
//     stops serving after GCGrace/2. Assumed: clocks agree well within GCGrace, every node
//     has the same GCGrace, and sweeps use it.
//
// What it does not promise: retire and expiry are not linearizable for it. A lagging
// replica may still serve a snapshot the leader retired a moment ago (its data is intact,
// see above). An expired lease is checked against both the applied command time and the
// wall clock, so a replica without a leader does not serve past the expiry.

// appliedSnapshotView returns the applied view a read of workbench id at `at` may use
// (see above), or nil when the read needs a linearizable view.
func (s *base) appliedSnapshotView(ctx context.Context, agent, id string, at At) *meta.View {
	if at.Live() || at.SnapshotName != "" || at.SnapshotID == 0 {
		return nil
	}
	c, err := coreFor(ctx, s, agent)
	if err != nil {
		return nil
	}
	view, err := c.ReadViewAt(ctx, 0)
	if err != nil {
		return nil
	}
	if view = s.visibleView(ctx, agent, view); !servableAt(view, agent, id, at.SnapshotID, s.cfg.GCGrace/2, time.Now()) {
		return nil
	}
	return view
}

// servableAt reports whether view holds snapshot snapID of workbench wb of agent alive and
// its applied command time is less than maxStale behind now.
func servableAt(view *meta.View, agent, wb string, snapID uint64, maxStale time.Duration, now time.Time) bool {
	if now.Sub(time.UnixMilli(view.NowMs())) >= maxStale {
		return false
	}
	if _, err := view.Workspace(agent, wb); err != nil {
		return false
	}
	snap, err := view.Lifecycle().Snapshot(agent, wb, snapID, "")
	if err != nil {
		return false
	}
	return snap.StateAt(max(view.NowMs(), now.UnixMilli())) == meta.SnapshotAlive
}
