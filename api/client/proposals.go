package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// Proposals holds a workbench's review-gated changes: the client listener's
// …/workbenches/{wb}/proposals and …/judgments routes, by which a change is proposed,
// read, listed and decided. Propose and Decide carry the caller's request or submission
// id, which makes a repeat answer the first answer, so every call is retried within the
// client's RetryPolicy. A Client builds it (Client.Proposals) on the client's own
// transport; it is safe for concurrent use.
type Proposals struct {
	tr *transport
}

// EvidenceRef is one piece of evidence a proposal names: Kind "file" (Path, Generation),
// "snapshot" (SnapshotID), "commit" (Commit) or "feed" (Position); Workbench "" is the
// proposal's.
type EvidenceRef struct {
	Kind       string `json:"kind"`
	Workbench  string `json:"workbench,omitempty"`
	Path       string `json:"path,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	SnapshotID uint64 `json:"snapshot_id,omitempty"`
	Commit     string `json:"commit,omitempty"`
	Position   string `json:"position,omitempty"`
}

// ProposalEdit is an edit the server resolves against the file's head.
type ProposalEdit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// ProposeRequest is the body of Propose: exactly one of Text, Base64 and Edit.
type ProposeRequest struct {
	Path string `json:"path"`
	// BaseGeneration nil: the file's head now; 0: the file must not exist.
	BaseGeneration *uint64       `json:"base_generation,omitempty"`
	Text           *string       `json:"text,omitempty"`
	Base64         *string       `json:"base64,omitempty"`
	Edit           *ProposalEdit `json:"edit,omitempty"`
	ContentType    string        `json:"content_type,omitempty"`
	Reason         string        `json:"reason,omitempty"`
	Evidence       []EvidenceRef `json:"evidence,omitempty"`
	RequestID      string        `json:"request_id"`
	Supersedes     string        `json:"supersedes,omitempty"`
}

// Proposal is the summary of a proposal answer; Raw is the whole result object.
type Proposal struct {
	ID             string  `json:"proposal_id"`
	Path           string  `json:"path"`
	State          string  `json:"state"`
	BaseGeneration uint64  `json:"base_generation"`
	HeadGeneration *uint64 `json:"head_generation"`
	Stale          bool    `json:"stale"`
	SizeBytes      int64   `json:"size_bytes"`
	DigestURI      string  `json:"digest_uri"`
	Reason         string  `json:"reason"`
	Proposer       string  `json:"proposer"`
	Replayed       bool    `json:"replayed"`
	// ResultGeneration is what an accept published (Decide).
	ResultGeneration *uint64 `json:"result_generation"`
	RawJSON
}

// ProposalList is a page of Proposals or Judgments; Raw is the whole result object.
type ProposalList struct {
	Proposals  []Proposal        `json:"proposals"`
	Judgments  []json.RawMessage `json:"judgments"`
	NextCursor *string           `json:"next_cursor"`
	RawJSON
}

// ProposalQuery filters a listing; Judgments lists the decisions instead.
type ProposalQuery struct {
	Path, State, Cursor string
	Limit               int
	Judgments           bool
}

// DecideRequest is the body of Decide.
type DecideRequest struct {
	Disposition  string `json:"disposition"` // "accept" or "reject"
	Reason       string `json:"reason,omitempty"`
	SubmissionID string `json:"submission_id"`
}

// proposalsURL returns the URL of a workbench's proposals.
func (t *transport) proposalsURL(agent, wb string) string {
	return t.workbenchURL(agent, wb) + "/proposals"
}

// Propose makes a proposal; a retry with the same RequestID and content answers the
// first one (Replayed). The request is replayable: its id makes it idempotent.
func (p *Proposals) Propose(ctx context.Context, agent, wb string, req ProposeRequest) (*Proposal, error) {
	return postJSON[Proposal](ctx, p.tr, p.tr.proposalsURL(agent, wb), req, replayable)
}

// Get returns one proposal; with body its bytes and diff are in Raw.
func (p *Proposals) Get(ctx context.Context, agent, wb, id string, body bool) (*Proposal, error) {
	u := p.tr.proposalsURL(agent, wb) + "/" + url.PathEscape(id)
	if body {
		u += "?include_body=true"
	}
	return getJSON[Proposal](ctx, p.tr, u)
}

// List returns one page of a workbench's proposals (or judgments).
func (p *Proposals) List(ctx context.Context, agent, wb string, q ProposalQuery) (*ProposalList, error) {
	v := url.Values{}
	for k, s := range map[string]string{"path": q.Path, "state": q.State, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	u := p.tr.proposalsURL(agent, wb)
	if q.Judgments {
		u = p.tr.workbenchURL(agent, wb) + "/judgments"
	}
	return getJSON[ProposalList](ctx, p.tr, withQuery(u, v))
}

// Decide accepts or rejects a proposal; a retry with the same SubmissionID and content
// answers the first decision (Replayed).
func (p *Proposals) Decide(ctx context.Context, agent, wb, id string, req DecideRequest) (*Proposal, error) {
	return postJSON[Proposal](ctx, p.tr, p.tr.proposalsURL(agent, wb)+"/"+url.PathEscape(id)+"/decision", req, replayable)
}
