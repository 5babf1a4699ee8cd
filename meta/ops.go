package meta

import "fmt"

// The op table. Every command op is declared once, in opDefs below, with everything the
// package and its callers know about it:
//
//   - its code (Op, part of the log format: never renumbered) and its name (in errors and
//     logs);
//   - the cluster version a replica needs to apply it (OpVersion, clusterversion.go);
//   - its decoder (the CBOR body of its type, DecodeCommand);
//   - its scope: the agent root it acts on, which decides shard ownership (checkOwner) and
//     scopes idempotency (Header.RequestID), the workbench it acts in or on, which decides
//     what a key bound to one workbench may propose (workbench access.go), and the
//     workbench whose files it changes (ScopeOf);
//   - its apply function, the FSM's deterministic transition (applier.apply): a method of
//     the applier or, through on, of the part of it that owns the op's concern (fsm.go).
//
// A new op adds one defineOp line; checkOpDefs, run when the package loads and by
// TestOpTableDeclaresEveryPart, refuses a definition that lacks any part, so an op can no
// longer compile and then silently skip ownership or idempotency (docs/architecture.md,
// "Adding a metadata op").

// CommandScope is what a command touches.
type CommandScope struct {
	// Agent is the agent root the command acts on. "" only for the shard-wide ops (Tick,
	// backup holds), which no root owns.
	Agent string
	// Workbench is the workbench the command acts in or on ("" for a root-wide or
	// shard-wide command): what a key bound to one workbench must reach.
	Workbench string
	// Files is the workbench whose files or existence the command changes ("" when it
	// writes no file): writes, commits, proposals and decisions, a restore's destination,
	// a workbench delete.
	Files string
}

// opDef declares one op (see the table's comment above).
type opDef struct {
	op      Op
	name    string
	version int
	// body returns the zero value of the op's body type (its Op must be op).
	body   func() Body
	decode func(raw []byte) (Body, error)
	scope  func(Body) CommandScope
	apply  func(*applier, Body) Result
}

// defineOp declares op with body type B. A nil scope or apply leaves that part missing,
// which checkOpDefs refuses.
func defineOp[B Body](op Op, name string, version int, scope func(B) CommandScope, apply func(*applier, B) Result) opDef {
	d := opDef{op: op, name: name, version: version}
	d.body = func() Body {
		var b B
		return b
	}
	d.decode = func(raw []byte) (Body, error) {
		var b B
		err := decMode.Unmarshal(raw, &b)
		return b, err
	}
	if scope != nil {
		d.scope = func(b Body) CommandScope { return scope(b.(B)) }
	}
	if apply != nil {
		d.apply = func(a *applier, b Body) Result { return apply(a, b.(B)) }
	}
	return d
}

// Scope constructors of the table.
func shardWide() CommandScope                   { return CommandScope{} }
func rootWide(agent string) CommandScope        { return CommandScope{Agent: agent} }
func inWorkbench(agent, wb string) CommandScope { return CommandScope{Agent: agent, Workbench: wb} }
func writesFiles(agent, wb string) CommandScope {
	return CommandScope{Agent: agent, Workbench: wb, Files: wb}
}

// moveOp declares a step of a root's move: cluster version 5, acting on its root.
func moveOp[B moveBody](op Op, name string, apply func(*moveApplier, B) Result) opDef {
	return defineOp(op, name, 5, func(c B) CommandScope { return rootWide(c.ref().Agent) }, on(moveOps, apply))
}

// on routes an op to the part of the applier that applies it (applier, fsm.go):
// on(fileOps, (*fileApplier).put) applies a Put with the fileApplier of the command's
// applier.
func on[P any, B Body](part func(*applier) *P, apply func(*P, B) Result) func(*applier, B) Result {
	return func(a *applier, b B) Result { return apply(part(a), b) }
}

// The parts of an applier that apply ops of their own.
func fileOps(a *applier) *fileApplier           { return &a.files }
func lifecycleOps(a *applier) *lifecycleApplier { return &a.life }
func proposalOps(a *applier) *proposalApplier   { return &a.props }
func purgeOps(a *applier) *purgeApplier         { return &a.purge }
func moveOps(a *applier) *moveApplier           { return &a.moves }

