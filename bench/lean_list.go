package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/valyala/fasthttp"

	"github.com/cairnstore/cairn/api/client"
)

// leanList is the list scenario's lean lane (Config.LeanHTTP): GETs of the listing pages
// over fasthttp's client (leanHostClient), at the URLs api/client's List sends them to
// (client.ListURL), following every page's next_cursor as the Go client's lane does. It
// reads of a page only what it checks (leanListPage): 200, Content-Type application/json,
// the entries (counted, each an object, at most the page size), entry_count (the
// directory's, on every page) and next_cursor (a page with one holds entries; a last page
// ends the listing at exactly entry_count entries); the entries over all pages must be the
// scenario's files.
type leanList struct {
	hc                *fasthttp.HostClient
	server, agent, wb string
	// files is the number of entries the scenario wrote into listDir.
	files int
	// limit is the page size asked for; firstPage the URL of the first page.
	limit     int
	firstPage string
	opTimeout time.Duration
}

// newLeanList returns the list scenario's lean lane for workers concurrent listings of
// pages of limit entries.
func newLeanList(cfg Config, workers, limit int) (*leanList, error) {
	hc, err := leanHostClient(cfg.Server, workers)
	if err != nil {
		return nil, err
	}
	first, err := client.ListURL(cfg.Server, cfg.Agent, cfg.Workbench, listDir, client.ListOptions{Limit: limit})
	if err != nil {
		return nil, err
	}
	return &leanList{hc: hc, server: cfg.Server, agent: cfg.Agent, wb: cfg.Workbench,
		files: cfg.Files, limit: limit, firstPage: first, opTimeout: cfg.OpTimeout}, nil
}

// list lists listDir whole, page after page, and checks every answer; each page's request
// gives up at leanDeadline.
func (l *leanList) list(ctx context.Context) error {
	entries, cursor := 0, ""
	for {
		page, err := l.page(ctx, cursor)
		if err != nil {
			return err
		}
		entries += page.Entries.n
		next := ""
		if page.NextCursor != nil {
			next = *page.NextCursor
		}
		switch {
		case entries > l.files:
			return l.wrong("%d entries so far, more than the directory's %d", entries, l.files)
		case next != "" && page.Entries.n == 0:
			return l.wrong("a page of no entries with a next_cursor")
		case next == "" && entries != l.files:
			return l.wrong("no next_cursor after %d of the directory's %d entries", entries, l.files)
		case next == "":
			return nil
		}
		cursor = next
	}
}

// page GETs the page at cursor ("" the first) and checks what a page says on its own.
func (l *leanList) page(ctx context.Context, cursor string) (*leanListPage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u := l.firstPage
	if cursor != "" {
		var err error
		if u, err = client.ListURL(l.server, l.agent, l.wb, listDir, client.ListOptions{Cursor: cursor, Limit: l.limit}); err != nil {
			return nil, err
		}
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(u)
	req.Header.SetMethod(fasthttp.MethodGet)
	if err := l.hc.DoDeadline(req, resp, leanDeadline(ctx, l.opTimeout)); err != nil {
		return nil, fmt.Errorf("list %s: %w", listDir, err)
	}
	if st := resp.StatusCode(); st != fasthttp.StatusOK {
		return nil, l.wrong("status %d, want 200: %.200s", st, resp.Body())
	}
	if ct := resp.Header.ContentType(); !isJSONMediaType(ct) {
		return nil, l.wrong("Content-Type %q, want application/json", ct)
	}
	var p leanListPage
	if err := jsonv2.Unmarshal(resp.Body(), &p, leanListDecoding); err != nil {
		return nil, l.wrong("the page is not a listing: %v", err)
	}
	switch {
	case !p.Entries.seen:
		return nil, l.wrong("the page has no entries array")
	case p.Entries.n > l.limit:
		return nil, l.wrong("a page of %d entries, more than the %d asked for", p.Entries.n, l.limit)
	case p.EntryCount == nil || *p.EntryCount != int64(l.files):
		return nil, l.wrong("entry_count %s, want the directory's %d", optionalInt(p.EntryCount), l.files)
	}
	return &p, nil
}

// wrong is the error of an answer that is not the listing's: it wraps io.ErrUnexpectedEOF,
// as the Go client's lane reports a listing of the wrong number of entries.
func (l *leanList) wrong(format string, args ...any) error {
	return fmt.Errorf("list %s: %s: %w", listDir, fmt.Sprintf(format, args...), io.ErrUnexpectedEOF)
}

// close drops the lane's idle connections.
func (l *leanList) close() { l.hc.CloseIdleConnections() }

// leanListPage is what the lean list lane reads of a page; every other member is skipped.
type leanListPage struct {
	Entries    leanEntries `json:"entries"`
	EntryCount *int64      `json:"entry_count"`
	NextCursor *string     `json:"next_cursor"` // nil for null: the last page
}

// leanEntries counts a page's entries without decoding them: the cheapest reading of the
// ones measured (BenchmarkLeanListPage; against a struct of entries as []struct{} with
// encoding/json or go-json-experiment, or []json.RawMessage).
type leanEntries struct {
	n    int
	seen bool
}

// UnmarshalJSONFrom reads an array of objects, skipping each (jsontext checks its syntax);
// a repeated "entries" member counts only its last array, as a repeated member's last
// value is the one decoded.
func (e *leanEntries) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if k := dec.PeekKind(); k != '[' {
		return fmt.Errorf("entries: a JSON %v, want an array", k)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*e = leanEntries{seen: true}
	for {
		switch k := dec.PeekKind(); k {
		case ']':
			_, err := dec.ReadToken()
			return err
		case '{':
			if err := dec.SkipValue(); err != nil {
				return err
			}
			e.n++
		case 0: // not a value: ReadToken says why
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			return fmt.Errorf("entries: entry %d is not a JSON value", e.n)
		default:
			return fmt.Errorf("entries: entry %d is a JSON %v, want an object", e.n, k)
		}
	}
}

// leanListDecoding lets a page's objects repeat a member name (encoding/json's reading:
// the last value), which the lane checks nothing of, and spares it tracking every entry's
// member names, about a quarter of its decoding (BenchmarkLeanListPage).
var leanListDecoding = jsontext.AllowDuplicateNames(true)

// isJSONMediaType reports whether a Content-Type value is application/json, with or
// without parameters, without mime.ParseMediaType's allocations.
func isJSONMediaType(ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	return bytes.EqualFold(bytes.TrimSpace(mt), []byte("application/json"))
}

// optionalInt prints *n, or "missing".
func optionalInt(n *int64) string {
	if n == nil {
		return "missing"
	}
	return fmt.Sprint(*n)
}

var _ jsonv2.UnmarshalerFrom = (*leanEntries)(nil)
