package meta

import (
	"slices"
	"strconv"
	"strings"
)

// The state of a workbench at a past command time, from the history retention keeps
// (retention.go). Command time never runs backwards along the log, so "at time T" is
// exactly the state after the last command with time ≤ T: for each path, its newest chain
// element at or before T.
//
// Retention makes that exact inside the root's age window and nowhere else: an element
// superseded at time S stays while S + Age is after now, unless the version cap
// (MaxVersions) cut it first. For T within the window every element superseded after T is
// still there, so each path's element at T is the one it had, and a path with no element
// at or before T had none then; a path whose chain reached the cap is checked on its own
// (its element at T must sit inside the cap). Outside the window, or with Age 0, the
// answer is refused rather than guessed (rewind, workbench/rewind.go).

// WindowStart returns the earliest command time (Unix ms) whose state FilesAtTime
// answers exactly for agent's root: the view's command time less the root's retention age
// (a root whose retention keeps no age has a window that starts now).
func (h HistoryView) WindowStart(agent string) int64 {
	pol, _ := h.v.Retention(agent)
	return h.v.st.nowMs - pol.normalized().Age.Milliseconds()
}

// FilesAtTime calls fn, in path order, with each file below dir ("" = the whole workbench)
// and the body it had at command time atMs, until fn returns false. It needs a live view.
// Errors: InvalidArguments naming "at_time" when atMs is after the view's command time or
// before WindowStart, or when a path's history was cut by its version cap (Path
// names it); InvalidArguments for a bad dir.
func (h HistoryView) FilesAtTime(ws *Workspace, dir string, atMs int64, fn func(path string, e *Entry) bool) error {
	if dir != "" {
		if err := ValidatePath("dir", dir); err != nil {
			return err
		}
	}
	pol, err := h.historyWindow(ws.Agent, atMs)
	if err != nil {
		return err
	}
	prefix := childPrefix(ws.Incarnation, dir)
	var failed *Error
	h.v.st.paths.Ascend(prefix, func(key string, rec *pathRecord) bool {
		if !strings.HasPrefix(key, prefix) {
			return false
		}
		if !h.v.showsKey(ws, key) {
			return true
		}
		e, ok := h.entryAtTime(rec, atMs, pol)
		if !ok {
			failed = cutHistory(keyPath(key), pol)
			return false
		}
		return e == nil || fn(keyPath(key), e)
	})
	if failed != nil {
		return failed
	}
	return nil
}

// FileAtTime returns the body path had at command time atMs (nil: no file then), with
// FilesAtTime's errors.
func (h HistoryView) FileAtTime(ws *Workspace, path string, atMs int64) (*Entry, error) {
	if err := ValidatePath("path", path); err != nil {
		return nil, err
	}
	pol, err := h.historyWindow(ws.Agent, atMs)
	if err != nil {
		return nil, err
	}
	rec, _ := h.v.record(ws, path)
	e, ok := h.entryAtTime(rec, atMs, pol)
	if !ok {
		return nil, cutHistory(path, pol)
	}
	return e, nil
}

// historyWindow checks that atMs lies in agent's exact window and returns its policy.
func (h HistoryView) historyWindow(agent string, atMs int64) (Retention, *Error) {
	if !h.v.live() {
		return Retention{}, invalidArg("at_time", "needs a live view")
	}
	pol, _ := h.v.Retention(agent)
	pol = pol.normalized()
	switch start := h.v.st.nowMs - pol.Age.Milliseconds(); {
	case atMs > h.v.st.nowMs:
		return pol, invalidArg("at_time", "is after the newest command time %d", h.v.st.nowMs)
	case atMs < start:
		return pol, invalidArg("at_time", "is before %d: history keeps every version of this root for %s only (its retention age)", start, pol.Age)
	}
	return pol, nil
}

// entryAtTime returns the element of rec visible at command time atMs (nil: none, or a
// delete) and whether it is certain: not when the element sits at or past the version
// cap, which may have cut what followed it.
func (h HistoryView) entryAtTime(rec *pathRecord, atMs int64, pol Retention) (*Entry, bool) {
	if rec == nil {
		return nil, true
	}
	for i, el := range rec.Chain {
		if el.Version > h.v.at || el.AtMs > atMs {
			continue
		}
		return el.Entry, i < pol.MaxVersions
	}
	return nil, len(rec.Chain) < pol.MaxVersions
}

func cutHistory(path string, pol Retention) *Error {
	return &Error{Code: CodeInvalidArguments, Field: "at_time", Path: path,
		Message: "the history of " + strconv.Quote(path) + " reached its cap of " + strconv.Itoa(pol.MaxVersions) +
			" versions since then, so its version at that time is not certain"}
}

// ChangeAt is one path a command changed, as ChangesAt reads it from history.
type ChangeAt struct {
	Path string
	// Before is the body the path held before the command (nil: no file, or history no
	// longer holds that version); After the body the command left (nil: it deleted the
	// path).
	Before, After *Entry
}

// ChangesAt returns, in path order, the paths of scope g (g.Since is not used) in ws that
// have a version at exactly shard version gen — a body or a delete —, each with the body
// before it: what the command at gen changed there, as far as retention still holds it (a
// version at gen that retention pruned is missing; a pruned version before it reads as no
// file). A rewind's retry that the FSM replays answers the first apply's changes with it
// (workbench/rewind_apply.go). At most MaxChangeSetChanges paths, a change set's most;
// InvalidArguments naming "unchanged.dir" when more than MaxChangeSetScan records lie
// below g.Dir.
func (h HistoryView) ChangesAt(ws *Workspace, g ScopeGuard, gen uint64) ([]ChangeAt, error) {
	var out []ChangeAt
	err := eachInScope(h.v.st, ws, g, func(p string, rec *pathRecord) {
		if gen > h.v.at || len(out) == MaxChangeSetChanges {
			return
		}
		for i, el := range rec.Chain {
			if el.Version == gen {
				c := ChangeAt{Path: p, After: el.Entry}
				if i+1 < len(rec.Chain) {
					c.Before = rec.Chain[i+1].Entry
				}
				out = append(out, c)
				return
			}
			if el.Version < gen {
				return
			}
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ChangeAt) int { return ComparePaths(a.Path, b.Path) })
	return slices.CompactFunc(out, func(a, b ChangeAt) bool { return a.Path == b.Path }), nil
}
