package workbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairnstore/cairn/meta"
)

// Grep bounds.
const (
	DefaultGrepLimit = 100
	MaxGrepLimit     = 300
	// MaxGrepPatterns bounds the distinct patterns (after case folding) of one search,
	// pattern and patterns together.
	MaxGrepPatterns = 16
	// MaxGrepPatternBytes bounds one pattern.
	MaxGrepPatternBytes = 1024
	// MaxGrepGlobBytes bounds the glob.
	MaxGrepGlobBytes = 1024
	// GrepSnippetChars bounds a snippet, in Unicode code points.
	GrepSnippetChars = 240
	// GrepMaxScanBytes bounds the file bytes one call reads (the overshoot is at most
	// one read buffer). A file that does not fit in what is left of it waits for the next
	// call; a file larger than all of it is first checked for NUL bytes, then searched,
	// over as many calls as it takes.
	GrepMaxScanBytes = 8 << 20
	// GrepMaxFiles bounds the files one call starts reading (each may cost an object-store
	// request).
	GrepMaxFiles = 256
	// GrepMaxEntries bounds the directory entries (files, whether the glob selects them or
	// not, and directories) one call visits.
	GrepMaxEntries = 4096

	grepReadBufferBytes = recordReadBuffer // one read: the longest slice of a line examined at once (a pooled reader's)
	grepListPage        = 256              // entries per View.List call
)

// GrepRequest is a workbench_grep call.
type GrepRequest struct {
	Agent, Workbench string
	// Path is the full path inside the workbench of the directory to search ("" = the
	// whole workbench) or of a single file.
	Path string
	// Patterns are literal alternatives, matched with OR (no '|' splitting here: see
	// Tools.Grep). 1..MaxGrepPatterns distinct after case folding, each non-empty, valid UTF-8,
	// at most MaxGrepPatternBytes, without '\n'.
	Patterns []string
	// Recursive searches the whole subtree; otherwise only the files directly in Path.
	Recursive bool
	// Glob, when not "", selects files by base name: '*' matches any run of characters,
	// '?' one character; no other metacharacter ('[' and '\' are rejected). Case-sensitive,
	// like paths. Directories are always descended.
	Glob   string
	Cursor string
	Limit  int // matching lines, 1..MaxGrepLimit; 0 = DefaultGrepLimit
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path         string // full path inside the workbench
	Section      string // "" outside the five sections
	RelativePath string
	Presentation string // presentation path
	LineNumber   int64  // 1-based
	// Snippet is the line, or at most GrepSnippetChars code points of it around the first
	// match, cut at code point boundaries.
	Snippet string
}

// GrepResult is one page of a search. A page may hold no match and still not be the
// last: each call does bounded work (Grep), so only NextCursor == "" says the search
// reached the end of its scope.
type GrepResult struct {
	Matches      []GrepMatch
	FilesScanned int    // files this call read (whole or in part), NUL files included
	ScannedBytes int64  // file body bytes this call read
	NextCursor   string // "" on the last page
	Truncated    bool
}

// GrepInput is workbench_grep's input.
type GrepInput struct {
	ID        string   `json:"id"`
	Pattern   string   `json:"pattern"`
	Recursive bool     `json:"recursive"`
	Patterns  []string `json:"patterns"`
	Section   *string  `json:"section"`
	Path      *string  `json:"path"`
	Glob      *string  `json:"glob"`
	Cursor    *string  `json:"cursor"`
	Limit     *int     `json:"limit"`
}

// grepTerms turns the tool's pattern and patterns into the list of literal terms.
func grepTerms(pattern string, patterns []string) ([]string, *Error) {
	if pattern == "" {
		return nil, invalidArgument("pattern", "must not be empty")
	}
	if len(patterns) == 0 {
		terms := strings.Split(pattern, "|")
		for _, t := range terms {
			if t == "" {
				return nil, invalidArgument("pattern", "has an empty alternative around '|'; to search for a literal '|', pass patterns")
			}
		}
		if _, err := compileGrep("pattern", terms); err != nil {
			return nil, err
		}
		return terms, nil
	}
	if len(patterns) > MaxGrepPatterns {
		return nil, invalidArgument("patterns", "must have at most %d items", MaxGrepPatterns)
	}
	if _, err := compileGrep("pattern", []string{pattern}); err != nil {
		return nil, err
	}
	if _, err := compileGrep("patterns", patterns); err != nil {
		return nil, err
	}
	terms := append([]string{pattern}, patterns...)
	if _, err := compileGrep("patterns", terms); err != nil {
		return nil, err
	}
	return terms, nil
}

