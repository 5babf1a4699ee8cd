package workbench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/meta"
)

// Tool inputs, decoded from the JSON arguments after they passed the contract's input
// schema (docs/workbench.md#the-18-tools-inputs). Optional and nullable fields are pointers.

// CreateInput is workbench_create's input.
type CreateInput struct {
	ID string `json:"id"`
}

// PutFileInput is workbench_put_file's input.
type PutFileInput struct {
	ID          string  `json:"id"`
	Section     string  `json:"section"`
	Path        string  `json:"path"`
	Text        *string `json:"text"`
	Base64      *string `json:"base64"`
	ContentType *string `json:"content_type"`
	Replace     *bool   `json:"replace"`
	// ExpectedGeneration, with Replace, is the generation the file must be at for the
	// write to apply (NoKV PR #491); nil writes over whatever is current.
	ExpectedGeneration *uint64 `json:"expected_generation"`
}

// AppendInput is workbench_append's input.
type AppendInput struct {
	ID          string  `json:"id"`
	Section     string  `json:"section"`
	Path        string  `json:"path"`
	Text        *string `json:"text"`
	Base64      *string `json:"base64"`
	ContentType *string `json:"content_type"`
}

// EditInput is workbench_edit's input.
type EditInput struct {
	ID         string `json:"id"`
	Section    string `json:"section"`
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll *bool  `json:"replace_all"`
}

// ListInput is workbench_list's input.
type ListInput struct {
	ID         string          `json:"id"`
	Section    *string         `json:"section"`
	Path       *string         `json:"path"`
	AtSnapshot json.RawMessage `json:"at_snapshot"`
	Cursor     *string         `json:"cursor"`
	Limit      *int            `json:"limit"`
}

// StatInput is workbench_stat's input.
type StatInput struct {
	ID         string          `json:"id"`
	Section    *string         `json:"section"`
	Path       *string         `json:"path"`
	AtSnapshot json.RawMessage `json:"at_snapshot"`
}

// ReadInput is workbench_read's input.
type ReadInput struct {
	ID          string          `json:"id"`
	Section     string          `json:"section"`
	Path        string          `json:"path"`
	AtSnapshot  json.RawMessage `json:"at_snapshot"`
	Format      *string         `json:"format"`
	Offset      *int64          `json:"offset"`
	Cursor      *string         `json:"cursor"`
	Limit       *int            `json:"limit"`
	IfNoneMatch *uint64         `json:"if_none_match"`
}

// Result is a tool's success object; it always starts with "status": "success".
type Result map[string]any

func success() Result { return Result{"status": "success"} }

// maxEditAttempts bounds edit's re-read-and-revalidate loop (docs/workbench.md, workbench_edit).
const maxEditAttempts = 5

// Read limits (docs/workbench.md: limit 1..300).
const (
	DefaultReadLimit = 100
	MaxReadLimit     = 300
)

// toolTarget resolves (section, path) of a tool call to a full path inside the workbench.
// section "" means null. The path may not repeat the section name as its first component.
func toolTarget(section, path string) (full string, err *Error) {
	if section != "" && !isSection(section) {
		return "", invalidArgument("section", "must be one of input, scripts, outputs, logs, metadata")
	}
	if section == "" {
		if path != "" {
			if err := ValidatePath("path", path); err != nil { // path names its section
				return "", err
			}
		}
		return path, nil
	}
	if path != "" {
		if err := checkRelativePath("path", path); err != nil {
			return "", err
		}
		if e := meta.ValidatePath("path", path); e != nil {
			return "", AsError(e)
		}
	}
	if path == "" {
		return section, nil
	}
	if first, _, _ := strings.Cut(path, "/"); first == section {
		return "", invalidArgument("path", "must be relative to the section and not repeat its name %q", section)
	}
	return section + "/" + path, nil
}

