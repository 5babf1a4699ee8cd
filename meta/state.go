package meta

import (
	"encoding/binary"
	"strings"

	"github.com/tidwall/btree"
)

// state is the whole replicated state of one shard. Every map is a copy-on-write B-tree,
// so copy() is O(1) and a copy stays consistent while the original changes.
type state struct {
	version         uint64 // shard version: the last applied Raft index
	nowMs           int64  // command time: max of every command's TimeMs so far
	nextRootUID     uint64
	nextIncarnation uint64
	seq             uint64 // orders dedupe records and retention items
	nextListID      uint64 // names segment lists (Entry.ListID)
	// shift is what the shard version adds to the Raft log index: 0 until a root moves in
	// whose versions the log has not reached (MoveImportFinish, move_import.go). It only
	// grows, so versions stay strictly increasing.
	shift uint64

	roots      *btree.Map[string, *Root]         // agent
	workspaces *btree.Map[string, *Workspace]    // agent \x00 name
	paths      *btree.Map[string, *pathRecord]   // pathKey(incarnation, path)
	dirs       *btree.Map[string, dirRecord]     // pathKey(incarnation, dir); dir "" = the top
	blobs      *btree.Map[string, blobRef]       // root uid \x00 digest
	dedupe     *btree.Map[string, *dedupeRecord] // agent \x00 principal \x00 request id
	// dedupeOrder orders each root's dedupe records oldest first: agent \x00 seq → dedupe key.
	dedupeOrder *btree.Map[string, string]
	dedupeCount *btree.Map[string, int64] // agent → number of dedupe records
	// retention holds deferred work ordered by due time: due \x00 seq → item (retentionItem).
	retention *btree.Map[string, string]
	// snapshots holds every workbench snapshot: agent \x00 u64(id).
	snapshots *btree.Map[string, *WorkbenchSnapshot]
	// snapNames maps agent \x00 workbench \x00 name → the newest snapshot id minted with it.
	snapNames *btree.Map[string, uint64]
	// heldSnaps is the set of snapshots that hold history (neither retired nor reaped):
	// u64(incarnation) u64(id). Derived from snapshots, rebuilt on restore; a mint counts
	// its workbench's held snapshots here against SnapshotMint.MaxHeld.
	heldSnaps *btree.Map[string, struct{}]
	// holds pins history: u64(incarnation) u64(version) → number of holders (alive
	// snapshots, commits, restores in progress). Pruning keeps, for every hold version V,
	// the newest chain element with version ≤ V.
	holds *btree.Map[string, int64]
	// commits holds sealed commits: u64(incarnation) identity.
	commits *btree.Map[string, *CommitRecord]
	// restores holds restore operations: agent \x00 operation id.
	restores *btree.Map[string, *RestoreOp]
	// history is the set of path keys whose chain holds more than a live entry (derived
	// from paths, rebuilt on restore): what a released hold must re-prune.
	history *btree.Map[string, struct{}]
	// compactable is the set of path keys whose live entry is a compaction candidate
	// (derived from paths, rebuilt on restore).
	compactable *btree.Map[string, struct{}]
	// index is the secondary index of file fields (index.go). It is derived from paths:
	// never part of a Raft snapshot, rebuilt on restore.
	index *btree.Map[string, struct{}]
	// backups holds the backup holds by backup id (backup.go).
	backups *btree.Map[string, BackupHoldRecord]
	// usage is what each agent root holds (quota.go): agent → Usage, maintained by every
	// command that changes it, equal to a recomputation from workspaces and heldSnaps.
	usage *btree.Map[string, Usage]
	// quotas are the admin-set limits of agent roots: agent → Quota (quota.go).
	quotas *btree.Map[string, Quota]
	// retentions are the admin-set history retention policies: root uid → Retention
	// (retention.go); a root without one follows Options.History.
	retentions *btree.Map[string, Retention]
	// props are the proposals and what is derived from them (proposal.go).
	props proposalTrees
	// feed is the change feed of every agent root (feed.go).
	feed *feedState
	// moves are the moves of agent roots this shard takes part in: agent → record
	// (move.go).
	moves *btree.Map[string, *MoveRecord]
	// moveIncs maps an imported root's incarnations to this shard's: agent \x00
	// u64(source incarnation) → incarnation (move_import.go).
	moveIncs *btree.Map[string, uint64]
}

func newState() *state {
	return &state{
		roots:       new(btree.Map[string, *Root]),
		workspaces:  new(btree.Map[string, *Workspace]),
		paths:       new(btree.Map[string, *pathRecord]),
		dirs:        new(btree.Map[string, dirRecord]),
		blobs:       new(btree.Map[string, blobRef]),
		dedupe:      new(btree.Map[string, *dedupeRecord]),
		dedupeOrder: new(btree.Map[string, string]),
		dedupeCount: new(btree.Map[string, int64]),
		retention:   new(btree.Map[string, string]),
		index:       new(btree.Map[string, struct{}]),
		snapshots:   new(btree.Map[string, *WorkbenchSnapshot]),
		snapNames:   new(btree.Map[string, uint64]),
		heldSnaps:   new(btree.Map[string, struct{}]),
		holds:       new(btree.Map[string, int64]),
		commits:     new(btree.Map[string, *CommitRecord]),
		restores:    new(btree.Map[string, *RestoreOp]),
		history:     new(btree.Map[string, struct{}]),
		compactable: new(btree.Map[string, struct{}]),
		backups:     newBackupHolds(),
		usage:       new(btree.Map[string, Usage]),
		quotas:      new(btree.Map[string, Quota]),
		retentions:  new(btree.Map[string, Retention]),
		props:       newProposalTrees(),
		feed:        newFeedState(),
		moves:       new(btree.Map[string, *MoveRecord]),
		moveIncs:    new(btree.Map[string, uint64]),
	}
}

