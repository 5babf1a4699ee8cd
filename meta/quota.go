package meta

import (
	"fmt"
	"strings"

	"github.com/tidwall/btree"
)

// Usage is what an agent root holds, kept by the FSM as commands apply and equal at every
// version to a recomputation from the tree (recomputeUsage):
//
//   - Workbenches: workbench records, staging restore destinations included;
//   - Files and Bytes: live files of every workbench (staging included) and their bytes
//     (logical body sizes, the reserved manifests included);
//   - Snapshots: snapshots that hold history (alive, or expired and not yet reaped).
type Usage struct {
	Bytes       int64 `cbor:"1,keyasint,omitempty"`
	Files       int64 `cbor:"2,keyasint,omitempty"`
	Workbenches int64 `cbor:"3,keyasint,omitempty"`
	Snapshots   int64 `cbor:"4,keyasint,omitempty"`
}

func (u Usage) add(d Usage) Usage {
	return Usage{Bytes: u.Bytes + d.Bytes, Files: u.Files + d.Files, Workbenches: u.Workbenches + d.Workbenches,
		Snapshots: u.Snapshots + d.Snapshots}
}

// Quota limits what an agent root may hold; 0 means no limit on that dimension.
type Quota struct {
	MaxBytes       int64 `cbor:"1,keyasint,omitempty"`
	MaxFiles       int64 `cbor:"2,keyasint,omitempty"`
	MaxWorkbenches int64 `cbor:"3,keyasint,omitempty"`
	MaxSnapshots   int64 `cbor:"4,keyasint,omitempty"`
}

// Quota names, as errors and the surfaces spell them.
const (
	QuotaBytes       = "bytes"
	QuotaFiles       = "files"
	QuotaWorkbenches = "workbenches"
	QuotaSnapshots   = "snapshots"
	// QuotaSnapshotsPerWorkbench and QuotaRunSnapshotsPerWorkbench name the caps on one
	// workbench's held snapshots (SnapshotMint.MaxHeld), per pool: the proposer's
	// configuration, not an admin's quota of the root, answered the same way.
	QuotaSnapshotsPerWorkbench    = "snapshots_per_workbench"
	QuotaRunSnapshotsPerWorkbench = "run_snapshots_per_workbench"
	// QuotaFilesPerWorkbench names the cap on one workbench's live files
	// (Put.MaxWorkbenchFiles), the proposer's configuration too.
	QuotaFilesPerWorkbench = "files_per_workbench"
)

// SetQuota replaces the quotas of an agent root (an admin's command), creating the root
// when it does not exist. A quota below the current usage is accepted: from then on only
// commands that do not grow that dimension apply. Result.Quota and Result.Usage answer it.
type SetQuota struct {
	Agent string `cbor:"1,keyasint"`
	Quota Quota  `cbor:"2,keyasint"`
}

func (SetQuota) Op() Op { return OpSetQuota }

func (a *applier) setQuota(c SetQuota) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	q := c.Quota
	for _, d := range []struct {
		field string
		v     int64
	}{{"max_bytes", q.MaxBytes}, {"max_files", q.MaxFiles}, {"max_workbenches", q.MaxWorkbenches}, {"max_snapshots", q.MaxSnapshots}} {
		if d.v < 0 {
			return Result{Err: invalidArg(d.field, "must be 0 (no limit) or positive, got %d", d.v)}
		}
	}
	r := a.files.ensureRoot(c.Agent)
	if q == (Quota{}) {
		a.st.quotas.Delete(c.Agent)
	} else {
		a.st.quotas.Set(c.Agent, q)
	}
	u, _ := a.st.usage.Get(c.Agent)
	return Result{RootUID: r.UID, Quota: &q, Usage: &u}
}

