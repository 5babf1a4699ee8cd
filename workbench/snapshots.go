package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// Snapshot defaults and limits (docs/workbench.md, workbench_snapshot).
const (
	DefaultSnapshotTTLDays   = 7
	MaxSnapshotMetadataProps = 64
	// MaxListedEndedSnapshots bounds the retired and reaped snapshots snapshot_list
	// reports, newest first: with the cap on held ones, an answer holds at most
	// MaxSnapshotsPerWorkbench + MaxListedEndedSnapshots records of at most
	// meta.MaxSnapshotMetadataBytes of annotation each (issue 10: 2,000 snapshots made one
	// answer of 130 MB).
	MaxListedEndedSnapshots = 64
)

// SnapshotInput is workbench_snapshot's input.
type SnapshotInput struct {
	ID       string          `json:"id"`
	Name     *string         `json:"name"`
	TTLDays  *int            `json:"ttl_days"`
	Reason   *string         `json:"reason"`
	Metadata json.RawMessage `json:"metadata"`
}

// SnapshotRenewInput is workbench_snapshot_renew's input.
type SnapshotRenewInput struct {
	ID         string  `json:"id"`
	SnapshotID *uint64 `json:"snapshot_id"`
	Name       *string `json:"name"`
	TTLDays    *int    `json:"ttl_days"`
}

// SnapshotRetireInput is workbench_snapshot_retire's input.
type SnapshotRetireInput struct {
	ID         string  `json:"id"`
	SnapshotID *uint64 `json:"snapshot_id"`
	Name       *string `json:"name"`
	Reason     *string `json:"reason"`
}

// SnapshotListInput is workbench_snapshot_list's input.
type SnapshotListInput struct {
	ID string `json:"id"`
}

// snapshotFields renders a snapshot record the way every snapshot tool reports it.
func (s *Lifecycle) snapshotFields(r Result, snap *meta.WorkbenchSnapshot, nowMs int64) Result {
	r["snapshot_id"] = snap.ID
	r["name"] = nilIfEmpty(snap.Name)
	r["read_version"] = snap.ReadVersion
	// Both are milliseconds since the epoch (the published transcript).
	r["lease_expires_at"] = snap.LeaseExpiresMs
	r["lease_expires_unix_ms"] = snap.LeaseExpiresMs
	annotation := map[string]any{"reason": nilIfEmpty(snap.Reason), "metadata": nil}
	if len(snap.Metadata) > 0 {
		annotation["metadata"] = json.RawMessage(snap.Metadata)
	}
	r["annotation"] = annotation
	r["state"] = string(snap.StateAt(nowMs))
	r["workbench_id"] = snap.Workspace
	r["path"] = s.base.WorkbenchPath(snap.Agent, snap.Workspace)
	r["ttl_days"] = snap.TTLDays
	r["created_at"] = time.UnixMilli(snap.CreatedAtMs).UTC().Format(time.RFC3339)
	// Cairn's attribution: who minted it (meta.Producer.String; "" when unknown).
	r["producer"] = snap.Producer.String()
	// retire_annotation is the annotation of the retirement (its reason; a retirement has
	// no metadata), null while the snapshot was never retired.
	r["retire_annotation"] = nil
	if snap.RetiredAtMs != 0 {
		r["retired_at"] = time.UnixMilli(snap.RetiredAtMs).UTC().Format(time.RFC3339)
		r["retire_reason"] = nilIfEmpty(snap.RetireReason)
		r["retire_annotation"] = map[string]any{"reason": nilIfEmpty(snap.RetireReason), "metadata": nil}
		r["retired_by"] = snap.RetiredBy.String()
	}
	return r
}

func validateReasonArg(p *string) (string, *Error) {
	if p == nil {
		return "", nil
	}
	if n := len([]rune(*p)); n < 1 || n > meta.MaxSnapshotReasonChars {
		return "", invalidArgument("reason", "must be 1..%d characters", meta.MaxSnapshotReasonChars)
	}
	return *p, nil
}

