package documents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/internal/strictjson"
)

// Runner is the design's WorkbenchProposalRunner: it proposes the document's next text
// from exactly the request (the head and the selection's snapshot, nothing else). The
// workflow validates every result before it becomes an event (propose.go).
type Runner interface {
	// ID is the registry key and the proposer's runnerId ("fixture-deterministic@1").
	ID() string
	Revision() string
	Label() string
	// Inference reports whether the runner calls a model.
	Inference() bool
	Propose(ctx context.Context, req RunRequest) (RunResult, error)
}

// RunRequest is the design's runner request.
type RunRequest struct {
	DocumentID       string   `json:"documentId"`
	BaseVersionID    string   `json:"baseVersionId"`
	BaseSha256       string   `json:"baseSha256"`
	Title            string   `json:"title"`
	BaseText         string   `json:"baseText"`
	Snapshot         Snapshot `json:"snapshot"`
	MaxProposedChars int      `json:"maxProposedChars"`
}

// RunResult is the design's runner result.
type RunResult struct {
	ProposedText     string   `json:"proposedText"`
	Reason           string   `json:"reason"`
	EvidenceEventIDs []string `json:"evidenceEventIds"`
}

// FixtureRunner is fixture-deterministic@1: it performs no inference. It appends or
// replaces a "## Sources" section (the design's words): the new section is a "## Sources"
// line, a blank line, one line per selected event ("- event <eventId> — <type> from
// <source> at <occurredAt>") and per selected version ("- version <versionId> — <path>
// sha256 <sha256>"), in the snapshot's order, a blank line, and "Summary: <n> events,
// <m> versions selected." with a final newline. It stands where the base text's first
// "## Sources" section stood (that line up to the next line that starts with "## ", or
// the end; any further such section is removed), after the text before it with trailing
// newlines trimmed and one blank line (none when that text is empty), and before the
// rest of the text after one blank line; a base text without one gets it at the end, the
// same way. Its reason is "fixture: append sources section" and its evidence the selected
// event ids (the first MaxEvidenceIDs). Identical input yields identical output.
type FixtureRunner struct{}

// FixtureRunnerID is the registered id of FixtureRunner.
const FixtureRunnerID = "fixture-deterministic@1"

func (FixtureRunner) ID() string       { return FixtureRunnerID }
func (FixtureRunner) Revision() string { return "1" }
func (FixtureRunner) Label() string    { return "Deterministic fixture (sources section)" }
func (FixtureRunner) Inference() bool  { return false }

// Propose implements Runner.
func (FixtureRunner) Propose(_ context.Context, req RunRequest) (RunResult, error) {
	var b strings.Builder
	before, after := aroundSources(req.BaseText)
	if before = strings.TrimRight(before, "\n"); before != "" {
		b.WriteString(before)
		b.WriteString("\n\n")
	}
	b.WriteString("## Sources\n\n")
	evidence := []string{}
	for _, e := range req.Snapshot.SelectedEvents {
		fmt.Fprintf(&b, "- event %s — %s from %s at %s\n", e.EventID, e.Type, e.Source, e.OccurredAt)
		if len(evidence) < MaxEvidenceIDs {
			evidence = append(evidence, e.EventID)
		}
	}
	for _, v := range req.Snapshot.SelectedVersions {
		fmt.Fprintf(&b, "- version %s — %s sha256 %s\n", v.VersionID, v.Path, v.Sha256)
	}
	fmt.Fprintf(&b, "\nSummary: %d events, %d versions selected.\n", len(req.Snapshot.SelectedEvents), len(req.Snapshot.SelectedVersions))
	if after != "" {
		b.WriteString("\n")
		b.WriteString(after)
	}
	return RunResult{ProposedText: b.String(), Reason: "fixture: append sources section", EvidenceEventIDs: evidence}, nil
}

// aroundSources splits text around its "## Sources" sections, which it leaves out: the
// text before the first one and the text after it (without any further one). A text
// without one is all before.
func aroundSources(text string) (before, after string) {
	var out []string
	at, in := -1, false
	for _, l := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimRight(l, "\r\n")
		switch {
		case trimmed == "## Sources":
			if at < 0 {
				at = len(out)
			}
			in = true
			continue
		case in && strings.HasPrefix(trimmed, "## "):
			in = false
		}
		if !in {
			out = append(out, l)
		}
	}
	if at < 0 {
		return strings.Join(out, ""), ""
	}
	return strings.Join(out[:at], ""), strings.Join(out[at:], "")
}

// HTTPRunner calls out: it POSTs the RunRequest as JSON to URL and takes a 200 answer
// whose body is a RunResult (at most MaxRunnerResponseBytes), within Timeout: one closed
// object with every member, none null (decodeResult). Any other outcome is a
// *RunnerFailure (classified, bounded text).
type HTTPRunner struct {
	RunnerID string
	URL      string
	// Timeout bounds the whole call. Default DefaultRunnerTimeout.
	Timeout time.Duration
	Client  *http.Client
}

