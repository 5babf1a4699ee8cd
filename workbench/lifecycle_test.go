package workbench_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func ptr[T any](v T) *T { return &v }

func must(t *testing.T) func(workbench.Result, error) workbench.Result {
	t.Helper()
	return func(r workbench.Result, err error) workbench.Result {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func code(err error) string {
	if err == nil {
		return ""
	}
	return workbench.AsError(err).Code
}

func put(t *testing.T, svc *workbench.Service, id, section, path, text string, replace bool) workbench.Result {
	t.Helper()
	return must(t)(svc.Tools.PutFile(context.Background(), "a", workbench.PutFileInput{ID: id, Section: section, Path: path, Text: &text, Replace: &replace}))
}

func readText(t *testing.T, svc *workbench.Service, id, section, path string, at json.RawMessage) (string, error) {
	t.Helper()
	// Through the tool first (its at_snapshot handling and errors), then the whole body.
	if _, err := svc.Tools.Read(context.Background(), "a", workbench.ReadInput{ID: id, Section: section, Path: path, AtSnapshot: at, Format: ptr("bytes")}); err != nil {
		return "", err
	}
	sel, perr := workbench.ParseAtSnapshot(at)
	if perr != nil {
		return "", perr
	}
	f, err := svc.Reads.OpenAt(context.Background(), "a", id, section+"/"+path, sel)
	if err != nil {
		return "", err
	}
	b, err := f.ReadAll(context.Background(), 1<<20)
	return string(b), err
}

// TestSnapshotToolsFreezeReadsAndFollowTheLifecycle drives snapshot, renew, retire and
// list, and at_snapshot reads of list, stat and read, through the tool methods.
func TestSnapshotToolsFreezeReadsAndFollowTheLifecycle(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	ctx := context.Background()
	put(t, svc, "w", "outputs", "report.md", "v1", false)
	put(t, svc, "w", "input", "data.csv", "a,b\n", false)
	snap := must(t)(svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("base"), Reason: ptr("before edits"),
		Metadata: json.RawMessage(`{"run": 7, "tag": "<x>"}`)}))
	if snap["snapshot_id"] != uint64(1) || snap["state"] != "alive" || snap["ttl_days"] != 7 || snap["name"] != "base" {
		t.Fatalf("snapshot: %v", snap)
	}
	ann := snap["annotation"].(map[string]any)
	if ann["reason"] != "before edits" || string(ann["metadata"].(json.RawMessage)) != `{"run":7,"tag":"<x>"}` {
		t.Fatalf("annotation: %v", ann)
	}
	put(t, svc, "w", "outputs", "report.md", "v2", true)
	put(t, svc, "w", "outputs", "new.md", "later", false)

	for _, at := range []string{`1`, `"base"`} {
		got, err := readText(t, svc, "w", "outputs", "report.md", json.RawMessage(at))
		if err != nil || got != "v1" {
			t.Fatalf("read at %s: %q %v", at, got, err)
		}
		l := must(t)(svc.Tools.List(ctx, "a", workbench.ListInput{ID: "w", Section: ptr("outputs"), AtSnapshot: json.RawMessage(at)}))
		if l["entry_count"] != int64(1) || len(l["entries"].([]workbench.ListedEntry)) != 1 {
			t.Fatalf("list at %s: %v", at, l)
		}
		if _, err := svc.Tools.Stat(ctx, "a", workbench.StatInput{ID: "w", Section: ptr("outputs"), Path: ptr("new.md"), AtSnapshot: json.RawMessage(at)}); code(err) != "NotFound" {
			t.Fatalf("stat of a later file at %s: %v", at, err)
		}
	}
	if got, _ := readText(t, svc, "w", "outputs", "report.md", nil); got != "v2" {
		t.Fatalf("live read %q", got)
	}
	for at, want := range map[string]string{`0`: "SnapshotNotFound", `9`: "SnapshotNotFound", `"nope"`: "SnapshotNotFound", `-1`: "InvalidArguments", `1.5`: "InvalidArguments"} {
		if _, err := readText(t, svc, "w", "outputs", "report.md", json.RawMessage(at)); code(err) != want {
			t.Errorf("at_snapshot %s: %v, want %s", at, err, want)
		}
	}
	// Renew never shortens; retire is final and replays with the original reason.
	r := must(t)(svc.Tools.SnapshotRenew(ctx, "a", workbench.SnapshotRenewInput{ID: "w", Name: ptr("base"), TTLDays: ptr(1)}))
	if r["lease_expires_unix_ms"] != snap["lease_expires_unix_ms"] {
		t.Fatalf("a shorter renew moved the lease: %v", r)
	}
	r = must(t)(svc.Tools.SnapshotRenew(ctx, "a", workbench.SnapshotRenewInput{ID: "w", SnapshotID: ptr(uint64(1)), TTLDays: ptr(30)}))
	if r["lease_expires_unix_ms"].(int64) <= snap["lease_expires_unix_ms"].(int64) || r["ttl_days"] != 30 {
		t.Fatalf("renew: %v", r)
	}
	ret := must(t)(svc.Tools.SnapshotRetire(ctx, "a", workbench.SnapshotRetireInput{ID: "w", SnapshotID: ptr(uint64(1)), Reason: ptr("done")}))
	if ret["retired"] != true || ret["state"] != "retired" {
		t.Fatalf("retire: %v", ret)
	}
	ret = must(t)(svc.Tools.SnapshotRetire(ctx, "a", workbench.SnapshotRetireInput{ID: "w", Name: ptr("base"), Reason: ptr("again")}))
	if ret["retired"] != false || ret["reason"] != "done" {
		t.Fatalf("retire retry: %v", ret)
	}
	if _, err := readText(t, svc, "w", "outputs", "report.md", json.RawMessage(`1`)); code(err) != "SnapshotExpired" || workbench.AsError(err).Details["state"] != "retired" {
		t.Fatalf("read of a retired snapshot: %v", err)
	}
	if _, err := svc.Tools.SnapshotRenew(ctx, "a", workbench.SnapshotRenewInput{ID: "w", SnapshotID: ptr(uint64(1))}); code(err) != "SnapshotExpired" {
		t.Fatalf("renew of a retired snapshot: %v", err)
	}
	must(t)(svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("base")}))
	list := must(t)(svc.Tools.SnapshotList(ctx, "a", workbench.SnapshotListInput{ID: "w"}))
	snaps := list["snapshots"].([]workbench.Result)
	if len(snaps) != 2 || len(snaps[0]["aliases"].([]string)) != 0 || snaps[1]["aliases"].([]string)[0] != "base" || snaps[0]["state"] != "retired" {
		t.Fatalf("snapshot list: %v", snaps)
	}
	// Errors the contract names.
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "missing"}); code(err) != "NotFound" {
		t.Fatalf("snapshot of a missing workbench: %v", err)
	}
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", TTLDays: ptr(91)}); code(err) != "InvalidArguments" {
		t.Fatalf("ttl 91: %v", err)
	}
	big := map[string]int{}
	for i := 0; i < 65; i++ {
		big[fmt.Sprint("k", i)] = i
	}
	raw, _ := json.Marshal(big)
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Metadata: raw}); code(err) != "InvalidArguments" {
		t.Fatalf("65 metadata properties: %v", err)
	}
	if _, err := svc.Tools.SnapshotRetire(ctx, "a", workbench.SnapshotRetireInput{ID: "w", SnapshotID: ptr(uint64(2)), Name: ptr("base")}); code(err) != "InvalidArguments" {
		t.Fatalf("both selectors: %v", err)
	}
}

