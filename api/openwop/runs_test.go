package openwop_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
)

// TestRunsTakeTheirSnapshotsUnderTheirOwnCap (issue 25, finding 13): runs filled the
// workbench's snapshot cap, so every REST and MCP snapshot of it failed for the runs'
// lease, with a 429 rate_limited that was really a quota. Runs now count against a cap of
// their own: past it a run is 422 storage_limit_exceeded (a quota, not "retry later"),
// and the workbench's own snapshots are all still there to take.
func TestRunsTakeTheirSnapshotsUnderTheirOwnCap(t *testing.T) {
	const runCap, snapCap = 3, 2
	sc := loadSchemas(t)
	base, n := newFacadeNode(t, testOptions(), workbench.Config{InlineMaxBytes: 4096,
		MaxSnapshotsPerWorkbench: snapCap, MaxRunSnapshotsPerWorkbench: runCap})
	restSrv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{}))
	t.Cleanup(restSrv.Close)
	call(t, http.MethodPut, base+"/v1/host/workspace/files/a.md", map[string]any{"content": "one"})
	for i := range runCap {
		if r := call(t, http.MethodPost, base+"/v1/runs", map[string]any{"workflowId": "w"}); r.status != 201 {
			t.Fatalf("run %d within the runs' cap: %d %s", i+1, r.status, r.body)
		}
	}
	over := call(t, http.MethodPost, base+"/v1/runs", map[string]any{"workflowId": "w"})
	wantError(t, sc, "a run past the runs' cap", over, http.StatusUnprocessableEntity, openwop.CodeStorageLimitExceeded)
	d, _ := over.json["details"].(map[string]any)
	if d["service"] != "workspace" || d["limit"] != "quota" || d["quota"] != "run_snapshots_per_workbench" || d["max"] != float64(runCap) {
		t.Fatalf("the quota answer's details: %s", over.body)
	}
	snapshots := restSrv.URL + "/v1/agents/default/workbenches/default/snapshots"
	for i := range snapCap {
		r := call(t, http.MethodPost, snapshots, `{}`)
		if r.status != 201 && r.status != 200 {
			t.Fatalf("REST snapshot %d while the runs' cap is full: %d %s", i+1, r.status, r.body)
		}
	}
	r := call(t, http.MethodPost, snapshots, `{}`)
	if r.status != http.StatusTooManyRequests || r.json["code"] != "ResourceExhausted" || r.json["retryable"] != false {
		t.Fatalf("a REST snapshot past the workbench's cap: %d %s", r.status, r.body)
	}
	if d, _ := r.json["details"].(map[string]any); d["quota"] != "snapshots_per_workbench" || d["limit"] != float64(snapCap) {
		t.Fatalf("the workbench cap's details: %s", r.body)
	}
}
