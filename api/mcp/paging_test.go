package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Paging of workbench_list, workbench_read, workbench_grep, workbench_search and
// workbench_find (docs/workbench.md#common-rules, cursors): every item exactly once and in
// order across pages of exactly page-size, page-size ± 1 and many pages; live cursors
// fenced on writes (ReadFenceChanged), snapshot cursors exact while the live workbench
// changes; forged cursors, cursors reused with other arguments and cursors of another
// workbench or agent root rejected with InvalidArguments naming "cursor".

// pgKey extracts an item's identity from a page.
type pgKey func(item obj) string

var (
	pgEntryName   pgKey = func(e obj) string { return e.str("name") }
	pgHitPath     pgKey = func(h obj) string { return h.str("relative_path") }
	pgWorkbenchID pgKey = func(w obj) string { return w.str("workbench_id") }
	pgMatchLine   pgKey = func(m obj) string {
		return fmt.Sprintf("%s:%v", m.str("relative_path"), m["line_number"])
	}
)

// cursorVariant returns a function that builds base with cursor c and then key k set to
// v (removed when v is nil): the arguments of a call that reuses c with one thing changed.
func cursorVariant(base args, c string) func(k string, v any) args {
	return func(k string, v any) args { return overlay(overlay(args{"cursor": c}, base), args{k: v}) }
}

// pgPages pages through tool from a (which has no cursor) until a page has no next_cursor,
// checking on every page that truncated is true exactly when next_cursor is set. It returns
// the keys of every page's items.
func pgPages(t *testing.T, cs *sdk.ClientSession, tool string, a args, items string, key pgKey) [][]string {
	t.Helper()
	var pages [][]string
	cur := ""
	for range 1000 {
		call := overlay(a, nil)
		if cur != "" {
			call["cursor"] = cur
		}
		r := ok(t, cs, tool, call)
		var keys []string
		for _, it := range r.list(t, items) {
			keys = append(keys, key(it))
		}
		pages = append(pages, keys)
		cur = r.str("next_cursor")
		if (cur != "") != (r["truncated"] == true) {
			t.Fatalf("%s page %d: truncated %v with next_cursor %v", tool, len(pages), r["truncated"], r["next_cursor"])
		}
		if cur == "" {
			return pages
		}
	}
	t.Fatalf("%s: more than 1000 pages", tool)
	return nil
}

// pgCheckPages checks that pages hold want in order, each item once, every page but the
// last exactly limit items, and the last one 1..limit items (or none when want is empty).
func pgCheckPages(t *testing.T, pages [][]string, want []string, limit int) {
	t.Helper()
	var all []string
	for i, p := range pages {
		all = append(all, p...)
		last := i == len(pages)-1
		switch {
		case !last && len(p) != limit:
			t.Errorf("page %d of %d has %d items, want %d: %v", i+1, len(pages), len(p), limit, p)
		case last && len(want) > 0 && (len(p) < 1 || len(p) > limit):
			t.Errorf("last page %d has %d items, want 1..%d: %v", i+1, len(p), limit, p)
		}
	}
	if !slices.Equal(all, want) {
		t.Errorf("items across %d pages:\n got %v\nwant %v", len(pages), all, want)
	}
	if wantPages := max(1, (len(want)+limit-1)/limit); len(pages) != wantPages {
		t.Errorf("%d pages for %d items at limit %d, want %d", len(pages), len(want), limit, wantPages)
	}
}

// pgTamper returns cursor with its payload's JSON member key set to value and the original
// signature: a forged cursor that looks well-formed.
func pgTamper(t *testing.T, cursor, key string, value any) string {
	t.Helper()
	payload, sig, found := strings.Cut(cursor, ".")
	if !found {
		t.Fatalf("cursor %q has no signature part", cursor)
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("cursor payload is not base64url: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("cursor payload is not JSON: %v", err)
	}
	m[key] = value
	b, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b) + "." + sig
}

func pgNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

func TestListPagesEveryEntryOnceAtAndAroundThePageSize(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	cases := []struct {
		files, limit int // limit 0: the default (100)
	}{
		{3, 4}, {4, 4}, {5, 4}, {13, 4}, {1, 1}, {7, 1},
		{99, 0}, {100, 0}, {101, 0}, {250, 0}, {100, 100}, {201, 100},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d files, limit %d", c.files, c.limit), func(t *testing.T) {
			id := fmt.Sprintf("list-%d-%d", c.files, c.limit)
			names := pgNames("f", c.files)
			for _, n := range names {
				ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "d/" + n, "text": n})
			}
			a := args{"id": id, "section": "outputs", "path": "d"}
			limit := c.limit
			if limit == 0 {
				limit = 100
			} else {
				a["limit"] = limit
			}
			pages := pgPages(t, cs, "workbench_list", a, "entries", pgEntryName)
			pgCheckPages(t, pages, names, limit)
			// Every page reports the directory's size, not the page's.
			first := ok(t, cs, "workbench_list", a)
			if first.int(t, "entry_count") != int64(c.files) {
				t.Errorf("entry_count = %v, want %d", first["entry_count"], c.files)
			}
		})
	}
}

