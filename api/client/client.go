package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// walkPageLimit is the page size Walk asks for: the API's maximum, fewest round trips.
const walkPageLimit = 1000

// FieldHeaderPrefix starts the request headers that attach metadata fields to a written
// file: Cairn-Field-<name>: <JSON scalar> (PutOptions.Fields).
const FieldHeaderPrefix = "Cairn-Field-"

// Client talks to one Cairn server's client listener. It is safe for concurrent use. Its
// own methods are a workbench's files and listings, versions, forks, rewinds, history,
// diffs and edits, the workbenches of a root, the change feed and key minting; three
// families of routes have parts of their own, which New builds with it on the same
// transport (and WithRetry and WithAPIKey build anew with their copy).
type Client struct {
	// tr is the plumbing every request goes through (base URL, HTTP client, retries).
	tr *transport
	// Query answers an agent root's metadata queries and a workbench's grep (query.go).
	Query *Query
	// Proposals proposes changes to a workbench and decides them (proposals.go).
	Proposals *Proposals
	// Documents calls the working-documents surface under /api/workbench/ (documents.go).
	Documents *Documents
}

// New returns a client for the server at baseURL ("http://127.0.0.1:7070"; a trailing "/"
// is ignored). httpClient nil means http.DefaultClient. Give it no overall Timeout if it
// will stream large bodies; bound calls with their context instead.
func New(baseURL string, httpClient *http.Client) *Client {
	return newClient(newTransport(baseURL, httpClient))
}

// newClient returns the client whose requests, its parts' too, go through tr.
func newClient(tr *transport) *Client {
	return &Client{tr: tr, Query: &Query{tr: tr}, Proposals: &Proposals{tr: tr}, Documents: &Documents{tr: tr}}
}

// Workbench is the result of CreateWorkbench.
type Workbench struct {
	WorkbenchID string `json:"workbench_id"`
	// Path is the presentation path ("/agents/a/wb/w").
	Path string `json:"path"`
	// Sections are the five section names in contract order.
	Sections []string `json:"sections"`
	// Created is false when the workbench already existed.
	Created bool `json:"created"`
}

// WriteResult is the result of PutFile.
type WriteResult struct {
	WorkbenchID string `json:"workbench_id"`
	// Section is the file's section, or "" for a file outside the five sections.
	Section string `json:"section"`
	// RelativePath is the path relative to Section (the full path when Section is "").
	RelativePath string `json:"relative_path"`
	// Path is the presentation path.
	Path string `json:"path"`
	// SizeBytes is the size of the stored body in bytes.
	SizeBytes int64 `json:"size_bytes"`
	// Generation is the new generation of the path: the token for a later IfMatch.
	Generation uint64 `json:"generation"`
	// DigestURI is "sha256:<hex>" of the whole body.
	DigestURI   string `json:"digest_uri"`
	ContentType string `json:"content_type"`
	Executable  bool   `json:"executable"`
	// Created is true when the path did not exist before (HTTP 201), false when it was
	// replaced (HTTP 200).
	Created bool `json:"created"`
}

// AppendResult is the result of Append.
type AppendResult struct {
	WorkbenchID  string `json:"workbench_id"`
	Section      string `json:"section"`
	RelativePath string `json:"relative_path"`
	Path         string `json:"path"`
	// AppendedBytes is the number of bytes this call added.
	AppendedBytes int64 `json:"appended_bytes"`
	// SizeBytes is the total size of the file after the append, in bytes.
	SizeBytes  int64  `json:"size_bytes"`
	Generation uint64 `json:"generation"`
	// Created is true when the append created the file.
	Created bool `json:"created"`
	// Digest is "sha256:<hex>" of the appended bytes only (docs/workbench.md, workbench_append).
	Digest      string `json:"digest"`
	DigestURI   string `json:"digest_uri,omitempty"`
	ContentType string `json:"content_type,omitempty"`
}

// DeleteResult is the result of Delete.
type DeleteResult struct {
	WorkbenchID  string `json:"workbench_id"`
	Path         string `json:"path"`
	RelativePath string `json:"relative_path"`
	// Generation is the version of the delete (a later re-create gets a higher one).
	Generation uint64 `json:"generation"`
}