// TestCommitToolSealsTheTreeWithTheContractDigests checks the envelope, the identity and
// the tree digest against independent computations, and replay/conflict/replace.
func TestCommitToolSealsTheTreeWithTheContractDigests(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	ctx := context.Background()
	put(t, svc, "w", "outputs", "b.txt", "bee", false)
	put(t, svc, "w", "input", "a.txt", "ay", false)
	content := "sha256:" + strings.Repeat("ab", 32)
	manifest := json.RawMessage(`{"z": 1, "a": {"y": [1.50, "<&>"], "b": true}}`)
	c := must(t)(svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "w", Manifest: manifest, ContentDigestURI: content}))
	canon := `{"a":{"b":true,"y":[1.50,"<&>"]},"z":1}`
	md := workbench.ManifestDigestURI([]byte(canon))
	if c["manifest_digest_uri"] != md || c["commit_identity"] != workbench.CommitIdentity("w", content, md) || c["idempotent_replay"] != false {
		t.Fatalf("commit: %v", c)
	}
	wantTree := workbench.TreeDigestURI([]workbench.TreeMember{
		{Path: "input/a.txt", DigestURI: digestURI("ay")}, {Path: "outputs/b.txt", DigestURI: digestURI("bee")}})
	if c["tree_digest_uri"] != wantTree {
		t.Fatalf("tree digest %v, want %v", c["tree_digest_uri"], wantTree)
	}
	env, err := readText(t, svc, "w", "metadata", "run_manifest.json", nil)
	if err != nil || c["envelope_digest_uri"] != digestURI(env) || !strings.Contains(env, `"manifest":`+canon) {
		t.Fatalf("envelope %q: %v", env, err)
	}
	var decoded workbench.RunManifest
	if err := json.Unmarshal([]byte(env), &decoded); err != nil || decoded.Schema != "nokv.workbench.run_manifest.v1" || decoded.CommitIdentity != c["commit_identity"] {
		t.Fatalf("envelope decodes to %+v (%v)", decoded, err)
	}
	// A replay after edits seals nothing new.
	put(t, svc, "w", "outputs", "c.txt", "sea", false)
	again := must(t)(svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "w", Manifest: json.RawMessage(canon), ContentDigestURI: content}))
	if again["idempotent_replay"] != true || again["generation"] != c["generation"] || again["tree_digest_uri"] != wantTree {
		t.Fatalf("replay: %v", again)
	}
	other := json.RawMessage(`{"z": 2}`)
	if _, err := svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "w", Manifest: other, ContentDigestURI: content}); code(err) != "WorkbenchCommitConflict" {
		t.Fatalf("second identity: %v", err)
	}
	rep := must(t)(svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "w", Manifest: other, ContentDigestURI: content, Replace: ptr(true)}))
	if rep["replace"] != true || rep["tree_digest_uri"] == wantTree {
		t.Fatalf("replace: %v", rep)
	}
	// The replaced commit still replays with its original result.
	old := must(t)(svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "w", Manifest: manifest, ContentDigestURI: content}))
	if old["idempotent_replay"] != true || old["generation"] != c["generation"] {
		t.Fatalf("replay of the replaced commit: %v", old)
	}
	// Reserved paths stay unwritable by tools.
	if _, err := svc.Tools.PutFile(ctx, "a", workbench.PutFileInput{ID: "w", Section: "metadata", Path: "run_manifest.json", Text: ptr("{}")}); code(err) != "InvalidArguments" {
		t.Fatalf("writing the run manifest: %v", err)
	}
	for _, bad := range []workbench.CommitInput{
		{ID: "w", Manifest: json.RawMessage(`[1]`), ContentDigestURI: content},
		{ID: "w", Manifest: json.RawMessage(`{"a":1,"a":2}`), ContentDigestURI: content},
		{ID: "w", Manifest: manifest, ContentDigestURI: "sha256:ABC"},
	} {
		if _, err := svc.Tools.Commit(ctx, "a", bad); code(err) != "InvalidArguments" {
			t.Errorf("%s / %s: %v", bad.Manifest, bad.ContentDigestURI, err)
		}
	}
	// find: committed state and manifest pattern (case-insensitive).
	put(t, svc, "u", "logs", "x", "x", false)
	f := must(t)(svc.Tools.Find(ctx, "a", workbench.FindInput{Committed: ptr(true)}))
	if f["match_count"] != 1 || f["matches"].([]workbench.Result)[0]["workbench_id"] != "w" {
		t.Fatalf("find committed: %v", f)
	}
	f = must(t)(svc.Tools.Find(ctx, "a", workbench.FindInput{Committed: ptr(false)}))
	if f["match_count"] != 1 || f["matches"].([]workbench.Result)[0]["workbench_id"] != "u" {
		t.Fatalf("find uncommitted: %v", f)
	}
	f = must(t)(svc.Tools.Find(ctx, "a", workbench.FindInput{ManifestPattern: ptr(`"Z":2`), IncludeManifest: ptr(true)}))
	if f["match_count"] != 1 || f["matches"].([]workbench.Result)[0]["manifest"] == nil {
		t.Fatalf("find by pattern: %v", f)
	}
}