func TestListNamesAroundSlashComeInByteOrderOnceAcrossPages(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	const id = "slash"
	// "a/" is the directory a; its children sort after "a" and before "a-b" only inside it.
	for _, p := range []string{"a0", "a.b", "a/b", "a-b", "a/c/d", "a/b0", "a/-"} {
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": p, "text": p + "\n"})
	}
	want := []string{"a", "a-b", "a.b", "a0"} // '-' 0x2d < '.' 0x2e < '0' 0x30
	for limit := 1; limit <= 5; limit++ {
		pages := pgPages(t, cs, "workbench_list", args{"id": id, "section": "outputs", "limit": limit}, "entries", pgEntryName)
		pgCheckPages(t, pages, want, limit)
	}
	top := ok(t, cs, "workbench_list", args{"id": id, "section": "outputs"})
	if e := top.list(t, "entries")[0]; e.str("kind") != "directory" || e.int(t, "entry_count") != 4 || e.str("relative_path") != "a" {
		t.Errorf("entry a: %v, want a directory with 4 children", e)
	}
	for limit := 1; limit <= 4; limit++ {
		pages := pgPages(t, cs, "workbench_list", args{"id": id, "section": "outputs", "path": "a", "limit": limit}, "entries", pgEntryName)
		pgCheckPages(t, pages, []string{"-", "b", "b0", "c"}, limit)
	}
	// The workbench top merges the five virtual sections into real entries, in byte order.
	for limit := 1; limit <= 6; limit++ {
		pages := pgPages(t, cs, "workbench_list", args{"id": id, "limit": limit}, "entries", pgEntryName)
		pgCheckPages(t, pages, []string{"input", "logs", "metadata", "outputs", "scripts"}, limit)
	}
}

func TestListLiveCursorFailsAfterAWriteWhileASnapshotCursorStaysExact(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	const id = "fenced"
	names := pgNames("f", 10)
	for _, n := range names {
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": n, "text": n})
	}
	snap := ok(t, cs, "workbench_snapshot", args{"id": id, "name": "frozen"})
	snapID := snap.int(t, "snapshot_id")

	live := args{"id": id, "section": "input", "limit": 3}
	p1 := ok(t, cs, "workbench_list", live)
	ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "f000a", "text": "late"})
	e := fails(t, cs, "workbench_list", args{"id": id, "section": "input", "limit": 3, "cursor": mxCursor(t, p1)}, "ReadFenceChanged")
	if e["retryable"] != true {
		t.Errorf("ReadFenceChanged not retryable: %v", e)
	}
	// A write elsewhere in the workbench also fences the cursor: it binds the workbench.
	p1 = ok(t, cs, "workbench_list", live)
	ok(t, cs, "workbench_append", args{"id": id, "section": "logs", "path": "other.log", "text": "x\n"})
	fails(t, cs, "workbench_list", args{"id": id, "section": "input", "limit": 3, "cursor": mxCursor(t, p1)}, "ReadFenceChanged")
	// Listing again from the start sees the write, each entry once.
	withLate := append([]string{"f000", "f000a"}, names[1:]...)
	pgCheckPages(t, pgPages(t, cs, "workbench_list", live, "entries", pgEntryName), withLate, 3)

	for _, sel := range []any{snapID, "frozen"} {
		t.Run(fmt.Sprintf("at_snapshot %v", sel), func(t *testing.T) {
			a := args{"id": id, "section": "input", "limit": 3, "at_snapshot": sel}
			var got []string
			cur := ""
			for page := 0; ; page++ {
				call := overlay(a, nil)
				if cur != "" {
					call["cursor"] = cur
				}
				r := ok(t, cs, "workbench_list", call)
				if fmt.Sprint(r["at_snapshot"]) != fmt.Sprint(sel) {
					t.Errorf("page %d: at_snapshot %v, want %v", page, r["at_snapshot"], sel)
				}
				for _, e := range r.list(t, "entries") {
					got = append(got, e.str("name"))
				}
				// The live workbench changes between every two pages.
				ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": fmt.Sprintf("g-%v-%d", sel, page), "text": "live"})
				ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "f005", "text": fmt.Sprint("changed ", sel, page), "replace": true})
				if cur = r.str("next_cursor"); cur == "" {
					break
				}
			}
			if !slices.Equal(got, names) {
				t.Errorf("snapshot listing across live writes: %v, want %v", got, names)
			}
		})
	}
	// Live state moved on meanwhile: the snapshot's names, f000a, and one g-… per page.
	liveNames := pgPages(t, cs, "workbench_list", args{"id": id, "section": "input", "limit": 100}, "entries", pgEntryName)[0]
	if want := len(names) + 1 + 2*4; len(liveNames) != want || !slices.Contains(liveNames, "f000a") {
		t.Errorf("live listing %v: want %d names including f000a", liveNames, want)
	}
}

