package workbench

import "context"

// Tools is the Workbench tool contract (docs/workbench.md) over the Service's parts: one
// method per tool, taking the tool's input struct and answering its Result (the
// contract's JSON object), and the presentation paths the contract shows. It shapes;
// the parts decide.
//
// Invariants:
//
//   - Every answer is the contract's shape: a Result whose fields and names are the
//     tool's, presentation paths ("/agents/{agent}/wb/{id}/...", Config.PresentationRoot)
//     and never an internal name (incarnation, root uid, blob key).
//   - Cursors it hands out are opaque, signed (Config.CursorKey) and bound to the
//     arguments, root and workbench incarnation that produced them (cursor.go).
//   - It holds no state of its own: every call is the parts' calls, so a tool and the
//     REST operation beneath it agree. The tools take no request id (the contract's
//     inputs have none): the Lifecycle methods beneath commit, restore and the snapshot
//     tools take one, which REST passes its Idempotency-Key as, and these pass "".
type Tools struct {
	base   *base
	review *Review
	life   *Lifecycle
	reads  *Reads
	writes *Writes
}

// WorkbenchPath is the presentation path of a workbench: "{root}/{id}".
func (s *Tools) WorkbenchPath(agent, id string) string { return s.base.WorkbenchPath(agent, id) }

// RootPath is the presentation path of an agent root ("/agents/{agent}/wb" by default).
func (s *Tools) RootPath(agent string) string { return s.base.RootPath(agent) }

// Search is workbench_search.
func (s *Tools) Search(ctx context.Context, agent string, in SearchInput) (Result, error) {
	return s.reads.Search(ctx, agent, in)
}

// Aggregate is workbench_aggregate.
func (s *Tools) Aggregate(ctx context.Context, agent string, in AggregateInput) (Result, error) {
	return s.reads.Aggregate(ctx, agent, in)
}

// Catalog is workbench_catalog.
func (s *Tools) Catalog(ctx context.Context, agent string, in CatalogInput) (Result, error) {
	return s.reads.Catalog(ctx, agent, in)
}

// Find is workbench_find.
func (s *Tools) Find(ctx context.Context, agent string, in FindInput) (Result, error) {
	return s.reads.Find(ctx, agent, in)
}

// Commit is workbench_commit.
func (s *Tools) Commit(ctx context.Context, agent string, in CommitInput) (Result, error) {
	return s.life.Commit(ctx, agent, in, "")
}

// Snapshot is workbench_snapshot.
func (s *Tools) Snapshot(ctx context.Context, agent string, in SnapshotInput) (Result, error) {
	return s.life.Snapshot(ctx, agent, in, "")
}

// SnapshotRenew is workbench_snapshot_renew.
func (s *Tools) SnapshotRenew(ctx context.Context, agent string, in SnapshotRenewInput) (Result, error) {
	return s.life.SnapshotRenew(ctx, agent, in, "")
}

// SnapshotRetire is workbench_snapshot_retire.
func (s *Tools) SnapshotRetire(ctx context.Context, agent string, in SnapshotRetireInput) (Result, error) {
	return s.life.SnapshotRetire(ctx, agent, in, "")
}

// SnapshotList is workbench_snapshot_list.
func (s *Tools) SnapshotList(ctx context.Context, agent string, in SnapshotListInput) (Result, error) {
	return s.life.SnapshotList(ctx, agent, in)
}

// Restore is workbench_restore.
func (s *Tools) Restore(ctx context.Context, agent string, in RestoreInput) (Result, error) {
	return s.life.Restore(ctx, agent, in, "")
}

// Proposals is cairn_proposals.
func (s *Tools) Proposals(ctx context.Context, agent string, in ProposalsInput) (Result, error) {
	return s.review.Proposals(ctx, agent, in)
}

// Propose is cairn_propose.
func (s *Tools) Propose(ctx context.Context, agent string, in ProposeInput) (Result, error) {
	return s.review.Propose(ctx, agent, in)
}

// Decide is cairn_decide.
func (s *Tools) Decide(ctx context.Context, agent string, in DecideInput) (Result, error) {
	return s.review.Decide(ctx, agent, in)
}

// WorkbenchList is cairn_workbench_list: ListWorkbenches of the session's root.
func (s *Tools) WorkbenchList(ctx context.Context, agent string, in WorkbenchListInput) (Result, error) {
	cur, limit := "", 0
	if in.Cursor != nil {
		cur = *in.Cursor
	}
	if in.Limit != nil {
		limit = *in.Limit
	}
	p, err := s.life.ListWorkbenches(ctx, agent, cur, limit)
	if err != nil {
		return nil, err
	}
	return WorkbenchPageResult(agent, p), nil
}

// WorkbenchDelete is cairn_workbench_delete: DeleteWorkbench in the session's root.
func (s *Tools) WorkbenchDelete(ctx context.Context, agent string, in WorkbenchDeleteInput) (Result, error) {
	var rev uint64
	if in.IfRevision != nil {
		rev = *in.IfRevision
	}
	if err := s.life.DeleteWorkbench(ctx, agent, in.ID, rev, ""); err != nil {
		return nil, err
	}
	r := success()
	r["workbench_id"] = in.ID
	r["deleted"] = true
	return r, nil
}
