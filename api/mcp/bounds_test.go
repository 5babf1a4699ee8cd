package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// requestAllocBound is the transient allocation one bounded tool call may cost here
// (BENCHMARKS.md: "every request has a computed bound (default ≤ 64 MiB transient)").
const requestAllocBound = 64 << 20

// readHeapBound bounds the heap growth of one structured read of a 16 MB file: one
// verified segment buffer (up to 16 MiB, workbench integrity.go), the decoder's
// buffers, and the garbage a sampled heap still counts (more under -race). It is well
// below what the unbounded read cost (issue 10 finding 11: +500 MB), so holding every
// record still fails it.
const readHeapBound = 128 << 20

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

// peakHeapGrowth returns how far the heap's object bytes rose above their level at the
// start while fn ran, sampled by a goroutine (so it may under-report a short peak, never
// over-report one), and the bytes allocated in all (TotalAlloc).
func peakHeapGrowth(fn func()) (peak, total uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	runtime.GC()
	metrics.Read(sample)
	base, allocs := sample[0].Value.Uint64(), sample[1].Value.Uint64()
	done, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var top uint64
		for {
			metrics.Read(s)
			top = max(top, s[0].Value.Uint64())
			select {
			case <-done:
				sampled <- top
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	fn()
	close(done)
	top := <-sampled
	metrics.Read(sample)
	if top < base {
		top = base
	}
	return top - base, sample[1].Value.Uint64() - allocs
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
			st := ok(t, cs, "workbench_stat", args{"id": "wb", "section": "outputs", "path": path}).card()
			if st.int(t, "size_bytes") != int64(tc.fileBytes) {
				t.Errorf("the refused edit changed the file: %v", st)
			}
		})
	}
}

// TestStructuredReadStreamsRecords: a structured read of a 16 MB file of newlines with
// limit 2 keeps only the page, not every record (issue 10 finding 11: +500 MB), and
// still reports every record's count; the same holds for a JSON array.
func TestStructuredReadStreamsRecords(t *testing.T) {
	svc := newService(t, 0)
	cs := connectInMemory(t, svc, "agent-read")
	const size = 16 << 20
	for _, tc := range []struct {
		name, path, body string
		records          int64
		first            string
	}{
		{"text lines", "newlines.txt", strings.Repeat("\n", size), size, ""},
		{"a JSON array", "zeros.json", "[" + strings.Repeat("0,", size/2-2) + "0]", size/2 - 1, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "agent-read", Workbench: "wb", Path: "outputs/" + tc.path,
				Body: strings.NewReader(tc.body), ContentType: "application/octet-stream", CreateWorkbench: true}); err != nil {
				t.Fatal(err)
			}
			in := args{"id": "wb", "section": "outputs", "path": tc.path, "limit": 2, "offset": 5}
			var r obj
			peak, total := peakHeapGrowth(func() { r = ok(t, cs, "workbench_read", in) })
			t.Logf("a structured read of 2 of %d records: heap peak +%.1f MiB, %.1f MiB allocated in all",
				tc.records, float64(peak)/(1<<20), float64(total)/(1<<20))
			if peak > readHeapBound {
				t.Errorf("the read's heap grew by %d bytes, more than %d", peak, readHeapBound)
			}
			if got := r.int(t, "record_count"); got != tc.records {
				t.Errorf("record_count = %d, want %d", got, tc.records)
			}
			items := r.list(t, "items")
			if len(items) != 2 || items[0].int(t, "index") != 5 || items[1].int(t, "index") != 6 {
				t.Fatalf("items = %v", items)
			}
			if got := fmt.Sprint(items[0]["value"]); got != tc.first {
				t.Errorf("items[0].value = %#v, want %#v", got, tc.first)
			}
			if r["truncated"] != true || r["next_cursor"] == nil {
				t.Errorf("truncated %v, next_cursor %v", r["truncated"], r["next_cursor"])
			}
		})
	}
}

// TestPathLimitsHoldWhenThePathNamesItsSection: with section null the path names its
// section as its first component, and the part below it obeys the same 4,096-byte and
// 64-component bounds (issue 10 finding 15: only section + path was bounded so).
func TestPathLimitsHoldWhenThePathNamesItsSection(t *testing.T) {
	cs := connectInMemory(t, newService(t, 0), "paths-null")
	ok(t, cs, "workbench_create", args{"id": "w"})
	for _, p := range []string{"outputs/" + strings.Repeat("p", 4097), "outputs/" + strings.TrimSuffix(strings.Repeat("c/", 65), "/")} {
		invalid(t, cs, "workbench_stat", args{"id": "w", "path": p}, "path")
		invalid(t, cs, "workbench_list", args{"id": "w", "path": p}, "path")
	}
	fails(t, cs, "workbench_stat", args{"id": "w", "path": "outputs/" + strings.Repeat("p", 4096)}, workbench.CodeNotFound)
}

