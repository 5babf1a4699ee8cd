package rest_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// zeroDigest is a content digest for commit bodies.
var zeroDigest = "sha256:" + strings.Repeat("0", 64)

// keyedRoute is one tool route that keeps an Idempotency-Key: its path under the
// workbench, a body, another body (the key with it is refused), the status of a success
// and what the route needs first (a snapshot named s1 of the workbench).
type keyedRoute struct {
	name, route, body, other string
	status                   int
	needsSnapshot            bool
}

var keyedRoutes = []keyedRoute{
	{"snapshot", "/snapshots", `{"name":"s9","ttl_days":3}`, `{"name":"s10","ttl_days":3}`, 201, false},
	{"renew", "/snapshots/renew", `{"name":"s1","ttl_days":30}`, `{"name":"s1","ttl_days":20}`, 200, true},
	{"retire", "/snapshots/retire", `{"name":"s1","reason":"done"}`, `{"name":"s1","reason":"other"}`, 200, true},
	{"commit", "/commit", `{"manifest":{"run":1},"content_digest_uri":"` + zeroDigest + `"}`,
		`{"manifest":{"run":2},"content_digest_uri":"` + zeroDigest + `","replace":true}`, 200, false},
	{"restore", "/restore", `{"destination_id":"r1","at_snapshot":"s1"}`, `{"destination_id":"r2","at_snapshot":"s1"}`, 200, true},
}

// keyedSetup makes workbench w of agent with a file, and snapshot s1 when tc needs it.
func keyedSetup(t *testing.T, url, agent string, tc keyedRoute) string {
	t.Helper()
	b := url + "/v1/agents/" + agent + "/workbenches/w"
	expect(t, do(t, "PUT", b+"/files/input/x", strings.NewReader("x")), 201, "")
	if tc.needsSnapshot {
		expect(t, do(t, "POST", b+"/snapshots", strings.NewReader(`{"name":"s1"}`)), 201, "")
	}
	return b
}

// sameAnswer fails unless again is first answered again: the same status and JSON, but
// idempotent_replay (commit and restore have it) true in the replay.
func sameAnswer(t *testing.T, what string, first, again response) {
	t.Helper()
	if again.status != first.status {
		t.Fatalf("%s: the retry answers %d %s, the first %d %s", what, again.status, again.body, first.status, first.body)
	}
	a, b := clone(first.json), clone(again.json)
	if _, ok := a["idempotent_replay"]; ok {
		if b["idempotent_replay"] != true {
			t.Fatalf("%s: the retry answers idempotent_replay %v, want true: %s", what, b["idempotent_replay"], again.body)
		}
		a["idempotent_replay"], b["idempotent_replay"] = nil, nil
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: the retry answers\n%s\nthe first\n%s", what, again.body, first.body)
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// keyRefusal is how a file write refuses its Idempotency-Key sent again with another body.
func keyRefusal(t *testing.T, url string) response {
	t.Helper()
	f := url + "/v1/agents/a/workbenches/fw/files/input/f"
	expect(t, do(t, "PUT", f, strings.NewReader("one"), "Idempotency-Key", "fw-1"), 201, "")
	r := do(t, "PUT", f, strings.NewReader("two"), "Idempotency-Key", "fw-1")
	expect(t, r, 400, workbench.CodeInvalidArguments)
	if d, _ := r.json["details"].(map[string]any); d["field"] != "idempotency_key" {
		t.Fatalf("a file write's refusal of its key: %s", r.body)
	}
	return r
}

// The tool routes that change state keep an Idempotency-Key as file writes do: a retry
// with the same key and body answers the first answer and changes nothing again; the key
// with another body is refused exactly as a file write refuses it, and changes nothing.
func TestToolRoutesKeepAnIdempotencyKey(t *testing.T) {
	for _, tc := range keyedRoutes {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t)
			refusal := keyRefusal(t, srv.URL)
			b := keyedSetup(t, srv.URL, "a", tc)
			first := do(t, "POST", b+tc.route, strings.NewReader(tc.body), "Idempotency-Key", "k-1")
			expect(t, first, tc.status, "")
			if r, ok := first.json["idempotent_replay"]; ok && r != false {
				t.Fatalf("the first answer: %s", first.body)
			}
			again := do(t, "POST", b+tc.route, strings.NewReader(tc.body), "Idempotency-Key", "k-1")
			sameAnswer(t, "POST "+tc.route, first, again)
			other := do(t, "POST", b+tc.route, strings.NewReader(tc.other), "Idempotency-Key", "k-1")
			if other.status != refusal.status || !reflect.DeepEqual(other.json, refusal.json) {
				t.Fatalf("the key with another body: %d %s, want a file write's refusal %d %s", other.status, other.body, refusal.status, refusal.body)
			}
			checkOneEffect(t, srv.URL, b, tc, first)
		})
	}
}

