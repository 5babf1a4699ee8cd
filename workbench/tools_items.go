package workbench

// The repeated members of two tool results, as structs rather than one map each: a page
// of workbench_list held a map of eight members per entry, a structured read one of two
// per record, and the MCP surface sorted each map's keys to write it. A struct here is
// written by encoding/json exactly as its map was (the same members, in the same order,
// with the same values), and api/mcp's result encoder writes it directly
// (FuzzTypedItemsEncodeAsTheirMaps).

// ListedEntry is one entry of workbench_list's result: entry_count is null for a file,
// generation is present for files only, section is null for an entry outside a section
// (the sections themselves, listed from the workbench top, are in theirs).
type ListedEntry struct {
	EntryCount   *int64  `json:"entry_count"`
	Generation   *uint64 `json:"generation,omitempty"`
	Kind         string  `json:"kind"`
	Name         string  `json:"name"`
	Path         string  `json:"path"` // the presentation path
	RelativePath string  `json:"relative_path"`
	Section      *string `json:"section"`
	SizeBytes    int64   `json:"size_bytes"`
}

// ReadItem is one record of a structured workbench_read: its index in the body and its
// value (a text line, or a JSON or YAML value as decoded).
type ReadItem struct {
	Index int64 `json:"index"`
	Value any   `json:"value"`
}

// listedEntries makes the entries of a listing's page, whose presentation paths start
// with prefix ("{root}/{id}/"); their pointers share three arrays made once per page.
func listedEntries(prefix string, page []ListEntry) []ListedEntry {
	out := make([]ListedEntry, len(page))
	counts := make([]int64, len(page))
	gens := make([]uint64, len(page))
	secs := make([]string, len(page))
	for i, e := range page {
		sec, rel := splitSection(e.Path)
		out[i] = ListedEntry{Kind: e.Kind, Name: e.Name, Path: prefix + e.Path, RelativePath: rel, SizeBytes: e.Size}
		if sec != "" {
			secs[i] = sec
			out[i].Section = &secs[i]
		}
		if e.Kind == "file" {
			gens[i] = e.Generation
			out[i].Generation = &gens[i] // a file has no entries: entry_count null
		} else {
			counts[i] = e.EntryCount
			out[i].EntryCount = &counts[i]
		}
	}
	return out
}
