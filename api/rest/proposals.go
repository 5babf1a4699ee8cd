package rest

import (
	"net/http"
	"strconv"

	"github.com/cairnstore/cairn/workbench"
)

// Proposals and decisions (review-gated changes; workbench proposals.go has the rules):
//
//	POST /v1/agents/{a}/workbenches/{w}/proposals                 create (201; 200 for a converged retry)
//	GET  /v1/agents/{a}/workbenches/{w}/proposals?path=&state=&cursor=&limit=
//	GET  /v1/agents/{a}/workbenches/{w}/proposals/{id}?include_body=true
//	POST /v1/agents/{a}/workbenches/{w}/proposals/{id}/decision   accept or reject (review scope)
//	GET  /v1/agents/{a}/workbenches/{w}/judgments?path=&cursor=&limit=
//
// A stale accept answers 409 Conflict with details.reason "stale" and
// details.head_generation; a second decision 409 with details.reason "already_decided".

// proposals routes the proposal endpoints of workbench id; ok is false for another route.
func (h *Handler) proposals(w http.ResponseWriter, r *http.Request, agent, id string, segs []string) (route string, ok bool) {
	switch {
	case len(segs) == 1 && segs[0] == "proposals" && r.Method == http.MethodPost:
		r = mutation(r, "propose", agent, id, "")
		var in workbench.ProposeInput
		err := h.proposalBody(r, &in, &in.ID, id)
		var res workbench.Result
		if err == nil {
			res, err = h.svc.Review.Propose(r.Context(), agent, in)
		}
		status := http.StatusCreated
		if res["replayed"] == true {
			status = http.StatusOK
		}
		h.answer(w, r, status, res, err)
		return "proposals", true
	case len(segs) == 1 && (segs[0] == "proposals" || segs[0] == "judgments"):
		methods := []string{http.MethodGet, http.MethodHead}
		if segs[0] == "proposals" {
			methods = append(methods, http.MethodPost)
		}
		if !allow(w, r, methods...) {
			return segs[0], true
		}
		in, err := proposalQuery(r, "path", "state", "cursor", "limit")
		if segs[0] == "judgments" {
			in.Judgments = &[]bool{true}[0]
			if err == nil && in.State != nil {
				err = invalidArg("state", "is not a parameter of judgments")
			}
		}
		in.ID = id
		var res workbench.Result
		if err == nil {
			res, err = h.svc.Tools.Proposals(r.Context(), agent, in)
		}
		h.answer(w, r, http.StatusOK, res, err)
		return segs[0], true
	case len(segs) == 2 && segs[0] == "proposals":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return "proposal", true
		}
		pid, err := component("proposal_id", segs[1])
		var in workbench.ProposalsInput
		if err == nil {
			in, err = proposalQuery(r, "include_body")
		}
		in.ID, in.ProposalID = id, &pid
		var res workbench.Result
		if err == nil {
			res, err = h.svc.Tools.Proposals(r.Context(), agent, in)
		}
		h.answer(w, r, http.StatusOK, res, err)
		return "proposal", true
	case len(segs) == 3 && segs[0] == "proposals" && segs[2] == "decision":
		if !allow(w, r, http.MethodPost) {
			return "decision", true
		}
		r = mutation(r, "decide", agent, id, "")
		pid, err := component("proposal_id", segs[1])
		var in workbench.DecideInput
		if err == nil {
			err = h.proposalBody(r, &in, &in.ID, id)
		}
		if err == nil && in.ProposalID != "" && in.ProposalID != pid {
			err = invalidArg("proposal_id", "comes from the URL path; the body must not carry another")
		}
		in.ProposalID = pid
		var res workbench.Result
		if err == nil {
			res, err = h.svc.Review.Decide(r.Context(), agent, in)
		}
		h.answer(w, r, http.StatusOK, res, err)
		return "decision", true
	}
	return "", false
}

// proposalBody decodes a JSON body into in and fills its workbench id from the URL (an id
// in the body is refused).
func (h *Handler) proposalBody(r *http.Request, in any, idField *string, id string) error {
	if err := jsonBody(r, in); err != nil {
		return err
	}
	return idFromPath(idField, id)
}

// proposalQuery reads a listing's or a get's query parameters.
func proposalQuery(r *http.Request, allowed ...string) (workbench.ProposalsInput, error) {
	var in workbench.ProposalsInput
	q, err := queryParams(r, allowed...)
	if err != nil {
		return in, err
	}
	str := func(k string) *string {
		if v, ok := q[k]; ok && len(v) > 0 {
			return &v[0]
		}
		return nil
	}
	in.Path, in.State, in.Cursor = str("path"), str("state"), str("cursor")
	if s := str("limit"); s != nil {
		n, err := strconv.Atoi(*s)
		if err != nil {
			return in, invalidArg("limit", "must be an integer")
		}
		in.Limit = &n
	}
	if s := str("include_body"); s != nil {
		b, err := strconv.ParseBool(*s)
		if err != nil {
			return in, invalidArg("include_body", "must be true or false")
		}
		in.IncludeBody = &b
	}
	return in, nil
}
