package rest

import (
	"bytes"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// mapListEntry is how the handler built a listing's entry before writeListing: a struct
// whose fields come in byte order of their names, under WriteJSON's map. The tests below
// keep it as the reference writeListing's bytes must equal.
type mapListEntry struct {
	ContentType  *string `json:"content_type,omitempty"`
	EntryCount   int64   `json:"entry_count"`
	Executable   *bool   `json:"executable,omitempty"`
	Generation   *uint64 `json:"generation,omitempty"`
	Kind         string  `json:"kind"`
	Name         string  `json:"name"`
	Path         string  `json:"path"`
	RelativePath string  `json:"relative_path"`
	Section      any     `json:"section"`
	Size         int64   `json:"size_bytes"`
}

// mapListing encodes l the way the handler did before writeListing.
func mapListing(l *listing) []byte {
	entries := make([]mapListEntry, 0, len(l.entries))
	for i := range l.entries {
		e := &l.entries[i]
		sec, rel := splitSection(e.Path)
		le := mapListEntry{EntryCount: e.EntryCount, Kind: e.Kind, Name: e.Name, Path: l.workbenchPath + "/" + e.Path, RelativePath: rel, Section: sec, Size: e.Size}
		if e.Kind == "file" {
			le.ContentType, le.Executable, le.Generation = &e.ContentType, &e.Executable, &e.Generation
		}
		entries = append(entries, le)
	}
	var next any
	if l.next != "" {
		next = l.next
	}
	out := map[string]any{"status": "success", "workbench_id": l.workbenchID, "workbench_path": l.workbenchPath,
		"path": l.path, "entry_count": l.entryCount, "entries": entries, "next_cursor": next, "truncated": l.truncated}
	if l.at != nil {
		if l.at.SnapshotName != "" {
			out["at_snapshot"] = l.at.SnapshotName
		} else {
			out["at_snapshot"] = l.at.SnapshotID
		}
	}
	w := httptest.NewRecorder()
	WriteJSON(w, 200, out)
	return w.Body.Bytes()
}

func written(l *listing) []byte {
	w := httptest.NewRecorder()
	writeListing(w, l)
	return w.Body.Bytes()
}

// listingPieces are the strings the random listings are made of: plain ones, and every
// kind encoding/json writes otherwise (quotes, backslashes, control characters, HTML
// characters, non-ASCII, U+2028 and U+2029, invalid UTF-8).
var listingPieces = []string{"", "a", "input", "outputs", "logs", "scripts", "metadata", "dir", "x.txt", "/",
	`"`, `\`, "\n", "\x00", "\x7f", "<b>&amp;", "déjà", "\u2028", "\u2029", "\xff", "\xe2\x82", "😀", "text/plain; charset=utf-8"}

func randomListing(r *rand.Rand) *listing {
	str := func() string {
		var b []byte
		for range r.IntN(4) {
			b = append(b, listingPieces[r.IntN(len(listingPieces))]...)
		}
		return string(b)
	}
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.MaxInt64
		case 2:
			return -r.Int64()
		}
		return r.Int64N(1 << 40)
	}
	l := &listing{entryCount: num(), next: str(), path: str(), truncated: r.IntN(2) == 0, workbenchID: str(), workbenchPath: str()}
	switch r.IntN(3) {
	case 0:
		at := workbench.AtSnapshotName(str())
		l.at = &at
	case 1:
		at := workbench.AtSnapshotID(r.Uint64())
		l.at = &at
	}
	for range r.IntN(6) {
		kind := []string{"file", "directory", str()}[r.IntN(3)]
		path := str()
		if r.IntN(2) == 0 {
			path = workbench.Sections[r.IntN(len(workbench.Sections))] + "/" + path
		}
		l.entries = append(l.entries, workbench.ListEntry{Name: str(), Path: path, Kind: kind, Size: num(), Generation: r.Uint64(),
			EntryCount: num(), Executable: r.IntN(2) == 0, ContentType: str(), ModifiedAtMs: num()})
	}
	return l
}

// TestListingWritesTheMapsEncoding checks writeListing against the maps and structs it
// replaced, on random listings made of every kind of string JSON escapes.
func TestListingWritesTheMapsEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		l := randomListing(r)
		if got, want := written(l), mapListing(l); !bytes.Equal(got, want) {
			t.Fatalf("listing %d: wrote\n%q\nwant the maps' encoding\n%q", i, got, want)
		}
	}
	// An empty page is an empty array, not null.
	if got := written(&listing{}); !bytes.Contains(got, []byte(`"entries":[]`)) {
		t.Fatalf("an empty page wrote %s", got)
	}
}

// FuzzListingWritesTheMapsEncoding checks writeListing against the maps' encoding for
// arbitrary strings in every position.
func FuzzListingWritesTheMapsEncoding(f *testing.F) {
	f.Add("input/a&b<c>.txt", "a&b<c>.txt", "text/plain", "ag/wb", "cursor", uint64(3), true)
	f.Add("\xff\u2028/\"x\\", "\x00", "", "déjà", "", uint64(0), false)
	f.Fuzz(func(t *testing.T, path, name, contentType, wbPath, next string, n uint64, file bool) {
		kind := "directory"
		if file {
			kind = "file"
		}
		at := workbench.AtSnapshotName(name)
		l := &listing{at: &at, entryCount: int64(n), next: next, path: path, workbenchID: name, workbenchPath: wbPath,
			entries: []workbench.ListEntry{{Name: name, Path: path, Kind: kind, Size: -int64(n), Generation: n, ContentType: contentType, Executable: file}}}
		if got, want := written(l), mapListing(l); !bytes.Equal(got, want) {
			t.Fatalf("wrote\n%q\nwant the maps' encoding\n%q", got, want)
		}
	})
}