func TestListCursorsUsedWithOtherArgumentsAreInvalid(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	other := connectInMemory(t, svc, "paging-other")
	for _, id := range []string{"one", "two"} {
		for _, n := range pgNames("f", 6) {
			ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "d/" + n, "text": n})
			ok(t, cs, "workbench_put_file", args{"id": id, "section": "scripts", "path": "d/" + n, "text": n})
		}
	}
	for _, n := range pgNames("f", 6) {
		ok(t, other, "workbench_put_file", args{"id": "one", "section": "input", "path": "d/" + n, "text": n})
	}
	sID := ok(t, cs, "workbench_snapshot", args{"id": "one", "name": "s"}).int(t, "snapshot_id")
	base := args{"id": "one", "section": "input", "path": "d", "limit": 2}
	c := mxCursor(t, ok(t, cs, "workbench_list", base))
	snapCursor := mxCursor(t, ok(t, cs, "workbench_list", args{"id": "one", "section": "input", "path": "d", "limit": 2, "at_snapshot": "s"}))
	readCursor := mxCursor(t, ok(t, cs, "workbench_read", args{"id": "one", "section": "input", "path": "d/f000", "format": "bytes", "limit": 1}))
	with := cursorVariant(base, c)
	for _, tc := range []struct {
		name string
		a    args
	}{
		{"another directory", with("path", "d2")},
		{"another section", with("section", "scripts")},
		{"no section and path", with("section", nil)},
		{"another workbench with the same path", with("id", "two")},
		{"an at_snapshot the first page did not have", with("at_snapshot", "s")},
		{"a snapshot cursor used live", args{"id": "one", "section": "input", "path": "d", "limit": 2, "cursor": snapCursor}},
		{"a snapshot cursor at another selector of the same snapshot", args{"id": "one", "section": "input", "path": "d", "limit": 2, "cursor": snapCursor, "at_snapshot": sID}},
		{"a read cursor", with("cursor", readCursor)},
		{"a random string", with("cursor", "not-a-cursor")},
		{"an empty signature", with("cursor", strings.Split(c, ".")[0]+".")},
		{"a payload whose last item was edited", with("cursor", pgTamper(t, c, "n", "f004"))},
		{"a payload whose fence was edited", with("cursor", pgTamper(t, c, "f", 1))},
		{"a payload whose workbench was edited", args{"id": "two", "section": "input", "path": "d", "limit": 2, "cursor": pgTamper(t, c, "w", "two")}},
		{"the signature of another cursor", with("cursor", strings.Split(c, ".")[0]+"."+strings.Split(snapCursor, ".")[1])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			invalid(t, cs, "workbench_list", tc.a, "cursor")
		})
	}
	t.Run("another agent root", func(t *testing.T) {
		invalid(t, other, "workbench_list", with("id", "one"), "cursor")
	})
	t.Run("a different limit continues the listing (limit does not shape the cursor)", func(t *testing.T) {
		r := ok(t, cs, "workbench_list", with("limit", 10))
		var got []string
		for _, e := range r.list(t, "entries") {
			got = append(got, e.str("name"))
		}
		if !slices.Equal(got, pgNames("f", 6)[2:]) || r["truncated"] != false {
			t.Errorf("continued with limit 10: %v", r)
		}
	})
}

// pgReadAll reads a file page by page (structured or bytes) and returns the records or
// the bytes, with the number of pages.
func pgReadAll(t *testing.T, cs *sdk.ClientSession, a args, between func(page int)) (records []string, data []byte, pages int) {
	t.Helper()
	cur := ""
	for pages = 1; pages < 1000; pages++ {
		call := overlay(a, nil)
		if cur != "" {
			call["cursor"] = cur
		}
		r := ok(t, cs, "workbench_read", call)
		if a["format"] == "bytes" {
			b, err := base64.StdEncoding.DecodeString(r.str("bytes"))
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, b...)
		} else {
			for _, it := range r.list(t, "items") {
				if it.int(t, "index") != int64(len(records)) {
					t.Errorf("page %d: item index %v, want %d", pages, it["index"], len(records))
				}
				records = append(records, fmt.Sprint(it["value"]))
			}
		}
		if between != nil {
			between(pages)
		}
		if cur = r.str("next_cursor"); cur == "" {
			return records, data, pages
		}
	}
	t.Fatal("more than 1000 pages")
	return nil, nil, 0
}

