package workbench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Structured record types of workbench_read (docs/workbench.md, workbench_read).
const (
	RecordJSONObject  = "json_object"
	RecordJSONArray   = "json_array"
	RecordYAMLMapping = "yaml_mapping"
	RecordTextLines   = "text_lines"
)

// Read implements workbench_read: structured records (JSON, YAML, text lines) or a
// byte range as base64, paginated with a cursor bound to the file's generation.
func (s *Tools) Read(ctx context.Context, agent string, in ReadInput) (Result, error) {
	return s.toolRead(ctx, agent, in, 0)
}

// toolRead is workbench_read of the live file or a snapshot's (gen 0), or of the retained
// version with generation gen (cairn_read_at, history.go), whose cursors are bound to it.
func (s *Tools) toolRead(ctx context.Context, agent string, in ReadInput, gen uint64) (Result, error) {
	at, aerr := ParseAtSnapshot(in.AtSnapshot)
	if aerr != nil {
		return nil, aerr
	}
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, err
	}
	if in.Section == "" {
		return nil, invalidArgument("section", "is required")
	}
	if in.Path == "" {
		return nil, invalidArgument("path", "must not be empty")
	}
	full, werr := toolTarget(in.Section, in.Path)
	if werr != nil {
		return nil, werr
	}
	format := deref(in.Format)
	if format == "" {
		format = "structured"
	}
	if format != "structured" && format != "bytes" {
		return nil, invalidArgument("format", "must be structured or bytes")
	}
	if in.Offset != nil && in.Cursor != nil {
		return nil, invalidArgument("cursor", "give offset or cursor, not both")
	}
	if in.Offset != nil && *in.Offset < 0 {
		return nil, invalidArgument("offset", "must be at least 0")
	}
	def := DefaultReadLimit
	if format == "bytes" {
		def = MaxReadLimit
	}
	limit, werr := limitArg(in.Limit, def, MaxReadLimit)
	if werr != nil {
		return nil, werr
	}
	var cur cursor
	given := at // the selector as the caller gave it
	if in.Cursor != nil {
		var cerr *Error
		if cur, cerr = s.base.cursors.decode(ctx, *in.Cursor, "read", agent, in.ID, full); cerr != nil {
			return nil, cerr
		}
		if !at.Live() && cur.Snapshot != 0 && cur.Args == format+snapshotArgs(at, cur.Snapshot) {
			at = AtSnapshotID(cur.Snapshot) // a snapshot cursor stays on the snapshot it started on
		}
	}
	var f *File
	var err error
	if gen != 0 {
		f, err = s.reads.OpenGeneration(ctx, agent, in.ID, full, gen)
	} else {
		f, err = s.reads.OpenAt(ctx, agent, in.ID, full, at)
	}
	if err != nil {
		return nil, err
	}
	args := format + snapshotArgs(given, f.SnapshotID)
	if gen != 0 {
		args += "#generation=" + strconv.FormatUint(gen, 10)
	}
	r := s.base.fileFields(success(), agent, in.ID, full)
	r["workbench_path"] = s.WorkbenchPath(agent, in.ID)
	if !given.Live() {
		r["at_snapshot"] = atSnapshotValue(given)
	}
	r["cursor"] = nil // the cursor this page continues from
	if in.Cursor != nil {
		r["cursor"] = *in.Cursor
	}
	r["generation"] = f.Info.Generation
	if in.IfNoneMatch != nil && *in.IfNoneMatch == f.Info.Generation {
		r["not_modified"] = true
		return r, nil
	}
	offset := deref(in.Offset)
	if in.Cursor != nil {
		if cur.Args != args {
			return nil, invalidArgument("cursor", "was issued for another format or at_snapshot")
		}
		if cur.Fence != f.Info.Generation {
			e := newError(CodeReadFenceChanged, "the file changed since the first page (generation %d, now %d); read again from the start", cur.Fence, f.Info.Generation)
			e.Retryable = true
			e.Details["current_generation"] = f.Info.Generation
			return nil, e
		}
		offset = cur.Offset
	}
	r["content_type"] = f.Info.ContentType
	r["digest_uri"] = DigestURI(f.Info.Digest)
	r["total_size_bytes"] = f.Info.Size
	r["format"] = format
	next := func(off int64) any {
		return s.base.cursors.encode(ctx, cursor{Kind: "read", Agent: agent, Workbench: in.ID, Path: full, Args: args, Snapshot: f.SnapshotID, Fence: f.Info.Generation, Offset: off})
	}
	if format == "bytes" {
		if offset > f.Info.Size {
			return nil, invalidArgument("offset", "%d is beyond the end of the file (%d bytes)", offset, f.Info.Size)
		}
		rd, err := f.Reader(ctx, offset, int64(limit))
		if err != nil {
			return nil, err
		}
		defer rd.Close()
		data, err := readExact(rd, min(int64(limit), f.Info.Size-offset))
		if err != nil {
			return nil, err
		}
		end := offset + int64(len(data))
		r["offset"] = offset
		r["returned_bytes"] = len(data)
		r["bytes"] = base64.StdEncoding.EncodeToString(data)
		r["bytes_encoding"] = "base64"
		r["truncated"] = end < f.Info.Size
		r["next_cursor"] = nil
		if end < f.Info.Size {
			r["next_cursor"] = next(end)
		}
		return r, nil
	}
	release, err := admit(ctx, s.base.loads)
	if err != nil {
		return nil, AsError(err)
	}
	defer release()
	if f.Info.Size > s.base.cfg.MCPMaxPayloadBytes {
		return nil, tooLargeToLoad(f.Info.Size, s.base.cfg.MCPMaxPayloadBytes)
	}
	rd, err := f.Reader(ctx, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	recordType, page, count, derr := pageRecords(rd, full, f.Info.ContentType, offset, limit)
	if derr != nil {
		return nil, derr
	}
	if offset > count {
		return nil, invalidArgument("offset", "%d is beyond the last record (%d records)", offset, count)
	}
	end := offset + int64(len(page))
	items := make([]ReadItem, len(page))
	for i, v := range page {
		items[i] = ReadItem{Index: offset + int64(i), Value: v}
	}
	r["bytes"] = nil // structured reads return items, not bytes
	r["bytes_encoding"] = nil
	r["record_type"] = recordType
	r["record_count"] = count
	r["items"] = items
	r["truncated"] = end < count
	r["next_cursor"] = nil
	if end < count {
		r["next_cursor"] = next(end)
	}
	return r, nil
}