// browseTarget checks the target of workbench_list and workbench_stat: the read point
// atSnapshot names, and the path (workbench-relative, "" for the workbench) that the
// optional section and path name in workbench id.
func browseTarget(agent, id string, section, path *string, atSnapshot json.RawMessage) (At, string, *Error) {
	at, werr := ParseAtSnapshot(atSnapshot)
	if werr != nil {
		return At{}, "", werr
	}
	if werr := validateTarget(agent, id, ""); werr != nil {
		return At{}, "", werr
	}
	full, werr := toolTarget(deref(section), deref(path))
	return at, full, werr
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// payload decodes exactly one of text or base64, enforcing the MCP payload cap maxBytes
// (Config.MCPMaxPayloadBytes).
func payload(maxBytes int64, text, b64 *string) ([]byte, bool, *Error) {
	switch {
	case text != nil && b64 != nil:
		return nil, false, invalidArgument("text", "give exactly one of text or base64, not both")
	case text == nil && b64 == nil:
		return nil, false, invalidArgument("text", "give exactly one of text or base64")
	case text != nil:
		if int64(len(*text)) > maxBytes {
			return nil, true, payloadTooLarge(int64(len(*text)), maxBytes)
		}
		return []byte(*text), true, nil
	}
	if n := base64DecodedLen(*b64); n > maxBytes {
		return nil, false, payloadTooLarge(n, maxBytes)
	}
	data, err := base64.StdEncoding.DecodeString(*b64)
	if err != nil {
		return nil, false, invalidArgument("base64", "is not valid standard base64: %v", err)
	}
	if int64(len(data)) > maxBytes {
		return nil, false, payloadTooLarge(int64(len(data)), maxBytes)
	}
	return data, false, nil
}

// base64DecodedLen is the exact decoded size of padded standard base64, without decoding
// it: base64.StdEncoding.DecodedLen over-counts the padding by up to 2 bytes and the line
// breaks the decoder skips by 3/4 of a byte each.
func base64DecodedLen(s string) int64 {
	n := len(s) - strings.Count(s, "\n") - strings.Count(s, "\r")
	t := strings.TrimRight(s, "\r\n")
	pad := 0
	for pad < 2 && strings.HasSuffix(t, "=") {
		t = strings.TrimRight(t[:len(t)-1], "\r\n")
		pad++
	}
	return int64(n/4*3 - pad)
}

// writePayload decodes a write tool's payload (exactly one of text or base64) and picks its
// content type: the caller's, else text/plain; charset=utf-8 for text and
// application/octet-stream for base64.
func writePayload(maxBytes int64, text, b64, contentType *string) ([]byte, string, *Error) {
	data, isText, err := payload(maxBytes, text, b64)
	if err != nil {
		return nil, "", err
	}
	ct := deref(contentType)
	if ct == "" {
		ct = "application/octet-stream"
		if isText {
			ct = "text/plain; charset=utf-8"
		}
	}
	return data, ct, nil
}

// atSnapshotValue renders a selector back as the caller gave it (id or name).
func atSnapshotValue(at At) any {
	if at.SnapshotName != "" {
		return at.SnapshotName
	}
	return at.SnapshotID
}

// scopeFields adds the keys that say what a listing or a grep covered: the workbench, the
// section (null for the workbench top), the path relative to it (null for the section
// itself), and the presentation path of the scope.
func (s *Tools) scopeFields(r Result, agent, id, full string) Result {
	sec, rel := splitSection(full)
	r["workbench_id"] = id
	r["workbench_path"] = s.WorkbenchPath(agent, id)
	r["section"] = nilIfEmpty(sec)
	r["relative_path"] = nilIfEmpty(rel)
	r["path"] = s.base.scopePath(agent, id, full)
	return r
}

// Create implements workbench_create: an exact retry returns the same result.
func (s *Tools) Create(ctx context.Context, agent string, in CreateInput) (Result, error) {
	res, err := s.life.CreateWorkbench(ctx, agent, in.ID, "")
	if err != nil {
		return nil, err
	}
	r := success()
	r["workbench_id"] = res.WorkbenchID
	r["path"] = res.Path
	r["sections"] = Sections
	return r, nil
}

func (s *Tools) validateWrite(agent, id, section, path string) (string, *Error) {
	if err := validateTarget(agent, id, ""); err != nil {
		return "", err
	}
	if section == "" {
		return "", invalidArgument("section", "is required")
	}
	if path == "" {
		return "", invalidArgument("path", "must not be empty")
	}
	full, err := toolTarget(section, path)
	if err != nil {
		return "", err
	}
	if err := checkWritable(full); err != nil {
		return "", err
	}
	return full, nil
}

// PutFile implements workbench_put_file: create-only by default, replace-only with
// replace=true; never an upsert. A replace applies at the generation it observed, or with
// expected_generation only at that one (NoKV PR #491, docs/workbench.md): a stale value is
// Conflict with details.current_generation, so two writers that read the same generation
// cannot both replace it. expected_generation 0, or without replace, is InvalidArguments.
func (s *Tools) PutFile(ctx context.Context, agent string, in PutFileInput) (Result, error) {
	full, werr := s.validateWrite(agent, in.ID, in.Section, in.Path)
	if werr != nil {
		return nil, werr
	}
	if in.ExpectedGeneration != nil {
		switch {
		case *in.ExpectedGeneration == 0:
			return nil, invalidArgument("expected_generation", "must be at least 1 (generations start at 1)")
		case !deref(in.Replace):
			return nil, invalidArgument("expected_generation", "is allowed only with replace: true")
		}
	}
	data, ct, werr := writePayload(s.base.cfg.MCPMaxPayloadBytes, in.Text, in.Base64, in.ContentType)
	if werr != nil {
		return nil, werr
	}
	replace := deref(in.Replace)
	req := WriteRequest{Agent: agent, Workbench: in.ID, Path: full, Body: bytes.NewReader(data), SizeHint: int64(len(data)), ContentType: ct,
		Cond: meta.CondCreateOnly, CreateWorkbench: true}
	if replace {
		// A path outside the caller's prefixes is refused as the write it is, before the
		// read of the entry it replaces would answer it missing.
		if werr := mayWritePath(ctx, s.base, agent, in.ID, full); werr != nil {
			return nil, werr
		}
		cur, err := s.writes.currentEntry(ctx, agent, in.ID, full, false)
		if err != nil {
			return nil, err
		}
		if cur == nil && in.ExpectedGeneration != nil {
			return nil, missingForGeneration(*in.ExpectedGeneration)
		}
		if cur == nil {
			return nil, newError(CodeNotFound, "the file does not exist; use replace=false to create it")
		}
		req.Cond, req.IfGeneration, req.Executable, req.CreateWorkbench = meta.CondIfGeneration, cur.Generation, cur.Executable, false
		if in.ExpectedGeneration != nil {
			if *in.ExpectedGeneration != cur.Generation {
				// Stale before any byte is uploaded; the metadata core checks the same
				// condition again when it applies the write.
				// A precondition the caller set: retrying it cannot succeed.
				return nil, PreconditionFailed(conflict(cur.Generation, *in.ExpectedGeneration))
			}
			req.IfGeneration = *in.ExpectedGeneration
		}
	}
	res, err := s.writes.Write(ctx, req)
	if err != nil {
		if e := AsError(err); in.ExpectedGeneration != nil && e.Code == CodeConflict {
			return nil, PreconditionFailed(e)
		}
		return nil, err
	}
	r := s.base.fileFields(success(), agent, in.ID, full)
	r["size_bytes"] = res.Size
	r["generation"] = res.Generation
	r["digest_uri"] = res.DigestURI()
	r["content_type"] = res.ContentType
	r["replace"] = replace
	return r, nil
}

// Append implements workbench_append: creates the file when missing, otherwise appends
// after a generation compare-and-swap, retrying conflicts itself. Without a request id it
// is at-least-once: a transport retry of a call that did apply appends twice.
func (s *Tools) Append(ctx context.Context, agent string, in AppendInput) (Result, error) {
	full, werr := s.validateWrite(agent, in.ID, in.Section, in.Path)
	if werr != nil {
		return nil, werr
	}
	data, ct, werr := writePayload(s.base.cfg.MCPMaxPayloadBytes, in.Text, in.Base64, in.ContentType)
	if werr != nil {
		return nil, werr
	}
	res, err := s.writes.Append(ctx, AppendRequest{Agent: agent, Workbench: in.ID, Path: full, Body: bytes.NewReader(data), SizeHint: int64(len(data)),
		ContentType: ct, CreateWorkbench: true})
	if err != nil {
		return nil, err
	}
	r := s.base.fileFields(success(), agent, in.ID, full)
	r["appended_bytes"] = res.AppendedBytes
	r["size_bytes"] = res.Size
	r["generation"] = res.Generation
	r["created"] = res.Created
	r["digest"] = DigestURI(res.AppendDigest)
	return r, nil
}

// Edit implements workbench_edit: exact UTF-8 replacement on the live body, with
// re-read and revalidation on a conflict (up to 5 attempts).
func (s *Tools) Edit(ctx context.Context, agent string, in EditInput) (Result, error) {
	full, werr := s.validateWrite(agent, in.ID, in.Section, in.Path)
	if werr != nil {
		return nil, werr
	}
	if in.OldString == "" {
		return nil, invalidArgument("old_string", "must not be empty")
	}
	if !utf8.ValidString(in.OldString) || !utf8.ValidString(in.NewString) {
		return nil, newError(CodeInvalidUTF8, "old_string and new_string must be valid UTF-8")
	}
	// Edit reads and writes: it needs both scopes (Open checks the read). A path outside
	// the caller's prefixes is refused as the write it is (PermissionDenied), before the
	// read would answer it missing.
	if werr := mayWritePath(ctx, s.base, agent, in.ID, full); werr != nil {
		return nil, werr
	}
	release, err := admit(ctx, s.base.loads)
	if err != nil {
		return nil, AsError(err)
	}
	defer release()
	for attempt := 1; ; attempt++ {
		f, err := s.reads.Open(ctx, agent, in.ID, full)
		if err != nil {
			return nil, s.stagingWriteError(ctx, agent, in.ID, err)
		}
		body, err := f.ReadAll(ctx, s.base.cfg.MCPMaxPayloadBytes)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(body) {
			return nil, newError(CodeInvalidUTF8, "the file is not valid UTF-8; edit works on text only")
		}
		n := strings.Count(string(body), in.OldString)
		if n == 0 {
			return nil, newError(CodeNoMatch, "old_string does not occur in the file")
		}
		if n > 1 && !deref(in.ReplaceAll) {
			e := newError(CodeAmbiguousEdit, "old_string occurs %d times; make it unique or set replace_all", n)
			e.Details["matches"] = n
			return nil, e
		}
		replacements := n
		if !deref(in.ReplaceAll) {
			replacements = 1
		}
		// The result's size is known before it is built: refuse it without allocating
		// (a 4 MiB file × a 1 MiB replace_all would ask for 4 TiB). edit loads whole bodies
		// up to the cap: it must not make one it cannot edit again. No overflow: the body
		// and both strings are bounded by the MCP message size, far below 2^31 each.
		if size := editedSize(len(body), replacements, len(in.OldString), len(in.NewString)); size > s.base.cfg.MCPMaxPayloadBytes {
			e := payloadTooLarge(size, s.base.cfg.MCPMaxPayloadBytes)
			e.Message = fmt.Sprintf("the edited file would be %d bytes, more than the %d bytes edit handles", size, s.base.cfg.MCPMaxPayloadBytes)
			return nil, e
		}
		updated := strings.Replace(string(body), in.OldString, in.NewString, replacements)
		r := s.base.fileFields(success(), agent, in.ID, full)
		r["replacements"] = replacements
		if updated == string(body) {
			r["size_bytes"] = f.Info.Size
			r["generation"] = f.Info.Generation
			r["no_change"] = true
			return r, nil
		}
		res, err := s.writes.Write(ctx, WriteRequest{Agent: agent, Workbench: in.ID, Path: full, Body: strings.NewReader(updated), SizeHint: int64(len(updated)),
			ContentType: f.Info.ContentType, Executable: f.Info.Executable, Cond: meta.CondIfGeneration, IfGeneration: f.Info.Generation})
		if err != nil {
			if we := AsError(err); we.Code == CodeConflict && attempt < maxEditAttempts {
				continue
			}
			return nil, err
		}
		r["size_bytes"] = res.Size
		r["generation"] = res.Generation
		r["no_change"] = false
		return r, nil
	}
}

// editedSize is the size in bytes of a body of size bytes after replacements
// non-overlapping replacements of an oldLen-byte string by a newLen-byte one.
func editedSize(size, replacements, oldLen, newLen int) int64 {
	return int64(size) + int64(replacements)*(int64(newLen)-int64(oldLen))
}

// List implements workbench_list.
func (s *Tools) List(ctx context.Context, agent string, in ListInput) (Result, error) {
	at, full, werr := browseTarget(agent, in.ID, in.Section, in.Path, in.AtSnapshot)
	if werr != nil {
		return nil, werr
	}
	limit, werr := limitArg(in.Limit, DefaultListLimit, 100) // the contract's bound, below MaxListLimit
	if werr != nil {
		return nil, werr
	}
	res, err := s.reads.List(ctx, ListRequest{Agent: agent, Workbench: in.ID, Path: full, Cursor: deref(in.Cursor), Limit: limit, At: at})
	if err != nil {
		return nil, err
	}
	r := s.scopeFields(success(), agent, in.ID, full)
	if !at.Live() {
		r["at_snapshot"] = atSnapshotValue(at)
	}
	r["entry_count"] = res.EntryCount
	r["entries"] = listedEntries(s.base.WorkbenchPath(agent, in.ID)+"/", res.Entries)
	r["next_cursor"] = nilIfEmpty(res.NextCursor)
	r["truncated"] = res.Truncated
	return r, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Stat implements workbench_stat: the workbench, a section, a directory or a file.
func (s *Tools) Stat(ctx context.Context, agent string, in StatInput) (Result, error) {
	at, full, werr := browseTarget(agent, in.ID, in.Section, in.Path, in.AtSnapshot)
	if werr != nil {
		return nil, werr
	}
	st, err := s.reads.StatAt(ctx, agent, in.ID, full, at)
	if err != nil {
		return nil, err
	}
	r := s.scopeFields(success(), agent, in.ID, full)
	if !at.Live() {
		r["at_snapshot"] = atSnapshotValue(at)
	}
	r["card"] = s.statCard(agent, in.ID, full, st)
	return r, nil
}

// statCard is workbench_stat's metadata card (the published shape). record_count is
// always null: counting records needs the body, which stat does not read. producer is who
// wrote the revision described (StatResult.Producer as meta.Producer.String: "alice via
// rest/put"; "" when unknown: directories, a workbench at a snapshot, data written before
// producers were recorded); Cairn adds its parts as producer_principal and
// producer_surface. manifest_id is the identity of the head commit that seals what is
// described (StatResult.SealedBy), else null. Cairn adds executable and
// modified_at_unix_ms for files, file_count for directories and the workbench, and
// sections for the workbench.
func (s *Tools) statCard(agent, id, full string, st StatResult) map[string]any {
	c := map[string]any{"kind": st.Kind, "producer": st.Producer.String(), "producer_principal": st.Producer.Principal,
		"producer_surface": st.Producer.Surface, "record_count": nil, "manifest_id": nilIfEmpty(st.SealedBy),
		"content_type": nil, "digest_uri": nil, "generation": nil}
	sec, rel := splitSection(full)
	c["section"], c["relative_path"] = nilIfEmpty(sec), nilIfEmpty(rel)
	c["path"] = s.base.scopePath(agent, id, full)
	switch st.Kind {
	case "workbench":
		c["name"] = id
		c["size_bytes"] = st.Dir.Bytes
		c["file_count"] = st.Dir.Files
		c["entry_count"] = st.Dir.Children
		c["sections"] = Sections
	case "file":
		c["name"] = baseName(full)
		c["size_bytes"] = st.File.Size
		c["entry_count"] = nil
		c["generation"] = st.File.Generation
		c["content_type"] = st.File.ContentType
		c["digest_uri"] = DigestURI(st.File.Digest)
		c["executable"] = st.File.Executable
		c["modified_at_unix_ms"] = st.File.ModifiedAtMs
	default:
		c["name"] = baseName(full)
		c["size_bytes"] = st.Dir.Bytes
		c["file_count"] = st.Dir.Files
		c["entry_count"] = st.Dir.Children
	}
	return c
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// stagingWriteError turns the NotFound a write's read step gets for a restore destination
// that is still staging into the InvalidState a write to it gets (docs/workbench.md, workbench_restore).
func (s *Tools) stagingWriteError(ctx context.Context, agent, id string, err error) error {
	if AsError(err).Code != CodeNotFound {
		return err
	}
	view, verr := s.base.readView(ctx, agent)
	if verr != nil || !view.Lifecycle().Staging(agent, id) {
		return err
	}
	e := newError(CodeInvalidState, "workbench %q is being restored and accepts no writes yet", id)
	e.Retryable = true
	return e
}