// Entry is one child in a listing.
type Entry struct {
	// Name is the last component of the entry's path.
	Name string `json:"name"`
	// Path is the presentation path.
	Path string `json:"path"`
	// Section is the entry's section, or "" outside the five sections (and possibly for
	// the section directories themselves at the workbench top).
	Section string `json:"section"`
	// RelativePath is relative to Section; see FullPath for the path inside the workbench.
	RelativePath string `json:"relative_path"`
	// Kind is "file" or "directory".
	Kind string `json:"kind"`
	// SizeBytes is a file's size in bytes.
	SizeBytes int64 `json:"size_bytes"`
	// EntryCount is a directory's number of direct children.
	EntryCount int64 `json:"entry_count"`
	// Generation is a file's generation.
	Generation uint64 `json:"generation"`
	Executable bool   `json:"executable"`
}

// Entry kinds.
const (
	KindFile      = "file"
	KindDirectory = "directory"
)

// IsDir reports whether the entry is a directory.
func (e Entry) IsDir() bool { return e.Kind == KindDirectory }

// FullPath returns the entry's path inside the workbench ("input/data/a.csv"), the form
// every file method takes: Section + "/" + RelativePath, just Section for a section
// directory, just RelativePath for an entry outside the sections.
func (e Entry) FullPath() string { return joinSection(e.Section, e.RelativePath) }

// ListPage is one page of a directory listing.
type ListPage struct {
	WorkbenchID   string `json:"workbench_id"`
	WorkbenchPath string `json:"workbench_path"`
	// Path is the listed directory as requested, relative to the workbench ("" for the
	// top).
	Path string `json:"path"`
	// EntryCount is the number of direct children of the directory, over all pages.
	EntryCount int     `json:"entry_count"`
	Entries    []Entry `json:"entries"`
	// NextCursor continues the listing; "" on the last page.
	NextCursor string `json:"next_cursor"`
	Truncated  bool   `json:"truncated"`
}

// FileInfo describes a file body as GetFile and Stat see it in the response headers.
type FileInfo struct {
	// Generation is the file's generation (ETag / Cairn-Generation).
	Generation uint64
	// ContentType is the stored content type.
	ContentType string
	// Size is the whole file's size in bytes; -1 when the response did not say (304).
	Size int64
	// Offset and Length locate the bytes of this response within the file: Offset 0 and
	// Length == Size for a whole-body answer, the served range for a 206. Length is -1
	// when unknown.
	Offset, Length int64
	// Partial is true for a 206 (range) answer.
	Partial bool
	// Digest is "sha256:<hex>" of the whole body (Cairn-Digest).
	Digest     string
	Executable bool
	// LastModified is when the current body became visible; zero if not sent.
	LastModified time.Time
	// NotModified is true when GetFile's IfNoneMatch matched (HTTP 304): no body, and
	// only Generation is meaningful.
	NotModified bool
}

// PutOptions are the preconditions and attributes of PutFile.
type PutOptions struct {
	// ContentType of the body; "" lets the server choose.
	ContentType string
	// Executable sets Cairn-Executable on the file.
	Executable bool
	// IfMatch, when non-zero, makes the write succeed only if the path's current
	// generation equals it (412 Conflict otherwise; 412 NotFound, not retryable, when
	// the file does not exist).
	IfMatch uint64
	// IfNoneMatch makes the write create-only (412 AlreadyExists if present).
	IfNoneMatch bool
	// IdempotencyKey makes retries return the first answer (docs/architecture.md#the-write-path); "" for none.
	IdempotencyKey string
	// Size is the body's length in bytes when known (sent as Content-Length, and the
	// body must then hold exactly that many bytes); 0 or -1 mean unknown (streamed with
	// chunked encoding unless the reader is a *bytes.Reader, *bytes.Buffer or
	// *strings.Reader, whose length net/http finds itself).
	Size int64
	// Fields attaches indexed metadata fields to the file, searchable with Search: names
	// of lower-case ASCII letters, digits, '_', '-' and '.', starting with a letter;
	// values strings, bools, integers or floats. They replace the fields the file had.
	// Sent as Cairn-Field-<name> headers with the value as JSON.
	Fields map[string]any
}

// AppendOptions are the preconditions and attributes of Append.
type AppendOptions struct {
	// ContentType is used when the append creates the file; "" lets the server choose.
	ContentType string
	// IfMatch, when non-zero, appends only at that generation.
	IfMatch uint64
	// IdempotencyKey makes retries return the first answer; without one an append
	// retried after a lost answer may apply twice.
	IdempotencyKey string
	// Size is the body's length in bytes when known; as PutOptions.Size.
	Size int64
}

