package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/internal/strictjson"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// maxToolBody bounds the JSON body of a tool-style request (commit manifests, queries).
const maxToolBody = 8 << 20

// FieldHeaderPrefix is the prefix of the request headers that attach metadata fields to a
// written file: Cairn-Field-<name>: <JSON scalar>. Names are case-folded to lower case.
const FieldHeaderPrefix = "Cairn-Field-"

// fieldHeaders collects Cairn-Field-* headers: each value is a JSON scalar (a string in
// quotes, a number, true or false); a value that is not valid JSON is taken as a plain
// string. null, objects and arrays are InvalidArguments naming the header.
func fieldHeaders(r *http.Request) (map[string]meta.FieldValue, error) {
	var out map[string]meta.FieldValue
	for k, vs := range r.Header {
		if len(k) < len(FieldHeaderPrefix) || !strings.EqualFold(k[:len(FieldHeaderPrefix)], FieldHeaderPrefix) {
			continue
		}
		if len(k) == len(FieldHeaderPrefix) {
			return nil, invalidArg(k, "names no field (use %s<name>)", FieldHeaderPrefix)
		}
		name := strings.ToLower(k[len(FieldHeaderPrefix):])
		if len(vs) != 1 {
			return nil, invalidArg(k, "must be given once")
		}
		v, err := parseFieldValue(vs[0])
		if err != nil {
			return nil, invalidArg(k, "%v", err)
		}
		if out == nil {
			out = map[string]meta.FieldValue{}
		}
		out[name] = v
	}
	if err := meta.ValidateFields("fields", out); err != nil {
		return nil, err
	}
	return out, nil
}

func parseFieldValue(s string) (meta.FieldValue, error) {
	t := strings.TrimSpace(s)
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return meta.StringField(s), nil // not JSON: a plain string
	}
	if _, err := dec.Token(); err != io.EOF {
		return meta.StringField(s), nil
	}
	switch x := v.(type) {
	case string:
		return meta.StringField(x), nil
	case bool:
		return meta.BoolField(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return meta.IntField(i), nil
		}
		if !strings.ContainsAny(x.String(), ".eE") {
			// A float would silently round it; refuse rather than store another number.
			return meta.FieldValue{}, fmt.Errorf("integer %s does not fit in 64 bits (send it as a string)", x)
		}
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil || math.IsInf(f, 0) {
			return meta.FieldValue{}, fmt.Errorf("number %s is out of range", x)
		}
		return meta.FloatField(f), nil
	case nil:
		return meta.FieldValue{}, errors.New("must be a JSON scalar (string, number or boolean), not null")
	}
	return meta.FieldValue{}, errors.New("must be a JSON scalar (string, number or boolean), not an object or array")
}

// atSnapshotQuery reads ?at_snapshot=: digits select a snapshot id, anything else a name.
func atSnapshotQuery(q url.Values) (workbench.At, error) {
	vs, ok := q["at_snapshot"]
	if !ok {
		return workbench.At{}, nil
	}
	if len(vs) != 1 || vs[0] == "" {
		return workbench.At{}, invalidArg("at_snapshot", "give one snapshot id or name")
	}
	if id, err := strconv.ParseUint(vs[0], 10, 64); err == nil {
		return workbench.AtSnapshotID(id), nil
	}
	return workbench.AtSnapshotName(vs[0]), nil
}

