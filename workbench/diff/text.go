package diff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Defaults and bounds of Options.
const (
	DefaultContext       = 3
	MaxContext           = 1000
	DefaultMaxBytes      = 256 << 10 // bytes of unified output
	DefaultMaxHunks      = 1000
	DefaultMaxInputBytes = 16 << 20 // bytes per side
	// DefaultMaxLines bounds the lines of both sides' changed region (after the common
	// leading and trailing lines are set aside). go-diff's line mode numbers distinct
	// lines with Unicode code points, of which there are about 1.1 million.
	DefaultMaxLines = 1_000_000
	DefaultTimeout  = time.Second
	// BinaryInvalidPercent: a body more than this share of whose bytes are not valid
	// UTF-8 is binary (so is any body with a NUL byte).
	BinaryInvalidPercent = 10
)

// Reasons a Result holds sizes and digests only.
const (
	ReasonBinary       = "binary"
	ReasonTooLarge     = "too_large"
	ReasonTooManyLines = "too_many_lines"
)

// TruncationMarker begins the last line of a unified diff that was cut at Options.MaxBytes
// or Options.MaxHunks.
const TruncationMarker = `\ Diff truncated`

// noNewlineMarker follows a line that ends its side without a newline (the unified
// format's convention).
const noNewlineMarker = `\ No newline at end of file`

// markerReserve is the output kept free for the truncation marker line.
const markerReserve = 128

// Options bound a text diff. Start from DefaultOptions.
type Options struct {
	// Context is the number of unchanged lines shown around each change (0..MaxContext).
	Context int
	// MaxBytes bounds the unified output, the truncation marker included (≥ 1024).
	MaxBytes int
	// MaxHunks bounds the hunks returned (≥ 1).
	MaxHunks int
	// MaxInputBytes bounds each side; a larger side gets sizes and digests only
	// (ReasonTooLarge).
	MaxInputBytes int64
	// MaxLines bounds the changed region's lines, both sides together
	// (1..DefaultMaxLines); more: sizes and digests only (ReasonTooManyLines).
	MaxLines int
	// Timeout bounds the line search; when it runs out the diff stays correct but may be
	// larger than minimal (Result.Approximate). > 0.
	Timeout time.Duration
	// OldLabel and NewLabel name the sides on the --- and +++ lines ("a" and "b" when
	// empty). They are escaped like text lines.
	OldLabel, NewLabel string
}

// DefaultOptions returns the default bounds: 3 lines of context, 256 KiB and 1000 hunks of
// output, 16 MiB per side, a million changed lines, a 1 s search.
func DefaultOptions() Options {
	return Options{Context: DefaultContext, MaxBytes: DefaultMaxBytes, MaxHunks: DefaultMaxHunks,
		MaxInputBytes: DefaultMaxInputBytes, MaxLines: DefaultMaxLines, Timeout: DefaultTimeout}
}

// OptionError is an Options field outside its rule.
type OptionError struct {
	Field string
	Rule  string
}

func (e *OptionError) Error() string { return fmt.Sprintf("diff option %s %s", e.Field, e.Rule) }

// Validate checks every field against its rule; the error is an *OptionError.
func (o Options) Validate() error {
	switch {
	case o.Context < 0 || o.Context > MaxContext:
		return &OptionError{"context", fmt.Sprintf("must be between 0 and %d", MaxContext)}
	case o.MaxBytes < 1024:
		return &OptionError{"max_bytes", "must be at least 1024"}
	case o.MaxHunks < 1:
		return &OptionError{"max_hunks", "must be at least 1"}
	case o.MaxInputBytes < 0:
		return &OptionError{"max_input_bytes", "must not be negative"}
	case o.MaxLines < 1 || o.MaxLines > DefaultMaxLines:
		return &OptionError{"max_lines", fmt.Sprintf("must be between 1 and %d", DefaultMaxLines)}
	case o.Timeout <= 0:
		return &OptionError{"timeout", "must be positive"}
	}
	return nil
}

// Side describes one input: its size in bytes and its SHA-256 as "sha256:<hex>".
type Side struct {
	Size   int64  `json:"size_bytes"`
	Digest string `json:"digest_uri"`
}

// SideOf describes a body.
func SideOf(body []byte) Side {
	return Side{Size: int64(len(body)), Digest: digestURI(sha256.Sum256(body))}
}