func TestReadCursorsAtASnapshotStayExactWhileTheFileChanges(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	const id = "reads"
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	ok(t, cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "run.log", "text": strings.Join(lines, "\n") + "\n"})
	body := make([]byte, 1000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "blob.bin", "base64": base64.StdEncoding.EncodeToString(body)})
	snapID := ok(t, cs, "workbench_snapshot", args{"id": id, "name": "frozen"}).int(t, "snapshot_id")

	for _, limit := range []int{1, 3, 9, 10, 11} {
		for _, sel := range []any{snapID, "frozen"} {
			t.Run(fmt.Sprintf("text lines, limit %d, at_snapshot %v", limit, sel), func(t *testing.T) {
				got, _, pages := pgReadAll(t, cs, args{"id": id, "section": "logs", "path": "run.log", "limit": limit, "at_snapshot": sel}, func(int) {
					ok(t, cs, "workbench_append", args{"id": id, "section": "logs", "path": "run.log", "text": "appended live\n"})
				})
				if !slices.Equal(got, lines) {
					t.Errorf("records %v, want %v", got, lines)
				}
				if want := max(1, (len(lines)+limit-1)/limit); pages != want {
					t.Errorf("%d pages, want %d", pages, want)
				}
			})
		}
	}
	for _, limit := range []int{7, 100, 250, 299, 300} {
		t.Run(fmt.Sprintf("bytes, limit %d", limit), func(t *testing.T) {
			_, got, pages := pgReadAll(t, cs, args{"id": id, "section": "outputs", "path": "blob.bin", "format": "bytes", "limit": limit, "at_snapshot": snapID}, func(page int) {
				ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": "blob.bin", "text": fmt.Sprint("replaced ", page), "replace": true})
			})
			if string(got) != string(body) {
				t.Errorf("snapshot bytes across %d pages differ from the snapshot's body (%d bytes, want %d)", pages, len(got), len(body))
			}
			if want := (len(body) + limit - 1) / limit; pages != want {
				t.Errorf("%d pages, want %d", pages, want)
			}
		})
	}

	t.Run("a live cursor fails once the file changed, naming its generation", func(t *testing.T) {
		r := ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "run.log", "limit": 2})
		gen := ok(t, cs, "workbench_append", args{"id": id, "section": "logs", "path": "run.log", "text": "more\n"}).int(t, "generation")
		e := fails(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "run.log", "limit": 2, "cursor": mxCursor(t, r)}, "ReadFenceChanged")
		if e["retryable"] != true || e.details().int(t, "current_generation") != gen {
			t.Errorf("ReadFenceChanged: %v, want retryable with details.current_generation %d", e, gen)
		}
		// A write to another file does not fence a read cursor: it binds the file's generation.
		r = ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "run.log", "limit": 2})
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "unrelated.txt", "text": "x"})
		ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "run.log", "limit": 2, "cursor": mxCursor(t, r)})
	})

	t.Run("read cursors used with other arguments are invalid", func(t *testing.T) {
		ok(t, cs, "workbench_put_file", args{"id": "reads-2", "section": "logs", "path": "run.log", "text": strings.Join(lines, "\n")})
		c := mxCursor(t, ok(t, cs, "workbench_read", args{"id": id, "section": "logs", "path": "run.log", "limit": 2, "at_snapshot": snapID}))
		for _, tc := range []struct {
			name string
			a    args
		}{
			{"without the at_snapshot", args{"id": id, "section": "logs", "path": "run.log", "cursor": c}},
			{"at the same snapshot by name", args{"id": id, "section": "logs", "path": "run.log", "cursor": c, "at_snapshot": "frozen"}},
			{"as bytes", args{"id": id, "section": "logs", "path": "run.log", "cursor": c, "at_snapshot": snapID, "format": "bytes"}},
			{"for another file", args{"id": id, "section": "outputs", "path": "blob.bin", "cursor": c, "at_snapshot": snapID}},
			{"in another workbench", args{"id": "reads-2", "section": "logs", "path": "run.log", "cursor": c}},
			{"with an edited offset", args{"id": id, "section": "logs", "path": "run.log", "cursor": pgTamper(t, c, "o", 5), "at_snapshot": snapID}},
		} {
			t.Run(tc.name, func(t *testing.T) { invalid(t, cs, "workbench_read", tc.a, "cursor") })
		}
	})
}

// TestSnapshotCursorsByNameStayOnTheirSnapshotWhenTheNameIsMintedAgain: a snapshot name
// resolves to the newest snapshot minted with it (docs/workbench.md, workbench_snapshot), but a cursor
// stays on the snapshot its first page resolved, for list and read alike: passed back with
// identical arguments it goes on, on the first snapshot, after the name was minted again.
// Regression: read re-resolved the name on every page and rejected its own cursor with
// InvalidArguments ("was issued for another format or at_snapshot"), fixed in e2bf503.
func TestSnapshotCursorsByNameStayOnTheirSnapshotWhenTheNameIsMintedAgain(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "logs", "path": "a.log", "text": "1\n2\n3\n4\n"})
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "a", "text": "x"})
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "b", "text": "x"})
	ok(t, cs, "workbench_snapshot", args{"id": "w", "name": "nightly"})
	readArgs := args{"id": "w", "section": "logs", "path": "a.log", "limit": 2, "at_snapshot": "nightly"}
	listArgs := args{"id": "w", "section": "outputs", "limit": 1, "at_snapshot": "nightly"}
	r := ok(t, cs, "workbench_read", readArgs)
	l := ok(t, cs, "workbench_list", listArgs)
	ok(t, cs, "workbench_append", args{"id": "w", "section": "logs", "path": "a.log", "text": "5\n"})
	ok(t, cs, "workbench_snapshot", args{"id": "w", "name": "nightly"})

	listArgs["cursor"] = mxCursor(t, l)
	if l2 := ok(t, cs, "workbench_list", listArgs); fmt.Sprint(pgPageKeys(t, l2, "entries", pgEntryName)) != "[b]" || l2.str("at_snapshot") != "nightly" {
		t.Errorf("list page 2: %v, want b at_snapshot nightly", l2)
	}
	readArgs["cursor"] = mxCursor(t, r)
	r2, isErr := call(t, cs, "workbench_read", readArgs)
	if isErr {
		t.Fatalf("read page 2 at_snapshot %q after the name was minted again, same arguments: %v: %v (list continues on the snapshot it started on)",
			"nightly", r2["code"], r2["message"])
	}
	if got := fmt.Sprint(r2["items"]); got != "[map[index:2 value:3] map[index:3 value:4]]" || r2["truncated"] != false || r2.int(t, "record_count") != 4 {
		t.Errorf("read page 2: %v, want the first snapshot's records 3 and 4, and the end", r2)
	}
	// A new first page at the name reads the newest snapshot.
	if r := ok(t, cs, "workbench_read", args{"id": "w", "section": "logs", "path": "a.log", "at_snapshot": "nightly"}); r.int(t, "record_count") != 5 {
		t.Errorf("a first page at the re-minted name: %v, want the second snapshot's 5 records", r)
	}
}

