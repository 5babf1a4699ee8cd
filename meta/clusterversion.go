package meta

// Cluster versions gate commands during a rolling upgrade (docs/architecture.md#the-metadata-core). A replica of an
// older release answers a command whose op it does not know with an error and applies
// nothing, while a replica of the newer release applies it: their states would diverge.
// So a command whose op is newer than the oldest release among a shard's replicas must
// not be proposed at all. OpVersion says which cluster version an op needs; every node
// publishes the ClusterVersion of its binary (shard/control NodeInfo), and the node that
// proposes a command checks the shard's members first (shard/host). The FSM itself does
// not gate: it applies every op it knows, so replicas of one release agree whatever their
// history, and a log replayed from its start applies as it did.

// CodeUpgradeInProgress: a command was refused before it was proposed because a replica
// of its shard runs a release that cannot apply it (retryable; never an FSM answer).
const CodeUpgradeInProgress Code = "UpgradeInProgress"

// ClusterVersion is the newest cluster version this binary applies: 10.
//
//   - 1: the ops of the first released log (Op 1 to 17, OpAssignRoot): files,
//     snapshots, commits, restores, compaction, GC, placement.
//   - 2: quotas (OpSetQuota), workbench delete and root purge (OpDeleteWorkspace,
//     OpPurgeRoot), history retention (OpSetRetention), backup holds (OpBackupHold,
//     OpBackupRelease), proposals (OpProposalCreate, OpProposalDecide).
//   - 3: the change set (OpChangeSet, changeset.go: rewind, and merge after it). Binaries
//     of version 2 run in clusters built from main without it and cannot decode it, so it
//     needs a version of its own rather than joining 2.
//   - 4: no new op; the node follows a growing shard count (shard/control/grow.go): a node
//     of version 3 reads the count once at start and would refuse the roots placed on
//     shards added after, so adding shards waits until every node publishes 4.
//   - 5: moving a root between shards (OpMoveFence to OpMoveImportAbort, move.go), and
//     the version shift a finished import may raise (a replica of version 4 would keep
//     version = log index and disagree on every later generation).
//   - 6: a move's pre-copy (move_delta.go): MoveImportChunk.Delta, chunks that replace
//     and delete imported records (a field, MoveDeltaVersion); and OpMoveWalk, a move
//     walk's steps at once (move_walk.go).
//   - 7: a restore begun again (RestoreBegin.Again, a field, RestoreAgainVersion): a
//     replica of version 6 would answer the first operation's replay instead.
//   - 8: a backup hold's destination (BackupHold.Dest, a field, BackupDestVersion): a
//     replica of version 7 would ignore it and accept a second backup's hold under the
//     same id, which a replica of 8 refuses.
//   - 9: a cap on a workbench's live files (Put.MaxWorkbenchFiles, a field,
//     WorkbenchFilesVersion): a replica of version 8 cannot decode the put (its decoder
//     refuses an unknown key) while a replica of 9 applies it.
//   - 10: a move's record larger than a chunk, carried in parts (MoveImportChunk.Part, a
//     field, MovePartsVersion; move_parts.go): a replica of version 9 would decode a part
//     without the field and refuse its bytes as malformed records while a replica of 10
//     stages them.
//
// Every new op must be listed in OpVersion (a test fails otherwise); a release that adds
// ops raises ClusterVersion for them. A field added to the command of an older op is
// gated the same way (CommandVersion): a replica of the older release decodes the command
// without it and applies something else, silently. Version 2 has such a field:
// SnapshotMint.Pool (the snapshots of OpenWOP runs count against their own cap).
const ClusterVersion = 10

// OpVersion returns the cluster version a command of op needs: every replica of the shard
// must run a binary of at least that ClusterVersion before the command is proposed. An op
// this binary does not know needs a version above ClusterVersion.
func OpVersion(op Op) int {
	if d := opTable[op]; d != nil {
		return d.version
	}
	return ClusterVersion + 1
}

// CommandVersion returns the cluster version command b needs: its op's (OpVersion), or a
// newer one when b sets a field that a release of the op's version does not decode (it
// ignores the field and applies the command without it, so its state would diverge from
// the replicas that apply the field). The gate (shard/host) checks this, not OpVersion.
func CommandVersion(b Body) int {
	v := OpVersion(b.Op())
	if f, ok := b.(fieldVersioned); ok {
		v = max(v, f.fieldVersion())
	}
	return v
}

// fieldVersioned is a command whose fields need a newer cluster version than its op.
type fieldVersioned interface {
	fieldVersion() int
}

// fieldVersion: a snapshot of a pool other than the workbench's needs version 2; the
// first release (41411e4) has no pools and would count it against the workbench's cap and
// record it as the workbench's.
func (c SnapshotMint) fieldVersion() int {
	if c.Pool != SnapshotPoolWorkbench {
		return 2
	}
	return 1
}

// RestoreAgainVersion is the cluster version of RestoreBegin.Again: a replica of version 6
// ignores the field and answers a completed operation's replay, where a replica of 7
// begins the operation again when its destination is gone.
const RestoreAgainVersion = 7

func (c RestoreBegin) fieldVersion() int {
	if c.Again {
		return RestoreAgainVersion
	}
	return 1
}

// WorkbenchFilesVersion is the cluster version of Put.MaxWorkbenchFiles: a replica of
// version 8 fails to decode a put that carries it and applies nothing, where a replica of
// 9 applies the put (or refuses it at the cap). A proposer that meets the gate's refusal
// writes without the cap (workbench.Writes.Write).
const WorkbenchFilesVersion = 9

func (c Put) fieldVersion() int {
	if c.MaxWorkbenchFiles != 0 {
		return WorkbenchFilesVersion
	}
	return 1
}
