package meta

import (
	"fmt"

	"github.com/tidwall/btree"
)

// The snapshot table. Every table of the Raft snapshot stream is declared once, in
// snapTables below: its record tag (part of the format: never renumbered), the snapshot
// format that added it, how its records are written from a state and how one is read
// back. Snapshot.writeFormat writes the tables in this order (equal states write equal
// bytes); readSnapshot reads each record through the table of its tag. A new table is
// one entry here, its state field (state.go) and, when older readers would fail on it or
// drop it, a new SnapshotFormat and a case in formatFor (docs/architecture.md,
// "Adding a metadata op").

// snapTable declares one table of the snapshot stream.
type snapTable struct {
	tag  uint8
	name string
	// since is the format that added the table: it is written only in that format or a
	// later one (formatFor picks a format that holds the state).
	since uint16
	// write emits the table's records in key order, each with its key k (rec.K unset);
	// rec is the writer's to reuse once emit returned.
	write func(st *state, emit func(k string, rec *snapRecord) bool)
	// read stores one record; false when its value is missing or malformed.
	read func(st *state, rec snapRecord) bool
	// ascend visits the table's records from pivot on, in key order, until fn returns
	// false; del removes one key. Both nil for the feed, which move_tables.go walks
	// itself (a root's records of one table: MoveView.Export and the move's walks).
	ascend func(st *state, pivot string, fn func(k string, rec snapRecord) bool)
	del    func(st *state, k string)
}

// mapTable declares the table of one B-tree map of the state: set stores a value in a
// record, get takes it out (false: missing or malformed).
func mapTable[V any](tag uint8, name string, since uint16, m func(*state) *btree.Map[string, V],
	set func(*snapRecord, V), get func(rec snapRecord) (V, bool)) snapTable {
	return snapTable{tag: tag, name: name, since: since,
		write: func(st *state, emit func(string, *snapRecord) bool) {
			var rec snapRecord // one for the table: a snapshot allocates nothing per record
			m(st).Scan(func(k string, v V) bool {
				rec = snapRecord{T: tag}
				set(&rec, v)
				return emit(k, &rec)
			})
		},
		read: func(st *state, rec snapRecord) bool {
			v, ok := get(rec)
			if ok {
				m(st).Set(string(rec.K), v)
			}
			return ok
		},
		ascend: func(st *state, pivot string, fn func(string, snapRecord) bool) {
			m(st).Ascend(pivot, func(k string, v V) bool {
				rec := snapRecord{T: tag, K: []byte(k)}
				set(&rec, v)
				return fn(k, rec)
			})
		},
		del: func(st *state, k string) { m(st).Delete(k) },
	}
}