func digestURI(s string) string { return workbench.DigestURI(meta.Digest(sha256Sum([]byte(s)))) }

// TestRestoreToolCopiesNoBodies: a restore from a snapshot and from a commit writes
// exactly the two manifests to the object store, the destination equals the source at
// that point, and retries converge.
func TestRestoreToolCopiesNoBodies(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 0, RestoreBatch: 3})
	svc := n.Service
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		put(t, svc, "src", "input", fmt.Sprintf("f%d.txt", i), fmt.Sprintf("body %d", i), false)
	}
	snap := must(t)(svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "src", Name: ptr("s")}))
	put(t, svc, "src", "input", "f0.txt", "changed", true)
	view, _ := n.Shard.ReadView(ctx)
	root, _ := view.Root("a")
	count := func() (n int) {
		n0 := 0
		if err := svc.BlobStore().List(ctx, root.UID, func(blob.Key, blob.Info) error { n0++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n0
	}
	before := count()
	res := must(t)(svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: "dst", AtSnapshot: json.RawMessage(`"s"`)}))
	if res["state"] != "complete" || res["idempotent_replay"] != false || res["snapshot_id"] != snap["snapshot_id"] {
		t.Fatalf("restore: %v", res)
	}
	if got := count() - before; got != 2 {
		t.Fatalf("the restore wrote %d objects, want exactly the 2 manifests", got)
	}
	for i := 0; i < 10; i++ {
		got, err := readText(t, svc, "dst", "input", fmt.Sprintf("f%d.txt", i), nil)
		if want := fmt.Sprintf("body %d", i); err != nil || got != want {
			t.Fatalf("dst f%d = %q %v", i, got, err)
		}
	}
	rm, err := readText(t, svc, "dst", "metadata", "restore_manifest.json", nil)
	want := fmt.Sprintf(`{"destination_path":"/agents/a/wb/dst","destination_workbench_id":"dst","operation_id":"%s",`+
		`"restored_from":{"path":"/agents/a/wb/src","source":{"kind":"snapshot","snapshot_id":%d},"workbench_id":"src"},`+
		`"schema":"nokv.workbench.restore_manifest.v2","source_path":"/agents/a/wb/src","source_workbench_id":"src"}`,
		res["operation_id"], snap["snapshot_id"])
	if err != nil || rm != want {
		t.Fatalf("restore manifest\n got %s %v\nwant %s", rm, err, want)
	}
	if res["restore_manifest"] != "/agents/a/wb/dst/metadata/restore_manifest.json" || res["cleanup_pending"] != false || res["commit_id"] != nil {
		t.Fatalf("restore result: %v", res)
	}
	again := must(t)(svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: "dst", AtSnapshot: json.RawMessage(`1`)}))
	if again["idempotent_replay"] != true || again["operation_id"] != res["operation_id"] || again["destination_generation"] != res["destination_generation"] {
		t.Fatalf("retry: %v", again)
	}
	if _, err := svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: "dst", AtSnapshot: json.RawMessage(`1`), AtCommit: ptr(strings.Repeat("a", 64))}); code(err) != "InvalidArguments" {
		t.Fatalf("both sources: %v", err)
	}
	if _, err := svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: "src"}); code(err) != "InvalidArguments" {
		t.Fatalf("no source point: %v", err)
	}
	if _, err := svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: "dst2", AtCommit: ptr(strings.Repeat("a", 64))}); code(err) != "NotFound" {
		t.Fatalf("unknown commit: %v", err)
	}
	if _, err := svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: "src", AtSnapshot: json.RawMessage(`1`)}); code(err) != "AlreadyExists" {
		t.Fatalf("restore onto an existing workbench: %v", err)
	}
	// From a commit: the destination holds the commit's tree.
	c := must(t)(svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "src", Manifest: json.RawMessage(`{"k":"v"}`), ContentDigestURI: "sha256:" + strings.Repeat("0", 64)}))
	put(t, svc, "src", "input", "f1.txt", "changed after the commit", true)
	before = count()
	fromCommit := must(t)(svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: "fromcommit", AtCommit: ptr(c["commit_identity"].(string))}))
	if got := count() - before; got != 2 {
		t.Fatalf("the restore from a commit wrote %d objects, want 2", got)
	}
	if got, _ := readText(t, svc, "fromcommit", "input", "f1.txt", nil); got != "body 1" {
		t.Fatalf("restored f1 = %q", got)
	}
	if got, _ := readText(t, svc, "fromcommit", "input", "f0.txt", nil); got != "changed" {
		t.Fatalf("restored f0 = %q", got)
	}
	if fromCommit["commit_id"] != c["commit_identity"] || fromCommit["snapshot_id"] != nil {
		t.Fatalf("restore from commit: %v", fromCommit)
	}
	rm, _ = readText(t, svc, "fromcommit", "metadata", "restore_manifest.json", nil)
	if want := `"source":{"commit_id":"` + c["commit_identity"].(string) + `","kind":"commit"}`; !strings.Contains(rm, want) {
		t.Fatalf("restore manifest from a commit %s, want %s in it", rm, want)
	}
	st := must(t)(svc.Tools.Stat(ctx, "a", workbench.StatInput{ID: "fromcommit"}))
	card := st["card"].(map[string]any)
	if card["file_count"] != int64(12) { // 10 files + restore manifest + run manifest
		t.Fatalf("destination stat: %v", st)
	}
	// The destination is committed (by the restore): its head seals it.
	if card["manifest_id"] == nil {
		t.Fatalf("destination stat: manifest_id %v", card["manifest_id"])
	}
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }

// TestEditNeverMakesAFileEditCannotLoad: an edit whose result would exceed the payload
// cap fails with PayloadTooLarge and changes nothing.
func TestEditNeverMakesAFileEditCannotLoad(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{MCPMaxPayloadBytes: 1024}).Service
	ctx := context.Background()
	put(t, svc, "w", "outputs", "r.txt", "hello", false)
	_, err := svc.Tools.Edit(ctx, "a", workbench.EditInput{ID: "w", Section: "outputs", Path: "r.txt", OldString: "hello", NewString: strings.Repeat("x", 1025)})
	if code(err) != "PayloadTooLarge" {
		t.Fatalf("edit past the cap: %v", err)
	}
	if got, _ := readText(t, svc, "w", "outputs", "r.txt", nil); got != "hello" {
		t.Fatalf("the file changed: %q", got)
	}
}

// TestStatCardNamesTheCommitThatSealsAFile: manifest_id is the head commit's identity
// while the file is the revision that commit holds, and null once it changed or for a
// file the commit never held.
func TestStatCardNamesTheCommitThatSealsAFile(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096}).Service
	ctx := context.Background()
	card := func(path string) map[string]any {
		t.Helper()
		st := must(t)(svc.Tools.Stat(ctx, "a", workbench.StatInput{ID: "w", Section: ptr("outputs"), Path: ptr(path)}))
		return st["card"].(map[string]any)
	}
	put(t, svc, "w", "outputs", "a.txt", "one", false)
	if id := card("a.txt")["manifest_id"]; id != nil {
		t.Fatalf("uncommitted file: manifest_id %v", id)
	}
	c := must(t)(svc.Tools.Commit(ctx, "a", workbench.CommitInput{ID: "w", Manifest: json.RawMessage(`{"k":1}`), ContentDigestURI: "sha256:" + strings.Repeat("0", 64)}))
	put(t, svc, "w", "outputs", "b.txt", "after the commit", false)
	if id := card("a.txt")["manifest_id"]; id != c["commit_identity"] {
		t.Fatalf("committed file: manifest_id %v, want %v", id, c["commit_identity"])
	}
	if id := card("b.txt")["manifest_id"]; id != nil {
		t.Fatalf("file written after the commit: manifest_id %v", id)
	}
	put(t, svc, "w", "outputs", "a.txt", "two", true)
	if id := card("a.txt")["manifest_id"]; id != nil {
		t.Fatalf("file changed after the commit: manifest_id %v", id)
	}
	w := must(t)(svc.Tools.Stat(ctx, "a", workbench.StatInput{ID: "w"}))["card"].(map[string]any)
	if w["manifest_id"] != c["commit_identity"] || w["kind"] != "workbench" || w["producer"] != "" || w["record_count"] != nil {
		t.Fatalf("workbench card: %v", w)
	}
}