func ttlArg(p *int) (int, *Error) {
	if p == nil {
		return DefaultSnapshotTTLDays, nil
	}
	if *p < 1 || *p > meta.MaxSnapshotTTLDays {
		return 0, invalidArgument("ttl_days", "must be between 1 and %d", meta.MaxSnapshotTTLDays)
	}
	return *p, nil
}

// snapshotMetadata checks the annotation object (≤ 64 properties) and returns it in
// canonical form (nil for absent or null).
func snapshotMetadata(raw json.RawMessage) ([]byte, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, invalidArgument("metadata", "must be a JSON object or null")
	}
	if len(props) > MaxSnapshotMetadataProps {
		return nil, invalidArgument("metadata", "has %d properties, more than %d", len(props), MaxSnapshotMetadataProps)
	}
	canon, err := CanonicalManifest(raw)
	if err != nil {
		e := AsError(err)
		e.Details["field"] = "metadata"
		return nil, e
	}
	if len(canon) > meta.MaxSnapshotMetadataBytes {
		return nil, invalidArgument("metadata", "is %d bytes, more than %d", len(canon), meta.MaxSnapshotMetadataBytes)
	}
	return canon, nil
}

// Snapshot implements workbench_snapshot: a leased read point of the workbench now.
// At most Config.MaxSnapshotsPerWorkbench snapshots of a workbench hold history at once;
// one more is ResourceExhausted, not retryable, details {quota: "snapshots_per_workbench",
// limit, usage, requested, max_snapshots}.
//
// requestID (REST Idempotency-Key; "" for none) makes the mint idempotent: the mint
// command carries it, so a retry of a mint that landed answers the snapshot it made (the
// stored record: the same answer, whatever happened to the snapshot since) and mints no
// second one; the id with other arguments is InvalidArguments naming idempotency_key.
func (s *Lifecycle) Snapshot(ctx context.Context, agent string, in SnapshotInput, requestID string) (Result, error) {
	return s.mintSnapshot(ctx, agent, in, meta.SnapshotPoolWorkbench, s.cfg.MaxSnapshotsPerWorkbench, requestID)
}

// RunSnapshot is Snapshot for the OpenWOP facade's runs (api/openwop/runs.go): the
// snapshot counts against Config.MaxRunSnapshotsPerWorkbench, not the workbench's own cap,
// so runs never make the workbench tools' snapshots fail (issue 25, finding 13); past it,
// the quota "run_snapshots_per_workbench".
func (s *Lifecycle) RunSnapshot(ctx context.Context, agent string, in SnapshotInput) (Result, error) {
	return s.mintSnapshot(ctx, agent, in, meta.SnapshotPoolRuns, s.cfg.MaxRunSnapshotsPerWorkbench, "")
}

func (s *Lifecycle) mintSnapshot(ctx context.Context, agent string, in SnapshotInput, pool meta.SnapshotPool, maxHeld int, requestID string) (Result, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	ttl, err := ttlArg(in.TTLDays)
	if err != nil {
		return nil, err
	}
	reason, err := validateReasonArg(in.Reason)
	if err != nil {
		return nil, err
	}
	md, err := snapshotMetadata(in.Metadata)
	if err != nil {
		return nil, err
	}
	name := deref(in.Name)
	if in.Name != nil && name == "" {
		return nil, invalidArgument("name", "must not be empty (omit it or pass null for no name)")
	}
	if name != "" {
		if err := meta.ValidateNewName("name", name); err != nil { // a name stored from now on
			return nil, AsError(err)
		}
	}
	// The request as asked, after defaults: a ttl_days left out and the default given
	// are one request, as are two spellings of one metadata object.
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("snapshot", agent, in.ID, name, strconv.Itoa(ttl), reason,
		string(md), strconv.Itoa(int(pool)))}
	res, werr := s.proposeSnapshot(ctx, agent, h, meta.SnapshotMint{Agent: agent, Workspace: in.ID, Name: name,
		TTLDays: ttl, Reason: reason, Metadata: md, MaxHeld: maxHeld, Pool: pool})
	if werr != nil && werr.Code == CodeResourceExhausted && isSnapshotCap(werr.Details["quota"]) {
		// The cap: it passes only once a snapshot is retired or reaped, not by retrying.
		// Any other ResourceExhausted (a full disk, the root's quota) keeps its own answer.
		werr.Retryable = false
		werr.Details["max_snapshots"] = maxHeld
		werr.Message += fmt.Sprintf(" (at most %d per workbench)", maxHeld)
	}
	if werr != nil {
		return nil, werr
	}
	return s.snapshotFields(success(), res.Snapshot, res.Snapshot.CreatedAtMs), nil
}

