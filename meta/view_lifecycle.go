package meta

import (
	"slices"
	"strings"
)

// LifecycleView is the reads of one View about what holds a workbench's history: its
// snapshots, commits and restores, and the views frozen at the versions they pin
// (SnapshotView, VersionView). It reads only through its View, as every facet does; the
// views it returns derive from that View (its state and restriction) at an older version.
type LifecycleView struct{ v *View }

// SnapshotView resolves a snapshot of workbench ws (by id, or by name when name != "") and
// returns a view frozen at its read version together with the workbench incarnation it
// reads. SnapshotNotFound when no such snapshot of this workbench exists;
// SnapshotExpired (Error.State says expired, retired or reaped) when it is no longer
// readable.
func (lv LifecycleView) SnapshotView(agent, ws string, id uint64, name string) (*View, *Workspace, *WorkbenchSnapshot, error) {
	_, snap, err := findSnapshot(lv.v.stateOf(agent, ws), agent, ws, id, name)
	if err != nil {
		return nil, nil, nil, err
	}
	if st := snap.StateAt(lv.v.st.nowMs); st != SnapshotAlive {
		return nil, nil, nil, expiredError(snap, st)
	}
	w := &Workspace{Agent: agent, Name: ws, Incarnation: snap.Incarnation, Revision: snap.ReadVersion,
		CreatedVersion: snap.ReadVersion}
	return lv.v.derive(snap.ReadVersion), w, snap, nil
}

// VersionView returns a view of incarnation ws frozen at version at, for reading a pinned
// tree (a commit's or a restore's). The caller must hold the version (a commit or a
// running restore does); unpinned history may have been pruned.
func (lv LifecycleView) VersionView(ws *Workspace, at uint64) (*View, *Workspace, error) {
	if at > lv.v.st.version {
		return nil, nil, invalidArg("version", "%d is beyond the applied shard version %d", at, lv.v.st.version)
	}
	w := *ws
	w.Revision = at
	return lv.v.derive(at), &w, nil
}

// Snapshot returns a snapshot record of workbench ws by id or name, whatever its state.
func (lv LifecycleView) Snapshot(agent, ws string, id uint64, name string) (*WorkbenchSnapshot, error) {
	_, snap, err := findSnapshot(lv.v.stateOf(agent, ws), agent, ws, id, name)
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// Snapshots returns every snapshot of workbench ws (any state), oldest first.
func (lv LifecycleView) Snapshots(agent, ws string) []*WorkbenchSnapshot {
	if !lv.v.shows(agent, ws) {
		return nil
	}
	var out []*WorkbenchSnapshot
	prefix := agent + "\x00"
	lv.v.st.snapshots.Ascend(prefix, func(k string, s *WorkbenchSnapshot) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if s.Workspace == ws && liveIncarnation(lv.v.st, agent, ws, s.Incarnation) {
			out = append(out, s)
		}
		return true
	})
	return out
}

// SnapshotAliases returns the names that currently resolve to snap (a name resolves to
// the newest snapshot minted with it).
func (lv LifecycleView) SnapshotAliases(snap *WorkbenchSnapshot) []string {
	if snap.Name == "" {
		return nil
	}
	if id, ok := lv.v.st.snapNames.Get(snapNameKey(snap.Agent, snap.Workspace, snap.Name)); ok && id == snap.ID {
		return []string{snap.Name}
	}
	return nil
}

// Commit returns the commit of ws with the given identity.
func (lv LifecycleView) Commit(ws *Workspace, identity string) (*CommitRecord, bool) {
	return lv.v.st.commits.Get(commitKey(ws.Incarnation, identity))
}

