package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/cairnstore/cairn/workbench"
)

// DocumentsCaller serves the working-documents routes in process (api/documents
// Handler.Call, docs/documents.md): method, route below /api/workbench/ and body as on
// the wire, as ctx's principal acting in agent root root; the answer is the surface's
// status and JSON body.
type DocumentsCaller interface {
	Call(ctx context.Context, root, method, route string, body []byte) (status int, answer []byte)
}

// documentTools are the cairn profile's working-documents tools, served when the node has
// the surface (Options.Documents). They pass the design's payloads through unchanged, so
// ids, replays, limits and failures are exactly the HTTP routes'. The owner comes from the
// key, as on those routes; the session's agent root is where the call acts, so a session
// at another root than the owner's tenant sees none of the owner's documents: it answers
// as a root without documents (another root answers exactly like a missing one, as
// every cairn tool does).
func documentTools(c DocumentsCaller) []toolDef {
	return []toolDef{
		{
			name: "cairn_documents", title: "Read working documents", readOnly: true, idempotent: true,
			description: "Read the key's working documents (docs/documents.md): action list (every document), show (document_id: " +
				"its body, versions, selections, proposals with their state and diff, runs, judgments and events), versions " +
				"(document_id), or candidates (the root's recent observations to create a document from; with document_id also " +
				"its versions to select). The owner is the key's tenant and workspace; a session at another agent root than " +
				"that tenant sees none of its documents (an empty list, NotFound). " +
				"Result: the route's answer.",
			run: func(ctx context.Context, _ *workbench.Service, agent string, args json.RawMessage) (workbench.Result, error) {
				var in struct {
					Action     string `json:"action"`
					DocumentID string `json:"document_id"`
				}
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, &workbench.Error{Code: workbench.CodeInvalidArguments, Message: "arguments: " + err.Error()}
				}
				route := "documents"
				switch in.Action {
				case "list":
					if in.DocumentID != "" {
						return nil, notTaken("document_id", in.Action, "it lists every document of the key")
					}
				case "show", "versions":
					if in.DocumentID == "" {
						return nil, missingArgument("document_id", in.Action)
					}
					route += "/" + in.DocumentID
					if in.Action == "versions" {
						route += "/versions"
					}
				case "candidates":
					route = "candidates"
					if in.DocumentID != "" {
						route += "?documentId=" + url.QueryEscape(in.DocumentID)
					}
				}
				return documentAnswer(c.Call(ctx, agent, http.MethodGet, route, nil))
			},
		},
		{
			name: "cairn_document_write", title: "Change a working document", destructive: true, idempotent: true,
			description: "Change the key's working documents (needs the review scope; docs/documents.md): action create " +
				"(payload {originEventId, title, body, requestId}; no document_id: the new document's id is derived from " +
				"those and answered as documentId), edit (document_id; payload {baseVersionId, title, body, " +
				"requestId}: Conflict with details.documents_error StaleBaseError and details.head_version_id when the base is " +
				"not the head), select (document_id; payload {selectedEventIds, selectedVersionIds, requestId}), propose " +
				"(document_id; payload {selectionId, runnerId, baseVersionId, requestId}: a runner failure is InvalidState " +
				"with details.documents_error RunnerError, details.run_id and details.error_text, and no proposal), decide " +
				"(proposal_id; payload {disposition: accept|reject, submissionId}). An id the action does not take is " +
				"InvalidArguments naming it. The same requestId or submissionId with " +
				"the same payload answers the first answer. Result: the route's answer.",
			run: func(ctx context.Context, _ *workbench.Service, agent string, args json.RawMessage) (workbench.Result, error) {
				var in struct {
					Action     string          `json:"action"`
					DocumentID string          `json:"document_id"`
					ProposalID string          `json:"proposal_id"`
					Payload    json.RawMessage `json:"payload"`
				}
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, &workbench.Error{Code: workbench.CodeInvalidArguments, Message: "arguments: " + err.Error()}
				}
				var route string
				switch in.Action {
				case "create":
					// The design derives a document's id from its origin and request id
					// (docs/documents.md, Ids): a caller cannot choose one.
					if in.DocumentID != "" {
						return nil, notTaken("document_id", in.Action,
							"a new document's id is derived from payload.originEventId and payload.requestId, and answered as documentId")
					}
					if in.ProposalID != "" {
						return nil, notTaken("proposal_id", in.Action, "it names the decision's proposal")
					}
					route = "documents"
				case "decide":
					if in.ProposalID == "" {
						return nil, missingArgument("proposal_id", in.Action)
					}
					if in.DocumentID != "" {
						return nil, notTaken("document_id", in.Action, "the proposal names its document")
					}
					route = "proposals/" + in.ProposalID + "/decisions"
				default:
					if in.DocumentID == "" {
						return nil, missingArgument("document_id", in.Action)
					}
					if in.ProposalID != "" {
						return nil, notTaken("proposal_id", in.Action, "it names the decision's proposal")
					}
					route = "documents/" + in.DocumentID + "/" + map[string]string{"edit": "versions", "select": "selections", "propose": "proposals"}[in.Action]
				}
				return documentAnswer(c.Call(ctx, agent, http.MethodPost, route, in.Payload))
			},
		},
	}
}