// addUsage adds d to agent's usage.
func (a *fileApplier) addUsage(agent string, d Usage) {
	if d == (Usage{}) {
		return
	}
	u, _ := a.st.usage.Get(agent)
	u = u.add(d)
	if u == (Usage{}) {
		a.st.usage.Delete(agent)
	} else {
		a.st.usage.Set(agent, u)
	}
}

// checkQuota fails a command that would grow agent's usage by d beyond one of its quotas:
// ResourceExhausted naming the quota, its limit, the usage and what the command asked for.
// Dimensions the command does not grow are not checked (a root over a lowered quota can
// still shrink). The first exceeded dimension in the order workbenches, files, bytes,
// snapshots is reported.
func (a *fileApplier) checkQuota(agent string, d Usage) *Error {
	q, ok := a.st.quotas.Get(agent)
	if !ok {
		return nil
	}
	u, _ := a.st.usage.Get(agent)
	for _, dim := range []struct {
		name             string
		limit, used, add int64
	}{
		{QuotaWorkbenches, q.MaxWorkbenches, u.Workbenches, d.Workbenches},
		{QuotaFiles, q.MaxFiles, u.Files, d.Files},
		{QuotaBytes, q.MaxBytes, u.Bytes, d.Bytes},
		{QuotaSnapshots, q.MaxSnapshots, u.Snapshots, d.Snapshots},
	} {
		if dim.limit > 0 && dim.add > 0 && dim.used+dim.add > dim.limit {
			return &Error{Code: CodeResourceExhausted, Quota: dim.name, Limit: dim.limit, Used: dim.used, Requested: dim.add,
				Message: fmt.Sprintf("agent root %q is at %d of its %s quota of %d; this request needs %d more", agent, dim.used, dim.name, dim.limit, dim.add)}
		}
	}
	return nil
}

// fileGrowth is the usage a publish of e over cur (either may be nil) adds, with one more
// workbench when the command creates it.
func fileGrowth(newWorkbench bool, cur, e *Entry) Usage {
	var d Usage
	if newWorkbench {
		d.Workbenches = 1
	}
	if cur == nil && e != nil {
		d.Files = 1
	}
	if e != nil {
		d.Bytes = e.Size
	}
	if cur != nil {
		d.Bytes -= cur.Size
	}
	return d
}

// Usage returns what agent's root holds (the zero Usage for a root that holds nothing or
// does not exist). Usage is live state: a View shows it as of its applied version.
func (v *View) Usage(agent string) Usage {
	if !v.showsRoot(agent) {
		return Usage{}
	}
	u, _ := v.st.usage.Get(agent)
	return u
}

// Quota returns agent's quotas and whether any is set.
func (v *View) Quota(agent string) (Quota, bool) {
	if !v.showsRoot(agent) {
		return Quota{}, false
	}
	return v.st.quotas.Get(agent)
}

// recomputeUsage derives every root's usage from the workbench records and the held
// snapshots: what the maintained usage must always equal (tests), and how a snapshot
// written before usage was kept is brought up to date (Restore).
func (s *state) recomputeUsage() *btree.Map[string, Usage] {
	out := new(btree.Map[string, Usage])
	bump := func(agent string, d Usage) {
		u, _ := out.Get(agent)
		out.Set(agent, u.add(d))
	}
	s.workspaces.Scan(func(_ string, ws *Workspace) bool {
		bump(ws.Agent, Usage{Workbenches: 1, Files: ws.Files, Bytes: ws.Bytes})
		return true
	})
	s.snapshots.Scan(func(_ string, snap *WorkbenchSnapshot) bool {
		if _, held := s.heldSnaps.Get(heldSnapKey(snap.Incarnation, snap.ID)); held {
			bump(snap.Agent, Usage{Snapshots: 1})
		}
		return true
	})
	return out
}

// quotaKeyOK reports whether a snapshot record's key names an agent (a non-empty name
// without NUL): snapshot streams are checked before they replace the state.
func quotaKeyOK(k []byte) bool { return len(k) > 0 && !strings.ContainsRune(string(k), 0) }