func TestGrepPagesMatchingLinesOnceAtAndAroundThePageSize(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	for _, c := range []struct{ lines, limit int }{{2, 3}, {3, 3}, {4, 3}, {10, 3}, {1, 1}, {5, 1}, {299, 300}, {300, 300}, {301, 300}} {
		t.Run(fmt.Sprintf("%d matching lines, limit %d", c.lines, c.limit), func(t *testing.T) {
			id := fmt.Sprintf("grep-%d-%d", c.lines, c.limit)
			var b strings.Builder
			var want []string
			for i := range c.lines {
				// Matching lines interleave with lines that do not match.
				fmt.Fprintf(&b, "noise %d\nNEEDLE %d\n", i, i)
				want = append(want, fmt.Sprintf("a.log:%d", 2*i+2))
			}
			ok(t, cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "a.log", "text": b.String()})
			pages := pgPages(t, cs, "workbench_grep", args{"id": id, "pattern": "needle", "recursive": true, "limit": c.limit}, "matches", pgMatchLine)
			pgCheckPages(t, pages, want, c.limit)
		})
	}
}

func TestGrepPagesFilesInDepthFirstByteOrderWithGlobAndRecursion(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	const id = "tree"
	for _, p := range []string{"a0", "a.b", "a/b", "a-b", "a/c/d", "a/b0", "x.log", "a/deep.log", "a/c/deeper.log"} {
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": p, "text": "hit " + p + "\nmiss\n"})
	}
	// Depth-first, names compared bytewise per component: a's subtree before "a-b".
	all := []string{"a/b:1", "a/b0:1", "a/c/d:1", "a/c/deeper.log:1", "a/deep.log:1", "a-b:1", "a.b:1", "a0:1", "x.log:1"}
	for _, limit := range []int{1, 2, 4, 9, 10} {
		pages := pgPages(t, cs, "workbench_grep", args{"id": id, "section": "outputs", "pattern": "HIT", "recursive": true, "limit": limit}, "matches", pgMatchLine)
		pgCheckPages(t, pages, all, limit)
		pages = pgPages(t, cs, "workbench_grep", args{"id": id, "section": "outputs", "pattern": "hit", "recursive": true, "glob": "*.log", "limit": limit}, "matches", pgMatchLine)
		pgCheckPages(t, pages, []string{"a/c/deeper.log:1", "a/deep.log:1", "x.log:1"}, limit)
		pages = pgPages(t, cs, "workbench_grep", args{"id": id, "section": "outputs", "pattern": "hit", "recursive": false, "limit": limit}, "matches", pgMatchLine)
		pgCheckPages(t, pages, []string{"a-b:1", "a.b:1", "a0:1", "x.log:1"}, limit)
		pages = pgPages(t, cs, "workbench_grep", args{"id": id, "section": "outputs", "path": "a", "pattern": "hit", "recursive": true, "glob": "?", "limit": limit}, "matches", pgMatchLine)
		pgCheckPages(t, pages, []string{"a/b:1", "a/c/d:1"}, limit)
	}
}

func TestGrepCursorsAreFencedAndBoundToTheirArguments(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	other := connectInMemory(t, svc, "paging-other")
	for _, id := range []string{"g1", "g2"} {
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "logs", "path": "a.log", "text": "alpha\nbeta\nalpha beta\ngamma\nalpha\n"})
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "a.log", "text": "alpha\n"})
	}
	ok(t, other, "workbench_put_file", args{"id": "g1", "section": "logs", "path": "a.log", "text": "alpha\nalpha\nalpha\n"})
	base := args{"id": "g1", "section": "logs", "pattern": "alpha|beta", "recursive": true, "limit": 1}
	c := mxCursor(t, ok(t, cs, "workbench_grep", base))
	with := cursorVariant(base, c)
	for _, tc := range []struct {
		name string
		a    args
	}{
		{"another pattern", with("pattern", "alpha")},
		{"an added patterns list", with("patterns", []string{"gamma"})},
		{"a glob", with("glob", "*.log")},
		{"non-recursive", with("recursive", false)},
		{"another section", with("section", "input")},
		{"a path", with("path", "a.log")},
		{"another workbench", with("id", "g2")},
		{"a forged string", with("cursor", "abc.def")},
		{"an edited position", with("cursor", pgTamper(t, c, "o", 0))},
	} {
		t.Run(tc.name, func(t *testing.T) { invalid(t, cs, "workbench_grep", tc.a, "cursor") })
	}
	t.Run("another agent root", func(t *testing.T) { invalid(t, other, "workbench_grep", with("id", "g1"), "cursor") })

	t.Run("the patterns are bound as a case-folded set and limit is free", func(t *testing.T) {
		r := ok(t, cs, "workbench_grep", with("pattern", "BETA|Alpha"))
		r2 := ok(t, cs, "workbench_grep", with("limit", 300))
		if len(r.list(t, "matches")) != 1 || len(r2.list(t, "matches")) != 3 {
			t.Errorf("continuations: %v / %v", r, r2)
		}
		if m := r2.list(t, "matches")[0]; m.int(t, "line_number") != 2 {
			t.Errorf("the second page starts at line %v, want 2", m["line_number"])
		}
	})

	t.Run("a write anywhere in the workbench fences the cursor", func(t *testing.T) {
		c := mxCursor(t, ok(t, cs, "workbench_grep", base))
		ok(t, cs, "workbench_put_file", args{"id": "g1", "section": "scripts", "path": "unrelated.sh", "text": "echo\n"})
		e := fails(t, cs, "workbench_grep", with("cursor", c), "ReadFenceChanged")
		if e["retryable"] != true {
			t.Errorf("ReadFenceChanged not retryable: %v", e)
		}
	})
}