// onlyParams rejects query parameters outside allowed.
func onlyParams(q url.Values, allowed ...string) error {
	for k := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return invalidArg(k, "is not a parameter here (allowed: %s)", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// decodeBody decodes a JSON request body into in, rejecting unknown fields, trailing data
// and bodies over maxToolBody with InvalidArguments naming the field.
func decodeBody(r *http.Request, in any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxToolBody+1))
	if err != nil {
		var we *workbench.Error
		if errors.As(err, &we) {
			return we // a body below the minimum rate (newRateBody)
		}
		return invalidArg("body", "could not be read: %v", err)
	}
	if len(data) > maxToolBody {
		return &workbench.Error{Code: workbench.CodePayloadTooLarge, Message: fmt.Sprintf("the request body is more than %d bytes", maxToolBody),
			Details: map[string]any{"max_bytes": maxToolBody}}
	}
	switch trimmed := bytes.TrimSpace(data); {
	case len(trimmed) == 0:
		data = []byte("{}")
	case string(trimmed) == "null":
		// encoding/json leaves a struct as it is for null: the body would read as {}.
		return invalidArg("body", "must be a JSON object, not null (send {} or no body for no arguments)")
	}
	// encoding/json reads a byte that is not UTF-8, or an unpaired surrogate escape, as
	// U+FFFD: a path so spelled would name another file; and it keeps the last of two
	// members of one name. Text is taken as sent or refused.
	if uerr := strictjson.Check(data); uerr != nil {
		if uerr.Duplicate {
			return &workbench.Error{Code: workbench.CodeInvalidArguments, Message: uerr.Field + ": appears twice in one object; name each member once",
				Details: map[string]any{"field": uerr.Field, "rule": "duplicate_member"}}
		}
		return invalidArg("body", "must be Unicode text (valid UTF-8, surrogate escapes in pairs): %s", uerr)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return invalidArg("body", "has data after the JSON object")
	}
	return nil
}

// decodeError turns a JSON decode error into InvalidArguments that names the field as
// the wire does (its JSON path, or "body" for the whole document) and the JSON kind it
// must be, never a Go type (json.UnmarshalTypeError's Type is one).
func decodeError(err error) error {
	var we *workbench.Error
	if errors.As(err, &we) {
		return we
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		want := wireKind(te.Type)
		if strings.HasPrefix(te.Value, "number") && strings.HasSuffix(want, "integer") {
			want += " in range" // a number that does not fit (or has a fraction)
		}
		return invalidArg(field, "must be %s (got %s)", want, articled(te.Value))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return invalidArg("body", "is not valid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return invalidArg("body", "is not valid JSON: it ends inside a value")
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return invalidArg(strings.Trim(f, `"`), "is not a field of this request")
	}
	return invalidArg("body", "is not valid JSON")
}

// wireKind names the JSON kind a Go type decodes from.
func wireKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value of another kind"
}

// articled puts "a"/"an" before a JSON kind named by json.UnmarshalTypeError.Value
// ("string", "number", "object", "array", "bool", or a number's text).
func articled(v string) string {
	switch v {
	case "object", "array":
		return "an " + v
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "number":
		return "a number"
	}
	if strings.HasPrefix(v, "number") {
		return "the " + v
	}
	return v
}

// tool answers a JSON-body request with a Workbench tool: method names the allowed
// method, run decodes and runs it, status is the success status.
func (h *Handler) tool(w http.ResponseWriter, r *http.Request, method string, status int, run func(context.Context) (workbench.Result, error)) {
	if !allow(w, r, method) {
		return
	}
	res, err := run(r.Context())
	h.answer(w, r, status, res, err)
}

// answer writes a result (recording the generation it produced) or an error.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, status int, res workbench.Result, err error) {
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	produced(r.Context(), res.Generation())
	WriteJSON(w, status, map[string]any(res))
}

// bodyTool decodes the JSON body into a fresh In, lets set fill path-derived fields, and
// runs the tool method: a query, which changes nothing and so takes no Idempotency-Key
// (400 naming it, rather than a key taken and kept for nothing).
func bodyTool[In any](h *Handler, w http.ResponseWriter, r *http.Request, status int, set func(*In) error,
	method func(*workbench.Tools, context.Context, string, In) (workbench.Result, error), agent string) {
	h.tool(w, r, http.MethodPost, status, func(ctx context.Context) (workbench.Result, error) {
		if len(r.Header.Values("Idempotency-Key")) > 0 {
			return nil, invalidArg("Idempotency-Key", "is not taken by a query, which changes nothing (send it again as it is); leave the header out")
		}
		in, err := toolInput(r, set)
		if err != nil {
			return nil, err
		}
		return method(h.svc.Tools, ctx, agent, in)
	})
}

// keyedTool is bodyTool for a tool that changes state (commit, restore, the snapshot
// tools: workbench.Lifecycle's methods that take a request id): the request's
// Idempotency-Key (idempotencyKeyOf) is run's request id, so a retry under it answers the
// first answer (the FSM's dedupe record, docs/architecture.md "Idempotency") and the key
// with another body is 400 InvalidArguments naming idempotency_key, as for file writes.
func keyedTool[In any](h *Handler, w http.ResponseWriter, r *http.Request, status int, set func(*In) error,
	run func(context.Context, string, In, string) (workbench.Result, error), agent string) {
	h.tool(w, r, http.MethodPost, status, func(ctx context.Context) (workbench.Result, error) {
		key, err := idempotencyKeyOf(r)
		if err != nil {
			return nil, err
		}
		in, err := toolInput(r, set)
		if err != nil {
			return nil, err
		}
		return run(ctx, agent, in, key)
	})
}

