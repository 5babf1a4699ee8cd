package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// newRealServer starts the real REST handler on a real Workbench service (a one-node
// shard and a blob directory in temporary directories): the tool endpoints have more
// semantics than a fake could honestly mirror.
func newRealServer(t *testing.T) *Client {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 64})
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready}))
	t.Cleanup(srv.Close)
	return New(srv.URL, nil)
}

// mustGet is readAll (client_test.go) for a test that needs only the body.
func mustGet(t *testing.T, c *Client, agent, wb, p string, opts GetOptions) string {
	t.Helper()
	data, _ := readAll(t, c, agent, wb, p, opts)
	return data
}

func wantCode(t *testing.T, err error, status int, code string) *Error {
	t.Helper()
	e := asError(t, err)
	if e.HTTPStatus != status || e.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", e.HTTPStatus, e.Code, e.Message, status, code)
	}
	return e
}

func TestParseSnapshotRefReadsDigitsAsAnID(t *testing.T) {
	tests := []struct {
		in   string
		want SnapshotRef
	}{
		{"7", SnapshotID(7)},
		{"007", SnapshotID(7)},
		{"v1", SnapshotName("v1")},
		{"1a", SnapshotName("1a")},
		{"-1", SnapshotName("-1")},
		{"99999999999999999999999", SnapshotName("99999999999999999999999")}, // beyond uint64: a name
		{"", SnapshotRef{}},
	}
	for _, tt := range tests {
		if got := ParseSnapshotRef(tt.in); got != tt.want {
			t.Errorf("ParseSnapshotRef(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestSnapshotRefsThatCannotBeSentFailBeforeAnyRequest(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/x", "x", PutOptions{})
	sent := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.requests) }
	before := sent()
	for _, at := range []SnapshotRef{{ID: 1, Name: "v1"}, SnapshotName("123")} {
		if _, _, err := c.GetFile(t.Context(), "a", "w", "input/x", GetOptions{AtSnapshot: at}); err == nil {
			t.Errorf("GetFile at %+v: no error", at)
		}
		if _, err := c.StatAt(t.Context(), "a", "w", "input/x", at); err == nil {
			t.Errorf("StatAt %+v: no error", at)
		}
		if _, err := c.List(t.Context(), "a", "w", "", ListOptions{AtSnapshot: at}); err == nil {
			t.Errorf("List at %+v: no error", at)
		}
	}
	if _, err := c.RenewSnapshot(t.Context(), "a", "w", SnapshotRef{}, 1); err == nil {
		t.Error("RenewSnapshot without a snapshot: no error")
	}
	two := []KeyOptions{{IdempotencyKey: "k1"}, {IdempotencyKey: "k2"}}
	if _, err := c.RenewSnapshot(t.Context(), "a", "w", SnapshotID(1), 1, two...); err == nil {
		t.Error("RenewSnapshot with two KeyOptions: no error")
	}
	if _, err := c.RetireSnapshot(t.Context(), "a", "w", SnapshotID(1), "", two...); err == nil {
		t.Error("RetireSnapshot with two KeyOptions: no error")
	}
	if _, err := c.Restore(t.Context(), "a", "w", RestoreRequest{Destination: "w2", AtSnapshot: SnapshotRef{ID: 1, Name: "x"}}); err == nil {
		t.Error("Restore at a snapshot with both id and name: no error")
	}
	if n := sent(); n != before {
		t.Fatalf("%d requests were sent", n-before)
	}
}

func TestPutAttachesFieldsAsJSONHeaders(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "outputs/m.bin", "m", PutOptions{Fields: map[string]any{
		"owner": "alice", "accuracy": 0.93, "epochs": 12, "final": true}})
	h := f.lastRequest().Header
	for name, want := range map[string]string{"Owner": `"alice"`, "Accuracy": "0.93", "Epochs": "12", "Final": "true"} {
		if got := h.Get("Cairn-Field-" + name); got != want {
			t.Errorf("Cairn-Field-%s: %q, want %q", name, got, want)
		}
	}
}