func TestSearchPagesHitsOnceAtAndAroundThePageSize(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	for _, c := range []struct{ files, limit int }{{9, 10}, {10, 10}, {11, 10}, {25, 10}, {2, 3}, {3, 3}, {4, 3}, {1, 1}, {4, 1}, {30, 0}} {
		t.Run(fmt.Sprintf("%d files, limit %d", c.files, c.limit), func(t *testing.T) {
			id := fmt.Sprintf("search-%d-%d", c.files, c.limit)
			names := pgNames("r", c.files)
			var want []string
			for _, n := range names {
				ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": n + ".json", "text": "{}"})
				want = append(want, n+".json")
			}
			ok(t, cs, "workbench_put_file", args{"id": id, "section": "input", "path": "not-json.txt", "text": "x"})
			a := args{"id": id, "predicates": []any{map[string]any{"field": "artifact.ext", "op": "eq", "value": "json"}}}
			limit := c.limit
			if limit == 0 {
				limit = 10 // the default and the maximum
			} else {
				a["limit"] = limit
			}
			pages := pgPages(t, cs, "workbench_search", a, "matches", pgHitPath)
			pgCheckPages(t, pages, want, limit)
			if r := ok(t, cs, "workbench_search", a); r.int(t, "match_count") != int64(c.files) {
				t.Errorf("match_count = %v, want %d", r["match_count"], c.files)
			}
		})
	}
}

func TestSearchPagesInPathOrderAndBySortKeysWithTies(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	const id = "order"
	paths := []string{"a0", "a.b", "a/b", "a-b", "a/c/d", "a/b0"}
	for i, p := range paths {
		ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": p, "text": strings.Repeat("x", 1+i%2)})
	}
	// Without sort keys hits come in path order, components compared bytewise (as grep).
	inPathOrder := []string{"a/b", "a/b0", "a/c/d", "a-b", "a.b", "a0"}
	for limit := 1; limit <= 7; limit++ {
		pages := pgPages(t, cs, "workbench_search", args{"id": id, "section": "outputs", "limit": min(limit, 10)}, "matches", pgHitPath)
		pgCheckPages(t, pages, inPathOrder, limit)
	}
	// Sorted by size descending: ties (three files of each size) must neither repeat nor
	// vanish at page boundaries.
	sorted := args{"id": id, "section": "outputs", "sort": []any{map[string]any{"field": "artifact.size_bytes", "direction": "desc"}},
		"fields": []string{"artifact.size_bytes"}}
	var reference []string
	for limit := 1; limit <= 7; limit++ {
		a := args{"limit": limit}
		for k, v := range sorted {
			a[k] = v
		}
		var all []string
		var sizes []int64
		cur := ""
		for {
			if cur != "" {
				a["cursor"] = cur
			}
			r := ok(t, cs, "workbench_search", a)
			for _, h := range r.list(t, "matches") {
				all = append(all, h.str("relative_path"))
				sizes = append(sizes, obj(h["values"].(map[string]any)).int(t, "artifact.size_bytes"))
			}
			if cur = r.str("next_cursor"); cur == "" {
				break
			}
		}
		if !slices.IsSortedFunc(sizes, func(a, b int64) int { return int(b - a) }) {
			t.Errorf("limit %d: sizes %v not descending", limit, sizes)
		}
		got := slices.Clone(all)
		slices.Sort(got)
		want := slices.Clone(paths)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: hits %v, want each of %v once", limit, all, paths)
		}
		if reference == nil {
			reference = all
		} else if !slices.Equal(all, reference) {
			t.Errorf("limit %d: order %v differs from limit 1's %v", limit, all, reference)
		}
	}
}