// Commits returns up to limit sealed commits of ws (its incarnation's, as of this view),
// newest first: by sealing version, descending, then identity. after, when not nil, is
// the last commit of the previous page; the page starts just after it in that order. more
// says older commits remain. Commits are permanent and not capped per workbench, so the
// walk reads every commit record of the incarnation once, and holds at most limit+1 of
// them (limit is the caller's bound; at least 1).
func (lv LifecycleView) Commits(ws *Workspace, after *CommitRecord, limit int) (out []*CommitRecord, more bool) {
	limit = max(limit, 1)
	newer := func(a, b *CommitRecord) bool { // a comes before b in the listing
		if a.Version != b.Version {
			return a.Version > b.Version
		}
		return a.Identity < b.Identity
	}
	prefix := u64(ws.Incarnation)
	lv.v.st.commits.Ascend(prefix, func(k string, c *CommitRecord) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if c.Version > lv.v.at || after != nil && !newer(after, c) {
			return true
		}
		i, _ := slices.BinarySearchFunc(out, c, func(x, y *CommitRecord) int {
			if newer(x, y) {
				return -1
			}
			return 1
		})
		if i <= limit {
			out = slices.Insert(out, i, c)
			if len(out) > limit+1 {
				out = out[:limit+1]
			}
		}
		return true
	})
	if len(out) > limit {
		return out[:limit], true
	}
	return out, false
}

// Head returns the head commit of ws as of this view (the workbench record's head).
func (lv LifecycleView) Head(ws *Workspace) (*CommitRecord, bool) {
	if ws.HeadIdentity == "" {
		return nil, false
	}
	return lv.Commit(ws, ws.HeadIdentity)
}

// Workspaces returns up to limit visible workbenches of agent in name order after the name
// after, and whether more remain. Staging workbenches are skipped.
func (v *View) Workspaces(agent, after string, limit int) (out []*Workspace, more bool) {
	prefix := agent + "\x00"
	pivot := prefix
	if after != "" {
		pivot = prefix + after + "\x00"
	}
	v.st.workspaces.Ascend(pivot, func(k string, ws *Workspace) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if ws.State != WorkspaceVisible || ws.CreatedVersion > v.at || !v.shows(agent, ws.Name) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, v.shown(ws))
		return true
	})
	return out, more
}

// Restore returns a restore operation record.
func (lv LifecycleView) Restore(agent, opID string) (*RestoreOp, bool) {
	op, ok := lv.v.st.restores.Get(restoreKey(agent, opID))
	if !ok || !lv.v.shows(agent, op.Source) || !lv.v.shows(agent, op.Destination) {
		return nil, false
	}
	return op, true
}

// RestoresInProgress returns every restore operation still copying (for the leader's
// restore driver to resume after a restart).
func (lv LifecycleView) RestoresInProgress() []*RestoreOp {
	var out []*RestoreOp
	lv.v.st.restores.Scan(func(_ string, op *RestoreOp) bool {
		if op.State == RestoreCopying {
			out = append(out, op)
		}
		return true
	})
	return out
}

// Files calls fn for every file of ws visible at this view's version, in component-wise
// path order, starting after the path after ("" = from the first), until fn returns false.
func (v *View) Files(ws *Workspace, after string, fn func(path string, e *Entry) bool) {
	prefix := u64(ws.Incarnation)
	pivot := prefix
	if after != "" {
		pivot = pathKey(ws.Incarnation, after) + "\x00"
	}
	v.st.paths.Ascend(pivot, func(k string, rec *pathRecord) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if e := rec.at(v.at); e != nil && v.showsKey(ws, k) {
			return fn(keyPath(k), e)
		}
		return true
	})
}

// Staging reports whether workbench name of agent exists but is still being restored
// (invisible to reads, closed to writes).
func (lv LifecycleView) Staging(agent, name string) bool {
	ws, ok := lv.v.st.workspaces.Get(workspaceKey(agent, name))
	return ok && ws.State == WorkspaceStaging && lv.v.shows(agent, name)
}

// stateOf returns the state that answers for workbench ws of agent: the view's, or the
// empty state when the view does not show ws (Only), so that a hidden workbench answers
// from the same code as one that never existed.
func (v *View) stateOf(agent, ws string) *state {
	if v.shows(agent, ws) {
		return v.st
	}
	return emptyState
}

// emptyState holds nothing: what a workbench a restricted view hides is read from.
var emptyState = newState()