// toolInput decodes a tool's JSON body into a fresh In (jsonBody) and lets set fill its
// path-derived fields.
func toolInput[In any](r *http.Request, set func(*In) error) (In, error) {
	var in In
	if err := jsonBody(r, &in); err != nil {
		return in, err
	}
	if set != nil {
		if err := set(&in); err != nil {
			return in, err
		}
	}
	return in, nil
}

// workbenchTool routes the tool endpoints under /v1/agents/{agent}/workbenches/{id}/.
func (h *Handler) workbenchTool(w http.ResponseWriter, r *http.Request, agent, id string, segs []string) (string, bool) {
	// The mutating tools run with their surface named and get an audit line.
	mutating := func(op string) {
		if r.Method == http.MethodPost {
			r = mutation(r, op, agent, id, "")
		}
	}
	switch {
	case len(segs) == 1 && segs[0] == "commit":
		mutating("commit")
		keyedTool(h, w, r, http.StatusOK, func(in *workbench.CommitInput) error { return idFromPath(&in.ID, id) }, h.svc.Lifecycle.Commit, agent)
		return "commit", true
	case len(segs) == 1 && segs[0] == "restore":
		mutating("restore")
		keyedTool(h, w, r, http.StatusOK, func(in *workbench.RestoreInput) error { return idFromPath(&in.ID, id) }, h.svc.Lifecycle.Restore, agent)
		return "restore", true
	case len(segs) == 1 && segs[0] == "grep":
		bodyTool(h, w, r, http.StatusOK, func(in *workbench.GrepInput) error { return idFromPath(&in.ID, id) }, (*workbench.Tools).Grep, agent)
		return "grep", true
	case len(segs) == 1 && segs[0] == "snapshots":
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.tool(w, r, r.Method, http.StatusOK, func(ctx context.Context) (workbench.Result, error) {
				if r.URL.RawQuery == "" {
					return h.svc.Tools.SnapshotList(ctx, agent, workbench.SnapshotListInput{ID: id})
				}
				cursor, limit, err := pageParams(r, workbench.MaxSnapshotPageLimit)
				if err != nil {
					return nil, err
				}
				return h.svc.Lifecycle.SnapshotListPage(ctx, agent, id, cursor, limit)
			})
			return "snapshots", true
		}
		if r.Method != http.MethodPost {
			allow(w, r, http.MethodGet, http.MethodHead, http.MethodPost)
			return "snapshots", true
		}
		mutating("snapshot")
		keyedTool(h, w, r, http.StatusCreated, func(in *workbench.SnapshotInput) error { return idFromPath(&in.ID, id) }, h.svc.Lifecycle.Snapshot, agent)
		return "snapshots", true
	case len(segs) == 1 && segs[0] == "commits":
		// The commits, newest first, in pages (workbench Lifecycle.CommitListPage).
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return "commits", true
		}
		h.tool(w, r, r.Method, http.StatusOK, func(ctx context.Context) (workbench.Result, error) {
			cursor, limit, err := pageParams(r, workbench.MaxCommitPageLimit)
			if err != nil {
				return nil, err
			}
			return h.svc.Lifecycle.CommitListPage(ctx, agent, id, cursor, limit)
		})
		return "commits", true
	case len(segs) == 2 && segs[0] == "snapshots" && segs[1] == "renew":
		mutating("snapshot-renew")
		keyedTool(h, w, r, http.StatusOK, func(in *workbench.SnapshotRenewInput) error { return idFromPath(&in.ID, id) }, h.svc.Lifecycle.SnapshotRenew, agent)
		return "snapshot-renew", true
	case len(segs) == 2 && segs[0] == "snapshots" && segs[1] == "retire":
		mutating("snapshot-retire")
		keyedTool(h, w, r, http.StatusOK, func(in *workbench.SnapshotRetireInput) error { return idFromPath(&in.ID, id) }, h.svc.Lifecycle.SnapshotRetire, agent)
		return "snapshot-retire", true
	}
	return "", false
}

