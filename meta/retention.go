package meta

import (
	"strings"
	"time"
)

// History retention (issue 16, deliverable 1): how many superseded versions of a path stay
// readable, per agent root.
//
// A path's chain (newest first, its live element at position 0) keeps, besides what holds
// pin (snapshots, commits, restores, docs/architecture.md#the-metadata-core):
//
//   - the newest Versions elements of the path's current life (while the head is a body:
//     the elements above its newest tombstone), and
//   - every element superseded less than Age ago (command time), whichever keeps more,
//   - but never more than MaxVersions elements by retention alone (holds may keep more).
//
// A deleted path (its head a tombstone) keeps its history by Age only, so deleting a file
// frees its bodies once Age has passed (the count rule would otherwise keep them for
// ever); the tombstone stays while anything older is kept.
//
// What retention keeps is a prefix of the path's full history: each rule only ever lets go
// of an element (its position and its age grow), so once an element is outside the
// retained prefix it never comes back; prune walks the chain and stops applying the rules
// at the first element they let go (anything older is kept only by a hold). Lowering a
// root's policy re-prunes the root's paths in bounded retention steps (SetRetention);
// raising it keeps what is still there, nothing that was already dropped returns.
//
// Memory: every kept element costs one chain element (40 bytes) and one Entry (its
// attributes, hash state and fields; a few hundred bytes), and keeps its segments'
// blobs referenced. The versions an append makes share one segment list (records.go), so
// a hot append log of MaxVersions versions costs MaxVersions Entries, not MaxVersions
// copies of its list; whole-body overwrites each hold their own segments. With the
// defaults a path costs at most about 1,000 × ~300 bytes = ~300 KB of metadata, and a
// write copies its path's chain once (O(kept) per write, 40 KB at the cap: an append to a
// log at the cap applies in ~45 µs against ~8 µs without history,
// BenchmarkAppendUnderHistoryRetention): the cap is what keeps both bounded for a log
// appended to thousands of times a day.
type Retention struct {
	// Versions is how many of the newest elements of a path's current life stay
	// readable, the live one included (1: only the live element). At least 1.
	Versions int `cbor:"1,keyasint"`
	// Age keeps every element superseded less than Age ago, command time. 0: none by age.
	Age time.Duration `cbor:"2,keyasint,omitempty"`
	// MaxVersions caps the elements retention keeps per path, at least Versions and at
	// most MaxRetentionVersions.
	MaxVersions int `cbor:"3,keyasint"`
}

// Retention defaults and bounds.
const (
	DefaultHistoryVersions    = 100
	DefaultHistoryAge         = 30 * 24 * time.Hour
	DefaultHistoryMaxVersions = 1000
	// MaxRetentionVersions bounds Versions and MaxVersions (~3 MB of metadata per path).
	MaxRetentionVersions = 10_000
	// MaxRetentionAge bounds Age (ten years).
	MaxRetentionAge = 10 * 365 * 24 * time.Hour
)

// DefaultRetention is the node default history retention: the newest 100 versions or 30
// days, whichever keeps more, at most 1,000 versions per path.
func DefaultRetention() Retention {
	return Retention{Versions: DefaultHistoryVersions, Age: DefaultHistoryAge, MaxVersions: DefaultHistoryMaxVersions}
}

// normalized completes r: a zero MaxVersions takes the default cap (at least Versions).
func (r Retention) normalized() Retention {
	if r.MaxVersions == 0 {
		r.MaxVersions = max(DefaultHistoryMaxVersions, r.Versions)
	}
	return r
}

// Validate checks a complete policy; errors name the field ("versions", "age",
// "max_versions") and the rule.
func (r Retention) Validate() *Error {
	switch {
	case r.Versions < 1 || r.Versions > MaxRetentionVersions:
		return invalidArg("versions", "must be between 1 and %d, got %d", MaxRetentionVersions, r.Versions)
	case r.Age < 0 || r.Age > MaxRetentionAge:
		return invalidArg("age", "must be between 0 and %s, got %s", MaxRetentionAge, r.Age)
	case r.MaxVersions < r.Versions || r.MaxVersions > MaxRetentionVersions:
		return invalidArg("max_versions", "must be between versions (%d) and %d, got %d", r.Versions, MaxRetentionVersions, r.MaxVersions)
	}
	return nil
}

// SetRetention sets the history retention of an agent root (an admin's command), creating
// the root when it does not exist. A zero Retention (Versions 0) removes the root's own
// policy: the node default applies again. A zero MaxVersions takes the default cap (at
// least Versions). The root's paths are re-pruned under the new policy in bounded
// retention steps that start with this command (nothing waits for the next write).
// Result.Retention is the policy that applies to the root afterwards;
// Result.RetentionDefault says it is the node default.
type SetRetention struct {
	Agent     string    `cbor:"1,keyasint"`
	Retention Retention `cbor:"2,keyasint"`
}

func (SetRetention) Op() Op { return OpSetRetention }

// retentionOf returns the policy of the root with uid rootUID.
func (a *fileApplier) retentionOf(rootUID string) Retention {
	if r, ok := a.st.retentions.Get(rootUID); ok {
		return r
	}
	return a.opts.History
}

func (a *applier) setRetention(c SetRetention) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	r := c.Retention
	reset := r == Retention{}
	if !reset {
		r = r.normalized()
		if err := r.Validate(); err != nil {
			return Result{Err: err}
		}
	}
	root := a.files.ensureRoot(c.Agent)
	if reset {
		a.st.retentions.Delete(root.UID)
	} else {
		a.st.retentions.Set(root.UID, r)
	}
	a.scheduleRootReprune(root.UID, c.Agent, "")
	eff := a.files.retentionOf(root.UID)
	return Result{RootUID: root.UID, Retention: &eff, RetentionDefault: reset}
}

// scheduleRootReprune queues the step that re-prunes the workbenches of agent after the
// name after ("" = from the first).
func (a *applier) scheduleRootReprune(rootUID, agent, after string) {
	s := a.st
	s.seq++
	s.retention.Set(retentionKey(s.nowMs, s.seq), string(rune(retainRootReprune))+rootUID+"\x00"+agent+"\x00"+after)
}

// rootRepruneStep schedules the history re-prune (retainReprune, itself bounded) of up to
// repruneBatch workbench incarnations of one root and queues the rest.
func (a *applier) rootRepruneStep(v string) {
	uid, rest, ok := strings.Cut(v, "\x00")
	if !ok {
		return
	}
	agent, after, ok := strings.Cut(rest, "\x00")
	if !ok {
		return
	}
	s := a.st
	prefix := agent + "\x00"
	pivot := prefix
	if after != "" {
		pivot = prefix + after + "\x00"
	}
	n, last, more := 0, "", false
	s.workspaces.Ascend(pivot, func(k string, ws *Workspace) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if n == repruneBatch {
			more = true
			return false
		}
		s.seq++
		s.retention.Set(retentionKey(s.nowMs, s.seq), string(rune(retainReprune))+uid+"\x00"+u64(ws.Incarnation))
		n, last = n+1, ws.Name
		return true
	})
	if more {
		a.scheduleRootReprune(uid, agent, last)
	}
}

// Retention returns the history retention that applies to agent's root and whether it is
// the root's own policy (false: the node default, also for a root that does not exist or
// whose root-wide records the view does not show: Only).
func (v *View) Retention(agent string) (Retention, bool) {
	if root, ok := v.st.roots.Get(agent); ok && v.showsRoot(agent) {
		if r, ok := v.st.retentions.Get(root.UID); ok {
			return r, true
		}
	}
	return v.history, false
}
