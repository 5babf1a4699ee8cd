package workbench

import (
	"github.com/cairnstore/cairn/meta"
)

// Memory of the pages of file listings, histories and state diffs (admission.go; issue
// 25 finding 11: only the queries were under the node's memory budget). Each page takes
// its estimate of the budget before its answer is built and, on a surface that holds
// admissions (HoldAdmissions), keeps it until the answer is written. Like a proposal
// listing (proposals_view.go), a page is cut, truncated with a next_cursor as at its
// limit, where its estimate would pass listingPageMaxBytes.
//
// What a page reads from the metadata core before the estimate is small and bounded by
// its limit: a listing's entries borrow their names from the tree's keys and point at its
// records (at most MaxListLimit of about 64 bytes), a history's rows likewise (at most
// MaxHistoryLimit). The estimate covers what the answer adds: per item its struct, the
// surface's map of a dozen fields and their JSON (the fixed part), and textCopies copies
// of each string the item carries (a path is rendered up to three times: the path inside
// the workbench, the presentation path, the relative path).
const (
	// listEntryRenderBytes is one listing entry's fixed part: ListEntry, the surface's map
	// of about ten fields (REST list, MCP workbench_list) and their JSON (a REST listing of
	// 1000 short names allocates about 3 KiB an entry in all: api/rest
	// TestAPagesEstimateBoundsWhatItAllocates).
	listEntryRenderBytes = 3 << 10
	// historyRowRenderBytes is one history version's fixed part: the metadata row,
	// HistoryVersion, the map of eleven fields and the producer's, the rendered time and
	// digest URI, and their JSON (about 3 KiB a version in all, as measured there).
	historyRowRenderBytes = 4 << 10
	// diffRowRenderBytes is one state-diff row's fixed part: diff.Row, its two versions
	// with their digest URIs, and their JSON (under 1 KiB a row in all, as measured there).
	diffRowRenderBytes = 1 << 10
	// pathCopies is how often an item's path is rendered in its answer.
	pathCopies = 3
	// presentationPathBytes bounds the presentation prefix of a path
	// ("/agents/<agent>/wb/<workbench>").
	presentationPathBytes = 2*meta.MaxNameBytes + 16
	// diffPagePathBytes bounds the bytes of the paths one state-diff page holds
	// (diff.TreeOptions.MaxPathBytes): a page of 1000 rows of paths up to 256 bytes;
	// longer paths make shorter pages.
	diffPagePathBytes = 256 << 10
)

// listEntryAnswerBytes estimates the memory of entry e of directory dir in a listing's
// answer.
func listEntryAnswerBytes(dir string, e meta.DirEntry) int64 {
	path := int64(len(dir) + 1 + len(e.Name))
	text := int64(len(e.Name)) + pathCopies*path + presentationPathBytes
	if e.Entry != nil {
		text += int64(len(e.Entry.ContentType))
	}
	return listEntryRenderBytes + textCopies*text
}

// historyRowAnswerBytes estimates the memory of one retained version in a history's
// answer.
func historyRowAnswerBytes(r meta.FileVersion) int64 {
	text := int64(len(r.Producer.Principal) + len(r.Producer.Surface))
	if r.Entry != nil {
		text += int64(len(r.Entry.ContentType) + len(r.Entry.Proposal))
	}
	return historyRowRenderBytes + textCopies*text
}

// historyPageBytes estimates a history page's answer besides its rows: the path, rendered
// pathCopies times.
func historyPageBytes(path string) int64 {
	return textCopies * (pathCopies*int64(len(path)) + presentationPathBytes)
}

// diffPageBytes is a state-diff page's estimate, known before it runs: limit rows and the
// bytes their paths may reach (diffPagePathBytes plus one path).
func diffPageBytes(limit int) int64 {
	return listingBaseBytes + int64(limit)*diffRowRenderBytes + textCopies*(diffPagePathBytes+meta.MaxPathBytes)
}