// grepMatcher holds the case-folded search terms.
type grepMatcher struct {
	terms    [][]byte // folded UTF-8, distinct, sorted
	maxRunes int      // the longest term, in code points
}

// compileGrep validates and folds the terms; field names them in errors.
func compileGrep(field string, terms []string) (*grepMatcher, *Error) {
	if len(terms) == 0 {
		return nil, invalidArgument(field, "must give at least one pattern")
	}
	m := &grepMatcher{}
	seen := map[string]bool{}
	for i, t := range terms {
		switch {
		case t == "":
			return nil, invalidArgument(field, "pattern %d is empty", i)
		case len(t) > MaxGrepPatternBytes:
			return nil, invalidArgument(field, "pattern %d is longer than %d bytes", i, MaxGrepPatternBytes)
		case !utf8.ValidString(t):
			return nil, invalidArgument(field, "pattern %d is not valid UTF-8", i)
		case strings.IndexByte(t, '\n') >= 0:
			return nil, invalidArgument(field, "pattern %d contains a newline: patterns match within one line", i)
		}
		f := string(appendFolded(nil, t))
		if seen[f] {
			continue
		}
		seen[f] = true
		m.terms = append(m.terms, []byte(f))
		m.maxRunes = max(m.maxRunes, utf8.RuneCountInString(t))
	}
	if len(m.terms) > MaxGrepPatterns {
		return nil, invalidArgument(field, "has %d distinct patterns; at most %d (pattern and patterns together)", len(m.terms), MaxGrepPatterns)
	}
	slices.SortFunc(m.terms, bytes.Compare)
	return m, nil
}

// foldRune maps r to the smallest rune of its simple case folding orbit, so two runes
// fold equal exactly when unicode.SimpleFold relates them (strings.EqualFold's rule).
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// appendFolded appends the folded form of valid UTF-8 s.
func appendFolded(dst []byte, s string) []byte {
	for _, r := range s {
		dst = utf8.AppendRune(dst, foldRune(r))
	}
	return dst
}