// checkOneEffect checks that tc's route, sent twice under one key and once with another
// body under it, changed what the first request changed and nothing more.
func checkOneEffect(t *testing.T, url, b string, tc keyedRoute, first response) {
	t.Helper()
	snaps := do(t, "GET", b+"/snapshots", nil)
	expectOK(t, snaps)
	list, _ := snaps.json["snapshots"].([]any)
	switch tc.name {
	case "snapshot":
		if len(list) != 1 || list[0].(map[string]any)["name"] != "s9" {
			t.Fatalf("snapshots after the retries: %s, want s9 alone", snaps.body)
		}
	case "renew", "retire":
		s1 := list[0].(map[string]any)
		if len(list) != 1 || s1["lease_expires_at"] != first.json["lease_expires_at"] || s1["state"] != first.json["state"] {
			t.Fatalf("s1 after the retries: %s, want it as the first answer left it: %s", snaps.body, first.body)
		}
	case "commit":
		c := do(t, "GET", b+"/commits", nil)
		expectOK(t, c)
		if c.json["commit_count"] != float64(1) {
			t.Fatalf("commits after the retries: %s, want one", c.body)
		}
	case "restore":
		expect(t, do(t, "GET", url+"/v1/agents/a/workbenches/r1", nil), 200, "")
		expect(t, do(t, "GET", url+"/v1/agents/a/workbenches/r2", nil), 404, "NotFound")
	}
}

// An Idempotency-Key is scoped to the agent root and the principal: another principal's
// request, or one in another root, under the same key is its own request (the same body
// runs again, another body is not refused), never an answer kept for someone else.
func TestToolRouteKeysAreScopedToRootAndPrincipal(t *testing.T) {
	for _, tc := range keyedRoutes {
		t.Run(tc.name, func(t *testing.T) {
			s := newAttribServer(t, workbench.Config{}, rest.Options{})
			b := keyedSetup(t, s.URL, "a", tc)
			first := do(t, "POST", b+tc.route, strings.NewReader(tc.body), "Idempotency-Key", "k-1", asHeader, "alice")
			expect(t, first, tc.status, "")
			expect(t, do(t, "POST", b+tc.route, strings.NewReader(tc.other), "Idempotency-Key", "k-1", asHeader, "bob"), tc.status, "")
			bOther := keyedSetup(t, s.URL, "b", tc)
			inB := do(t, "POST", bOther+tc.route, strings.NewReader(tc.other), "Idempotency-Key", "k-1", asHeader, "alice")
			expect(t, inB, tc.status, "")
			p, _ := inB.json["path"].(string)
			if tc.name == "restore" {
				p, _ = inB.json["destination_path"].(string)
			}
			if !strings.HasPrefix(p, "/agents/b/") {
				t.Fatalf("root b under root a's key: %s", inB.body)
			}
		})
	}
	// The same body from another principal mints a snapshot of its own.
	s := newAttribServer(t, workbench.Config{}, rest.Options{})
	b := keyedSetup(t, s.URL, "a", keyedRoutes[0])
	for _, who := range []string{"alice", "bob", "alice"} {
		expect(t, do(t, "POST", b+"/snapshots", strings.NewReader(`{}`), "Idempotency-Key", "k-1", asHeader, who), 201, "")
	}
	if r := do(t, "GET", b+"/snapshots", nil); r.json["snapshot_count"] != float64(2) {
		t.Fatalf("snapshots of alice twice and bob once under one key: %s, want 2", r.body)
	}
}