// digestURI renders a SHA-256 as "sha256:<hex>".
func digestURI(d [32]byte) string { return "sha256:" + hex.EncodeToString(d[:]) }

// Op says what a line of a hunk is.
type Op string

// Line ops.
const (
	OpContext Op = "context"
	OpDelete  Op = "delete"
	OpInsert  Op = "insert"
)

// prefix is the op's first character in the unified format.
func (op Op) prefix() byte {
	switch op {
	case OpDelete:
		return '-'
	case OpInsert:
		return '+'
	}
	return ' '
}

// Line is one line of a hunk.
type Line struct {
	Op Op `json:"op"`
	// Text is the line without its newline, escaped when Escaped (escape.go): a
	// carriage return before the newline shows as \r.
	Text    string `json:"text"`
	Escaped bool   `json:"escaped,omitempty"`
	// NoNewline: the line ends its side and has no newline.
	NoNewline bool `json:"no_newline,omitempty"`
	// Cut: the text was shortened to fit Options.MaxBytes (the last line of a truncated
	// diff only).
	Cut bool `json:"cut,omitempty"`
}

// Hunk is one @@ block. Starts and counts follow the unified format: 1-based line
// numbers, and a side with no lines in the hunk starts at the line before it (0 at the
// top). A hunk of a truncated diff counts only the lines it holds.
type Hunk struct {
	OldStart int    `json:"old_start"`
	OldLines int    `json:"old_lines"`
	NewStart int    `json:"new_start"`
	NewLines int    `json:"new_lines"`
	Lines    []Line `json:"lines"`
}

// Result is a text diff, or for binary, oversized or too different inputs their sizes and
// digests only.
type Result struct {
	Old Side `json:"old"`
	New Side `json:"new"`
	// Identical: the two sides hold the same bytes.
	Identical bool `json:"identical"`
	// Text: a text diff was computed (Hunks, Unified); false: Reason says why not.
	Text   bool   `json:"text"`
	Reason string `json:"reason,omitempty"`
	// Hunks and Unified are the same diff, structured and as unified-format text (with
	// --- and +++ lines; "" when Identical).
	Hunks   []Hunk `json:"hunks"`
	Unified string `json:"unified"`
	// HunkCount is the number of hunks of the whole diff, LinesDeleted and LinesInserted
	// its changed lines, whether or not the output was truncated.
	HunkCount     int `json:"hunk_count"`
	LinesDeleted  int `json:"lines_deleted"`
	LinesInserted int `json:"lines_inserted"`
	// Truncated: Options.MaxBytes or MaxHunks cut the output; Unified ends with a line
	// beginning with TruncationMarker.
	Truncated bool `json:"truncated"`
	// Approximate: the line search ran out of Options.Timeout; the diff is correct but
	// may not be minimal.
	Approximate bool `json:"approximate"`
}

// Summary is the Result of two sides that get no text diff, for the reason given (one of
// the Reason constants): the caller knows their sizes and digests without their bytes.
func Summary(old, new Side, reason string) *Result {
	return &Result{Old: old, New: new, Identical: old == new, Reason: reason, Hunks: []Hunk{}}
}

// Text diffs two bodies line by line. The error is an *OptionError for bad options; every
// input gives a Result.
func Text(old, new []byte, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if int64(len(old)) > o.MaxInputBytes || int64(len(new)) > o.MaxInputBytes {
		return Summary(SideOf(old), SideOf(new), ReasonTooLarge), nil
	}
	if IsBinary(old) || IsBinary(new) {
		return Summary(SideOf(old), SideOf(new), ReasonBinary), nil
	}
	r := &Result{Old: SideOf(old), New: SideOf(new), Text: true, Hunks: []Hunk{}}
	if bytes.Equal(old, new) {
		r.Identical = true
		return r, nil
	}
	ta, tb := string(old), string(new)
	a, b := splitLines(ta), splitLines(tb)
	blocks, approx, ok := changedBlocks(ta, tb, a, b, o)
	if !ok {
		return Summary(r.Old, r.New, ReasonTooManyLines), nil
	}
	r.Approximate = approx
	render(r, a, b, blocks, o)
	return r, nil
}