// decodeRecords turns a body into structured records: JSON by content type or .json
// extension, YAML by .yaml/.yml, UTF-8 text lines otherwise.
func decodeRecords(full, contentType string, body []byte) (string, []any, *Error) {
	ext := strings.ToLower(path.Ext(full))
	ct := strings.ToLower(contentType)
	failed := func(kind string, err error) *Error {
		return newError(CodeStructuredDecodeFailed, "the file is not valid %s (%v); read it with format=bytes", kind, err)
	}
	switch {
	case ext == ".json" || strings.Contains(ct, "json"):
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return "", nil, failed("JSON", err)
		}
		if dec.More() {
			return "", nil, failed("JSON", fmt.Errorf("data after the first value"))
		}
		switch t := v.(type) {
		case map[string]any:
			return RecordJSONObject, []any{t}, nil
		case []any:
			return RecordJSONArray, t, nil
		}
		return "", nil, failed("JSON", fmt.Errorf("the top level is neither an object nor an array"))
	case ext == ".yaml" || ext == ".yml":
		var v any
		if err := yaml.Unmarshal(body, &v); err != nil {
			return "", nil, failed("YAML", err)
		}
		m, ok := jsonable(v).(map[string]any)
		if !ok {
			return "", nil, failed("YAML", fmt.Errorf("the top level is not a mapping"))
		}
		if hasNonFinite(m) {
			return "", nil, newError(CodeStructuredDecodeFailed, "the YAML file holds .nan or .inf, which JSON records cannot represent; read it with format=bytes")
		}
		return RecordYAMLMapping, []any{m}, nil
	}
	if !utf8.Valid(body) {
		return "", nil, failed("UTF-8 text", fmt.Errorf("invalid UTF-8"))
	}
	text := strings.TrimSuffix(string(body), "\n")
	if text == "" && len(body) <= 1 {
		return RecordTextLines, []any{}, nil
	}
	lines := strings.Split(text, "\n")
	out := make([]any, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSuffix(l, "\r")
	}
	return RecordTextLines, out, nil
}