// opDefs is the table, in op order. Version 1 ops are those of the first released log;
// version 2 those added up to the change set, version 3 the change set, version 5 the
// moves of roots between shards (ClusterVersion's comment).
var opDefs = []opDef{
	defineOp(OpCreateRoot, "create-root", 1,
		func(c CreateRoot) CommandScope { return rootWide(c.Agent) },
		func(a *applier, c CreateRoot) Result { return a.files.createRoot(c.Agent) }),
	defineOp(OpCreateWorkspace, "create-workspace", 1,
		func(c CreateWorkspace) CommandScope { return inWorkbench(c.Agent, c.Name) },
		on(fileOps, (*fileApplier).createWorkspace)),
	defineOp(OpPut, "put", 1,
		func(c Put) CommandScope { return writesFiles(c.Agent, c.Workspace) },
		on(fileOps, (*fileApplier).put)),
	defineOp(OpAppend, "append", 1,
		func(c Append) CommandScope { return writesFiles(c.Agent, c.Workspace) },
		on(fileOps, (*fileApplier).append)),
	defineOp(OpDelete, "delete", 1,
		func(c Delete) CommandScope { return writesFiles(c.Agent, c.Workspace) },
		on(fileOps, (*fileApplier).delete)),
	defineOp(OpTick, "tick", 1,
		func(Tick) CommandScope { return shardWide() },
		func(*applier, Tick) Result { return Result{} }), // it only advances command time
	defineOp(OpSnapshotMint, "snapshot-mint", 1,
		func(c SnapshotMint) CommandScope { return inWorkbench(c.Agent, c.Workspace) },
		on(lifecycleOps, (*lifecycleApplier).snapshotMint)),
	defineOp(OpSnapshotRenew, "snapshot-renew", 1,
		func(c SnapshotRenew) CommandScope { return inWorkbench(c.Agent, c.Workspace) },
		on(lifecycleOps, (*lifecycleApplier).snapshotRenew)),
	defineOp(OpSnapshotRetire, "snapshot-retire", 1,
		func(c SnapshotRetire) CommandScope { return inWorkbench(c.Agent, c.Workspace) },
		on(lifecycleOps, (*lifecycleApplier).snapshotRetire)),
	defineOp(OpCommit, "commit", 1,
		func(c Commit) CommandScope { return writesFiles(c.Agent, c.Workspace) },
		on(lifecycleOps, (*lifecycleApplier).commit)),
	// A restore reads its source and creates its destination; its later steps name only
	// the operation (workbench checks a bound key against the operation's record).
	defineOp(OpRestoreBegin, "restore-begin", 1,
		func(c RestoreBegin) CommandScope {
			return CommandScope{Agent: c.Agent, Workbench: c.Source, Files: c.Destination}
		},
		on(lifecycleOps, (*lifecycleApplier).restoreBegin)),
	defineOp(OpRestoreCopy, "restore-copy", 1,
		func(c RestoreCopy) CommandScope { return rootWide(c.Agent) },
		on(lifecycleOps, (*lifecycleApplier).restoreCopy)),
	defineOp(OpRestoreFinish, "restore-finish", 1,
		func(c RestoreFinish) CommandScope { return rootWide(c.Agent) },
		on(lifecycleOps, (*lifecycleApplier).restoreFinish)),
	defineOp(OpCompact, "compact", 1,
		func(c Compact) CommandScope { return rootWide(c.Agent) },
		on(fileOps, (*fileApplier).compact)),
	defineOp(OpGCIntent, "gc-intent", 1,
		func(c GCIntent) CommandScope { return rootWide(c.Agent) },
		(*applier).gcIntent),
	defineOp(OpGCDeleted, "gc-deleted", 1,
		func(c GCDeleted) CommandScope { return rootWide(c.Agent) },
		(*applier).gcDeleted),
	defineOp(OpAssignRoot, "assign-root", 1,
		func(c AssignRoot) CommandScope { return rootWide(c.Agent) },
		(*applier).assignRoot),
	defineOp(OpSetQuota, "set-quota", 2,
		func(c SetQuota) CommandScope { return rootWide(c.Agent) },
		(*applier).setQuota),
	defineOp(OpDeleteWorkspace, "delete-workspace", 2,
		func(c DeleteWorkspace) CommandScope { return writesFiles(c.Agent, c.Name) },
		on(purgeOps, (*purgeApplier).deleteWorkspace)),
	defineOp(OpPurgeRoot, "purge-root", 2,
		func(c PurgeRoot) CommandScope { return rootWide(c.Agent) },
		on(purgeOps, (*purgeApplier).purgeRoot)),
	defineOp(OpSetRetention, "set-retention", 2,
		func(c SetRetention) CommandScope { return rootWide(c.Agent) },
		(*applier).setRetention),
	defineOp(OpProposalCreate, "proposal-create", 2,
		func(c ProposalCreate) CommandScope { return writesFiles(c.Agent, c.Workspace) },
		on(proposalOps, (*proposalApplier).proposalCreate)),
	defineOp(OpProposalDecide, "proposal-decide", 2,
		func(c ProposalDecide) CommandScope { return writesFiles(c.Agent, c.Workspace) },
		on(proposalOps, (*proposalApplier).proposalDecide)),
	defineOp(OpChangeSet, "change-set", 3, changeSetScope, on(fileOps, (*fileApplier).changeSet)),
	// Backup holds belong to the shard, not to a root (backup.go).
	defineOp(OpBackupHold, "backup-hold", 2,
		func(BackupHold) CommandScope { return shardWide() },
		(*applier).backupHold),
	defineOp(OpBackupRelease, "backup-release", 2,
		func(BackupRelease) CommandScope { return shardWide() },
		(*applier).backupRelease),
	// Moving a root between shards (move.go): the source's fence, lift and release,
	moveOp(OpMoveFence, "move-fence", (*moveApplier).moveFence),
	moveOp(OpMoveLift, "move-lift", (*moveApplier).moveLift),
	moveOp(OpMoveRelease, "move-release", (*moveApplier).moveRelease),
	// and the target's import (move_import.go).
	moveOp(OpMoveImportBegin, "move-import-begin", (*moveApplier).moveImportBegin),
	moveOp(OpMoveImportChunk, "move-import-chunk", (*moveApplier).moveImportChunk),
	moveOp(OpMoveImportFinish, "move-import-finish", (*moveApplier).moveImportFinish),
	moveOp(OpMoveImportConfirm, "move-import-confirm", (*moveApplier).moveImportConfirm),
	moveOp(OpMoveImportAbort, "move-import-abort", (*moveApplier).moveImportAbort),
	// A walk's steps at once (move_walk.go), version 6.
	defineOp(OpMoveWalk, "move-walk", 6, func(c MoveWalk) CommandScope { return rootWide(c.Agent) }, on(moveOps, (*moveApplier).moveWalk)),
}

