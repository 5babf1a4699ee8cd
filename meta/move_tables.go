package meta

import (
	"slices"
	"strings"
)

// The records of one agent root, table by table: what a move exports, imports and drops.
// Every table of the snapshot stream (snapshot_tables.go) that holds records of a root is
// here once, with the key space the root's records take in it; the snapshot's own codec
// reads and writes them. What is derived (the secondary index, the history and
// compaction sets, the held snapshots, the proposal orders, feed counts) is rebuilt where
// the records land, and the retention queue is rebuilt from the records (a queue item
// names shard-wide sequence numbers, which mean nothing on another shard). Backup holds
// stay with the shard (backup.go): they are the shard's, not a root's.

// MovePosition is a position in a root's records (a table, then a key in it): where an
// export resumes (MoveView.Export) and how far a release or an abort has walked.
type MovePosition struct {
	// Table indexes rootTables.
	Table int `cbor:"1,keyasint,omitempty"`
	// After is the last key handled in the table ("" = none yet).
	After string `cbor:"2,keyasint,omitempty"`
	// Sent is, in an export of MoveView.Split, how many bytes of the record after After
	// the chunks so far carried in parts (move_parts.go; 0: none).
	Sent int64 `cbor:"3,keyasint,omitempty"`
}

// Key spaces of a root's records in a table.
const (
	spaceAgent       = 'a' // the key is the agent
	spaceAgentPrefix = 'A' // agent \x00 …
	spaceUID         = 'u' // the key is the root uid
	spaceUIDPrefix   = 'U' // root uid \x00 …
	spaceInc         = 'i' // u64(incarnation) … for each incarnation of the root
)

// rootTable is one table of a root's records.
type rootTable struct {
	tag   uint8
	name  string
	space byte
	// walkOnly: the table is the shard's own bookkeeping of the move, dropped with the
	// root but never exported.
	walkOnly bool
	ascend   func(st *state, pivot string, fn func(k string, rec snapRecord) bool)
	// drop removes the record at k and what is derived from it.
	drop func(st *state, k string)
}

// fromSnapTable declares the root table of a map table of the snapshot stream; extra,
// when set, also drops what is derived from the record.
func fromSnapTable(tag uint8, space byte, extra func(st *state, k string)) rootTable {
	t := snapTableByTag[tag]
	return rootTable{tag: tag, name: t.name, space: space, ascend: t.ascend,
		drop: func(st *state, k string) {
			if extra != nil {
				extra(st, k)
			}
			t.del(st, k)
		}}
}

// rootTables lists the tables of a root's records in walk order: the tables keyed by
// incarnation first (a release finds the incarnations in the workbench records, which go
// after them), the root record last.
var rootTables = []rootTable{
	fromSnapTable(recPath, spaceInc, func(st *state, k string) {
		if rec, ok := st.paths.Get(k); ok {
			st.indexFile(binaryU64(k[:incarnationKeySize]), keyPath(k), rec.live(), nil)
		}
		st.history.Delete(k)
		st.compactable.Delete(k)
	}),
	fromSnapTable(recDir, spaceInc, nil),
	fromSnapTable(recHold, spaceInc, nil),
	fromSnapTable(recCommit, spaceInc, nil),
	fromSnapTable(recWorkspace, spaceAgentPrefix, nil),
	fromSnapTable(recSnapshot, spaceAgentPrefix, func(st *state, k string) {
		if snap, ok := st.snapshots.Get(k); ok {
			st.heldSnaps.Delete(heldSnapKey(snap.Incarnation, snap.ID))
		}
	}),
	fromSnapTable(recSnapName, spaceAgentPrefix, nil),
	fromSnapTable(recRestore, spaceAgentPrefix, nil),
	fromSnapTable(recProposal, spaceAgentPrefix, func(st *state, k string) {
		if p, ok := st.props.byID.Get(k); ok {
			st.props.unindex(p)
		}
	}),
	fromSnapTable(recDedupe, spaceAgentPrefix, nil),
	fromSnapTable(recDedupeOrder, spaceAgentPrefix, nil),
	fromSnapTable(recDedupeCount, spaceAgent, nil),
	fromSnapTable(recUsage, spaceAgent, nil),
	fromSnapTable(recQuota, spaceAgent, nil),
	fromSnapTable(recRetentionPolicy, spaceUID, nil),
	fromSnapTable(recBlob, spaceUIDPrefix, nil),
	{tag: recFeed, name: "change feed events", space: spaceAgentPrefix,
		ascend: func(st *state, pivot string, fn func(string, snapRecord) bool) {
			st.feed.events.Ascend(pivot, func(k string, e *Event) bool {
				return fn(k, snapRecord{T: recFeed, K: []byte(k), Feed: &feedRecord{Event: e}})
			})
		},
		drop: func(st *state, k string) {
			if e, ok := st.feed.events.Get(k); ok {
				st.feed.events.Delete(k)
				if r, ok := st.feed.roots.Get(e.Agent); ok && r.Count > 0 {
					r.Count--
					st.feed.roots.Set(e.Agent, r)
				}
			}
		}},
	// A root's feed bookkeeping: its floor travels (a read after it is FeedTruncated on
	// the target too); its count is derived from the events.
	{tag: recFeed, name: "change feed floor", space: spaceAgent,
		ascend: func(st *state, pivot string, fn func(string, snapRecord) bool) {
			st.feed.roots.Ascend(pivot, func(k string, r feedRoot) bool {
				fl := r.Floor
				return fn(k, snapRecord{T: recFeed, K: []byte(k), Feed: &feedRecord{Floor: &fl}})
			})
		},
		drop: func(st *state, k string) { st.feed.roots.Delete(k) }},
	{tag: recMoveInc, name: "move incarnations", space: spaceAgentPrefix, walkOnly: true,
		ascend: snapTableByTag[recMoveInc].ascend, drop: func(st *state, k string) { st.moveIncs.Delete(k) }},
	fromSnapTable(recRoot, spaceAgent, nil),
}