// hasNonFinite reports whether a decoded YAML value holds a NaN or infinite float (.nan,
// .inf), which has no JSON encoding.
func hasNonFinite(v any) bool {
	switch t := v.(type) {
	case float64:
		return math.IsNaN(t) || math.IsInf(t, 0)
	case float32:
		return math.IsNaN(float64(t)) || math.IsInf(float64(t), 0)
	case map[string]any:
		for _, x := range t {
			if hasNonFinite(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasNonFinite(x) {
				return true
			}
		}
	}
	return false
}

// jsonable converts YAML values (which may have non-string keys) to JSON-encodable ones.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = jsonable(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = jsonable(x)
		}
		return t
	}
	return v
}

// ReadAt implements cairn_read_at: workbench_read of the retained version of a file
// with the given generation (cairn_history lists them), with workbench_read's result;
// its cursors stay on that version. NotFound naming generation when no retained body has
// it.
func (s *Tools) ReadAt(ctx context.Context, agent string, in ReadAtInput) (Result, error) {
	if in.Generation == 0 {
		return nil, invalidArgument("generation", "must be a generation (an integer ≥ 1)")
	}
	return s.toolRead(ctx, agent, ReadInput{ID: in.ID, Section: in.Section, Path: in.Path, Format: in.Format,
		Offset: in.Offset, Cursor: in.Cursor, Limit: in.Limit}, in.Generation)
}

// Grep implements workbench_grep. The search terms are pattern plus patterns:
//
//   - without patterns (absent or empty), pattern is split on '|' into alternatives;
//   - with patterns, pattern and every item of patterns are each one literal term, and
//     '|' is an ordinary character (so patterns is the way to search for a '|');
//
// pattern must never be empty, nor may any alternative or item be; at most
// MaxGrepPatterns distinct terms (after case folding) in all. Errors name the field they
// came from ("pattern" or "patterns").
func (s *Tools) Grep(ctx context.Context, agent string, in GrepInput) (Result, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, err
	}
	full, werr := toolTarget(deref(in.Section), deref(in.Path))
	if werr != nil {
		return nil, werr
	}
	terms, werr := grepTerms(in.Pattern, in.Patterns)
	if werr != nil {
		return nil, werr
	}
	limit, werr := limitArg(in.Limit, DefaultGrepLimit, MaxGrepLimit)
	if werr != nil {
		return nil, werr
	}
	res, err := s.reads.Grep(ctx, GrepRequest{Agent: agent, Workbench: in.ID, Path: full, Patterns: terms,
		Recursive: in.Recursive, Glob: deref(in.Glob), Cursor: deref(in.Cursor), Limit: limit})
	if err != nil {
		return nil, err
	}
	r := s.scopeFields(success(), agent, in.ID, full)
	r["pattern"] = in.Pattern
	r["recursive"] = in.Recursive
	matches := make([]map[string]any, 0, len(res.Matches))
	for _, m := range res.Matches {
		var sec any
		if m.Section != "" {
			sec = m.Section
		}
		matches = append(matches, map[string]any{"path": m.Presentation, "section": sec,
			"relative_path": m.RelativePath, "line_number": m.LineNumber, "snippet": m.Snippet})
	}
	r["matches"] = matches
	r["files_scanned"] = res.FilesScanned
	r["next_cursor"] = nilIfEmpty(res.NextCursor)
	r["truncated"] = res.Truncated
	// Cairn's additions (issue 25, finding 16: a first page that spent its bound inside a
	// large file answered matches [] and truncated true, and an agent reading that one page
	// concluded "no match"): how much this page read, and whether the search reached the
	// end of its scope. scan_complete false with no matches means "nothing found yet":
	// continue with next_cursor.
	r["scanned_bytes"] = res.ScannedBytes
	r["scan_complete"] = res.NextCursor == ""
	return r, nil
}