// copy returns an O(1) copy-on-write copy of s.
func (s *state) copy() *state {
	c := *s
	c.roots = s.roots.Copy()
	c.workspaces = s.workspaces.Copy()
	c.paths = s.paths.Copy()
	c.dirs = s.dirs.Copy()
	c.blobs = s.blobs.Copy()
	c.dedupe = s.dedupe.Copy()
	c.dedupeOrder = s.dedupeOrder.Copy()
	c.dedupeCount = s.dedupeCount.Copy()
	c.retention = s.retention.Copy()
	c.index = s.index.Copy()
	c.snapshots = s.snapshots.Copy()
	c.snapNames = s.snapNames.Copy()
	c.heldSnaps = s.heldSnaps.Copy()
	c.holds = s.holds.Copy()
	c.commits = s.commits.Copy()
	c.restores = s.restores.Copy()
	c.history = s.history.Copy()
	c.compactable = s.compactable.Copy()
	c.backups = s.backups.Copy()
	c.usage = s.usage.Copy()
	c.quotas = s.quotas.Copy()
	c.retentions = s.retentions.Copy()
	c.props = s.props.copy()
	c.feed = s.feed.copy()
	c.moves = s.moves.Copy()
	c.moveIncs = s.moveIncs.Copy()
	return &c
}

func workspaceKey(agent, name string) string { return agent + "\x00" + name }

func heldSnapKey(incarnation, id uint64) string { return u64(incarnation) + u64(id) }

// rebuildHeldSnapshots recomputes heldSnaps from snapshots (after a restore).
func (s *state) rebuildHeldSnapshots() {
	s.heldSnaps = new(btree.Map[string, struct{}])
	s.snapshots.Scan(func(_ string, snap *WorkbenchSnapshot) bool {
		if snap.holdsHistory() {
			s.heldSnaps.Set(heldSnapKey(snap.Incarnation, snap.ID), struct{}{})
		}
		return true
	})
}

func blobKey(rootUID string, d Digest) string { return rootUID + "\x00" + string(d[:]) }

func dedupeKey(agent, principal, id string) string {
	return agent + "\x00" + principal + "\x00" + id
}

func u64(v uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return string(b[:])
}

func retentionKey(dueMs int64, seq uint64) string {
	return u64(uint64(dueMs)) + u64(seq)
}

// Retention item kinds.
const (
	retainPath    = 'p' // value: 'p' root uid \x00 path key — re-prune the path's chain
	retainDedupe  = 'd' // value: 'd' dedupe key — drop the dedupe record if expired
	retainLease   = 'l' // value: 'l' snapshot key — reap the snapshot if its grace passed
	retainReprune = 'h' // value: 'h' root uid \x00 resume key — re-prune an incarnation's history
	retainRestore = 'r' // value: 'r' restore key — drop a finished restore record
	retainPurge   = 'x' // value: 'x' purgeItem — the next step of a deleted workbench's purge
	// retainRootReprune: 'o' root uid \x00 agent \x00 workbench name — schedule the
	// re-prune of a root's workbenches after that name (a retention policy changed).
	retainRootReprune = 'o'
	// retainMove: 'm' agent — the next bounded step of the walk a root's move record
	// runs (move_walk.go).
	retainMove = 'm'
)

func splitRetentionItem(v string) (kind byte, a, b string) {
	kind = v[0]
	rest := v[1:]
	if i := strings.IndexByte(rest, 0); i >= 0 && (kind == retainPath || kind == retainReprune) {
		return kind, rest[:i], rest[i+1:]
	}
	return kind, rest, ""
}

// keyBatch returns the keys of m that start with prefix, from pivot on in key order, up to
// limit of them, and whether more follow: one bounded step of a walk that resumes after
// its last key.
func keyBatch[V any](m *btree.Map[string, V], pivot, prefix string, limit int) (keys []string, more bool) {
	m.Ascend(pivot, func(k string, _ V) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if len(keys) == limit {
			more = true
			return false
		}
		keys = append(keys, k)
		return true
	})
	return keys, more
}

func snapshotKey(agent string, id uint64) string { return agent + "\x00" + u64(id) }

func snapNameKey(agent, ws, name string) string { return agent + "\x00" + ws + "\x00" + name }

func holdKey(inc, version uint64) string { return u64(inc) + u64(version) }

func commitKey(inc uint64, identity string) string { return u64(inc) + identity }

func restoreKey(agent, id string) string { return agent + "\x00" + id }

// newListID returns a fresh segment list id.
func (s *state) newListID() uint64 {
	s.nextListID++
	return s.nextListID
}