// rootTool routes the root-wide tool endpoints under /v1/agents/{agent}/.
func (h *Handler) rootTool(w http.ResponseWriter, r *http.Request, agent string, segs []string) (string, bool) {
	switch {
	case len(segs) == 1 && segs[0] == "search":
		bodyTool(h, w, r, http.StatusOK, nil, (*workbench.Tools).Search, agent)
		return "search", true
	case len(segs) == 1 && segs[0] == "aggregate":
		bodyTool(h, w, r, http.StatusOK, nil, (*workbench.Tools).Aggregate, agent)
		return "aggregate", true
	case len(segs) == 1 && segs[0] == "catalog":
		bodyTool(h, w, r, http.StatusOK, nil, (*workbench.Tools).Catalog, agent)
		return "catalog", true
	case len(segs) == 1 && segs[0] == "find":
		bodyTool(h, w, r, http.StatusOK, nil, (*workbench.Tools).Find, agent)
		return "find", true
	case len(segs) == 2 && segs[0] == "restores":
		opID, err := component("operation_id", segs[1])
		if err != nil {
			h.writeError(w, r, err, noPrecondition)
			return "restore-status", true
		}
		h.tool(w, r, http.MethodGet, http.StatusOK, func(ctx context.Context) (workbench.Result, error) {
			return h.svc.Lifecycle.RestoreStatus(ctx, agent, opID)
		})
		return "restore-status", true
	}
	return "", false
}

// parseQuery parses the request's query string; a malformed one is InvalidArguments
// naming "query". Every query parameter of the REST surface takes one value, so one given
// twice (?path=a&path=b) is InvalidArguments naming it (details.rule: duplicate_parameter)
// rather than read as its first value: which one counts is not ours to pick, as for a JSON
// member named twice. Of several, the first repeated in the query string is named. A
// request without a query has no parameters (nil: a map to read, never to write).
func parseQuery(r *http.Request) (url.Values, error) {
	if r.URL.RawQuery == "" {
		return nil, nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidArg("query", "does not parse: %v", err)
	}
	if len(q) == 0 {
		return q, nil
	}
	for rest := r.URL.RawQuery; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		name, _, _ := strings.Cut(pair, "=")
		name, _ = url.QueryUnescape(name) // it parsed above
		if n := len(q[name]); n > 1 {
			return nil, &workbench.Error{Code: workbench.CodeInvalidArguments,
				Message: fmt.Sprintf("%s: is given %d times; a query parameter takes one value", name, n),
				Details: map[string]any{"field": name, "rule": "duplicate_parameter"}}
		}
	}
	return q, nil
}

// queryParams parses the request's query string (parseQuery) and rejects parameters
// outside allowed (onlyParams).
func queryParams(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := parseQuery(r)
	if err == nil {
		err = onlyParams(q, allowed...)
	}
	return q, err
}

// limitParam reads a page's ?limit=, an integer from 1 to most; 0 when it is absent or
// empty (the caller's default).
func limitParam(q url.Values, most int) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, invalidArg("limit", "must be an integer between 1 and %d", most)
	}
	return n, nil
}

// pageParams reads the query of a paged listing that takes only limit (1..most, default
// most) and cursor.
func pageParams(r *http.Request, most int) (cursor string, limit int, err error) {
	q, err := queryParams(r, "limit", "cursor")
	if err != nil {
		return "", 0, err
	}
	if limit, err = limitParam(q, most); err != nil {
		return "", 0, err
	}
	if limit == 0 {
		limit = most
	}
	return q.Get("cursor"), limit, nil
}

// jsonBody decodes the JSON body of a request that takes its arguments there (decodeBody)
// and none in its query string.
func jsonBody(r *http.Request, in any) error {
	if r.URL.RawQuery != "" {
		return invalidArg("query", "this request takes its arguments in a JSON body")
	}
	return decodeBody(r, in)
}

// idFromPath fills a body's workbench id (*p) with id, the one the URL path names; an id
// in the body is refused rather than silently overridden.
func idFromPath(p *string, id string) error {
	if *p != "" {
		return invalidArg("id", "comes from the URL path; the body must not carry it")
	}
	*p = id
	return nil
}