func TestSearchCursorsAreFencedAndBoundToTheirArguments(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "paging")
	other := connectInMemory(t, svc, "paging-other")
	for _, id := range []string{"s1", "s2"} {
		for _, n := range pgNames("f", 4) {
			ok(t, cs, "workbench_put_file", args{"id": id, "section": "outputs", "path": n, "text": n})
		}
	}
	ok(t, other, "workbench_put_file", args{"id": "s1", "section": "outputs", "path": "f000", "text": "x"})
	ok(t, other, "workbench_put_file", args{"id": "s1", "section": "outputs", "path": "f001", "text": "x"})
	base := args{"id": "s1", "section": "outputs", "limit": 1}
	c := mxCursor(t, ok(t, cs, "workbench_search", base))
	with := cursorVariant(base, c)
	for _, tc := range []struct {
		name string
		a    args
	}{
		{"another workbench", with("id", "s2")},
		{"the whole agent root", with("id", nil)},
		{"another section", with("section", "input")},
		{"a predicate", with("predicates", []any{map[string]any{"field": "artifact.name", "op": "prefix", "value": "f"}})},
		{"a sort key", with("sort", []any{map[string]any{"field": "artifact.name"}})},
		{"other fields", with("fields", []string{"artifact.name"})},
		{"facets", with("facets", []string{"artifact.section"})},
		{"a forged string", with("cursor", "x.y")},
		{"an edited fence", with("cursor", pgTamper(t, c, "f", 0))},
	} {
		t.Run(tc.name, func(t *testing.T) { invalid(t, cs, "workbench_search", tc.a, "cursor") })
	}
	t.Run("another agent root", func(t *testing.T) { invalid(t, other, "workbench_search", with("id", "s1"), "cursor") })
	t.Run("limit is free", func(t *testing.T) {
		r := ok(t, cs, "workbench_search", with("limit", 10))
		var got []string
		for _, h := range r.list(t, "matches") {
			got = append(got, h.str("relative_path"))
		}
		if !slices.Equal(got, []string{"f001", "f002", "f003"}) {
			t.Errorf("continued with limit 10: %v", got)
		}
	})
	t.Run("a write in scope fences a workbench cursor", func(t *testing.T) {
		c := mxCursor(t, ok(t, cs, "workbench_search", base))
		ok(t, cs, "workbench_put_file", args{"id": "s1", "section": "outputs", "path": "late", "text": "x"})
		e := fails(t, cs, "workbench_search", with("cursor", c), "ReadFenceChanged")
		if e["retryable"] != true {
			t.Errorf("not retryable: %v", e)
		}
	})
	t.Run("root-wide paging visits every workbench's files once, and a write anywhere fences it", func(t *testing.T) {
		rootWide := args{"section": "outputs", "limit": 3}
		var want []string
		for _, id := range []string{"s1", "s2"} {
			for _, h := range pgPages(t, cs, "workbench_search", args{"id": id, "section": "outputs", "limit": 10}, "matches", pgHitPath)[0] {
				want = append(want, id+"/"+h)
			}
		}
		var got []string
		cur := ""
		for {
			a := args{}
			for k, v := range rootWide {
				a[k] = v
			}
			if cur != "" {
				a["cursor"] = cur
			}
			r := ok(t, cs, "workbench_search", a)
			for _, h := range r.list(t, "matches") {
				got = append(got, h.str("workbench_id")+"/"+h.str("relative_path"))
			}
			if cur = r.str("next_cursor"); cur == "" {
				break
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("root-wide hits %v, want %v", got, want)
		}
		c := mxCursor(t, ok(t, cs, "workbench_search", rootWide))
		ok(t, cs, "workbench_create", args{"id": "s3"})
		ok(t, cs, "workbench_put_file", args{"id": "s2", "section": "logs", "path": "x.log", "text": "x"})
		rootWide["cursor"] = c
		fails(t, cs, "workbench_search", rootWide, "ReadFenceChanged")
	})
}

func TestFindPagesWorkbenchesOnceInByteOrder(t *testing.T) {
	svc := newService(t, 0)
	for _, c := range []struct{ n, limit int }{{3, 4}, {4, 4}, {5, 4}, {13, 4}, {1, 1}, {6, 1}, {100, 0}, {101, 0}} {
		t.Run(fmt.Sprintf("%d workbenches, limit %d", c.n, c.limit), func(t *testing.T) {
			cs := connectInMemory(t, svc, fmt.Sprintf("find-%d-%d", c.n, c.limit))
			names := pgNames("w", c.n)
			for _, n := range names {
				ok(t, cs, "workbench_create", args{"id": n})
			}
			a := args{}
			limit := c.limit
			if limit == 0 {
				limit = 100
			} else {
				a["limit"] = limit
			}
			pgCheckPages(t, pgPages(t, cs, "workbench_find", a, "matches", pgWorkbenchID), names, limit)
		})
	}
	t.Run("names that sort around '-', digits, upper case and '_'", func(t *testing.T) {
		cs := connectInMemory(t, svc, "find-order")
		names := []string{"a_b", "a0", "A", "a-b", "aA", "a", "0", "Z", "b", "a-"}
		for _, n := range names {
			ok(t, cs, "workbench_create", args{"id": n})
		}
		want := slices.Clone(names)
		slices.Sort(want) // byte order: 0 A Z a a- a-b a0 aA a_b b
		for limit := 1; limit <= 11; limit++ {
			pgCheckPages(t, pgPages(t, cs, "workbench_find", args{"limit": limit}, "matches", pgWorkbenchID), want, limit)
		}
	})
	t.Run("filters page over the matching workbenches only", func(t *testing.T) {
		cs := connectInMemory(t, svc, "find-filters")
		var committed, tagged []string
		for i, n := range pgNames("w", 12) {
			ok(t, cs, "workbench_create", args{"id": n})
			if i%3 == 0 {
				continue
			}
			manifest := map[string]any{"model": "small"}
			if i%2 == 0 {
				manifest["model"] = "Large-Run"
				tagged = append(tagged, n)
			}
			ok(t, cs, "workbench_commit", args{"id": n, "manifest": manifest, "content_digest_uri": mxZeroDigest})
			committed = append(committed, n)
		}
		var uncommitted []string
		for _, n := range pgNames("w", 12) {
			if !slices.Contains(committed, n) {
				uncommitted = append(uncommitted, n)
			}
		}
		// The last match of the committed filter is the last workbench; those of the other two
		// filters are followed by workbenches that do not match, and a page that fills up on
		// the last match must still be the last page (no empty page follows).
		for limit := 1; limit <= 5; limit++ {
			pgCheckPages(t, pgPages(t, cs, "workbench_find", args{"committed": true, "limit": limit}, "matches", pgWorkbenchID), committed, limit)
			pgCheckPages(t, pgPages(t, cs, "workbench_find", args{"committed": false, "limit": limit}, "matches", pgWorkbenchID), uncommitted, limit)
			pgCheckPages(t, pgPages(t, cs, "workbench_find", args{"manifest_pattern": "large-RUN", "limit": limit}, "matches", pgWorkbenchID), tagged, limit)
		}
	})
}

