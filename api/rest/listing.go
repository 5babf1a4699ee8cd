package rest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/cairnstore/cairn/workbench"
)

// listing is the answer to a list call, written by writeListing.
type listing struct {
	// at is the snapshot the listing reads, answered as at_snapshot (its name, else its
	// id); nil for a live listing, which has no at_snapshot member.
	at            *workbench.At
	entries       []workbench.ListEntry
	entryCount    int64
	next          string // "" on the last page: null
	path          string
	truncated     bool
	workbenchID   string
	workbenchPath string
}

// writeListing writes l as WriteJSON writes the same values as maps: "status" first, then
// every other key in byte order, a file's entry with content_type, executable and
// generation and a directory's without, section null outside the five sections, HTML
// characters not escaped. It appends the bytes itself instead of reflecting over a map per
// answer and a struct per entry, which was most of a listing's CPU on the node; a string
// that JSON must escape (anything but printable ASCII other than '"' and '\') goes
// through encoding/json, so its bytes are encoding/json's by construction.
// TestListingWritesTheMapsEncoding and FuzzListingWritesTheMapsEncoding hold the two
// together.
func writeListing(w http.ResponseWriter, l *listing) {
	e := jsonBuffers.Get().(*jsonBuffer)
	defer e.release()
	b := slices.Grow(e.out[:0], listingBytes+len(l.entries)*entryBytes) // not grown again by doubling
	b = append(b, `{"status":"success"`...)
	if l.at != nil {
		b = append(b, `,"at_snapshot":`...)
		if l.at.SnapshotName != "" {
			b = e.str(b, l.at.SnapshotName)
		} else {
			b = strconv.AppendUint(b, l.at.SnapshotID, 10)
		}
	}
	b = append(b, `,"entries":[`...)
	wbPlain := plainJSON(l.workbenchPath) // once for the page, not once per entry
	for i := range l.entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.entry(b, l.workbenchPath, wbPlain, &l.entries[i])
	}
	b = append(b, `],"entry_count":`...)
	b = strconv.AppendInt(b, l.entryCount, 10)
	b = append(b, `,"next_cursor":`...)
	if l.next == "" {
		b = append(b, "null"...)
	} else {
		b = e.str(b, l.next)
	}
	b = append(b, `,"path":`...)
	b = e.str(b, l.path)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, l.truncated)
	b = append(b, `,"workbench_id":`...)
	b = e.str(b, l.workbenchID)
	b = append(b, `,"workbench_path":`...)
	b = e.str(b, l.workbenchPath)
	b = append(b, "}\n"...)
	e.out = b // kept for the next answer
	sendJSON(w, http.StatusOK, b)
}

// listingBytes and entryBytes are about the size of a listing's members and of an entry
// of short names (a page of 100 measures 24 KiB): what writeListing reserves.
const listingBytes, entryBytes = 256, 256

// plainBytes are the bytes a JSON string holds as themselves (plainJSON).
var plainBytes = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// entry appends the object of x, an entry of the workbench presented at wbPath (wbPlain:
// plainJSON(wbPath)), its keys in byte order.
func (e *jsonBuffer) entry(b []byte, wbPath string, wbPlain bool, x *workbench.ListEntry) []byte {
	file := x.Kind == "file"
	b = append(b, '{')
	if file {
		b = append(b, `"content_type":`...)
		b = e.str(b, x.ContentType)
		b = append(b, ',')
	}
	b = append(b, `"entry_count":`...)
	b = strconv.AppendInt(b, x.EntryCount, 10)
	if file {
		b = append(b, `,"executable":`...)
		b = strconv.AppendBool(b, x.Executable)
		b = append(b, `,"generation":`...)
		b = strconv.AppendUint(b, x.Generation, 10)
	}
	b = append(b, `,"kind":`...)
	b = e.str(b, x.Kind)
	b = append(b, `,"name":`...)
	b = e.str(b, x.Name)
	b = append(b, `,"path":`...)
	pathPlain := plainJSON(x.Path)
	if wbPlain && pathPlain {
		b = append(b, '"')
		b = append(b, wbPath...)
		b = append(b, '/')
		b = append(b, x.Path...)
		b = append(b, '"')
	} else {
		b = e.encoded(b, wbPath+"/"+x.Path)
	}
	sec, rel, inSection := cutSection(x.Path)
	b = append(b, `,"relative_path":`...)
	if pathPlain {
		b = quoted(b, rel) // a part of x.Path, plain as it is
	} else {
		b = e.str(b, rel)
	}
	b = append(b, `,"section":`...)
	if inSection {
		b = e.str(b, sec)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"size_bytes":`...)
	b = strconv.AppendInt(b, x.Size, 10)
	return append(b, '}')
}

// str appends s as a JSON string.
func (e *jsonBuffer) str(b []byte, s string) []byte {
	if !plainJSON(s) {
		return e.encoded(b, s)
	}
	return quoted(b, s)
}

// quoted appends s, which plainJSON accepts, between quotes.
func quoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// encoded appends s as encoding/json writes it (HTML characters not escaped).
func (e *jsonBuffer) encoded(b []byte, s string) []byte {
	if e.quoter == nil {
		e.quoter = json.NewEncoder(&e.quoted)
		e.quoter.SetEscapeHTML(false)
	}
	e.quoted.Reset()
	if e.quoter.Encode(s) != nil { // a string always encodes
		return b
	}
	q := e.quoted.Bytes()
	return append(b, q[:len(q)-1]...) // without Encode's newline
}

// plainJSON reports whether s is written as itself between quotes: every byte printable
// ASCII, none '"' or '\' (with HTML escaping off, encoding/json escapes nothing else).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainBytes[s[i]] {
			return false
		}
	}
	return true
}