// Without an Idempotency-Key the routes run again as before: a second mint mints a second
// snapshot, a second retire answers retired false.
func TestToolRoutesWithoutAKeyRunAgain(t *testing.T) {
	srv := newServer(t)
	b := keyedSetup(t, srv.URL, "a", keyedRoute{needsSnapshot: true})
	for range 2 {
		expect(t, do(t, "POST", b+"/snapshots", strings.NewReader(`{"ttl_days":3}`)), 201, "")
	}
	if r := do(t, "GET", b+"/snapshots", nil); r.json["snapshot_count"] != float64(3) {
		t.Fatalf("snapshots: %s, want s1 and two more", r.body)
	}
	for _, want := range []bool{true, false} {
		r := do(t, "POST", b+"/snapshots/retire", strings.NewReader(`{"name":"s1"}`))
		expect(t, r, 200, "")
		if r.json["retired"] != want {
			t.Fatalf("retire: %s, want retired %v", r.body, want)
		}
	}
}

// A retry whose first answer was lost: the first request ran through the workbench layer
// (its answer reached no client), then what it made changed (the snapshot renewed, the
// workbench written, the restore's source deleted); the retry over REST under the same
// key, as the same principal, answers what the first answered and changes nothing.
func TestToolRouteRetryAfterALostAnswerAnswersTheFirst(t *testing.T) {
	for _, tc := range keyedRoutes {
		t.Run(tc.name, func(t *testing.T) {
			s := newAttribServer(t, workbench.Config{}, rest.Options{})
			b := keyedSetup(t, s.URL, "a", tc)
			ctx := auth.WithPrincipal(t.Context(), auth.Principal{ID: "alice", AllAgents: true, Scopes: auth.Scopes})
			lost, err := runDirect(ctx, s.node.Service.Lifecycle, tc)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.name {
			case "snapshot":
				expect(t, do(t, "POST", b+"/snapshots/renew", strings.NewReader(`{"name":"s9","ttl_days":40}`)), 200, "")
			case "commit":
				expect(t, do(t, "PUT", b+"/files/input/y", strings.NewReader("y")), 201, "")
			case "restore":
				expect(t, do(t, "DELETE", b, nil), 200, "")
			}
			again := do(t, "POST", b+tc.route, strings.NewReader(tc.body), "Idempotency-Key", "k-1", asHeader, "alice")
			first := response{status: tc.status, json: asJSON(t, lost)}
			first.body, _ = json.Marshal(first.json)
			sameAnswer(t, "POST "+tc.route+" after the lost answer", first, again)
			if tc.name == "commit" {
				if c := do(t, "GET", b+"/commits", nil); c.json["commit_count"] != float64(1) {
					t.Fatalf("commits: %s, want one", c.body)
				}
			}
		})
	}
}

// runDirect runs tc's request through the workbench layer under request id k-1.
func runDirect(ctx context.Context, l *workbench.Lifecycle, tc keyedRoute) (workbench.Result, error) {
	switch tc.name {
	case "snapshot":
		return runKeyed(ctx, tc.body, func(in *workbench.SnapshotInput) { in.ID = "w" }, l.Snapshot)
	case "renew":
		return runKeyed(ctx, tc.body, func(in *workbench.SnapshotRenewInput) { in.ID = "w" }, l.SnapshotRenew)
	case "retire":
		return runKeyed(ctx, tc.body, func(in *workbench.SnapshotRetireInput) { in.ID = "w" }, l.SnapshotRetire)
	case "commit":
		return runKeyed(ctx, tc.body, func(in *workbench.CommitInput) { in.ID = "w" }, l.Commit)
	}
	return runKeyed(ctx, tc.body, func(in *workbench.RestoreInput) { in.ID = "w" }, l.Restore)
}