// TestFindWithAFilterEndsOnTheLastMatch: a page that fills up on the last matching workbench
// is the last page (truncated:false, no cursor), even when workbenches that do not match
// follow it, as list, grep and search end theirs. Regression: find looked ahead for any
// workbench, ignoring its filters, and answered truncated:true before an empty page, fixed
// in e2bf503.
func TestFindWithAFilterEndsOnTheLastMatch(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "find-bug")
	ok(t, cs, "workbench_create", args{"id": "a"})
	ok(t, cs, "workbench_commit", args{"id": "b", "manifest": map[string]any{"k": 1}, "content_digest_uri": mxZeroDigest})
	r := ok(t, cs, "workbench_find", args{"committed": false, "limit": 1})
	if got := fmt.Sprint(pgPageKeys(t, r, "matches", pgWorkbenchID)); got != "[a]" {
		t.Fatalf("page 1: %s", got)
	}
	if r["truncated"] != false || r["next_cursor"] != nil {
		next := ok(t, cs, "workbench_find", args{"committed": false, "limit": 1, "cursor": r.str("next_cursor")})
		t.Errorf("the only uncommitted workbench filled the page, yet truncated %v, next_cursor set; the next page holds %v",
			r["truncated"], next["matches"])
	}
}

// TestFindCursorsContinueByNameAcrossWrites documents find's paging under writes: its cursor
// carries the last workbench name and no fence (workbench Reads.Find), so a later page
// never fails with ReadFenceChanged; it goes on after that name in the current state.
// Workbenches created behind the cursor are missed, those created ahead of it are found,
// and none is returned twice.
func TestFindCursorsContinueByNameAcrossWrites(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "find-writes")
	other := connectInMemory(t, svc, "find-writes-other")
	for _, n := range []string{"b", "d", "f", "h"} {
		ok(t, cs, "workbench_create", args{"id": n})
		ok(t, other, "workbench_create", args{"id": n})
	}
	p1 := ok(t, cs, "workbench_find", args{"limit": 2})
	if got := fmt.Sprint(pgPageKeys(t, p1, "matches", pgWorkbenchID)); got != "[b d]" {
		t.Fatalf("page 1: %s", got)
	}
	ok(t, cs, "workbench_create", args{"id": "a"}) // behind the cursor
	ok(t, cs, "workbench_create", args{"id": "e"}) // ahead of it
	ok(t, cs, "workbench_commit", args{"id": "f", "manifest": map[string]any{"k": 1}, "content_digest_uri": mxZeroDigest})
	c := mxCursor(t, p1)
	p2 := ok(t, cs, "workbench_find", args{"limit": 2, "cursor": c})
	if got := fmt.Sprint(pgPageKeys(t, p2, "matches", pgWorkbenchID)); got != "[e f]" {
		t.Errorf("page 2 after writes: %s, want [e f]", got)
	}
	if w := p2.list(t, "matches")[1]; w["committed"] != true || w.str("commit_identity") == "" {
		t.Errorf("page 2 reports f as of now (committed): %v", w)
	}
	p3 := ok(t, cs, "workbench_find", args{"limit": 2, "cursor": mxCursor(t, p2)})
	if got := fmt.Sprint(pgPageKeys(t, p3, "matches", pgWorkbenchID)); got != "[h]" || p3["truncated"] != false {
		t.Errorf("page 3: %v", p3)
	}

	for _, tc := range []struct {
		name string
		a    args
	}{
		{"a committed filter", args{"limit": 2, "cursor": c, "committed": true}},
		{"committed null is no filter, not false", args{"limit": 2, "cursor": c, "committed": false}},
		{"a manifest pattern", args{"limit": 2, "cursor": c, "manifest_pattern": "x"}},
		{"include_manifest", args{"limit": 2, "cursor": c, "include_manifest": true}},
		{"a forged string", args{"cursor": "x.y"}},
		{"an edited position", args{"limit": 2, "cursor": pgTamper(t, c, "n", "a")}},
	} {
		t.Run(tc.name, func(t *testing.T) { invalid(t, cs, "workbench_find", tc.a, "cursor") })
	}
	t.Run("another agent root", func(t *testing.T) { invalid(t, other, "workbench_find", args{"limit": 2, "cursor": c}, "cursor") })
	t.Run("limit is free", func(t *testing.T) {
		r := ok(t, cs, "workbench_find", args{"limit": 100, "cursor": c})
		if got := fmt.Sprint(pgPageKeys(t, r, "matches", pgWorkbenchID)); got != "[e f h]" {
			t.Errorf("continued with limit 100: %s", got)
		}
	})
}

func pgPageKeys(t *testing.T, r obj, items string, key pgKey) []string {
	t.Helper()
	var out []string
	for _, it := range r.list(t, items) {
		out = append(out, key(it))
	}
	return out
}