// snapTables is the table, in the order the stream writes it.
var snapTables = []snapTable{
	mapTable(recRoot, "roots", 1, func(st *state) *btree.Map[string, *Root] { return st.roots },
		func(r *snapRecord, v *Root) { r.Root = v },
		func(r snapRecord) (*Root, bool) { return r.Root, r.Root != nil }),
	mapTable(recWorkspace, "workspaces", 1, func(st *state) *btree.Map[string, *Workspace] { return st.workspaces },
		func(r *snapRecord, v *Workspace) { r.Workspace = v },
		func(r snapRecord) (*Workspace, bool) { return r.Workspace, r.Workspace != nil }),
	mapTable(recPath, "paths", 1, func(st *state) *btree.Map[string, *pathRecord] { return st.paths },
		func(r *snapRecord, v *pathRecord) { r.Path = v },
		func(r snapRecord) (*pathRecord, bool) { return r.Path, r.Path != nil }),
	mapTable(recDir, "dirs", 1, func(st *state) *btree.Map[string, dirRecord] { return st.dirs },
		func(r *snapRecord, v dirRecord) { r.Dir = &v },
		func(r snapRecord) (dirRecord, bool) { return deref(r.Dir) }),
	mapTable(recBlob, "blobs", 1, func(st *state) *btree.Map[string, blobRef] { return st.blobs },
		func(r *snapRecord, v blobRef) { r.Blob = &v },
		func(r snapRecord) (blobRef, bool) { return deref(r.Blob) }),
	mapTable(recDedupe, "dedupe", 1, func(st *state) *btree.Map[string, *dedupeRecord] { return st.dedupe },
		func(r *snapRecord, v *dedupeRecord) { r.Dedupe = v },
		func(r snapRecord) (*dedupeRecord, bool) { return r.Dedupe, r.Dedupe != nil }),
	mapTable(recDedupeOrder, "dedupe order", 1, func(st *state) *btree.Map[string, string] { return st.dedupeOrder },
		func(r *snapRecord, v string) { r.S = []byte(v) },
		func(r snapRecord) (string, bool) { return string(r.S), true }),
	mapTable(recDedupeCount, "dedupe counts", 1, func(st *state) *btree.Map[string, int64] { return st.dedupeCount },
		func(r *snapRecord, v int64) { r.N = v },
		func(r snapRecord) (int64, bool) { return r.N, true }),
	mapTable(recRetention, "retention queue", 1, func(st *state) *btree.Map[string, string] { return st.retention },
		func(r *snapRecord, v string) { r.S = []byte(v) },
		func(r snapRecord) (string, bool) { return string(r.S), len(r.S) > 0 }),
	mapTable(recSnapshot, "snapshots", 1, func(st *state) *btree.Map[string, *WorkbenchSnapshot] { return st.snapshots },
		func(r *snapRecord, v *WorkbenchSnapshot) { r.Snap = v },
		func(r snapRecord) (*WorkbenchSnapshot, bool) { return r.Snap, r.Snap != nil }),
	mapTable(recSnapName, "snapshot names", 1, func(st *state) *btree.Map[string, uint64] { return st.snapNames },
		func(r *snapRecord, v uint64) { r.N = int64(v) },
		func(r snapRecord) (uint64, bool) { return uint64(r.N), true }),
	mapTable(recHold, "holds", 1, func(st *state) *btree.Map[string, int64] { return st.holds },
		func(r *snapRecord, v int64) { r.N = v },
		func(r snapRecord) (int64, bool) { return r.N, r.N > 0 }),
	mapTable(recCommit, "commits", 1, func(st *state) *btree.Map[string, *CommitRecord] { return st.commits },
		func(r *snapRecord, v *CommitRecord) { r.Commit = v },
		func(r snapRecord) (*CommitRecord, bool) { return r.Commit, r.Commit != nil }),
	mapTable(recRestore, "restores", 1, func(st *state) *btree.Map[string, *RestoreOp] { return st.restores },
		func(r *snapRecord, v *RestoreOp) { r.Restore = v },
		func(r snapRecord) (*RestoreOp, bool) { return r.Restore, r.Restore != nil }),
	mapTable(recBackupHold, "backup holds", 2, func(st *state) *btree.Map[string, BackupHoldRecord] { return st.backups },
		func(r *snapRecord, v BackupHoldRecord) { r.Backup = &v },
		func(r snapRecord) (BackupHoldRecord, bool) { return deref(r.Backup) }),
	// Format 1 has no usage records: a format-1 stream restores with its usage recomputed.
	mapTable(recUsage, "usage", 2, func(st *state) *btree.Map[string, Usage] { return st.usage },
		func(r *snapRecord, v Usage) { r.Usage = &v },
		func(r snapRecord) (Usage, bool) { return derefKeyed(r.Usage, r.K) }),
	mapTable(recQuota, "quotas", 2, func(st *state) *btree.Map[string, Quota] { return st.quotas },
		func(r *snapRecord, v Quota) { r.Quota = &v },
		func(r snapRecord) (Quota, bool) { return derefKeyed(r.Quota, r.K) }),
	mapTable(recRetentionPolicy, "retention policies", 3, func(st *state) *btree.Map[string, Retention] { return st.retentions },
		func(r *snapRecord, v Retention) { r.Retention = &v },
		func(r snapRecord) (Retention, bool) {
			v, ok := derefKeyed(r.Retention, r.K)
			return v, ok && v.Validate() == nil
		}),
	mapTable(recProposal, "proposals", 3, func(st *state) *btree.Map[string, *Proposal] { return st.props.byID },
		func(r *snapRecord, v *Proposal) { r.Proposal = v },
		func(r snapRecord) (*Proposal, bool) { return r.Proposal, r.Proposal != nil }),
	mapTable(recMove, "moves", 4, func(st *state) *btree.Map[string, *MoveRecord] { return st.moves },
		func(r *snapRecord, v *MoveRecord) { r.Move = v },
		func(r snapRecord) (*MoveRecord, bool) { return r.Move, r.Move != nil && r.Move.Agent == string(r.K) }),
	mapTable(recMoveInc, "move incarnations", 4, func(st *state) *btree.Map[string, uint64] { return st.moveIncs },
		func(r *snapRecord, v uint64) { r.N = int64(v) },
		func(r snapRecord) (uint64, bool) { return uint64(r.N), r.N > 0 }),
	{tag: recFeed, name: "change feed", since: 3,
		write: func(st *state, emit func(string, *snapRecord) bool) { st.feed.writeFeed(emit) },
		read:  func(st *state, rec snapRecord) bool { return st.feed.readFeed(rec.K, rec.Feed) }},
}

// snapTableByTag indexes snapTables by tag.
var snapTableByTag = mustSnapTables(snapTables)

func mustSnapTables(tables []snapTable) map[uint8]*snapTable {
	if err := checkSnapTables(tables); err != nil {
		panic(err)
	}
	m := make(map[uint8]*snapTable, len(tables))
	for i := range tables {
		m[tables[i].tag] = &tables[i]
	}
	return m
}

// checkSnapTables refuses a table declared twice, on the end tag, without a writer or a
// reader, or added by a format this binary does not write.
func checkSnapTables(tables []snapTable) error {
	seen := map[uint8]bool{}
	for _, t := range tables {
		switch {
		case t.tag == recEnd:
			return fmt.Errorf("meta: snapshot table %q uses the end tag", t.name)
		case seen[t.tag]:
			return fmt.Errorf("meta: snapshot tag %d is declared twice", t.tag)
		case t.name == "":
			return fmt.Errorf("meta: snapshot tag %d has no name", t.tag)
		case t.since < 1 || t.since > SnapshotFormat:
			return fmt.Errorf("meta: snapshot table %q is added by format %d, outside 1..%d", t.name, t.since, SnapshotFormat)
		case t.write == nil:
			return fmt.Errorf("meta: snapshot table %q has no writer", t.name)
		case t.read == nil:
			return fmt.Errorf("meta: snapshot table %q has no reader", t.name)
		}
		seen[t.tag] = true
	}
	return nil
}

// deref returns *p and whether p was set.
func deref[V any](p *V) (V, bool) {
	if p == nil {
		var zero V
		return zero, false
	}
	return *p, true
}

// derefKeyed is deref for the tables keyed by an agent root or root uid (quotaKeyOK).
func derefKeyed[V any](p *V, k []byte) (V, bool) {
	v, ok := deref(p)
	return v, ok && quotaKeyOK(k)
}