// GetOptions select part of a body or make the read conditional.
type GetOptions struct {
	// Offset is the first byte to read. Length is the number of bytes from Offset; 0
	// means to the end. Either non-zero sends a Range header (answered with 206).
	Offset, Length int64
	// IfNoneMatch, when non-zero, returns FileInfo.NotModified instead of the body if the
	// file's generation still equals it.
	IfNoneMatch uint64
	// AtSnapshot reads the file as it was at a snapshot; the zero value reads live state.
	AtSnapshot SnapshotRef
	// Generation, when non-zero, reads the retained version with that generation
	// (?generation=, History lists them); it does not combine with AtSnapshot.
	Generation uint64
}

// DeleteOptions make a delete conditional.
type DeleteOptions struct {
	// IfMatch, when non-zero, deletes only at that generation.
	IfMatch uint64
	// IdempotencyKey makes a retry return the first answer (a delete that landed answers
	// as it did, not NotFound); "" for none.
	IdempotencyKey string
}

// ListOptions page through a listing.
type ListOptions struct {
	// Cursor continues from a previous page's NextCursor; "" starts at the beginning.
	Cursor string
	// Limit is the page size, 1..1000; 0 means the server's default (100).
	Limit int
	// AtSnapshot lists the directory as it was at a snapshot; the zero value lists live
	// state. A cursor continues the listing it came from.
	AtSnapshot SnapshotRef
}

// WorkbenchInfo is the result of DescribeWorkbench.
type WorkbenchInfo struct {
	WorkbenchID string   `json:"workbench_id"`
	Path        string   `json:"path"`
	Sections    []string `json:"sections"`
	// SizeBytes and FileCount cover every file; EntryCount counts the direct children of
	// the workbench top (the five sections always count).
	SizeBytes  int64 `json:"size_bytes"`
	FileCount  int64 `json:"file_count"`
	EntryCount int64 `json:"entry_count"`
}

// DescribeWorkbench returns the size and counts of workbench wb, as it is now or, with a
// non-zero at, as it was at a snapshot.
//
// Errors: *Error NotFound, SnapshotNotFound, SnapshotExpired.
func (c *Client) DescribeWorkbench(ctx context.Context, agent, wb string, at SnapshotRef) (*WorkbenchInfo, error) {
	u, err := withSnapshot(c.tr.workbenchURL(agent, wb), nil, at)
	if err != nil {
		return nil, err
	}
	return getJSON[WorkbenchInfo](ctx, c.tr, u)
}

// CreateWorkbench creates workbench wb under agent, or returns the existing one with
// Created false (PUT is idempotent).
func (c *Client) CreateWorkbench(ctx context.Context, agent, wb string) (*Workbench, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.tr.workbenchURL(agent, wb), http.NoBody)
	if err != nil {
		return nil, err
	}
	return decodeAnswer[Workbench](c.tr, req)
}

// PutFile writes body as the whole content of path ("input/a.txt") in workbench wb. Without
// IfMatch or IfNoneMatch it is an upsert (HTTP PUT). The body is streamed, not buffered,
// and not closed: it stays the caller's.
//
// Errors: *Error with Code Conflict (412, IfMatch mismatch), NotFound (412, IfMatch on a
// missing file), AlreadyExists (412, IfNoneMatch on an existing path), InvalidArguments
// (bad path), NotDirectory, ...
func (c *Client) PutFile(ctx context.Context, agent, wb, path string, body io.Reader, opts PutOptions) (*WriteResult, error) {
	req, err := c.tr.bodyRequest(ctx, http.MethodPut, c.tr.fileURL(agent, wb, path), body, opts.Size)
	if err != nil {
		return nil, err
	}
	if opts.ContentType != "" {
		req.Header.Set("Content-Type", opts.ContentType)
	}
	setIfMatch(req, opts.IfMatch)
	if opts.IfNoneMatch {
		req.Header.Set("If-None-Match", "*")
	}
	if opts.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	req.Header.Set("Cairn-Executable", strconv.FormatBool(opts.Executable))
	for name, v := range opts.Fields {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("client: field %q: %w", name, err)
		}
		req.Header.Set(FieldHeaderPrefix+name, string(b))
	}
	return decodeAnswer[WriteResult](c.tr, req)
}