// isSnapshotCap reports whether a ResourceExhausted answer's quota is a per-workbench
// snapshot cap (meta.SnapshotMint.MaxHeld), of either pool.
func isSnapshotCap(quota any) bool {
	return quota == meta.QuotaSnapshotsPerWorkbench || quota == meta.QuotaRunSnapshotsPerWorkbench
}

// proposeSnapshot proposes a snapshot command of agent's workbench (mint, renew, retire)
// under h (its request id, if any) once its arguments are valid: only for a caller that
// may write and may act on whole workbenches. A command under a request id that landed
// before is answered by the FSM from its dedupe record (meta.Header): the first
// command's result, snapshot record included.
func (s *Lifecycle) proposeSnapshot(ctx context.Context, agent string, h meta.Header, b meta.Body) (meta.Result, *Error) {
	if werr := mayWrite(ctx, agent); werr != nil {
		return meta.Result{}, werr
	}
	if werr := mayWholeWorkbench(ctx, s.base, agent); werr != nil {
		return meta.Result{}, werr
	}
	return s.base.propose(ctx, h, b)
}

func snapshotSelectorArgs(id *uint64, name *string) (uint64, string, *Error) {
	switch {
	case id != nil && name != nil:
		return 0, "", invalidArgument("snapshot_id", "give snapshot_id or name, not both")
	case id != nil:
		if *id == 0 {
			return 0, "", newError(CodeSnapshotNotFound, "snapshot 0 does not exist (snapshot ids start at 1)")
		}
		return *id, "", nil
	case name != nil && *name != "":
		return 0, *name, nil
	}
	return 0, "", invalidArgument("snapshot_id", "give snapshot_id or name")
}

// SnapshotRenew implements workbench_snapshot_renew. Under requestID (as Snapshot's) a
// retry of a renew that landed answers the first renew (its lease, its renewed) and moves
// the lease no further.
func (s *Lifecycle) SnapshotRenew(ctx context.Context, agent string, in SnapshotRenewInput, requestID string) (Result, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	id, name, err := snapshotSelectorArgs(in.SnapshotID, in.Name)
	if err != nil {
		return nil, err
	}
	ttl, err := ttlArg(in.TTLDays)
	if err != nil {
		return nil, err
	}
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("snapshot-renew", agent, in.ID, strconv.FormatUint(id, 10), name, strconv.Itoa(ttl))}
	res, werr := s.proposeSnapshot(ctx, agent, h, meta.SnapshotRenew{Agent: agent, Workspace: in.ID, ID: id, Name: name, TTLDays: ttl})
	if werr != nil {
		return nil, werr
	}
	r := s.snapshotFields(success(), res.Snapshot, nowMsOf(res))
	// renewed: the lease moved later (a renew that would shorten it is a no-op).
	r["renewed"] = res.Renewed
	return r, nil
}

// SnapshotRetire implements workbench_snapshot_retire. A fork's pin that a live fork has
// as its base is refused (ForkRetentionActive, details.reason "fork_base",
// refuseForkBase): discarding the fork retires it. Under requestID (as Snapshot's) a
// retry of a retire that landed answers the first retire (retired true), not the
// retired: false a second retire without the id answers.
func (s *Lifecycle) SnapshotRetire(ctx context.Context, agent string, in SnapshotRetireInput, requestID string) (Result, error) {
	return s.retireSnapshot(ctx, agent, in, "", requestID)
}