// TestHTTPBatchesAreRefused: a JSON-RPC batch is answered with one invalid-request error
// before the SDK decodes it, whatever protocol version it claims (issue 10 finding 9: the
// SDK runs the batches of protocol versions before 2025-06-18, and one POST of 12
// aggregates held 8.5 GB); a single message still works.
func TestHTTPBatchesAreRefused(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	post := func(body, version string) (int, []byte) {
		var headers []string
		if version != "" {
			headers = []string{"Mcp-Protocol-Version", version}
		}
		status, _, raw := postRaw(t, ts.URL+"/v1/agents/a/mcp", body, headers...)
		return status, raw
	}
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"workbench_aggregate","arguments":{"measures":[{"name":"n","op":"count"}]}}}`
	batch := " \n[" + fmt.Sprintf(call, 1) + "," + fmt.Sprintf(call, 2) + "]"
	for _, version := range []string{"", "2025-03-26", "2024-11-05"} {
		status, raw := post(batch, version)
		var msg struct {
			ID    any `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &msg); err != nil || status != http.StatusBadRequest || msg.Error.Code != -32600 ||
			msg.ID != nil || !strings.Contains(msg.Error.Message, "batch") {
			t.Errorf("a batch (protocol %q): HTTP %d %s", version, status, raw)
		}
	}
	if status, raw := post(fmt.Sprintf(call, 3), ""); status != http.StatusOK || !strings.Contains(string(raw), `\"status\":\"success\"`) {
		t.Errorf("one message: HTTP %d %s", status, raw)
	}
	// A body that only starts like a batch but is not JSON, or nests deeper than the
	// limit, is a parse error (-32700) like any such body, not a refused batch.
	for name, body := range map[string]string{
		"not JSON":        "[nonsense",
		"nested too deep": strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
	} {
		status, raw := post(body, "")
		var msg struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &msg); err != nil || msg.Error.Code != -32700 || status/100 != 4 {
			t.Errorf("a body starting with [, %s: HTTP %d %s, want the parse error -32700", name, status, raw)
		}
	}
}

// TestSnapshotsPerWorkbenchAreCapped: minting past the cap of snapshots that hold history
// is ResourceExhausted naming the cap, not retryable; retiring one makes room; and
// snapshot_list reports the held ones and at most the newest 64 ended ones (issue 10
// finding 10: 2,000 snapshots made one answer of 130 MB).
func TestSnapshotsPerWorkbenchAreCapped(t *testing.T) {
	const maxHeld = 3
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, MaxSnapshotsPerWorkbench: maxHeld}).Service
	cs := connectInMemory(t, svc, "snaps")
	ok(t, cs, "workbench_create", args{"id": "w"})
	ok(t, cs, "workbench_create", args{"id": "other"})
	var first int64
	for i := range maxHeld {
		r := ok(t, cs, "workbench_snapshot", args{"id": "w"})
		if i == 0 {
			first = r.int(t, "snapshot_id")
		}
	}
	e := fails(t, cs, "workbench_snapshot", args{"id": "w"}, workbench.CodeResourceExhausted)
	if e["retryable"] != false || e.details().int(t, "max_snapshots") != maxHeld || !strings.Contains(e.str("message"), "3") {
		t.Errorf("past the cap: %v", e)
	}
	ok(t, cs, "workbench_snapshot", args{"id": "other"}) // the cap is per workbench
	ok(t, cs, "workbench_snapshot_retire", args{"id": "w", "snapshot_id": first})
	ok(t, cs, "workbench_snapshot", args{"id": "w"})
	fails(t, cs, "workbench_snapshot", args{"id": "w"}, workbench.CodeResourceExhausted)

	// Ended snapshots: 70 more minted and retired; the list keeps the newest 64 of them.
	var lastEnded int64
	for range 70 {
		id := ok(t, cs, "workbench_snapshot", args{"id": "other"}).int(t, "snapshot_id")
		ok(t, cs, "workbench_snapshot_retire", args{"id": "other", "snapshot_id": id})
		lastEnded = id
	}
	l := ok(t, cs, "workbench_snapshot_list", args{"id": "other"})
	snaps := l.list(t, "snapshots")
	if got := l.int(t, "snapshot_count"); got != 1+workbench.MaxListedEndedSnapshots || len(snaps) != int(got) {
		t.Fatalf("snapshot_count %d with %d snapshots, want 1 held + %d ended", got, len(snaps), workbench.MaxListedEndedSnapshots)
	}
	if snaps[0].str("state") != "alive" || snaps[len(snaps)-1].int(t, "snapshot_id") != lastEnded {
		t.Errorf("first %v, last %v", snaps[0], snaps[len(snaps)-1])
	}
}
