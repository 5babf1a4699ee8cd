package rest

import (
	"net/http"
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
// characters not escaped. It writes the bytes itself instead of reflecting over a map per
// answer and a struct per entry, which was most of a listing's CPU on the node; a string
// that JSON must escape (anything but printable ASCII other than '"' and '\') goes
// through encoding/json, so its bytes are encoding/json's by construction.
// TestListingWritesTheMapsEncoding and FuzzListingWritesTheMapsEncoding hold the two
// together.
func writeListing(w http.ResponseWriter, l *listing) {
	e := jsonBuffers.Get().(*jsonBuffer)
	defer e.release()
	e.buf.Grow(listingBytes + len(l.entries)*entryBytes) // not grown again by doubling
	e.buf.WriteString(`{"status":"success"`)
	if l.at != nil {
		e.buf.WriteString(`,"at_snapshot":`)
		if l.at.SnapshotName != "" {
			e.str(l.at.SnapshotName)
		} else {
			e.buf.Write(strconv.AppendUint(e.buf.AvailableBuffer(), l.at.SnapshotID, 10))
		}
	}
	e.buf.WriteString(`,"entries":[`)
	for i := range l.entries {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		e.entry(l.workbenchPath, &l.entries[i])
	}
	e.buf.WriteString(`],"entry_count":`)
	e.int(l.entryCount)
	e.buf.WriteString(`,"next_cursor":`)
	if l.next == "" {
		e.buf.WriteString("null")
	} else {
		e.str(l.next)
	}
	e.buf.WriteString(`,"path":`)
	e.str(l.path)
	e.buf.WriteString(`,"truncated":`)
	e.buf.WriteString(strconv.FormatBool(l.truncated))
	e.buf.WriteString(`,"workbench_id":`)
	e.str(l.workbenchID)
	e.buf.WriteString(`,"workbench_path":`)
	e.str(l.workbenchPath)
	e.buf.WriteString("}\n")
	e.send(w, http.StatusOK)
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

// entry writes the object of x, an entry of the workbench presented at wbPath, its keys
// in byte order.
func (e *jsonBuffer) entry(wbPath string, x *workbench.ListEntry) {
	file := x.Kind == "file"
	e.buf.WriteByte('{')
	if file {
		e.buf.WriteString(`"content_type":`)
		e.str(x.ContentType)
		e.buf.WriteByte(',')
	}
	e.buf.WriteString(`"entry_count":`)
	e.int(x.EntryCount)
	if file {
		e.buf.WriteString(`,"executable":`)
		e.buf.WriteString(strconv.FormatBool(x.Executable))
		e.buf.WriteString(`,"generation":`)
		e.buf.Write(strconv.AppendUint(e.buf.AvailableBuffer(), x.Generation, 10))
	}
	e.buf.WriteString(`,"kind":`)
	e.str(x.Kind)
	e.buf.WriteString(`,"name":`)
	e.str(x.Name)
	e.buf.WriteString(`,"path":`)
	e.str2(wbPath, x.Path)
	sec, rel, inSection := cutSection(x.Path)
	e.buf.WriteString(`,"relative_path":`)
	e.str(rel)
	e.buf.WriteString(`,"section":`)
	if inSection {
		e.str(sec)
	} else {
		e.buf.WriteString("null")
	}
	e.buf.WriteString(`,"size_bytes":`)
	e.int(x.Size)
	e.buf.WriteByte('}')
}

func (e *jsonBuffer) int(n int64) { e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), n, 10)) }

// str writes s as a JSON string.
func (e *jsonBuffer) str(s string) {
	if !plainJSON(s) {
		e.encoded(s)
		return
	}
	e.buf.WriteByte('"')
	e.buf.WriteString(s)
	e.buf.WriteByte('"')
}

// str2 writes dir + "/" + name as a JSON string.
func (e *jsonBuffer) str2(dir, name string) {
	if !plainJSON(dir) || !plainJSON(name) {
		e.encoded(dir + "/" + name)
		return
	}
	e.buf.WriteByte('"')
	e.buf.WriteString(dir)
	e.buf.WriteByte('/')
	e.buf.WriteString(name)
	e.buf.WriteByte('"')
}

// encoded writes s as encoding/json writes it.
func (e *jsonBuffer) encoded(s string) {
	if e.enc.Encode(s) == nil { // a string always encodes
		e.buf.Truncate(e.buf.Len() - 1) // Encode's newline
	}
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