// retireSnapshot is SnapshotRetire, which a fork named except (being discarded: "" for
// none) does not refuse.
func (s *Lifecycle) retireSnapshot(ctx context.Context, agent string, in SnapshotRetireInput, except, requestID string) (Result, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	id, name, err := snapshotSelectorArgs(in.SnapshotID, in.Name)
	if err != nil {
		return nil, err
	}
	reason, err := validateReasonArg(in.Reason)
	if err != nil {
		return nil, err
	}
	if err := refuseForkBase(ctx, s.base, agent, in.ID, id, name, except); err != nil {
		return nil, err
	}
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("snapshot-retire", agent, in.ID, strconv.FormatUint(id, 10), name, reason)}
	res, werr := s.proposeSnapshot(ctx, agent, h, meta.SnapshotRetire{Agent: agent, Workspace: in.ID, ID: id, Name: name, Reason: reason})
	if werr != nil {
		return nil, werr
	}
	r := s.snapshotFields(success(), res.Snapshot, nowMsOf(res))
	r["retired"] = res.Retired
	r["reason"] = nilIfEmpty(res.Snapshot.RetireReason)
	return r, nil
}

// nowMsOf is the command time a lifecycle result was decided at, for reporting state.
func nowMsOf(res meta.Result) int64 {
	if res.Snapshot.RetiredAtMs != 0 {
		return res.Snapshot.RetiredAtMs
	}
	return max(res.Snapshot.RenewedAtMs, res.Snapshot.CreatedAtMs)
}

// SnapshotList implements workbench_snapshot_list: the snapshots of the workbench with
// their state, aliases, annotation and lease evidence, oldest first: every snapshot that
// holds history (at most Config.MaxSnapshotsPerWorkbench, which minting enforces) and the
// newest MaxListedEndedSnapshots retired or reaped ones, so the answer is bounded.
func (s *Lifecycle) SnapshotList(ctx context.Context, agent string, in SnapshotListInput) (Result, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, err
	}
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return nil, AsError(err)
	}
	if _, err := view.Workspace(agent, in.ID); err != nil {
		return nil, AsError(err)
	}
	snaps := boundedSnapshotList(s.listedSnapshots(ctx, agent, view.Lifecycle().Snapshots(agent, in.ID)))
	list := make([]Result, 0, len(snaps))
	for _, sn := range snaps {
		list = append(list, s.snapshotEntry(view, sn))
	}
	r := success()
	r["workbench_id"] = in.ID
	r["path"] = s.base.WorkbenchPath(agent, in.ID)
	r["snapshot_count"] = len(list)
	r["snapshots"] = list
	return r, nil
}

// MaxSnapshotPageLimit bounds a page of SnapshotListPage.
const MaxSnapshotPageLimit = 100

// SnapshotListPage is snapshot_list in pages, for REST (the MCP tool's input is fixed by
// the contract): up to limit (1..MaxSnapshotPageLimit) snapshot records of the workbench
// in id order, retired and reaped ones included, after the snapshot the cursor names (""
// starts at the first). The result is the tool's, plus next_cursor (null after the last
// page) and truncated. InvalidArguments for a bad limit or a cursor issued for another
// workbench.
func (s *Lifecycle) SnapshotListPage(ctx context.Context, agent, id, cursorText string, limit int) (Result, error) {
	view, _, cur, err := s.openPage(ctx, agent, id, "snapshots", cursorText, limit, MaxSnapshotPageLimit)
	if err != nil {
		return nil, err
	}
	after := uint64(cur.Offset)
	all := s.listedSnapshots(ctx, agent, view.Lifecycle().Snapshots(agent, id))
	start := 0
	for start < len(all) && all[start].ID <= after {
		start++
	}
	page := all[start:min(start+limit, len(all))]
	list := make([]Result, 0, len(page))
	for _, sn := range page {
		list = append(list, s.snapshotEntry(view, sn))
	}
	r := success()
	r["workbench_id"] = id
	r["path"] = s.base.WorkbenchPath(agent, id)
	r["snapshot_count"] = len(list)
	r["snapshots"] = list
	r["truncated"] = start+len(page) < len(all)
	r["next_cursor"] = nil
	if start+len(page) < len(all) {
		r["next_cursor"] = s.base.cursors.encode(ctx, cursor{Kind: "snapshots", Agent: agent, Workbench: id, Offset: int64(page[len(page)-1].ID)})
	}
	return r, nil
}

