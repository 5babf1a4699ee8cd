package redact

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/coregx/ahocorasick"
)

// markerPrefix opens every marker: "[REDACTED:<name>]".
const markerPrefix = "[REDACTED:"

// maxMarkerBytes is the longest marker: the prefix, a name of up to MaxIDBytes, "]".
const maxMarkerBytes = len(markerPrefix) + MaxIDBytes + 1

// Redactor redacts bodies for every tenant of a Config. It is immutable and safe for
// concurrent use. A nil *Redactor redacts tokens only and opts no tenant in.
type Redactor struct {
	tenants map[string]*tenant
	// plain serves tenants without registered values.
	plain *tenant
	// all holds the tenants whose writes through every surface are redacted.
	all map[string]bool
}

// tenant is what one tenant's bodies are redacted with.
type tenant struct {
	// values finds the registered values (nil: none); ids[i] is the id of value i.
	values *ahocorasick.Automaton
	ids    []string
	// names are the marker names recognised next to a token (standsAlone): the kinds and
	// the tenant's secret ids.
	names map[string]bool
}

func newTenant(secrets []Secret) (*tenant, error) {
	t := &tenant{names: kindNames()}
	if len(secrets) == 0 {
		return t, nil
	}
	values := make([]string, len(secrets))
	for i, s := range secrets {
		values[i] = s.Value
		t.ids = append(t.ids, s.ID)
		t.names[s.ID] = true
	}
	ac, err := ahocorasick.NewBuilder().AddStrings(values).Build()
	if err != nil {
		return nil, fmt.Errorf("redact: building the matcher of registered values: %w", err)
	}
	t.values = ac
	return t, nil
}

func (r *Redactor) tenant(name string) *tenant {
	if r == nil {
		return plainTenant
	}
	if t, ok := r.tenants[name]; ok {
		return t
	}
	return r.plain
}

// plainTenant serves a nil *Redactor: the kinds' names, no registered values.
var plainTenant = &tenant{names: kindNames()}

func kindNames() map[string]bool {
	names := make(map[string]bool, len(Kinds))
	for _, k := range Kinds {
		names[k] = true
	}
	return names
}

// AllSurfaces reports whether the tenant's writes through every surface (REST, MCP, CLI)
// are redacted, not only its OpenWOP writes.
func (r *Redactor) AllSurfaces(tenant string) bool { return r != nil && r.all[tenant] }

// Redact returns content with the tenant's registered values and every secret-shaped
// token replaced by their markers (package doc). It never fails.
func (r *Redactor) Redact(tenant, content string) string {
	out, changed := r.tenant(tenant).redact(nil, []byte(content))
	if !changed {
		return content
	}
	return string(out)
}

// RedactBytes is Redact for bytes. The result may be content itself when nothing was
// replaced; content is never modified.
func (r *Redactor) RedactBytes(tenant string, content []byte) []byte {
	out, changed := r.tenant(tenant).redact(nil, content)
	if !changed {
		return content
	}
	return out
}

// RedactBody returns the reader a write of agent's stores instead of body: the redacted
// stream (NewReader) when the tenant opted in to redaction on every surface
// (AllSurfaces), body itself otherwise. It is workbench's BodyRedactor.
func (r *Redactor) RedactBody(agent string, body io.Reader) io.Reader {
	if !r.AllSurfaces(agent) {
		return body
	}
	return r.NewReader(agent, body)
}

// redact appends to dst the redaction of buf, a whole body. changed is false (and dst
// untouched) when nothing is replaced.
func (t *tenant) redact(dst, buf []byte) (out []byte, changed bool) {
	cands := t.candidates(nil, buf, 0, len(buf))
	if len(cands) == 0 {
		return dst, false
	}
	return t.render(dst, buf, 0, len(buf), choose(cands)), true
}

// candidate is a span of the input that one rule would replace.
type candidate struct {
	start, end int
	registered bool
	name       string // a kind, or the registered value's secret id
}