// runKeyed decodes body into a tool's input, names workbench w in it (in) and runs it
// in root a under request id k-1.
func runKeyed[In any](ctx context.Context, body string, in func(*In),
	run func(context.Context, string, In, string) (workbench.Result, error)) (workbench.Result, error) {
	var v In
	mustDecode(body, &v)
	in(&v)
	return run(ctx, "a", v, "k-1")
}

func mustDecode(body string, in any) {
	if err := json.Unmarshal([]byte(body), in); err != nil {
		panic(err)
	}
}

// asJSON is r as its JSON answer decodes: "status" and the tool's fields.
func asJSON(t *testing.T, r workbench.Result) map[string]any {
	t.Helper()
	data, err := json.Marshal(map[string]any(r))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A commit is a replay by its identity even without a key; under a key it is still the
// key's request: a key already kept for another request (a snapshot) is refused for a
// commit whose identity is sealed, as for any other, and the key a commit was first sent
// under answers it again.
func TestACommitUnderAKeyKeptForAnotherRequestIsRefused(t *testing.T) {
	srv := newServer(t)
	refusal := keyRefusal(t, srv.URL)
	b := keyedSetup(t, srv.URL, "a", keyedRoute{})
	commit := keyedRoutes[3].body
	expect(t, do(t, "POST", b+"/commit", strings.NewReader(commit)), 200, "")
	expect(t, do(t, "POST", b+"/snapshots", strings.NewReader(`{}`), "Idempotency-Key", "k-snap"), 201, "")
	r := do(t, "POST", b+"/commit", strings.NewReader(commit), "Idempotency-Key", "k-snap")
	if r.status != refusal.status || !reflect.DeepEqual(r.json, refusal.json) {
		t.Fatalf("a sealed commit under a snapshot's key: %d %s, want %d %s", r.status, r.body, refusal.status, refusal.body)
	}
	first := do(t, "POST", b+"/commit", strings.NewReader(commit), "Idempotency-Key", "k-commit")
	expect(t, first, 200, "")
	if first.json["idempotent_replay"] != true {
		t.Fatalf("a sealed commit under a new key: %s, want its replay", first.body)
	}
	expect(t, do(t, "POST", b+"/snapshots", strings.NewReader(`{}`), "Idempotency-Key", "k-commit"), 400, workbench.CodeInvalidArguments)
	sameAnswer(t, "the commit again under its key", first, do(t, "POST", b+"/commit", strings.NewReader(commit), "Idempotency-Key", "k-commit"))
}

// A key the tool routes cannot keep (empty, or over 255 characters) is refused as file
// writes refuse it (400 naming the header) and mints nothing.
func TestToolRoutesRefuseABadIdempotencyKey(t *testing.T) {
	srv := newServer(t)
	b := keyedSetup(t, srv.URL, "a", keyedRoute{})
	for _, k := range []string{"", strings.Repeat("k", 256)} {
		r := do(t, "POST", b+"/snapshots", strings.NewReader(`{}`), "Idempotency-Key", k)
		expect(t, r, 400, workbench.CodeInvalidArguments)
		if d, _ := r.json["details"].(map[string]any); d["field"] != "Idempotency-Key" {
			t.Fatalf("a snapshot under key %q: %s, want the field Idempotency-Key", k, r.body)
		}
	}
	if r := do(t, "GET", b+"/snapshots", nil); r.json["snapshot_count"] != float64(0) {
		t.Fatalf("snapshots after the refused keys: %s, want none", r.body)
	}
}