// validateGlob checks a base-name glob: '*' and '?' are its only metacharacters.
func validateGlob(g string) *Error {
	switch {
	case len(g) > MaxGrepGlobBytes:
		return invalidArgument("glob", "must be at most %d bytes", MaxGrepGlobBytes)
	case !utf8.ValidString(g):
		return invalidArgument("glob", "must be valid UTF-8")
	case strings.ContainsAny(g, `[\`):
		return invalidArgument("glob", "supports only * and ? ('[' and '\\' are not allowed)")
	case strings.Contains(g, "/"):
		return invalidArgument("glob", "matches base names and must not contain '/'")
	}
	return nil
}

func globMatch(glob, name string) bool {
	if glob == "" {
		return true
	}
	ok, _ := path.Match(glob, name) // validateGlob leaves no syntax error
	return ok
}

// grepView resolves the state a search reads: today the live state (linearizable). It is
// the one place to change for reads at a snapshot.
func (s *Reads) grepView(ctx context.Context, agent, id string) (*meta.View, *meta.Workspace, error) {
	return s.base.workspaceView(ctx, agent, id)
}

// Grep implements workbench_grep (docs/workbench.md, workbench_grep): one page of the lines of the files
// at or below req.Path that contain any of req.Patterns.
//
// Matching: a line matches when it contains a pattern as a literal substring under Unicode
// simple case folding (the per-rune folding of strings.EqualFold: "k", "K" and the Kelvin
// sign U+212A are one letter; "ß" does not match "ss", which would need full folding). No
// Unicode normalization. Lines are split on '\n' and never include it; a '\r' before the
// '\n' is matched like any other byte but left out of the snippet. Bytes that are not
// UTF-8 never match and show as U+FFFD in snippets.
//
// Order: files in depth-first order, names compared bytewise per component (the order of
// List), then lines. A file that contains a NUL byte anywhere is skipped whole, even the
// matches before its first NUL.
//
// Bounded work: one call reads at most GrepMaxScanBytes of bodies (plus at most one read
// buffer), starts at most GrepMaxFiles files and visits at most GrepMaxEntries directory
// entries, then stops with Truncated and a cursor, however few matches it found. Memory is
// bounded too: a line is examined in slices of at most grepReadBufferBytes, keeping enough
// of the previous slice to find a match across the boundary and to build the snippet; no
// line or file is held whole, and directories are listed a page at a time.
//
// Paging: Limit counts matching lines. A page ends after Limit matches only when a further
// match exists (the next page starts with it), so a search with exactly Limit matches
// returns them with Truncated false. The cursor is signed and bound to the target path,
// the arguments (the folded patterns as a set, Recursive, Glob; not Limit) and the
// workbench revision of its first page.
//
// Errors: InvalidArguments (a bad argument; a cursor that is forged, expired, or issued
// for other arguments), NotFound (no such workbench, directory or file; an empty section
// is simply empty), ReadFenceChanged (retryable: the workbench changed since the cursor's
// first page, or a file was replaced while this call read it).
func (s *Reads) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	if err := validateTarget(req.Agent, req.Workbench, req.Path); err != nil {
		return GrepResult{}, err
	}
	if err := mayRead(ctx, req.Agent); err != nil {
		return GrepResult{}, err
	}
	var werr *Error
	if req.Limit, werr = pageLimit(req.Limit, DefaultGrepLimit, MaxGrepLimit); werr != nil {
		return GrepResult{}, werr
	}
	m, werr := compileGrep("patterns", req.Patterns)
	if werr != nil {
		return GrepResult{}, werr
	}
	if werr := validateGlob(req.Glob); werr != nil {
		return GrepResult{}, werr
	}
	args := grepArgs(m, req.Recursive, req.Glob)
	release, aerr := s.base.admitBytes(ctx, grepQueryBytes, -1) // its own limits bound a call
	if aerr != nil {
		return GrepResult{}, aerr
	}
	defer release()
	view, ws, err := s.grepView(ctx, req.Agent, req.Workbench)
	if err != nil {
		return GrepResult{}, err
	}
	var start *grepPos
	if req.Cursor != "" {
		cur, cerr := s.base.cursors.decode(ctx, req.Cursor, "grep", req.Agent, req.Workbench, req.Path)
		if cerr != nil {
			return GrepResult{}, cerr
		}
		if cur.Args != args {
			return GrepResult{}, invalidArgument("cursor", "was issued for other arguments")
		}
		if !cur.issuedFor(ws) {
			return GrepResult{}, invalidArgument("cursor", "was issued for another incarnation of the workbench")
		}
		if cur.Fence != ws.Revision {
			return GrepResult{}, fenceChanged("the workbench changed since the first page; search again from the start")
		}
		if start, werr = parseGrepPos(cur, req.Path, req.Recursive); werr != nil {
			return GrepResult{}, werr
		}
	}
	targetIsFile := false
	if req.Path != "" {
		st, err := view.Stat(ws, req.Path)
		switch {
		case meta.CodeOf(err) == meta.CodeNotFound && isSection(req.Path):
			return GrepResult{}, nil // an empty section
		case err != nil:
			return GrepResult{}, AsError(err)
		}
		targetIsFile = st.Kind == meta.KindFile
	}
	g := &grepRun{s: s.base, ctx: ctx, agent: req.Agent, id: req.Workbench, view: view, ws: ws, m: m,
		glob: req.Glob, recursive: req.Recursive, limit: req.Limit,
		br: getReader(nil)} // a snippet is a string: nothing refers to its bytes after the run
	err = g.run(req.Path, targetIsFile, start)
	putReader(g.br)
	if err != nil {
		return GrepResult{}, err
	}
	out := GrepResult{FilesScanned: g.files, ScannedBytes: g.bytes}
	prefix := s.base.WorkbenchPath(req.Agent, req.Workbench) + "/"
	for _, h := range g.out {
		sec, rel := splitSection(h.path)
		out.Matches = append(out.Matches, GrepMatch{Path: h.path, Section: sec, RelativePath: rel,
			Presentation: prefix + h.path, LineNumber: h.line, Snippet: h.snippet})
	}
	if g.stop != nil {
		out.Truncated = true
		out.NextCursor = s.base.cursors.encode(ctx, cursor{Kind: "grep", Agent: req.Agent, Workbench: req.Workbench,
			Incarnation: ws.Incarnation, Created: ws.CreatedVersion, Path: req.Path, Args: args, Fence: ws.Revision,
			After: g.stop.encodeAfter(), Offset: g.stop.Off})
	}
	return out, nil
}

func fenceChanged(msg string) *Error {
	e := newError(CodeReadFenceChanged, "%s", msg)
	e.Retryable = true
	return e
}

// grepArgs digests the arguments a cursor is bound to (limit excluded: pages may differ
// in size).
func grepArgs(m *grepMatcher, recursive bool, glob string) string {
	parts := []string{"grep.v1", strconv.FormatBool(recursive), glob}
	for _, t := range m.terms {
		parts = append(parts, string(t))
	}
	d := requestHash(parts...)
	return hex.EncodeToString(d[:16])
}

// grepPos is where a search resumes: the state a cursor carries.
type grepPos struct {
	Path string // full path of an entry below (or equal to) the target
	// Phase: 's' visits Path from its start (a file or a directory); 'n' continues the NUL
	// check of file Path from Off; 'm' searches file Path, known to be free of NUL, from Off.
	Phase byte
	Off   int64
	Line  int64 // 'm': the number of the line Off is in
	Mid   bool  // 'm': Off is inside line Line, after its start
	// Matched ('m', Mid): line Line was already reported; skip the rest of it.
	Matched bool
}

// encodeAfter packs everything but Off into the cursor's After field: the path, a NUL
// (never part of a path), then "phase,line,flags".
func (p *grepPos) encodeAfter() string {
	flags := 0
	if p.Mid {
		flags |= 1
	}
	if p.Matched {
		flags |= 2
	}
	return fmt.Sprintf("%s\x00%c,%d,%d", p.Path, p.Phase, p.Line, flags)
}

func parseGrepPos(cur cursor, target string, recursive bool) (*grepPos, *Error) {
	bad := invalidArgument("cursor", "is not a cursor this server issued")
	p, rest, ok := strings.Cut(cur.After, "\x00")
	fields := strings.Split(rest, ",")
	if !ok || len(fields) != 3 || len(fields[0]) != 1 || cur.Offset < 0 {
		return nil, bad
	}
	line, err1 := strconv.ParseInt(fields[1], 10, 64)
	flags, err2 := strconv.Atoi(fields[2])
	pos := &grepPos{Path: p, Phase: fields[0][0], Off: cur.Offset, Line: line, Mid: flags&1 != 0, Matched: flags&2 != 0}
	if err1 != nil || err2 != nil || line < 0 || meta.ValidatePath("path", p) != nil || !strings.ContainsRune("snm", rune(pos.Phase)) {
		return nil, bad
	}
	rel := p
	if target != "" {
		if p != target && !strings.HasPrefix(p, target+"/") {
			return nil, bad
		}
		rel = strings.TrimPrefix(strings.TrimPrefix(p, target), "/")
	}
	if !recursive && strings.Contains(rel, "/") {
		return nil, bad
	}
	return pos, nil
}

// grepHit is a match found by a scan.
type grepHit struct {
	path    string
	line    int64
	snippet string
}

// grepRun is the state of one call.
type grepRun struct {
	s         *base
	ctx       context.Context
	agent, id string
	view      *meta.View
	ws        *meta.Workspace
	m         *grepMatcher
	glob      string
	recursive bool
	limit     int
	br        *bufio.Reader // reused for every file

	out     []grepHit
	files   int   // files started
	entries int   // directory entries visited
	bytes   int64 // body bytes read
	stop    *grepPos
	buf     lineBuf
	scratch []byte
}

func (g *grepRun) exhausted() bool {
	return g.bytes >= GrepMaxScanBytes || g.files >= GrepMaxFiles || g.entries >= GrepMaxEntries
}

// run searches target (a directory, "" = the workbench top, or a file) from start (nil =
// from the beginning) until the search ends, the page is full or the call's budget is
// spent; g.stop then says where to resume.
func (g *grepRun) run(target string, targetIsFile bool, start *grepPos) error {
	if start != nil && (start.Path == target) != targetIsFile {
		return invalidArgument("cursor", "is not a cursor this server issued")
	}
	if targetIsFile {
		if start == nil {
			start = &grepPos{Path: target, Phase: 's'}
		}
		return g.visit(nil, *start, nil)
	}
	w := &grepWalker{view: g.view, ws: g.ws}
	if start == nil {
		w.push(target)
	} else {
		w.seed(target, start.Path)
		if err := g.visit(w, *start, nil); err != nil || g.stop != nil {
			return err
		}
	}
	for {
		p, ent, ok, err := w.next()
		if err != nil {
			return AsError(err)
		}
		if !ok {
			return nil
		}
		if err := g.ctx.Err(); err != nil {
			return AsError(err)
		}
		// The first entry of a call is always visited, so every call makes progress.
		if g.exhausted() {
			g.stop = &grepPos{Path: p, Phase: 's'}
			return nil
		}
		if err := g.visit(w, grepPos{Path: p, Phase: 's'}, &ent); err != nil || g.stop != nil {
			return err
		}
	}
}

// visit handles one entry at pos: descends into a directory (recursive searches), or
// searches a file. ent is the entry when the walker just listed it, else nil.
func (g *grepRun) visit(w *grepWalker, pos grepPos, ent *meta.DirEntry) error {
	g.entries++
	var e *meta.Entry
	switch {
	case ent != nil && ent.Kind == meta.KindDirectory:
		if g.recursive {
			w.push(pos.Path)
		}
		return nil
	case ent != nil:
		e = ent.Entry
	default:
		st, err := g.view.Stat(g.ws, pos.Path)
		if err != nil {
			return AsError(err)
		}
		if st.Kind == meta.KindDirectory {
			if pos.Phase != 's' {
				return invalidArgument("cursor", "is not a cursor this server issued")
			}
			if g.recursive && w != nil {
				w.push(pos.Path)
			}
			return nil
		}
		e = st.Entry
	}
	if pos.Off > e.Size {
		return invalidArgument("cursor", "is not a cursor this server issued")
	}
	switch pos.Phase {
	case 's':
		if !globMatch(g.glob, baseName(pos.Path)) {
			return nil
		}
		if e.Size > GrepMaxScanBytes {
			if g.bytes >= GrepMaxScanBytes {
				g.stop = &pos
				return nil
			}
			g.files++
			return g.checkThenSearch(pos.Path, e, 0)
		}
		if e.Size > GrepMaxScanBytes-g.bytes {
			g.stop = &pos // it fits in the next call's budget
			return nil
		}
		g.files++
		return g.searchWhole(pos.Path, e)
	case 'n':
		g.files++
		return g.checkThenSearch(pos.Path, e, pos.Off)
	default:
		g.files++
		return g.searchChecked(pos.Path, e, pos)
	}
}

// open streams the pinned revision e from off, through the Service's read path.
func (g *grepRun) open(p string, e *meta.Entry, off int64) (io.ReadCloser, error) {
	f := &File{Info: g.s.fileInfo(g.agent, g.id, p, e), s: g.s, agent: g.agent, entry: e}
	return f.Reader(g.ctx, off, -1)
}

// readFailed explains a failed body read. Reads use the revision the listing saw, which
// stays readable for the blob grace period (docs/architecture.md#the-read-path); should its bytes be gone
// anyway, the file was replaced under the scan, and that is ReadFenceChanged (retryable)
// rather than an internal error. (A snapshot read would skip this: its revisions are held.)
func (g *grepRun) readFailed(p string, e *meta.Entry, err error) error {
	if g.ctx.Err() == nil {
		if view, verr := g.s.readView(g.ctx, g.agent); verr == nil {
			var cur *meta.Entry
			if ws, werr := view.Workspace(g.agent, g.id); werr == nil && ws.Incarnation == g.ws.Incarnation {
				cur, _ = view.File(ws, p)
			}
			if cur == nil || cur.Generation != e.Generation {
				e := fenceChanged(fmt.Sprintf("%s was replaced while it was searched; search again from the start", p))
				if cur != nil {
					e.Details["current_generation"] = cur.Generation
				}
				return e
			}
		}
	}
	return AsError(err)
}

// searchWhole searches a file that fits in what is left of the budget, in one read that
// also checks it for NUL: its matches are held back until the end of the file proves it
// has no NUL. Once the page is full it only looks for the next match (then only for NUL).
func (g *grepRun) searchWhole(p string, e *meta.Entry) error {
	r, err := g.open(p, e, 0)
	if err != nil {
		return g.readFailed(p, e, err)
	}
	defer r.Close()
	sc := g.scanner(r, grepPos{Path: p, Phase: 'm', Line: 1})
	var held []grepHit
	var next *grepPos
	for {
		before := sc.position()
		hit, done, err := sc.step(g.m, next == nil)
		if err != nil {
			return g.readFailed(p, e, err)
		}
		if sc.sawNUL {
			return nil // skipped whole: its held matches and any next match go with it
		}
		if hit != nil {
			if len(g.out)+len(held) < g.limit {
				held = append(held, *hit)
			} else {
				next = &before
			}
		}
		if done {
			break
		}
	}
	g.out = append(g.out, held...)
	g.stop = next
	return nil
}

// checkThenSearch handles a file larger than a whole call's budget: a NUL check from off
// to its end, then (when clean) a search from its start, each resumable.
func (g *grepRun) checkThenSearch(p string, e *meta.Entry, off int64) error {
	r, err := g.open(p, e, off)
	if err != nil {
		return g.readFailed(p, e, err)
	}
	if cap(g.scratch) < grepReadBufferBytes {
		g.scratch = make([]byte, grepReadBufferBytes)
	}
	chunk := g.scratch[:grepReadBufferBytes]
	for off < e.Size {
		if g.bytes >= GrepMaxScanBytes {
			r.Close()
			g.stop = &grepPos{Path: p, Phase: 'n', Off: off}
			return nil
		}
		n, err := io.ReadFull(r, chunk[:min(int64(len(chunk)), e.Size-off)])
		off += int64(n)
		g.bytes += int64(n)
		if bytes.IndexByte(chunk[:n], 0) >= 0 {
			r.Close()
			return nil
		}
		if err != nil {
			r.Close()
			return g.readFailed(p, e, err)
		}
	}
	r.Close()
	return g.searchChecked(p, e, grepPos{Path: p, Phase: 'm', Line: 1})
}

// searchChecked searches a file known to have no NUL from pos, reporting matches at once
// and stopping when the budget is spent or when a match finds the page full.
func (g *grepRun) searchChecked(p string, e *meta.Entry, pos grepPos) error {
	if pos.Line < 1 {
		return invalidArgument("cursor", "is not a cursor this server issued")
	}
	r, err := g.open(p, e, pos.Off)
	if err != nil {
		return g.readFailed(p, e, err)
	}
	defer r.Close()
	sc := g.scanner(r, pos)
	for {
		if g.bytes >= GrepMaxScanBytes && sc.off < e.Size {
			stop := sc.position()
			g.stop = &stop
			return nil
		}
		before := sc.position()
		hit, done, err := sc.step(g.m, true)
		if err != nil {
			return g.readFailed(p, e, err)
		}
		if hit != nil {
			if len(g.out) == g.limit {
				g.stop = &before
				return nil
			}
			g.out = append(g.out, *hit)
		}
		if done {
			return nil
		}
	}
}

// lineScanner reads one file revision a slice at a time (at most grepReadBufferBytes: a
// line or a piece of a long one) and finds the first match of each line.
type lineScanner struct {
	g    *grepRun
	br   *bufio.Reader
	path string
	off  int64 // file offset of the next byte br returns
	line int64 // the line being read (1-based)
	// mid: bytes of the current line were consumed; matched: the current line was
	// reported (or is being skipped), so the rest of it is not searched.
	mid, matched bool
	// partial holds the bytes of a code point cut by the end of the last slice.
	partial []byte
	sawNUL  bool
}

func (g *grepRun) scanner(r io.Reader, pos grepPos) *lineScanner {
	g.br.Reset(r)
	g.buf.reset()
	return &lineScanner{g: g, br: g.br, path: pos.Path, off: pos.Off, line: pos.Line, mid: pos.Mid, matched: pos.Matched}
}

// position returns where a new scan reproduces what this one does from here on: for a
// line not yet matched, the kept tail of it is read again (it may hold the start of a
// match, and gives the snippet its context).
func (sc *lineScanner) position() grepPos {
	p := grepPos{Path: sc.path, Phase: 'm', Off: sc.off, Line: sc.line, Mid: sc.mid, Matched: sc.matched}
	if sc.mid && !sc.matched {
		p.Off -= int64(len(sc.partial)) + sc.g.buf.sourceBytes()
	}
	return p
}

// step consumes one slice. With search, it looks for a match in the current line (unless
// the line already matched) and returns it; without, it only tracks lines and NUL bytes.
// done reports the end of the file.
func (sc *lineScanner) step(m *grepMatcher, search bool) (hit *grepHit, done bool, err error) {
	slice, err := sc.br.ReadSlice('\n')
	sc.off += int64(len(slice))
	sc.g.bytes += int64(len(slice))
	switch {
	case err == nil, errors.Is(err, bufio.ErrBufferFull):
	case errors.Is(err, io.EOF):
		done = true
	default:
		return nil, false, err
	}
	if bytes.IndexByte(slice, 0) >= 0 {
		sc.sawNUL = true
	}
	eol := len(slice) > 0 && slice[len(slice)-1] == '\n'
	if len(slice) == 0 {
		return nil, done, nil
	}
	if search && !sc.matched {
		content := slice
		if eol {
			content = slice[:len(slice)-1]
		}
		if len(sc.partial) > 0 {
			sc.g.scratch = append(append(sc.g.scratch[:0], sc.partial...), content...)
			content = sc.g.scratch
		}
		rest := sc.g.buf.append(content, eol || done)
		sc.partial = append(sc.partial[:0], rest...)
		if start, n, ok := sc.g.buf.find(m); ok {
			hit = &grepHit{path: sc.path, line: sc.line, snippet: sc.g.buf.snippet(start, n, eol || done)}
			sc.matched = true
		}
	}
	if eol {
		sc.line++
		sc.mid, sc.matched = false, false
		sc.partial = sc.partial[:0]
		sc.g.buf.reset()
	} else {
		sc.mid = true
		if sc.matched {
			sc.partial = sc.partial[:0]
			sc.g.buf.reset()
		} else {
			sc.g.buf.keepTail(max(GrepSnippetChars, m.maxRunes))
		}
	}
	return hit, done, nil
}

// lineBuf holds (part of) one line as code points, with its case-folded UTF-8 form.
type lineBuf struct {
	orig  []rune  // the source code points (U+FFFD for a byte that is not UTF-8)
	width []uint8 // source bytes of each code point
	fpos  []int32 // offset in fold where each code point's folded form starts
	fold  []byte  // folded text; a byte that is not UTF-8 folds to 0xFF, which no pattern contains
}

func (b *lineBuf) reset() {
	b.orig, b.width, b.fpos, b.fold = b.orig[:0], b.width[:0], b.fpos[:0], b.fold[:0]
}

// append decodes p; unless final, a code point cut at the end of p is returned undecoded.
func (b *lineBuf) append(p []byte, final bool) (rest []byte) {
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			f := c
			if 'a' <= c && c <= 'z' {
				f -= 'a' - 'A'
			}
			b.orig = append(b.orig, rune(c))
			b.width = append(b.width, 1)
			b.fpos = append(b.fpos, int32(len(b.fold)))
			b.fold = append(b.fold, f)
			i++
			continue
		}
		if !final && !utf8.FullRune(p[i:]) {
			return p[i:]
		}
		r, n := utf8.DecodeRune(p[i:])
		b.orig = append(b.orig, r)
		b.width = append(b.width, uint8(n))
		b.fpos = append(b.fpos, int32(len(b.fold)))
		if r == utf8.RuneError && n == 1 {
			b.fold = append(b.fold, 0xFF)
		} else {
			b.fold = utf8.AppendRune(b.fold, foldRune(r))
		}
		i += n
	}
	return nil
}

// keepTail drops all but the last n code points.
func (b *lineBuf) keepTail(n int) {
	drop := len(b.orig) - n
	if drop <= 0 {
		return
	}
	cut := b.fpos[drop]
	b.orig = append(b.orig[:0], b.orig[drop:]...)
	b.width = append(b.width[:0], b.width[drop:]...)
	b.fpos = append(b.fpos[:0], b.fpos[drop:]...)
	for i := range b.fpos {
		b.fpos[i] -= cut
	}
	b.fold = append(b.fold[:0], b.fold[cut:]...)
}

// sourceBytes is the size in the file of what the buffer holds.
func (b *lineBuf) sourceBytes() int64 {
	var n int64
	for _, w := range b.width {
		n += int64(w)
	}
	return n
}

// find returns the earliest match: its first code point and its length in code points.
func (b *lineBuf) find(m *grepMatcher) (start, n int, ok bool) {
	best, bestLen := -1, 0
	for _, t := range m.terms {
		if i := bytes.Index(b.fold, t); i >= 0 && (best < 0 || i < best) {
			best, bestLen = i, len(t)
		}
	}
	if best < 0 {
		return 0, 0, false
	}
	// A valid UTF-8 term matches only at code point boundaries of the folded text.
	start = sort.Search(len(b.fpos), func(i int) bool { return int(b.fpos[i]) >= best })
	end := sort.Search(len(b.fpos), func(i int) bool { return int(b.fpos[i]) >= best+bestLen })
	return start, end - start, true
}

// snippet returns at most GrepSnippetChars code points around the match [start, start+n):
// the match centered where the line allows, its start kept when it is longer than that.
// lineEnd says the buffer ends where the line does (its '\r' is then left out).
func (b *lineBuf) snippet(start, n int, lineEnd bool) string {
	total := len(b.orig)
	if lineEnd && total > 0 && b.orig[total-1] == '\r' {
		total--
	}
	lo, hi := 0, total
	if total > GrepSnippetChars {
		if n >= GrepSnippetChars {
			lo = start
		} else {
			lo = max(0, start-(GrepSnippetChars-n)/2)
		}
		hi = min(total, lo+GrepSnippetChars)
		lo = max(0, hi-GrepSnippetChars)
	}
	return string(b.orig[lo:hi])
}

// grepWalker lists a directory tree depth first, one View.List page per directory on its
// stack at a time, so memory grows with depth, not with the tree.
type grepWalker struct {
	view  *meta.View
	ws    *meta.Workspace
	stack []*walkFrame
}

type walkFrame struct {
	dir    string
	after  string // the last name taken from this directory
	ents   []meta.DirEntry
	i      int
	more   bool
	loaded bool
}

func (w *grepWalker) push(dir string) { w.stack = append(w.stack, &walkFrame{dir: dir}) }

// seed positions the walk just after entry p below root (p's subtree included): every
// directory from root down to p's parent continues after the component on p's path.
func (w *grepWalker) seed(root, p string) {
	rel := p
	if root != "" {
		rel = strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
	}
	dir := root
	for comp := range strings.SplitSeq(rel, "/") {
		w.stack = append(w.stack, &walkFrame{dir: dir, after: comp})
		dir = joinPath(dir, comp)
	}
}

// next returns the next entry in depth-first order. Directories are returned before their
// contents, which the caller asks for by pushing them.
func (w *grepWalker) next() (string, meta.DirEntry, bool, error) {
	for len(w.stack) > 0 {
		f := w.stack[len(w.stack)-1]
		if f.i == len(f.ents) {
			if f.loaded && !f.more {
				w.stack = w.stack[:len(w.stack)-1]
				continue
			}
			ents, more, err := w.view.List(w.ws, f.dir, f.after, grepListPage)
			if meta.CodeOf(err) == meta.CodeNotFound && f.dir != "" && !f.loaded {
				ents, more, err = nil, false, nil // the directory is empty (an empty section)
			}
			if err != nil {
				return "", meta.DirEntry{}, false, err
			}
			f.ents, f.i, f.more, f.loaded = ents, 0, more && len(ents) > 0, true
			continue
		}
		e := f.ents[f.i]
		f.i++
		f.after = e.Name
		return joinPath(f.dir, e.Name), e, true, nil
	}
	return "", meta.DirEntry{}, false, nil
}
