package client

import (
	"context"
	"time"
)

// ForkResult is the server's answer to Fork: the new workbench, its parent and its base.
type ForkResult struct {
	ForkID   string `json:"fork_id"`
	ParentID string `json:"parent_id"`
	Base     struct {
		Kind        string  `json:"kind"` // snapshot or commit
		SnapshotID  *uint64 `json:"snapshot_id"`
		CommitID    *string `json:"commit_id"`
		ReadVersion uint64  `json:"read_version"`
	} `json:"base"`
	// PinnedSnapshotID is the snapshot of the parent a live fork took as its base (nil
	// when the base was a snapshot or commit the caller named); Discard retires it.
	PinnedSnapshotID *uint64 `json:"pinned_snapshot_id"`
	RestoredFiles    int64   `json:"restored_files"`
	// Replayed is true when a retry under the idempotency key answered the first fork.
	Replayed bool `json:"replayed"`
	// Key is the fork's key when ForkRequest.MintKey asked for one (its secret, once; nil
	// in a replay's answer).
	Key *APIKey `json:"key"`
	RawJSON
}

// ForkRequest asks POST …/fork: the new workbench's name (Fork), its base (At: "" or
// "live", snapshot:<id or name> or commit:<commit_identity>), IdempotencyKey to make it
// safe to retry, and MintKey for a key bound to the fork in the answer, no broader than
// c's, expiring at KeyExpiresAt (zero: with c's key, or never).
type ForkRequest struct {
	Fork, At       string
	IdempotencyKey string
	MintKey        bool
	KeyExpiresAt   time.Time
}

// Fork makes workbench req.Fork a zero-copy child of workbench wb at req.At
// (docs/architecture.md, "Attempts: fork and merge"). Under an IdempotencyKey it is safe
// to retry (a retry after the fork landed answers it, Replayed); without one it is sent
// again only if it never reached the server (a fork that landed answers a retry
// AlreadyExists).
func (c *Client) Fork(ctx context.Context, agent, wb string, req ForkRequest) (*ForkResult, error) {
	body := struct {
		Fork         string `json:"fork"`
		At           string `json:"at,omitempty"`
		MintKey      bool   `json:"mint_key,omitempty"`
		KeyExpiresAt string `json:"key_expires_at,omitempty"`
	}{Fork: req.Fork, At: req.At, MintKey: req.MintKey}
	if !req.KeyExpiresAt.IsZero() {
		body.KeyExpiresAt = req.KeyExpiresAt.UTC().Format(time.RFC3339)
	}
	var out ForkResult
	if err := c.tr.postKeyed(ctx, c.tr.workbenchURL(agent, wb)+"/fork", body, false, req.IdempotencyKey, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MergeRequest asks POST …/merge: a preview (DryRun) or an apply (Token, and
// IdempotencyKey to make it safe to retry); ProposeConflicts makes an apply turn each
// conflict into a proposal against the parent's head.
type MergeRequest struct {
	DryRun           bool
	Token            string
	ProposeConflicts bool
	IdempotencyKey   string
}

// MergeConflict is a path the fork and its parent both changed since the base: never
// overwritten. Reason says how (both_changed, both_added, deleted_on_fork,
// deleted_on_parent, clash). ProposalID is the proposal an apply with ProposeConflicts
// made of it, ProposalError the code of the one it could not make, NotProposed why none
// can carry it (the fork deleted the path; a clash).
type MergeConflict struct {
	Path          string      `json:"path"`
	Reason        string      `json:"reason"`
	NotProposed   string      `json:"not_proposed"`
	Base          *RewindSide `json:"base"`
	Fork          *RewindSide `json:"fork"`
	Parent        *RewindSide `json:"parent"`
	ProposalID    string      `json:"proposal_id"`
	ProposalError string      `json:"proposal_error"`
	// ClashWith names the parent's path a file/directory clash sets against this one.
	ClashWith string `json:"clash_with"`
}

// MergeResult is the server's answer to a merge preview or apply. Changes go from the
// parent's file (From) to the fork's (To).
type MergeResult struct {
	ForkID    string          `json:"fork_id"`
	ParentID  string          `json:"parent_id"`
	Base      string          `json:"base"`
	Changes   []RewindChange  `json:"changes"`
	Conflicts []MergeConflict `json:"conflicts"`
	// ApplyOutcome carries Token, Applied, Generation and Replayed (a retry under the
	// idempotency key answered by the first apply), as a RewindResult's does.
	ApplyOutcome
	RawJSON
}

// Merge previews or applies the merge of fork into its parent. A preview may be
// repeated; an apply only under an IdempotencyKey.
func (c *Client) Merge(ctx context.Context, agent, fork string, req MergeRequest) (*MergeResult, error) {
	body := struct {
		DryRun           bool   `json:"dry_run,omitempty"`
		Token            string `json:"token,omitempty"`
		ProposeConflicts bool   `json:"propose_conflicts,omitempty"`
	}{req.DryRun, req.Token, req.ProposeConflicts}
	var out MergeResult
	if err := c.tr.postKeyed(ctx, c.tr.workbenchURL(agent, fork)+"/merge", body, req.DryRun, req.IdempotencyKey, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DiscardResult is the server's answer to Discard.
type DiscardResult struct {
	ForkID   string `json:"fork_id"`
	ParentID string `json:"parent_id"` // "" in a replay
	// RetiredSnapshotID is the snapshot of the parent the fork had pinned, now retired.
	RetiredSnapshotID *uint64 `json:"retired_snapshot_id"`
	Deleted           bool    `json:"deleted"`
	Replayed          bool    `json:"replayed"`
	RawJSON
}

// Discard releases fork: retires the snapshot of its parent it pinned and deletes it.
// Under an idempotencyKey it is safe to retry (a retry after the delete landed answers
// Replayed); without one it is sent again only if it never reached the server.
func (c *Client) Discard(ctx context.Context, agent, fork, idempotencyKey string) (*DiscardResult, error) {
	var out DiscardResult
	if err := c.tr.postKeyed(ctx, c.tr.workbenchURL(agent, fork)+"/discard", struct{}{}, false, idempotencyKey, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