// DefaultRunnerTimeout bounds an HTTPRunner call when it names no Timeout.
const DefaultRunnerTimeout = 30 * time.Second

// MaxRunnerResponseBytes bounds an HTTP runner's answer.
const MaxRunnerResponseBytes = 1 << 20

func (r HTTPRunner) ID() string       { return r.RunnerID }
func (r HTTPRunner) Revision() string { return "http-1" }
func (r HTTPRunner) Label() string    { return "HTTP runner" }
func (r HTTPRunner) Inference() bool  { return true }

// Runner failure classes (RunnerFailure.Class).
const (
	FailTimeout     = "timeout"
	FailUnreachable = "unreachable"
	FailStatus      = "http-status"
	FailResponse    = "invalid-response"
	FailResult      = "invalid-result"
	FailRunner      = "runner-error"
)

// MaxErrorTextChars bounds a failed run's errorText.
const MaxErrorTextChars = 500

// RunnerFailure is a classified runner failure.
type RunnerFailure struct {
	Class string
	Text  string
}

func (f *RunnerFailure) Error() string { return f.Class + ": " + f.Text }

// errorText is the run record's bounded errorText of err.
func errorText(err error) (class, text string) {
	var f *RunnerFailure
	if !errors.As(err, &f) {
		f = &RunnerFailure{Class: FailRunner, Text: err.Error()}
	}
	return f.Class, truncateChars(strings.ToValidUTF8(f.Error(), "?"), MaxErrorTextChars)
}

// Propose implements Runner.
func (r HTTPRunner) Propose(ctx context.Context, req RunRequest) (RunResult, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultRunnerTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(mustJSON(req)))
	if err != nil {
		return RunResult{}, &RunnerFailure{FailUnreachable, "the runner URL is not usable"}
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hr)
	if err != nil {
		return RunResult{}, classify(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxRunnerResponseBytes+1))
	if err != nil {
		return RunResult{}, classify(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		return RunResult{}, &RunnerFailure{FailStatus, "the runner answered HTTP " + strconv.Itoa(resp.StatusCode)}
	}
	if len(b) > MaxRunnerResponseBytes {
		return RunResult{}, &RunnerFailure{FailResponse, "the runner's answer is larger than " + strconv.Itoa(MaxRunnerResponseBytes) + " bytes"}
	}
	out, why := decodeResult(b)
	if why != "" {
		return RunResult{}, &RunnerFailure{FailResponse, "the runner's answer is not a result {proposedText, reason, evidenceEventIds}: " + why}
	}
	return out, nil
}

// decodeResult reads an HTTP runner's answer: one closed JSON object of Unicode text
// whose members are all present, proposedText and reason strings, evidenceEventIds an
// array of strings (null is none of these). why says what is wrong ("": nothing).
func decodeResult(b []byte) (out RunResult, why string) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil || m == nil {
		return out, "not a JSON object"
	}
	if _, err := dec.Token(); err != io.EOF {
		return out, "more than one JSON value"
	}
	if cerr := strictjson.Check(b); cerr != nil && cerr.Duplicate {
		return out, "member " + strconv.Quote(truncateChars(cerr.Field, 64)) + " appears twice in one object"
	}
	if !isUnicodeJSON(b) {
		return out, notUnicode
	}
	for k := range m {
		if k != "proposedText" && k != "reason" && k != "evidenceEventIds" {
			return out, "unknown member " + strconv.Quote(truncateChars(k, 64))
		}
	}
	for _, f := range []struct {
		name string
		into any
	}{{"proposedText", &out.ProposedText}, {"reason", &out.Reason}} {
		raw, ok := m[f.name]
		if !ok {
			return out, f.name + " is missing"
		}
		if isNull(raw) || json.Unmarshal(raw, f.into) != nil {
			return out, f.name + " must be a string"
		}
	}
	raw, ok := m["evidenceEventIds"]
	if !ok {
		return out, "evidenceEventIds is missing"
	}
	var ids []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &ids) != nil {
		return out, "evidenceEventIds must be an array of strings"
	}
	out.EvidenceEventIDs = make([]string, len(ids))
	for i, id := range ids {
		if isNull(id) || json.Unmarshal(id, &out.EvidenceEventIDs[i]) != nil {
			return out, "evidenceEventIds must be an array of strings"
		}
	}
	return out, ""
}

func classify(ctx context.Context, err error) error {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return &RunnerFailure{FailTimeout, "the runner did not answer within its timeout"}
	}
	return &RunnerFailure{FailUnreachable, "the runner could not be reached"}
}