// Append adds body to the end of path, creating the file when it is missing. The cost on
// the server is O(len(body)) whatever the file size.
func (c *Client) Append(ctx context.Context, agent, wb, path string, body io.Reader, opts AppendOptions) (*AppendResult, error) {
	req, err := c.tr.bodyRequest(ctx, http.MethodPost, c.tr.fileURL(agent, wb, path)+"?append", body, opts.Size)
	if err != nil {
		return nil, err
	}
	if opts.ContentType != "" {
		req.Header.Set("Content-Type", opts.ContentType)
	}
	setIfMatch(req, opts.IfMatch)
	if opts.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	return decodeAnswer[AppendResult](c.tr, req)
}

// GetFile opens path for reading. The caller must close the returned body, which streams
// from the server. With opts.IfNoneMatch matching the current generation it returns an
// empty body and info.NotModified.
//
// Errors: *Error (NotFound, InvalidArguments for an unsatisfiable range,
// SnapshotNotFound, SnapshotExpired for a snapshot that is no longer readable, ...).
func (c *Client) GetFile(ctx context.Context, agent, wb, path string, opts GetOptions) (io.ReadCloser, *FileInfo, error) {
	if opts.Offset < 0 || opts.Length < 0 {
		return nil, nil, fmt.Errorf("client: negative range offset %d or length %d", opts.Offset, opts.Length)
	}
	var q url.Values
	if opts.Generation != 0 {
		q = url.Values{"generation": {strconv.FormatUint(opts.Generation, 10)}}
	}
	u, err := withSnapshot(c.tr.fileURL(agent, wb, path), q, opts.AtSnapshot)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	if opts.Offset > 0 || opts.Length > 0 {
		if opts.Length > 0 {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", opts.Offset, opts.Offset+opts.Length-1))
		} else {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", opts.Offset))
		}
	}
	if opts.IfNoneMatch != 0 {
		req.Header.Set("If-None-Match", quoteETag(opts.IfNoneMatch))
	}
	// Ask for the stored bytes as they are: net/http would otherwise request gzip and
	// decompress transparently, hiding Content-Length and breaking ranges.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.tr.send(req, replayable)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		closeBody(resp)
		info := fileInfo(resp)
		info.NotModified = true
		info.Size, info.Length = -1, 0
		return http.NoBody, info, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		defer closeBody(resp)
		return nil, nil, responseError(resp)
	}
	return resp.Body, fileInfo(resp), nil
}

// Stat returns path's metadata without its body (HTTP HEAD): StatAt of live state.
//
// Errors: *Error with the code derived from the status (HEAD answers carry no envelope):
// 404 NotFound, 412 Conflict, 503 ObjectUnavailable, ...
func (c *Client) Stat(ctx context.Context, agent, wb, path string) (*FileInfo, error) {
	return c.StatAt(ctx, agent, wb, path, SnapshotRef{})
}

// StatAt returns path's metadata as it was at snapshot at (the zero SnapshotRef: live
// state), without its body.
//
// Errors: as Stat; 404 reads as NotFound also for an unknown snapshot, and 410 as
// SnapshotExpired.
func (c *Client) StatAt(ctx context.Context, agent, wb, path string, at SnapshotRef) (*FileInfo, error) {
	u, err := withSnapshot(c.tr.fileURL(agent, wb, path), nil, at)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.tr.send(req, replayable)
	if err != nil {
		return nil, err
	}
	defer closeBody(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, responseError(resp)
	}
	return fileInfo(resp), nil
}

// Delete removes path. With opts.IfMatch it deletes only at that generation (412
// Conflict otherwise; 412 NotFound when the file does not exist).
func (c *Client) Delete(ctx context.Context, agent, wb, path string, opts DeleteOptions) (*DeleteResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.tr.fileURL(agent, wb, path), nil)
	if err != nil {
		return nil, err
	}
	setIfMatch(req, opts.IfMatch)
	if opts.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", opts.IdempotencyKey)
	}
	return decodeAnswer[DeleteResult](c.tr, req)
}

// List returns one page of the direct children of dir ("" = the workbench top, where the
// five sections appear as directories), ordered by name bytes.
//
// Errors: *Error NotDirectory (dir is a file), ReadFenceChanged (retryable: the
// workbench changed since the cursor's first page of a live listing), InvalidArguments
// (bad cursor), SnapshotNotFound, SnapshotExpired, ...
func (c *Client) List(ctx context.Context, agent, wb, dir string, opts ListOptions) (*ListPage, error) {
	u, err := c.tr.listURL(agent, wb, dir, opts)
	if err != nil {
		return nil, err
	}
	return getJSON[ListPage](ctx, c.tr, u)
}