// rootSpace is where one root's records are: its agent, its uid and its incarnations.
type rootSpace struct {
	agent, uid string
	incs       []uint64 // ascending
}

// spaceOf returns the key spaces of agent's root with uid: its incarnations are those of
// its workbench records and those an import mapped (move_import.go).
func spaceOf(st *state, agent, uid string) rootSpace {
	sp := rootSpace{agent: agent, uid: uid}
	prefix := agent + "\x00"
	st.workspaces.Ascend(prefix, func(k string, ws *Workspace) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		sp.incs = append(sp.incs, ws.Incarnation)
		return true
	})
	st.moveIncs.Ascend(prefix, func(k string, inc uint64) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		sp.incs = append(sp.incs, inc)
		return true
	})
	slices.Sort(sp.incs)
	sp.incs = slices.Compact(sp.incs)
	return sp
}

// rootRange is a range of keys to ascend: from pivot, while keys start with prefix (exact:
// only the key prefix itself).
type rootRange struct {
	pivot, prefix string
	exact         bool
}

// ranges returns the ranges of the root's records in a table of space, after key after.
func (sp rootSpace) ranges(space byte, after string) []rootRange {
	exact := func(k string) []rootRange {
		if after != "" {
			return nil
		}
		return []rootRange{{pivot: k, prefix: k, exact: true}}
	}
	prefixed := func(p string) []rootRange {
		if after != "" {
			return []rootRange{{pivot: after + "\x00", prefix: p}}
		}
		return []rootRange{{pivot: p, prefix: p}}
	}
	switch space {
	case spaceAgent:
		return exact(sp.agent)
	case spaceUID:
		return exact(sp.uid)
	case spaceAgentPrefix:
		return prefixed(sp.agent + "\x00")
	case spaceUIDPrefix:
		return prefixed(sp.uid + "\x00")
	}
	var out []rootRange
	for _, inc := range sp.incs {
		p := u64(inc)
		switch {
		case after == "" || p > after[:min(len(after), incarnationKeySize)]:
			out = append(out, rootRange{pivot: p, prefix: p})
		case strings.HasPrefix(after, p):
			out = append(out, rootRange{pivot: after + "\x00", prefix: p})
		}
	}
	return out
}

// walkRoot calls fn for the root's records from position pos on, table by table in
// rootTables order (walkOnly tables only when all is set), until fn returns false; the
// record fn refused is not consumed. It returns the position after the last consumed
// record and whether every table was walked.
func walkRoot(st *state, sp rootSpace, pos MovePosition, all bool, fn func(t *rootTable, k string, rec snapRecord) bool) (MovePosition, bool) {
	for ; pos.Table < len(rootTables); pos.Table, pos.After = pos.Table+1, "" {
		t := &rootTables[pos.Table]
		if t.walkOnly && !all {
			continue
		}
		stopped := false
		for _, r := range sp.ranges(t.space, pos.After) {
			t.ascend(st, r.pivot, func(k string, rec snapRecord) bool {
				if r.exact && k != r.prefix || !r.exact && !strings.HasPrefix(k, r.prefix) {
					return false
				}
				if !fn(t, k, rec) {
					stopped = true
					return false
				}
				pos.After = k
				return !r.exact
			})
			if stopped {
				return pos, false
			}
		}
	}
	return pos, true
}