// opTable indexes opDefs by op.
var opTable = mustOpTable(opDefs)

func mustOpTable(defs []opDef) *[256]*opDef {
	if err := checkOpDefs(defs); err != nil {
		panic(err)
	}
	var t [256]*opDef
	for i := range defs {
		t[defs[i].op] = &defs[i]
	}
	return &t
}

// checkOpDefs refuses a table in which an op lacks a part, is declared twice, needs a
// cluster version this binary does not apply, or declares a body of another op.
func checkOpDefs(defs []opDef) error {
	seen := map[Op]bool{}
	names := map[string]bool{}
	for _, d := range defs {
		switch {
		case d.op == 0:
			return fmt.Errorf("meta: an op is declared with code 0")
		case seen[d.op]:
			return fmt.Errorf("meta: op %d is declared twice", d.op)
		case d.name == "" || names[d.name]:
			return fmt.Errorf("meta: op %d has an empty or repeated name %q", d.op, d.name)
		case d.version < 1 || d.version > ClusterVersion:
			return fmt.Errorf("meta: op %s needs cluster version %d, outside 1..%d", d.name, d.version, ClusterVersion)
		case d.body == nil || d.decode == nil:
			return fmt.Errorf("meta: op %s has no body type", d.name)
		case d.body().Op() != d.op:
			return fmt.Errorf("meta: op %s declares a body of op %d", d.name, d.body().Op())
		case d.scope == nil:
			return fmt.Errorf("meta: op %s has no scope (the root it acts on decides ownership and idempotency)", d.name)
		case d.apply == nil:
			return fmt.Errorf("meta: op %s has no apply function", d.name)
		}
		seen[d.op], names[d.name] = true, true
	}
	return nil
}

// ScopeOf returns what command b touches (CommandScope{} for a body of an unknown op).
func ScopeOf(b Body) CommandScope {
	if d := opTable[b.Op()]; d != nil {
		return d.scope(b)
	}
	return CommandScope{}
}

// AgentOf returns the agent root a command body acts on ("" for a shard-wide op).
func AgentOf(b Body) string { return ScopeOf(b).Agent }

// FilesWorkspace returns the workbench whose files or existence command b changes
// (CommandScope.Files).
func FilesWorkspace(b Body) string { return ScopeOf(b).Files }

func opName(op Op) string {
	if d := opTable[op]; d != nil {
		return d.name
	}
	return fmt.Sprintf("op-%d", op)
}
