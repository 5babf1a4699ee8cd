package meta

import (
	"strconv"
	"strings"
)

// Views of proposals and judgments (proposal.go has the rules).

// ProposalFilter narrows a proposal listing.
type ProposalFilter struct {
	Path  string        // "" = every path
	State ProposalState // "" = every state
}

// ProposalView is the proposal reads of one View (View.Proposals): a proposal by id, the
// proposals of a workbench, the judgments of a path, and the evidence check a surface
// runs before it proposes. It reads only through its View, as every facet does: what the
// View hides answers as missing.
type ProposalView struct{ v *View }

// Get returns proposal id of workbench ws (its live incarnation). NotFound naming
// "proposal_id" when there is none (never made, expired, or of a deleted workbench).
func (pv ProposalView) Get(agent, ws, id string) (*Proposal, error) {
	p, err := liveProposal(pv.v.stateOf(agent, ws), agent, ws, id)
	if err == nil && !pv.v.ShowsPath(agent, p.Path) {
		p, err = liveProposal(emptyState, agent, ws, id)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ByID returns proposal id of agent's root whatever its workbench (ids are unique
// per root), while that workbench's incarnation lives. NotFound as Proposal.
func (pv ProposalView) ByID(agent, id string) (*Proposal, error) {
	p, ok := pv.v.st.props.byID.Get(proposalKey(agent, id))
	if !ok || !pv.v.shows(agent, p.Workspace) {
		return nil, &Error{Code: CodeNotFound, Field: "proposal_id", Message: "no proposal " + strconv.Quote(id) + " exists"}
	}
	return pv.Get(agent, p.Workspace, id)
}

// List lists the kept proposals of workbench ws in creation order, strictly after
// created version after (0: from the first), at most limit (1..MaxProposalListLimit),
// matching f; more says whether others may follow. NotFound for a missing workbench.
func (pv ProposalView) List(agent, ws string, f ProposalFilter, after uint64, limit int) (out []*Proposal, more bool, err error) {
	w, err := pv.v.Workspace(agent, ws)
	if err != nil {
		return nil, false, err
	}
	limit = max(1, min(limit, MaxProposalListLimit))
	prefix := u64(w.Incarnation)
	pv.v.st.props.order.Ascend(prefix+u64(after+1), func(k, id string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		p, ok := pv.v.st.props.byID.Get(proposalKey(agent, id))
		if !ok || (f.Path != "" && p.Path != f.Path) || (f.State != "" && p.State != f.State) || !pv.v.ShowsPath(agent, p.Path) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, p)
		return true
	})
	return out, more, nil
}

// Judgments lists the decisions on workbench ws's kept proposals in decision order,
// strictly after decision version after, at most limit, of path ("" = every path).
func (pv ProposalView) Judgments(agent, ws, path string, after uint64, limit int) (out []*Judgment, more bool, err error) {
	w, err := pv.v.Workspace(agent, ws)
	if err != nil {
		return nil, false, err
	}
	limit = max(1, min(limit, MaxProposalListLimit))
	prefix := u64(w.Incarnation)
	pv.v.st.props.decided.Ascend(prefix+u64(after+1), func(k, id string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		p, ok := pv.v.st.props.byID.Get(proposalKey(agent, id))
		if !ok || p.Decision == nil || (path != "" && p.Path != path) || !pv.v.ShowsPath(agent, p.Path) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, p.Decision)
		return true
	})
	return out, more, nil
}