// TestSnapshotsCommitsAndRestores drives the version endpoints through the client against
// the real server: reads at a snapshot by id and by name stay frozen, commits replay and
// conflict, restores fork a snapshot or a commit, and a retired snapshot is gone.
func TestSnapshotsCommitsAndRestores(t *testing.T) {
	c := newRealServer(t)
	ctx := t.Context()
	const agent, wb = "a", "w"
	mustPut(t, c, agent, wb, "outputs/model.bin", "weights v1", PutOptions{})
	mustPut(t, c, agent, wb, "logs/run.log", strings.Repeat("line\n", 40), PutOptions{})

	snap, err := c.Snapshot(ctx, agent, wb, SnapshotRequest{Name: "v1", TTLDays: 2, Reason: "baseline", Metadata: json.RawMessage(`{"run":7}`)})
	if err != nil {
		t.Fatal(err)
	}
	if snap.SnapshotID != 1 || snap.Name != "v1" || snap.State != SnapshotAlive || snap.TTLDays != 2 || snap.Annotation.Reason != "baseline" ||
		snap.Annotation.Metadata["run"] != json.Number("7") || snap.LeaseExpiresUnixMs == 0 || snap.CreatedAt.IsZero() || snap.WorkbenchID != wb {
		t.Fatalf("snapshot %+v", snap)
	}
	if !bytes.HasPrefix(snap.Raw, []byte(`{"status":"success",`)) {
		t.Fatalf("Raw %s", snap.Raw)
	}
	unnamed, err := c.Snapshot(ctx, agent, wb, SnapshotRequest{})
	if err != nil || unnamed.SnapshotID != 2 || unnamed.Name != "" || unnamed.TTLDays != 7 {
		t.Fatalf("unnamed snapshot %+v, %v", unnamed, err)
	}
	if _, err := c.Snapshot(ctx, agent, "nope", SnapshotRequest{}); err == nil {
		t.Fatal("snapshot of a missing workbench")
	} else {
		wantCode(t, err, 404, "NotFound")
	}

	mustPut(t, c, agent, wb, "outputs/model.bin", "weights v2", PutOptions{})
	mustPut(t, c, agent, wb, "outputs/late.bin", "late", PutOptions{})
	for _, at := range []SnapshotRef{SnapshotID(1), SnapshotName("v1"), ParseSnapshotRef("1")} {
		if got := mustGet(t, c, agent, wb, "outputs/model.bin", GetOptions{AtSnapshot: at}); got != "weights v1" {
			t.Errorf("GetFile at %v: %q", at, got)
		}
		info, err := c.StatAt(ctx, agent, wb, "outputs/model.bin", at)
		if err != nil || info.Size != int64(len("weights v1")) {
			t.Errorf("StatAt %v: %+v, %v", at, info, err)
		}
		page, err := c.List(ctx, agent, wb, "outputs", ListOptions{AtSnapshot: at})
		if err != nil || len(page.Entries) != 1 || page.Entries[0].Name != "model.bin" {
			t.Errorf("List at %v: %+v, %v", at, page, err)
		}
		var walked []string
		if err := c.WalkAt(ctx, agent, wb, "", at, func(e Entry) error { walked = append(walked, e.FullPath()); return nil }); err != nil {
			t.Errorf("WalkAt %v: %v", at, err)
		}
		if strings.Contains(strings.Join(walked, ","), "late.bin") {
			t.Errorf("WalkAt %v saw a file written after the snapshot: %v", at, walked)
		}
		wi, err := c.DescribeWorkbench(ctx, agent, wb, at)
		if err != nil || wi.FileCount != 2 {
			t.Errorf("DescribeWorkbench at %v: %+v, %v", at, wi, err)
		}
	}
	if got := mustGet(t, c, agent, wb, "outputs/model.bin", GetOptions{}); got != "weights v2" {
		t.Errorf("live read %q", got)
	}
	// A snapshot listing pages through cursors bound to the snapshot.
	p1, err := c.List(ctx, agent, wb, "", ListOptions{AtSnapshot: SnapshotName("v1"), Limit: 2})
	if err != nil || p1.NextCursor == "" {
		t.Fatalf("first page at v1: %+v, %v", p1, err)
	}
	if _, err := c.List(ctx, agent, wb, "", ListOptions{AtSnapshot: SnapshotName("v1"), Limit: 2, Cursor: p1.NextCursor}); err != nil {
		t.Fatalf("second page at v1: %v", err)
	}
	_, _, err = c.GetFile(ctx, agent, wb, "outputs/model.bin", GetOptions{AtSnapshot: SnapshotID(9)})
	wantCode(t, err, 404, "SnapshotNotFound")

	renewed, err := c.RenewSnapshot(ctx, agent, wb, SnapshotName("v1"), 5)
	if err != nil || renewed.TTLDays != 5 || !renewed.Renewed || renewed.LeaseExpiresUnixMs <= snap.LeaseExpiresUnixMs {
		t.Fatalf("renew: %+v, %v", renewed, err)
	}
	list, err := c.ListSnapshots(ctx, agent, wb)
	if err != nil || list.SnapshotCount != 2 || len(list.Snapshots) != 2 || list.Snapshots[0].Name != "v1" ||
		len(list.Snapshots[0].Aliases) != 1 || list.Snapshots[1].Aliases == nil {
		t.Fatalf("list: %+v, %v", list, err)
	}

	digest := "sha256:" + strings.Repeat("1", 64)
	cm, err := c.Commit(ctx, agent, wb, CommitRequest{Manifest: json.RawMessage(`{"run": 1, "score": 0.50}`), ContentDigestURI: digest})
	if err != nil || len(cm.CommitIdentity) != 64 || cm.IdempotentReplay || cm.Section != "metadata" || cm.RelativePath != "run_manifest.json" {
		t.Fatalf("commit: %+v, %v", cm, err)
	}
	again, err := c.Commit(ctx, agent, wb, CommitRequest{Manifest: json.RawMessage(`{"score":0.50,"run":1}`), ContentDigestURI: digest})
	if err != nil || !again.IdempotentReplay || again.CommitIdentity != cm.CommitIdentity {
		t.Fatalf("replay (same manifest, other key order): %+v, %v", again, err)
	}
	_, err = c.Commit(ctx, agent, wb, CommitRequest{Manifest: json.RawMessage(`{"run":2}`), ContentDigestURI: digest})
	wantCode(t, err, 409, "WorkbenchCommitConflict")
	replaced, err := c.Commit(ctx, agent, wb, CommitRequest{Manifest: json.RawMessage(`{"run":2}`), ContentDigestURI: digest, Replace: true})
	if err != nil {
		t.Fatalf("replace: %v", err)
	}
	// The commits, newest first, one per page.
	var listed []CommitEntry
	for cursor := ""; ; {
		page, err := c.ListCommits(ctx, agent, wb, cursor, 1)
		if err != nil || len(page.Commits) != 1 {
			t.Fatalf("commits after %q: %+v, %v", cursor, page, err)
		}
		listed = append(listed, page.Commits...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(listed) != 2 || listed[0].CommitIdentity != replaced.CommitIdentity || !listed[0].Head || !listed[0].Replace ||
		listed[1].CommitIdentity != cm.CommitIdentity || listed[1].Head || listed[1].Generation != cm.Generation || listed[1].CommittedAt.IsZero() {
		t.Fatalf("commits: %+v", listed)
	}
	_, err = c.ListCommits(ctx, agent, "missing", "", 0)
	wantCode(t, err, 404, "NotFound")

	rs, err := c.Restore(ctx, agent, wb, RestoreRequest{Destination: "w2", AtSnapshot: SnapshotName("v1")})
	if err != nil || rs.State != "complete" || rs.SnapshotID != 1 || rs.CommitID != "" || rs.RestoredFiles != 2 || rs.IdempotentReplay ||
		rs.RestoreManifest != "/agents/a/wb/w2/metadata/restore_manifest.json" || rs.CleanupPending {
		t.Fatalf("restore from v1: %+v, %v", rs, err)
	}
	if got := mustGet(t, c, agent, "w2", "outputs/model.bin", GetOptions{}); got != "weights v1" {
		t.Errorf("restored body %q", got)
	}
	st, err := c.RestoreStatus(ctx, agent, rs.OperationID)
	if err != nil || st.State != "complete" || !st.CopyDone || st.DestinationWorkbenchID != "w2" || st.DestinationGeneration != rs.DestinationGeneration {
		t.Fatalf("restore status: %+v, %v", st, err)
	}
	_, err = c.RestoreStatus(ctx, agent, strings.Repeat("0", 64))
	wantCode(t, err, 404, "NotFound")
	replay, err := c.Restore(ctx, agent, wb, RestoreRequest{Destination: "w2", AtSnapshot: SnapshotID(1)})
	if err != nil || !replay.IdempotentReplay || replay.OperationID != rs.OperationID {
		t.Fatalf("restore replay: %+v, %v", replay, err)
	}
	fromCommit, err := c.Restore(ctx, agent, wb, RestoreRequest{Destination: "w3", AtCommit: cm.CommitIdentity})
	if err != nil || fromCommit.CommitID != cm.CommitIdentity || fromCommit.SnapshotID != 0 {
		t.Fatalf("restore from the commit: %+v, %v", fromCommit, err)
	}
	_, err = c.Restore(ctx, agent, wb, RestoreRequest{Destination: "w3", AtSnapshot: SnapshotName("v1")})
	wantCode(t, err, 409, "AlreadyExists")

	ret, err := c.RetireSnapshot(ctx, agent, wb, SnapshotID(1), "done")
	if err != nil || !ret.Retired || ret.Reason != "done" || ret.State != SnapshotRetired || ret.RetiredAt.IsZero() {
		t.Fatalf("retire: %+v, %v", ret, err)
	}
	ret, err = c.RetireSnapshot(ctx, agent, wb, SnapshotName("v1"), "again")
	if err != nil || ret.Retired || ret.Reason != "done" {
		t.Fatalf("retire retry: %+v, %v", ret, err)
	}
	_, _, err = c.GetFile(ctx, agent, wb, "outputs/model.bin", GetOptions{AtSnapshot: SnapshotName("v1")})
	wantCode(t, err, 410, "SnapshotExpired")
	_, err = c.StatAt(ctx, agent, wb, "outputs/model.bin", SnapshotName("v1"))
	wantCode(t, err, 410, "SnapshotExpired")
	_, err = c.RenewSnapshot(ctx, agent, wb, SnapshotName("v1"), 0)
	wantCode(t, err, 410, "SnapshotExpired")
}

// TestSearchAggregateCatalogGrepAndFind queries fields attached with PutOptions.Fields,
// pages through search and grep results, and finds committed workbenches.
func TestSearchAggregateCatalogGrepAndFind(t *testing.T) {
	c := newRealServer(t)
	ctx := t.Context()
	const agent = "a"
	mustPut(t, c, agent, "w", "outputs/model.bin", "weights", PutOptions{Fields: map[string]any{"owner": "alice", "accuracy": 0.93, "epochs": 12}})
	mustPut(t, c, agent, "w", "outputs/draft.bin", "draft", PutOptions{Fields: map[string]any{"owner": "bob", "accuracy": 0.41}})
	mustPut(t, c, agent, "w", "outputs/other.bin", "other", PutOptions{Fields: map[string]any{"owner": "carol", "accuracy": 0.77, "final": true}})
	mustPut(t, c, agent, "v", "logs/run.log", "epoch 1 loss 0.5\nepoch 2 LOSS 0.3\nno match\n", PutOptions{})
	mustPut(t, c, agent, "v", "logs/deep/more.log", "loss at depth\n", PutOptions{})

	res, err := c.Query.Search(ctx, agent, SearchRequest{
		Predicates: []Predicate{{Field: "accuracy", Op: OpGt, Value: 0.5}, {Field: "owner", Op: OpIn, Value: []string{"alice", "carol"}}},
		Fields:     []string{"owner", "accuracy", "epochs"},
		Sort:       []SortKey{{Field: "accuracy", Direction: "desc"}},
		Facets:     []string{"owner"},
		Limit:      1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.MatchCount != 2 || len(res.Matches) != 1 || res.NextCursor == "" || !res.Truncated || res.WorkbenchID != "" {
		t.Fatalf("first page: %+v", res)
	}
	h := res.Matches[0]
	if h.FullPath() != "outputs/model.bin" || h.WorkbenchID != "w" || h.Values["owner"] != "alice" ||
		h.Values["accuracy"] != json.Number("0.93") || h.Values["epochs"] != json.Number("12") {
		t.Fatalf("hit %+v", h)
	}
	if len(res.Facets) != 1 || res.Facets[0].Field != "owner" || len(res.Facets[0].Values) != 2 {
		t.Fatalf("facets %+v", res.Facets)
	}
	res2, err := c.Query.Search(ctx, agent, SearchRequest{
		Predicates: []Predicate{{Field: "accuracy", Op: OpGt, Value: 0.5}, {Field: "owner", Op: OpIn, Value: []string{"alice", "carol"}}},
		Fields:     []string{"owner", "accuracy", "epochs"},
		Sort:       []SortKey{{Field: "accuracy", Direction: "desc"}},
		Facets:     []string{"owner"},
		Limit:      5, // the page size may change between pages
		Cursor:     res.NextCursor,
	})
	if err != nil || len(res2.Matches) != 1 || res2.Matches[0].FullPath() != "outputs/other.bin" || res2.NextCursor != "" || res2.Matches[0].Values["epochs"] != nil {
		t.Fatalf("second page: %+v, %v", res2, err)
	}
	one, err := c.Query.Search(ctx, agent, SearchRequest{Workbench: "w", Predicates: []Predicate{{Field: "final", Op: OpExists}}})
	if err != nil || one.MatchCount != 1 || one.WorkbenchID != "w" || one.Matches[0].Values["artifact.name"] != "other.bin" {
		t.Fatalf("exists, default fields: %+v, %v", one, err)
	}
	_, err = c.Query.Search(ctx, agent, SearchRequest{Predicates: []Predicate{{Field: "x", Op: "between"}}})
	wantCode(t, err, 400, "InvalidArguments")

	agg, err := c.Query.Aggregate(ctx, agent, AggregateRequest{Workbench: "w", Measures: []Measure{{Name: "n", Op: "count"}, {Name: "best", Op: "max", Field: "accuracy"}},
		GroupBy: []string{"artifact.section"}})
	if err != nil || len(agg.Groups) != 1 || agg.Groups[0].Key["artifact.section"] != "outputs" || agg.Groups[0].Values["best"] != json.Number("0.93") || agg.InputMatchCount != 3 || agg.GroupCount != 1 || agg.RowCount != 1 {
		t.Fatalf("aggregate: %+v, %v", agg, err)
	}
	cat, err := c.Query.Catalog(ctx, agent, CatalogRequest{FieldPrefix: "acc", IncludeFacets: true})
	if err != nil || len(cat.Catalog.Fields) != 1 || cat.Catalog.Fields[0].Field != "accuracy" || len(cat.Catalog.Facets) != 1 || len(cat.Catalog.Fields[0].Operators) == 0 ||
		fmt.Sprint(cat.Catalog.Facetable) != "[accuracy]" || len(cat.Catalog.Filterable) != 1 {
		t.Fatalf("catalog: %+v, %v", cat, err)
	}

	var lines []string
	req := GrepRequest{Pattern: "loss", Recursive: true, Section: "logs", Limit: 1}
	for pages := 0; ; pages++ {
		g, err := c.Query.Grep(ctx, agent, "v", req)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range g.Matches {
			lines = append(lines, m.FullPath()+":"+m.Snippet)
		}
		if g.NextCursor == "" {
			break
		}
		if pages > 10 {
			t.Fatal("grep does not end")
		}
		req.Cursor = g.NextCursor
	}
	if got := strings.Join(lines, "|"); got != "logs/deep/more.log:loss at depth|logs/run.log:epoch 1 loss 0.5|logs/run.log:epoch 2 LOSS 0.3" {
		t.Fatalf("grep pages: %s", got)
	}
	g, err := c.Query.Grep(ctx, agent, "v", GrepRequest{Pattern: "loss", Section: "logs"})
	if err != nil || len(g.Matches) != 2 {
		t.Fatalf("non-recursive grep: %+v, %v", g, err)
	}
	_, err = c.Query.Grep(ctx, agent, "v", GrepRequest{})
	wantCode(t, err, 400, "InvalidArguments")

	if _, err := c.Commit(ctx, agent, "v", CommitRequest{Manifest: json.RawMessage(`{"model":"Resnet"}`), ContentDigestURI: "sha256:" + strings.Repeat("2", 64)}); err != nil {
		t.Fatal(err)
	}
	yes := true
	found, err := c.Query.Find(ctx, agent, FindRequest{Committed: &yes, ManifestPattern: "resnet", IncludeManifest: true})
	if err != nil || found.MatchCount != 1 || found.Matches[0].WorkbenchID != "v" || !found.Matches[0].Committed ||
		len(found.Matches[0].CommitIdentity) != 64 || !bytes.Contains(found.Matches[0].Manifest, []byte("Resnet")) {
		t.Fatalf("find: %+v, %v", found, err)
	}
	all, err := c.Query.Find(ctx, agent, FindRequest{Limit: 1})
	if err != nil || all.MatchCount != 1 || all.NextCursor == "" {
		t.Fatalf("find page: %+v, %v", all, err)
	}
}