// openPage checks the arguments of a page of a workbench's records of kind (snapshots,
// commits) and opens it: the workbench at a linearizable view and the cursor ("" gives the
// zero cursor). InvalidArguments for a bad target or a limit outside 1..most, or a cursor
// not issued for kind on this workbench; PermissionDenied without read; NotFound when the
// workbench does not exist.
func (s *Lifecycle) openPage(ctx context.Context, agent, id, kind, cursorText string, limit, most int) (*meta.View, *meta.Workspace, cursor, error) {
	if err := validateTarget(agent, id, ""); err != nil {
		return nil, nil, cursor{}, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, nil, cursor{}, err
	}
	if limit < 1 || limit > most {
		return nil, nil, cursor{}, invalidArgument("limit", "must be between 1 and %d", most)
	}
	var cur cursor
	if cursorText != "" {
		var cerr *Error
		if cur, cerr = s.base.cursors.decode(ctx, cursorText, kind, agent, id, ""); cerr != nil {
			return nil, nil, cursor{}, cerr
		}
	}
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return nil, nil, cursor{}, AsError(err)
	}
	ws, err := view.Workspace(agent, id)
	if err != nil {
		return nil, nil, cursor{}, AsError(err)
	}
	return view, ws, cur, nil
}

// listedSnapshots is snaps as a listing shows them to the caller: for a caller that does
// not reach every path of the whole root (a key bound to a workbench or to path
// prefixes), without the snapshots a fork pinned (pinnedBy), whose annotation names the
// fork, a workbench such a key may not see (workbench/auth/doc.go).
func (s *Lifecycle) listedSnapshots(ctx context.Context, agent string, snaps []*meta.WorkbenchSnapshot) []*meta.WorkbenchSnapshot {
	if s.base.reach(ctx, agent).rootWide() {
		return snaps
	}
	return slices.DeleteFunc(slices.Clone(snaps), func(sn *meta.WorkbenchSnapshot) bool { return pinnedBy(sn) != "" })
}

// snapshotEntry is one snapshot as snapshot_list reports it.
func (s *Lifecycle) snapshotEntry(view *meta.View, sn *meta.WorkbenchSnapshot) Result {
	r := s.snapshotFields(Result{}, sn, view.NowMs())
	aliases := view.Lifecycle().SnapshotAliases(sn)
	if aliases == nil {
		aliases = []string{}
	}
	r["aliases"] = aliases
	r["consumers"] = sn.Consumers
	return r
}

// boundedSnapshotList keeps, in order, every snapshot that holds history and the last
// MaxListedEndedSnapshots of the others (retired or reaped; records are in id order, so
// the last are the newest).
func boundedSnapshotList(snaps []*meta.WorkbenchSnapshot) []*meta.WorkbenchSnapshot {
	ended := 0
	for _, sn := range snaps {
		if sn.RetiredAtMs != 0 || sn.ReapedAtMs != 0 {
			ended++
		}
	}
	skip := ended - MaxListedEndedSnapshots
	if skip <= 0 {
		return snaps
	}
	out := make([]*meta.WorkbenchSnapshot, 0, len(snaps)-skip)
	for _, sn := range snaps {
		if (sn.RetiredAtMs != 0 || sn.ReapedAtMs != 0) && skip > 0 {
			skip--
			continue
		}
		out = append(out, sn)
	}
	return out
}