// before is the order candidates are taken in: longest first, a registered value before
// a token of the same length, then leftmost, then by name (for determinism only: two
// candidates of one span and one class have one name).
func before(a, b candidate) int {
	if c := cmp.Compare(b.end-b.start, a.end-a.start); c != 0 {
		return c
	}
	if a.registered != b.registered {
		if a.registered {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

// candidates appends every candidate that starts in buf[from:to]. Lookups reach past
// to (a candidate may end beyond it) and before from (the byte before a token); the
// caller makes sure buf holds what a candidate starting before to needs (stream.go).
func (t *tenant) candidates(dst []candidate, buf []byte, from, to int) []candidate {
	if t.values != nil {
		hay := buf[from:min(len(buf), to+MaxValueBytes)]
		for _, m := range t.values.FindAllOverlapping(hay) {
			if from+m.Start < to {
				dst = append(dst, candidate{start: from + m.Start, end: from + m.End, registered: true, name: t.ids[m.PatternID]})
			}
		}
	}
	for _, p := range patterns {
		for pos := from; pos < to; {
			loc := p.re.FindIndex(buf[pos:])
			if loc == nil || pos+loc[0] >= to {
				break
			}
			s, e := pos+loc[0], pos+loc[1]
			if kind, ok := p.check(t, buf, s, e); ok {
				dst = append(dst, candidate{start: s, end: e, name: kind})
			}
			pos = e
		}
	}
	for pos := from; pos < to; {
		loc := pemBegin.FindSubmatchIndex(buf[pos:])
		if loc == nil || pos+loc[0] >= to {
			break
		}
		s, bodyStart := pos+loc[0], pos+loc[1]
		if e, ok := pemAt(buf, s, bodyStart, buf[pos+loc[2]:pos+loc[3]]); ok {
			dst = append(dst, candidate{start: s, end: e, name: KindPrivateKey})
		}
		pos = bodyStart
	}
	return dst
}

// choose returns the spans to replace, by position: each run of overlapping candidates
// as one span, from its first start to its last end, named by its best candidate (the
// first in the order of before). A run is replaced whole so that no part of a secret
// that lost to a longer overlapping one stays readable. cands is reordered.
func choose(cands []candidate) []candidate {
	if len(cands) < 2 {
		return cands
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(a.start, b.start) })
	out := cands[:0]
	run := cands[0]
	best := cands[0]
	for _, c := range cands[1:] {
		if c.start < run.end {
			run.end = max(run.end, c.end)
			if before(c, best) < 0 {
				best = c
			}
			continue
		}
		out = append(out, candidate{start: run.start, end: run.end, registered: best.registered, name: best.name})
		run, best = c, c
	}
	return append(out, candidate{start: run.start, end: run.end, registered: best.registered, name: best.name})
}

// render appends buf[from:to] to dst with each chosen span replaced by its marker;
// chosen lie within [from, to), by position.
func (t *tenant) render(dst, buf []byte, from, to int, chosen []candidate) []byte {
	for _, c := range chosen {
		dst = append(dst, buf[from:c.start]...)
		dst = append(dst, markerPrefix...)
		dst = append(dst, c.name...)
		dst = append(dst, ']')
		from = c.end
	}
	return append(dst, buf[from:to]...)
}

// markerEndsAt reports whether buf[:i] ends with a marker of a recognised name.
func (t *tenant) markerEndsAt(buf []byte, i int) bool {
	lo := max(0, i-maxMarkerBytes)
	j := bytes.LastIndex(buf[lo:i], []byte(markerPrefix))
	if j < 0 {
		return false
	}
	name := buf[lo+j+len(markerPrefix) : i-1]
	return t.names[string(name)]
}

// markerStartsAt reports whether buf[i:] starts with a marker of a recognised name.
func (t *tenant) markerStartsAt(buf []byte, i int) bool {
	if !bytes.HasPrefix(buf[i:], []byte(markerPrefix)) {
		return false
	}
	rest := buf[i+len(markerPrefix) : min(len(buf), i+maxMarkerBytes)]
	k := bytes.IndexByte(rest, ']')
	return k >= 0 && t.names[string(rest[:k])]
}