// TestCommitListPagesNewestFirst: CommitListPage lists every commit of a workbench, the
// replaced ones too, newest first, in pages that continue after the cursor's commit, with
// head on the workbench's head only; bad limits, forged cursors, a cursor of another
// workbench or of an earlier incarnation are InvalidArguments, a missing workbench
// NotFound.
func TestCommitListPagesNewestFirst(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	ctx := context.Background()
	var made []string // oldest first
	for i := range 5 {
		put(t, svc, "w", "outputs", "r.txt", string(rune('a'+i)), i > 0)
		made = append(made, commitNow(t, svc, i))
	}
	put(t, svc, "other", "outputs", "x.txt", "x", false)
	want := slices.Clone(made)
	slices.Reverse(want)

	var got []string
	var gens []uint64
	heads := 0
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more than 3 pages of 2 for 5 commits")
		}
		r := must(t)(svc.Lifecycle.CommitListPage(ctx, "a", "w", cursor, 2))
		list := r["commits"].([]workbench.Result)
		if r["commit_count"] != len(list) || len(list) > 2 {
			t.Fatalf("page %d: %d commits, commit_count %v", pages, len(list), r["commit_count"])
		}
		for _, c := range list {
			got = append(got, c["commit_identity"].(string))
			gens = append(gens, c["generation"].(uint64))
			if c["head"] == true {
				heads++
				if c["commit_identity"] != made[len(made)-1] {
					t.Errorf("commit %v is listed as the head", c["commit_identity"])
				}
			}
		}
		next, _ := r["next_cursor"].(string)
		if (next != "") != (r["truncated"] == true) {
			t.Fatalf("page %d: next_cursor %q, truncated %v", pages, next, r["truncated"])
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, want) || heads != 1 {
		t.Errorf("listed %v (%d heads), want %v (1 head)", got, heads, want)
	}
	if !slices.IsSortedFunc(gens, func(a, b uint64) int { return int(b) - int(a) }) {
		t.Errorf("generations %v are not newest first", gens)
	}

	first := must(t)(svc.Lifecycle.CommitListPage(ctx, "a", "w", "", 1))
	next, _ := first["next_cursor"].(string)
	for _, tc := range []struct {
		name, id, cursor string
		limit            int
		code             string
	}{
		{"a limit of 0", "w", "", 0, workbench.CodeInvalidArguments},
		{"a limit above the bound", "w", "", workbench.MaxCommitPageLimit + 1, workbench.CodeInvalidArguments},
		{"a forged cursor", "w", "forged.cursor", 1, workbench.CodeInvalidArguments},
		{"a cursor of another workbench", "other", next, 1, workbench.CodeInvalidArguments},
		{"a workbench that does not exist", "missing", "", 1, workbench.CodeNotFound},
	} {
		if _, err := svc.Lifecycle.CommitListPage(ctx, "a", tc.id, tc.cursor, tc.limit); code(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}

	// The workbench made again under its name: no commits, and the old cursor is refused.
	if err := svc.Lifecycle.DeleteWorkbench(ctx, "a", "w", 0, ""); err != nil {
		t.Fatal(err)
	}
	put(t, svc, "w", "outputs", "r.txt", "again", false)
	if _, err := svc.Lifecycle.CommitListPage(ctx, "a", "w", next, 1); code(err) != workbench.CodeInvalidArguments {
		t.Errorf("a cursor of the deleted incarnation: %v", err)
	}
	r := must(t)(svc.Lifecycle.CommitListPage(ctx, "a", "w", "", workbench.MaxCommitPageLimit))
	if r["commit_count"] != 0 || r["next_cursor"] != nil || r["truncated"] != false {
		t.Errorf("the new workbench lists %v", r)
	}
}
