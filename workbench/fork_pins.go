package workbench

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/meta"
)

// A live fork's base (docs/architecture.md, "Attempts: fork and merge") is a snapshot of
// its parent the fork pinned (annotated pinned_by_fork), which the parent's history keeps
// while the fork lives: a merge reads the parent at it. Two rules keep it, both in this
// package, over the FSM's own SnapshotRetire (which refuses only a snapshot a restore
// still reads):
//
//   - A retire of a pin that a live fork has as its base (the fork that pinned it, or one
//     made at it) is refused on every surface (Lifecycle.SnapshotRetire: REST, MCP
//     workbench_snapshot_retire, the CLI): ForkRetentionActive, details.reason
//     "fork_base", not retryable (it takes the fork's discard, not time), naming the fork
//     (details.fork) only to a caller that reaches it (refuseForkBase). A snapshot the
//     caller made and named as a fork's base stays the caller's to retire, as a restore's
//     source is once the restore completes: the contract's workbench_snapshot_retire.
//   - Discard releases the fork's own pin whatever the caller reaches of the parent
//     (releasePin): the key a fork with mint_key answers is bound to the fork alone, and
//     the pin is part of what its discard ends. That step is the node's (asNode): it
//     resolves the parent and retires that one snapshot, nothing else, recorded as retired
//     by the caller through its surface, and the caller's answer tells nothing of the
//     parent it could not read itself.

// forkBaseReason is details.reason of the ForkRetentionActive refusing a fork's base.
const forkBaseReason = "fork_base"

// releasePin retires fork's pin on its parent (rec: a snapshot annotated pinned_by_fork,
// of the parent incarnation the fork was made from) unless another fork has it as its
// base, as the node's own step (asNode), and returns its id: retired now or by an earlier
// try; 0 when the fork pinned none, the parent was replaced, another fork keeps the pin,
// or the retire failed (the lease ends it).
func (s *Attempts) releasePin(ctx context.Context, agent, fork string, rec forkRecord) uint64 {
	if rec.SnapshotID == 0 {
		return 0
	}
	node := asNode(ctx)
	view, err := s.base.readView(node, agent)
	if err != nil {
		return 0
	}
	if _, err := parentOf(view, agent, fork, rec); err != nil {
		return 0
	}
	snap, err := view.Lifecycle().Snapshot(agent, rec.Parent, rec.SnapshotID, "")
	if err != nil || pinnedBy(snap) == "" {
		return 0 // a base the caller named stays
	}
	if snap.RetiredAtMs != 0 {
		return rec.SnapshotID // an earlier try retired it
	}
	id, reason := rec.SnapshotID, "fork "+fork+" discarded"
	if _, err := s.life.retireSnapshot(node, agent, SnapshotRetireInput{ID: rec.Parent, SnapshotID: &id, Reason: &reason}, fork, ""); err != nil {
		return 0 // another fork has it as its base (refuseForkBase), or a failure
	}
	return id
}

// refuseForkBase answers ForkRetentionActive when the snapshot of workbench wb a retire
// names (id or name) is a fork's pin (pinnedBy) and the base of a live fork other than
// except (forkOn), after the retire's own permission checks; nil when it is not, and when
// the caller does not see it or it has ended (the retire answers those as it always did).
// A pin a restore still reads gets the FSM's own ForkRetentionActive (retryable) here.
//
// The check reads, then the retire is proposed: a fork of this pin (the fork that pinned
// it, or one made at it) whose restore begins and finishes in between is not seen, and
// the retire then leaves it without its base (its merge answers SnapshotExpired). That
// window is one read-to-apply interval, and a fork must both begin and finish its restore
// in it: one whose restore had begun when the check read holds the pin as a consumer
// (refused here, and by the FSM while it runs), and a finished one is in the view.
// Closing it needs the FSM to know forks (a cluster-version gate, docs/architecture.md),
// which it does not.
func refuseForkBase(ctx context.Context, b *base, agent, wb string, id uint64, name, except string) error {
	if werr := mayWrite(ctx, agent); werr != nil {
		return werr
	}
	if werr := mayWholeWorkbench(ctx, b, agent); werr != nil {
		return werr
	}
	c, err := coreFor(ctx, b, agent)
	if err != nil {
		return AsError(err)
	}
	full, err := c.ReadView(ctx)
	if err != nil {
		return AsError(err)
	}
	snap, err := b.visibleView(ctx, agent, full).Lifecycle().Snapshot(agent, wb, id, name)
	if err != nil || pinnedBy(snap) == "" || snap.RetiredAtMs != 0 || snap.StateAt(full.NowMs()) == meta.SnapshotReaped {
		return nil
	}
	if snap.Consumers > 0 {
		return AsError(&meta.Error{Code: meta.CodeForkRetentionActive,
			Message: fmt.Sprintf("snapshot %d is being restored from; retire it after the restore completes", snap.ID)})
	}
	holder, err := forkOn(asNode(ctx), b, full, agent, wb, snap.ID, except)
	if err != nil || holder == "" {
		return err
	}
	e := newError(CodeForkRetentionActive, "snapshot %d of workbench %q is the base of a live fork: discard the fork before retiring it", snap.ID, wb)
	if b.reach(ctx, agent).has(holder) {
		e = newError(CodeForkRetentionActive, "snapshot %d of workbench %q is the base of fork %q: discard the fork before retiring it", snap.ID, wb, holder)
		e.Details["fork"] = holder
	}
	e.Details["reason"] = forkBaseReason
	return e
}

// forkOn returns a workbench of agent other than except that is a fork (its restore
// manifest, readFork) of parent's incarnation in view with snapshot id as its base; ""
// when none. It reads the restore manifest of every workbench that has one, a page of
// pinScanPage workbenches at a time; a manifest that is no fork's is skipped, one it
// cannot read is its error (the caller keeps the snapshot).
func forkOn(ctx context.Context, b *base, view *meta.View, agent, parent string, id uint64, except string) (string, error) {
	for after := ""; ; {
		page, more := view.Workspaces(agent, after, pinScanPage)
		for _, ws := range page {
			if ws.Name == except || ws.Name == parent {
				continue
			}
			if e, err := fileAt(view, ws, meta.RestoreManifestPath, DiffSide{Kind: SideLive}); err != nil || e == nil {
				continue
			}
			rec, err := readFork(ctx, b, agent, ws.Name, view, ws)
			if err != nil {
				if e := AsError(err); e.Code != CodeInvalidArguments {
					return "", e
				}
				continue // not a fork
			}
			if rec.Parent == parent && rec.SnapshotID == id && rec.Commit == "" {
				if _, perr := parentOf(view, agent, ws.Name, rec); perr == nil {
					return ws.Name, nil
				}
			}
		}
		if !more || len(page) == 0 {
			return "", nil
		}
		after = page[len(page)-1].Name
	}
}