func missingArgument(field, action string) *workbench.Error {
	return &workbench.Error{Code: workbench.CodeInvalidArguments, Message: field + ": action " + action + " needs it",
		Details: map[string]any{"field": field}}
}

// notTaken refuses an argument the action does not take (why: what it would mean), rather
// than ignore it: a caller who passed it expected it to count. details.rule is "not", the
// JSON Schema keyword that would refuse it (an argument of other actions).
func notTaken(field, action, why string) *workbench.Error {
	return &workbench.Error{Code: workbench.CodeInvalidArguments, Message: field + ": action " + action + " takes none: " + why,
		Details: map[string]any{"field": field, "rule": "not"}}
}

// documentCodes maps the surface's statuses to the contract's codes.
var documentCodes = map[int]string{
	http.StatusBadRequest: workbench.CodeInvalidArguments, http.StatusUnauthorized: workbench.CodeUnauthenticated,
	http.StatusForbidden: workbench.CodePermissionDenied, http.StatusNotFound: workbench.CodeNotFound,
	http.StatusMethodNotAllowed: workbench.CodePermissionDenied, http.StatusConflict: workbench.CodeConflict,
	http.StatusRequestEntityTooLarge: workbench.CodePayloadTooLarge, http.StatusTooManyRequests: workbench.CodeResourceExhausted,
	http.StatusBadGateway: workbench.CodeInvalidState, http.StatusServiceUnavailable: workbench.CodeRoutingUnavailable,
}

// documentAnswer is a route's answer as a tool result: its object with "status":
// "success", or the contract's error whose details carry the surface's error
// (documents_error, field, rule, head_version_id, run_id, error_text).
func documentAnswer(status int, body []byte) (workbench.Result, error) {
	if status/100 == 2 {
		out := workbench.Result{}
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, &workbench.Error{Code: workbench.CodeInternal, Message: "the working-documents answer is not a JSON object"}
		}
		out["status"] = "success"
		return out, nil
	}
	var e struct {
		Error, Message, Field, Rule, HeadVersionID, RunID, ErrorText string
	}
	_ = json.Unmarshal(body, &e)
	code, ok := documentCodes[status]
	if !ok {
		code = workbench.CodeInternal
	}
	details := map[string]any{"documents_error": e.Error}
	for k, v := range map[string]string{"field": e.Field, "rule": e.Rule, "head_version_id": e.HeadVersionID, "run_id": e.RunID, "error_text": e.ErrorText} {
		if v != "" {
			details[k] = v
		}
	}
	retryable := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
	return nil, &workbench.Error{Code: code, Message: e.Message, Retryable: retryable, Details: details}
}
