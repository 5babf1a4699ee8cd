package mcp

import (
	"runtime"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/workbench"
)

// requestAllocBound is the transient allocation one bounded tool call may cost here
// (DESIGN.md §12: "every request has a computed bound (default ≤ 64 MiB transient)").
const requestAllocBound = 64 << 20

// allocatedBy returns the bytes the process allocated while fn ran (runtime.MemStats
// TotalAlloc: garbage included, so it bounds what fn asked for, not what it kept).
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEditComputesTheResultSizeBeforeBuildingIt: an edit whose result would exceed the
// payload cap is answered PayloadTooLarge, with the would-be size and the cap in details,
// without building the result (issue 10 finding 4: 4 MB × 1 MB replace_all asked for 4 TB).
func TestEditComputesTheResultSizeBeforeBuildingIt(t *testing.T) {
	svc := newService(t, 0) // the default 16 MiB cap
	cs := connectInMemory(t, svc, "agent-edit")
	for _, tc := range []struct {
		name             string
		fileBytes, newBy int
		want             int64
	}{
		{"a 4 MB file with a 1 MB replacement of every byte", 4 << 20, 1 << 20, 4<<20 + (4<<20)*(1<<20-1)},
		{"a 200 KB file with a 1 KB replacement of every byte", 200 << 10, 1 << 10, 200<<10 + (200<<10)*(1<<10-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := strings.ReplaceAll(tc.name, " ", "-") + ".txt"
			ok(t, cs, "workbench_put_file", args{"id": "wb", "section": "outputs", "path": path, "text": strings.Repeat("x", tc.fileBytes)})
			in := args{"id": "wb", "section": "outputs", "path": path, "old_string": "x", "new_string": strings.Repeat("y", tc.newBy), "replace_all": true}
			var r obj
			n := allocatedBy(func() { r = fails(t, cs, "workbench_edit", in, workbench.CodePayloadTooLarge) })
			t.Logf("edit answered PayloadTooLarge after allocating %.1f MiB", float64(n)/(1<<20))
			if n > requestAllocBound {
				t.Errorf("the refused edit allocated %d bytes, more than %d", n, requestAllocBound)
			}
			if got := r.details().int(t, "actual_bytes"); got != tc.want {
				t.Errorf("details.actual_bytes = %d, want %d", got, tc.want)
			}
			if got := r.details().int(t, "max_bytes"); got != 16<<20 {
				t.Errorf("details.max_bytes = %d, want %d", got, 16<<20)
			}
			if r["retryable"] != false {
				t.Error("PayloadTooLarge is retryable")
			}
			st := ok(t, cs, "workbench_stat", args{"id": "wb", "section": "outputs", "path": path})
			if st.int(t, "size_bytes") != int64(tc.fileBytes) {
				t.Errorf("the refused edit changed the file: %v", st)
			}
		})
	}
}
