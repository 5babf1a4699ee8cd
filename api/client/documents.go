package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// Documents calls the working-documents surface (docs/documents.md): the client
// listener's routes under /api/workbench/, which list the owner's documents, read one,
// list what one can be made of, and write. The owner is the key's (or the node's
// configured one), never named here. Answers are returned as the server's JSON; a
// refusal is an *Error read from the surface's body ({error, message, field?, …}): Code
// its error (StaleBaseError, …), Message its message, Details its other members
// (headVersionId, field, rule, runId, errorText). A Client builds it (Client.Documents)
// on the client's own transport; it is safe for concurrent use.
type Documents struct {
	tr *transport
}

// documentsURL returns the URL of a working-documents route (rest: below
// /api/workbench/, its segments already escaped).
func (t *transport) documentsURL(rest string) string { return t.base + "/api/workbench/" + rest }

// List returns a page of the owner's working documents in documentId order: at most
// limit (0: the server's page) after cursor (a page's nextCursor; "": from the first).
func (d *Documents) List(ctx context.Context, limit int, cursor string) (json.RawMessage, error) {
	v := url.Values{}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	return deref(getJSON[json.RawMessage](ctx, d.tr, withQuery(d.tr.documentsURL("documents"), v)))
}

// Get returns one document with its versions, selections, proposals, runs,
// judgments and events.
func (d *Documents) Get(ctx context.Context, id string) (json.RawMessage, error) {
	return deref(getJSON[json.RawMessage](ctx, d.tr, d.tr.documentsURL("documents/"+url.PathEscape(id))))
}

// Candidates lists what a document can be created from (documentID ""), or what
// can be selected for one.
func (d *Documents) Candidates(ctx context.Context, documentID string) (json.RawMessage, error) {
	v := url.Values{}
	if documentID != "" {
		v.Set("documentId", documentID)
	}
	return deref(getJSON[json.RawMessage](ctx, d.tr, withQuery(d.tr.documentsURL("candidates"), v)))
}

// Write sends one working-document write: route is "documents",
// "documents/<id>/versions", "documents/<id>/selections", "documents/<id>/proposals" or
// "proposals/<id>/decisions", body the design's payload with its requestId or
// submissionId, which makes a retry answer the first answer.
func (d *Documents) Write(ctx context.Context, route string, body map[string]any) (json.RawMessage, error) {
	return deref(postJSON[json.RawMessage](ctx, d.tr, d.tr.documentsURL(route), body, replayable))
}

func deref(raw *json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	return *raw, nil
}