// IsBinary reports whether a body is binary: it holds a NUL byte, or more than
// BinaryInvalidPercent of its bytes are not valid UTF-8.
func IsBinary(body []byte) bool {
	if bytes.IndexByte(body, 0) >= 0 {
		return true
	}
	invalid := 0
	for i := 0; i < len(body); {
		if body[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n == 1 {
			invalid++
		}
		i += n
	}
	return invalid*100 > len(body)*BinaryInvalidPercent
}

// splitLines cuts text after every newline; the last line lacks one when the text does
// not end with a newline. The lines share text's memory.
func splitLines(text string) []string {
	lines := make([]string, 0, strings.Count(text, "\n")+1)
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			lines = append(lines, text)
			break
		}
		lines = append(lines, text[:i+1])
		text = text[i+1:]
	}
	return lines
}

// block is one changed region: old lines [o0, o1) replaced by new lines [n0, n1).
type block struct{ o0, o1, n0, n1 int }

// changedBlocks finds the changed regions of a against b in order. The common leading and
// trailing lines are set aside first; the rest goes through go-diff's line mode (each
// distinct line becomes one rune, Myers bisection over the runes with a deadline). ok is
// false when the rest has more than o.MaxLines lines.
func changedBlocks(textA, textB string, a, b []string, o Options) (blocks []block, approx, ok bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	midA, midB := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(midA)+len(midB) > o.MaxLines {
		return nil, false, false
	}
	switch {
	case len(midA) == 0 && len(midB) == 0:
		return nil, false, true
	case len(midA) == 0 || len(midB) == 0:
		return []block{{pre, pre + len(midA), pre, pre + len(midB)}}, false, true
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = o.Timeout
	charsA, charsB, _ := dmp.DiffLinesToChars(middle(textA, a, pre, suf), middle(textB, b, pre, suf))
	started := time.Now()
	diffs := dmp.DiffMain(charsA, charsB, false)
	approx = time.Since(started) >= o.Timeout
	ia, ib := pre, pre
	cur := block{-1, -1, -1, -1}
	flush := func() {
		if cur.o0 >= 0 {
			blocks = append(blocks, cur)
			cur = block{-1, -1, -1, -1}
		}
	}
	for _, d := range diffs {
		n := utf8.RuneCountInString(d.Text) // one rune per line
		if d.Type == diffmatchpatch.DiffEqual {
			flush()
			ia, ib = ia+n, ib+n
			continue
		}
		if cur.o0 < 0 {
			cur = block{ia, ia, ib, ib}
		}
		if d.Type == diffmatchpatch.DiffDelete {
			ia += n
			cur.o1 = ia
		} else {
			ib += n
			cur.n1 = ib
		}
	}
	flush()
	return blocks, approx, true
}

// middle returns the part of text (split into lines) between its first pre and last suf
// lines, as a substring (no copy).
func middle(text string, lines []string, pre, suf int) string {
	from, to := 0, len(text)
	for _, l := range lines[:pre] {
		from += len(l)
	}
	for _, l := range lines[len(lines)-suf:] {
		to -= len(l)
	}
	return text[from:to]
}

// hunkSpan is a run of blocks shown as one hunk: old lines [o0, o1), new [n0, n1),
// context included.
type hunkSpan struct {
	blocks         []block
	o0, o1, n0, n1 int
}

// spans groups blocks whose context would touch or overlap into hunks.
func spans(blocks []block, context, lenA, lenB int) []hunkSpan {
	var out []hunkSpan
	for i := 0; i < len(blocks); {
		j := i + 1
		for j < len(blocks) && blocks[j].o0-blocks[j-1].o1 <= 2*context {
			j++
		}
		first, last := blocks[i], blocks[j-1]
		out = append(out, hunkSpan{blocks: blocks[i:j],
			o0: max(0, first.o0-context), o1: min(lenA, last.o1+context),
			n0: max(0, first.n0-context), n1: min(lenB, last.n1+context)})
		i = j
	}
	return out
}

// render fills r's hunks and unified text within o's bounds.
func render(r *Result, a, b []string, blocks []block, o Options) {
	for _, bl := range blocks {
		r.LinesDeleted += bl.o1 - bl.o0
		r.LinesInserted += bl.n1 - bl.n0
	}
	hs := spans(blocks, o.Context, len(a), len(b))
	r.HunkCount = len(hs)
	w := &writer{budget: o.MaxBytes - markerReserve, hunks: []Hunk{}}
	w.header(o.OldLabel, "a", "---")
	w.header(o.NewLabel, "b", "+++")
	shown := 0
	for _, h := range hs {
		if shown == o.MaxHunks || !w.hunk(h, a, b) {
			break
		}
		shown++
	}
	r.Hunks = w.hunks
	if shown < len(hs) || w.cut {
		r.Truncated = true
		fmt.Fprintf(&w.out, "%s: %d of %d hunks shown (%d bytes, %d hunks at most)\n",
			TruncationMarker, len(w.hunks), len(hs), o.MaxBytes, o.MaxHunks)
	}
	r.Unified = w.out.String()
}

// writer renders hunks into a unified text within a byte budget.
type writer struct {
	out    strings.Builder
	body   strings.Builder // the lines of the hunk being written
	budget int             // bytes left
	hunks  []Hunk
	cut    bool // the budget ran out inside a hunk
}

func (w *writer) header(label, def, prefix string) {
	if label == "" {
		label = def
	}
	text, _, _ := escapeText(label, 4096)
	line := prefix + " " + text + "\n"
	w.out.WriteString(line)
	w.budget -= len(line)
}

// maxHeaderBytes bounds an @@ line: four decimal ints and the punctuation.
const maxHeaderBytes = 4*20 + 16

// hunk writes one hunk, or as much of it as the budget holds; false when the budget ran
// out (nothing more fits).
func (w *writer) hunk(h hunkSpan, a, b []string) bool {
	if w.budget < maxHeaderBytes+2 {
		return false
	}
	w.budget -= maxHeaderBytes
	w.body.Reset()
	hk := Hunk{Lines: []Line{}}
	oi, ni := h.o0, h.n0
	add := func(op Op, raw string) bool {
		if !w.line(&hk, op, raw) {
			return false
		}
		switch op {
		case OpContext:
			hk.OldLines++
			hk.NewLines++
		case OpDelete:
			hk.OldLines++
		default:
			hk.NewLines++
		}
		return !w.cut
	}
	full := func() bool {
		for _, bl := range h.blocks {
			for ; oi < bl.o0; oi, ni = oi+1, ni+1 {
				if !add(OpContext, a[oi]) {
					return false
				}
			}
			for ; oi < bl.o1; oi++ {
				if !add(OpDelete, a[oi]) {
					return false
				}
			}
			for ; ni < bl.n1; ni++ {
				if !add(OpInsert, b[ni]) {
					return false
				}
			}
		}
		for ; oi < h.o1; oi, ni = oi+1, ni+1 {
			if !add(OpContext, a[oi]) {
				return false
			}
		}
		return true
	}()
	if len(hk.Lines) == 0 {
		return false
	}
	hk.OldStart, hk.NewStart = h.o0+1, h.n0+1
	if hk.OldLines == 0 {
		hk.OldStart--
	}
	if hk.NewLines == 0 {
		hk.NewStart--
	}
	fmt.Fprintf(&w.out, "@@ -%s +%s @@\n", rangeText(hk.OldStart, hk.OldLines), rangeText(hk.NewStart, hk.NewLines))
	w.out.WriteString(w.body.String())
	w.hunks = append(w.hunks, hk)
	if !full {
		w.cut = true
	}
	return full
}

// line writes one line of a hunk if it fits, cutting its text to the budget when it is
// the first that does not (w.cut); false when nothing was written.
func (w *writer) line(hk *Hunk, op Op, raw string) bool {
	text, ended := strings.CutSuffix(raw, "\n")
	l := Line{Op: op, NoNewline: !ended} // only a side's last line can lack the newline
	room := w.budget - 2
	if l.NoNewline {
		room -= len(noNewlineMarker) + 1
	}
	l.Text, l.Escaped, l.Cut = escapeText(text, max(0, room))
	if l.Cut {
		if room < 64 {
			return false // not worth a stub: stop before this line
		}
		l.NoNewline = false
		w.cut = true
	}
	need := 2 + len(l.Text)
	if l.NoNewline {
		need += len(noNewlineMarker) + 1
	}
	w.emit(hk, l, need)
	return true
}

func (w *writer) emit(hk *Hunk, l Line, need int) {
	w.body.WriteByte(l.Op.prefix())
	w.body.WriteString(l.Text)
	w.body.WriteByte('\n')
	if l.NoNewline {
		w.body.WriteString(noNewlineMarker + "\n")
	}
	w.budget -= need
	hk.Lines = append(hk.Lines, l)
}

// rangeText renders a unified-format range: "start" for one line, else "start,count".
func rangeText(start, count int) string {
	if count == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