// Walk calls fn for every entry below dir ("" = the whole workbench), recursively, paging
// through cursors. A directory is listed whole (ListAll: again from its first page when
// the workbench changed while it was paged) before fn sees its entries, in listing order,
// and before Walk descends into its subdirectories (so no cursor is held open across a
// descent). Each directory is one consistent listing; two directories may be listed at
// different read versions of a live workbench.
//
// fn returning fs.SkipDir for a directory entry skips that directory; fs.SkipAll stops
// the walk with a nil error; any other error stops it and is returned. A listed entry
// that is not a direct child of the listed directory (it would make the walk loop or
// escape) is an error wrapping ErrUnsafePath. A directory whose every listing met a change
// fails the walk with ErrWorkbenchKeptChanging (code ReadFenceChanged) after fn saw part
// of the tree.
func (c *Client) Walk(ctx context.Context, agent, wb, dir string, fn func(Entry) error) error {
	return c.WalkAt(ctx, agent, wb, dir, SnapshotRef{}, fn)
}

// WalkAt is Walk over the workbench as it was at snapshot at (the zero SnapshotRef: live
// state, which is Walk).
func (c *Client) WalkAt(ctx context.Context, agent, wb, dir string, at SnapshotRef, fn func(Entry) error) error {
	err := c.walk(ctx, agent, wb, dir, at, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func (c *Client) walk(ctx context.Context, agent, wb, dir string, at SnapshotRef, fn func(Entry) error) error {
	var subdirs []string
	entries, err := c.ListAll(ctx, agent, wb, dir, ListOptions{Limit: walkPageLimit, AtSnapshot: at})
	if err != nil {
		return fmt.Errorf("list %q: %w", dir, err)
	}
	for _, e := range entries {
		if err := checkChild(dir, e); err != nil {
			return err
		}
		err := fn(e)
		switch {
		case errors.Is(err, fs.SkipDir) && e.IsDir():
			continue
		case err != nil:
			return err
		}
		if e.IsDir() {
			subdirs = append(subdirs, e.FullPath())
		}
	}
	for _, sub := range subdirs {
		if err := c.walk(ctx, agent, wb, sub, at, fn); err != nil {
			return err
		}
	}
	return nil
}

// checkChild verifies that e is a direct child of dir: its name is one plain component
// and its full path is dir + "/" + name.
func checkChild(dir string, e Entry) error {
	want := e.Name
	if dir != "" {
		want = dir + "/" + e.Name
	}
	if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") || e.FullPath() != want {
		return fmt.Errorf("listing of %q returned %q (name %q), which is not a direct child: %w", dir, e.FullPath(), e.Name, ErrUnsafePath)
	}
	return nil
}

func setIfMatch(req *http.Request, gen uint64) {
	if gen != 0 {
		req.Header.Set("If-Match", quoteETag(gen))
	}
}

// quoteETag renders a generation as a strong entity tag (RFC 9110 §8.8.3).
func quoteETag(gen uint64) string { return `"` + strconv.FormatUint(gen, 10) + `"` }

// parseETag reads a generation from an entity tag (`"17"`, tolerating a W/ prefix); 0
// when it is not one.
func parseETag(v string) uint64 {
	v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
	v = strings.Trim(v, `"`)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// fileInfo reads a file's metadata from GET/HEAD response headers.
func fileInfo(resp *http.Response) *FileInfo {
	h := resp.Header
	info := &FileInfo{
		ContentType: h.Get("Content-Type"),
		Digest:      h.Get("Cairn-Digest"),
		Executable:  h.Get("Cairn-Executable") == "true",
		Size:        -1,
		Length:      -1,
	}
	if g, err := strconv.ParseUint(h.Get("Cairn-Generation"), 10, 64); err == nil {
		info.Generation = g
	} else {
		info.Generation = parseETag(h.Get("ETag"))
	}
	if t, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
		info.LastModified = t
	}
	if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil {
		info.Length = n
	} else if resp.ContentLength >= 0 {
		info.Length = resp.ContentLength
	}
	if resp.StatusCode == http.StatusPartialContent {
		info.Partial = true
		if off, total, ok := parseContentRange(h.Get("Content-Range")); ok {
			info.Offset, info.Size = off, total
		}
	} else {
		info.Size = info.Length
	}
	return info
}

// parseContentRange reads "bytes first-last/total" (RFC 9110 §14.4); total is -1 for "*".
func parseContentRange(v string) (first, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	firstText, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	first, err := strconv.ParseInt(firstText, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return first, total, true
}
