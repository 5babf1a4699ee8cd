package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnstore/cairn/internal/pause"
)

// MaxEditBytes is the largest file, before and after the replacement, Edit handles: it
// holds the whole body in memory, as workbench_edit does (the server's default MCP
// payload bound).
const MaxEditBytes = 4 << 20

// editRetry bounds how often, and for how long, Edit without IfMatch re-reads and
// revalidates after a concurrent write took its generation: up to 20 attempts within 30 s,
// waiting 10 ms doubling to 1 s (with jitter) between them, so that tens of editors of
// one file all land instead of racing in lockstep (issue 25: 8 of 30 concurrent edits
// failed with 5 immediate attempts). A variable so that tests can shorten the waits.
var editRetry = RetryPolicy{MaxAttempts: 20, MaxElapsed: 30 * time.Second, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second}

// Codes of the errors Edit builds itself (docs/workbench.md, workbench_edit); their HTTPStatus is the
// one the server gives the code (400).
const (
	CodeNoMatch       = "NoMatch"
	CodeAmbiguousEdit = "AmbiguousEdit"
	CodeInvalidUTF8   = "InvalidUtf8"
)

// EditRequest is an exact string replacement in a file's live body.
type EditRequest struct {
	// OldString is the text to replace; it must not be empty.
	OldString string
	// NewString replaces it.
	NewString string
	// ReplaceAll replaces every occurrence; otherwise OldString must occur exactly once.
	ReplaceAll bool
	// IfMatch, when non-zero, edits only that generation of the file: another one (read,
	// or reached by a concurrent write before the edit's own) fails with Conflict (HTTP
	// 412, not retryable, Details["current_generation"] when known) and Edit never
	// retries. Zero: Edit retries its own compare-and-swap (editRetry).
	IfMatch uint64
}

// EditResult is the result of Edit.
type EditResult struct {
	// Replacements is the number of occurrences replaced.
	Replacements int
	// SizeBytes is the file's size after the edit, in bytes.
	SizeBytes int64
	// Generation is the file's generation after the edit (unchanged with NoChange).
	Generation uint64
	// NoChange says the replacement left the body identical: nothing was written.
	NoChange bool
}

// Edit replaces OldString with NewString in path's live body, as workbench_edit does,
// over the file routes: it reads the body, replaces, and writes it back conditional on
// the generation it read (If-Match), keeping the content type and executable flag.
// Without req.IfMatch, when another writer got in between it waits, reads again and
// revalidates, within editRetry's bounds; with req.IfMatch it never retries: the caller
// named the generation to edit.
//
// Errors: *Error NoMatch (OldString does not occur), AmbiguousEdit (it occurs more than
// once without ReplaceAll; Details["matches"]), InvalidUtf8 (the body or a string is not
// UTF-8), PayloadTooLarge (the file before or after is over MaxEditBytes), Conflict (412:
// not IfMatch's generation, not retryable; or, without IfMatch, still racing when
// editRetry ran out, retryable), NotFound, and what GetFile and PutFile return.
func (c *Client) Edit(ctx context.Context, agent, wb, path string, req EditRequest) (*EditResult, error) {
	if req.OldString == "" {
		return nil, &Error{HTTPStatus: http.StatusBadRequest, Code: "InvalidArguments", Message: "old_string must not be empty"}
	}
	if !utf8.ValidString(req.OldString) || !utf8.ValidString(req.NewString) {
		return nil, editError(CodeInvalidUTF8, "old_string and new_string must be valid UTF-8")
	}
	p := editRetry
	start := time.Now()
	for attempt := 1; ; attempt++ {
		res, err := c.editOnce(ctx, agent, wb, path, req)
		var e *Error
		if req.IfMatch != 0 || !errors.As(err, &e) || e.Code != "Conflict" || e.HTTPStatus != http.StatusPreconditionFailed {
			return res, err
		}
		// Lost a race the caller did not ask to lose: the same edit may land later.
		wait := p.backoff(attempt)
		if attempt >= p.MaxAttempts || time.Since(start)+wait > p.MaxElapsed {
			lost := *e
			lost.Retryable = true
			return nil, &lost
		}
		if err := pause.For(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// editOnce is one read, replace, conditional write.
func (c *Client) editOnce(ctx context.Context, agent, wb, path string, req EditRequest) (*EditResult, error) {
	body, info, err := c.GetFile(ctx, agent, wb, path, GetOptions{})
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if req.IfMatch != 0 && info.Generation != req.IfMatch {
		return nil, &Error{HTTPStatus: http.StatusPreconditionFailed, Code: "Conflict",
			Message: fmt.Sprintf("the file's generation is %d, not %d", info.Generation, req.IfMatch),
			Details: map[string]any{"current_generation": float64(info.Generation)}}
	}
	if info.Size > MaxEditBytes {
		return nil, tooLargeForEdit(info.Size)
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxEditBytes+1))
	if err != nil {
		return nil, fmt.Errorf("client: reading %q: %w", path, err)
	}
	if len(data) > MaxEditBytes {
		return nil, tooLargeForEdit(int64(len(data)))
	}
	if !utf8.Valid(data) {
		return nil, editError(CodeInvalidUTF8, "the file is not valid UTF-8; edit works on text only")
	}
	text := string(data)
	n := strings.Count(text, req.OldString)
	switch {
	case n == 0:
		return nil, editError(CodeNoMatch, "old_string does not occur in the file")
	case n > 1 && !req.ReplaceAll:
		e := editError(CodeAmbiguousEdit, fmt.Sprintf("old_string occurs %d times; make it unique or replace all", n))
		e.Details = map[string]any{"matches": n}
		return nil, e
	}
	replacements := 1
	if req.ReplaceAll {
		replacements = n
	}
	// The result's size is known before it is built: refuse it without allocating it.
	if size := int64(len(text)) + int64(replacements)*(int64(len(req.NewString))-int64(len(req.OldString))); size > MaxEditBytes {
		return nil, tooLargeForEdit(size)
	}
	updated := strings.Replace(text, req.OldString, req.NewString, replacements)
	if updated == text {
		return &EditResult{Replacements: replacements, SizeBytes: int64(len(data)), Generation: info.Generation, NoChange: true}, nil
	}
	// The key makes a resend of this write (WithRetry, after OutcomeUnknown) replay its
	// first answer instead of failing its own If-Match.
	w, err := c.PutFile(ctx, agent, wb, path, strings.NewReader(updated), PutOptions{
		ContentType: info.ContentType, Executable: info.Executable, IfMatch: info.Generation, Size: int64(len(updated)),
		IdempotencyKey: randomID()})
	if err != nil {
		return nil, err
	}
	return &EditResult{Replacements: replacements, SizeBytes: w.SizeBytes, Generation: w.Generation}, nil
}

func editError(code, msg string) *Error {
	return &Error{HTTPStatus: http.StatusBadRequest, Code: code, Message: msg}
}

func tooLargeForEdit(size int64) *Error {
	return &Error{HTTPStatus: http.StatusRequestEntityTooLarge, Code: "PayloadTooLarge",
		Message: fmt.Sprintf("the file would be %d bytes, more than the %d bytes edit handles", size, MaxEditBytes)}
}
