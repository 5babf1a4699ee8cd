package rest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Fork, merge and discard over REST, every request and answer checked against the
// OpenAPI document: a live fork, a write on each side and one on both, a preview naming
// the change and the conflict, an apply (idempotent under Idempotency-Key) whose files
// read back byte for byte, the conflict kept; then the fork discarded.
func TestForkAndMergeOverREST(t *testing.T) {
	c := newChecker(t)
	wb, fk := "/v1/agents/a1/workbenches/w1", "/v1/agents/a1/workbenches/f1"
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r1\n"), 201, "")
	expect(t, c.call(true, "PUT", wb+"/files/outputs/x.txt", "x1\n"), 201, "")
	f := c.post(true, wb+"/fork", `{"fork":"f1"}`)
	expect(t, f, 200, "")
	if f.json["parent_id"] != "w1" || f.json["pinned_snapshot_id"] == nil {
		t.Fatalf("fork = %s", f.body)
	}
	expect(t, c.call(true, "PUT", fk+"/files/outputs/r.txt", "r2\n"), 200, "")
	expect(t, c.call(true, "PUT", fk+"/files/outputs/x.txt", "x-fork\n"), 200, "")
	expect(t, c.call(true, "PUT", wb+"/files/outputs/x.txt", "x-parent\n"), 200, "")
	p := c.post(true, fk+"/merge", `{"dry_run":true}`)
	expect(t, p, 200, "")
	if got := fmt.Sprint(p.json["counts"]); got != "map[added:0 changed:1 conflicts:1 removed:0]" {
		t.Fatalf("preview counts = %s: %s", got, p.body)
	}
	apply := fmt.Sprintf(`{"token":%q}`, p.json["token"])
	a := c.call(true, "POST", fk+"/merge", apply, "Content-Type", "application/json", "Idempotency-Key", "m-1")
	expect(t, a, 200, "")
	again := c.call(true, "POST", fk+"/merge", apply, "Content-Type", "application/json", "Idempotency-Key", "m-1")
	expect(t, again, 200, "")
	if again.json["replayed"] != true || again.json["generation"] != a.json["generation"] {
		t.Fatalf("retry = %s, want the first apply %s replayed", again.body, a.body)
	}
	for path, want := range map[string]string{"outputs/r.txt": "r2\n", "outputs/x.txt": "x-parent\n"} {
		if r := c.call(true, "GET", wb+"/files/"+path, ""); string(r.body) != want {
			t.Fatalf("%s after the merge = %q, want %q", path, r.body, want)
		}
	}
	// A fork retried under its Idempotency-Key answers the first; the key with another
	// fork is refused.
	k1 := c.call(true, "POST", wb+"/fork", `{"fork":"k1"}`, "Content-Type", "application/json", "Idempotency-Key", "f-1")
	k2 := c.call(true, "POST", wb+"/fork", `{"fork":"k1"}`, "Content-Type", "application/json", "Idempotency-Key", "f-1")
	expect(t, k2, 200, "")
	if k1.json["replayed"] != false || k2.json["replayed"] != true || k2.json["pinned_snapshot_id"] != k1.json["pinned_snapshot_id"] {
		t.Fatalf("fork %s, retried under its key %s", k1.body, k2.body)
	}
	expect(t, c.call(false, "POST", wb+"/fork", `{"fork":"k2"}`, "Content-Type", "application/json", "Idempotency-Key", "f-1"), 400, "InvalidArguments")
	expect(t, c.post(false, wb+"/fork", `{"fork":"a/b"}`), 400, "InvalidArguments")
	expect(t, c.post(false, wb+"/merge", `{"dry_run":true}`), 400, "InvalidArguments")
	expect(t, c.post(false, fk+"/merge", `{}`), 400, "InvalidArguments")
	// Discard takes no arguments: one sent (a preview it does not have) is refused and
	// the fork stays.
	expect(t, c.post(false, fk+"/discard", `{"dry_run":true}`), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", fk, ""), 200, "")
	d := c.call(true, "POST", fk+"/discard", "", "Idempotency-Key", "d-1")
	expect(t, d, 200, "")
	if d.json["retired_snapshot_id"] != f.json["pinned_snapshot_id"] || d.json["replayed"] != false {
		t.Fatalf("discard = %s, want the pin %v retired", d.body, f.json["pinned_snapshot_id"])
	}
	again = c.call(true, "POST", fk+"/discard", "", "Idempotency-Key", "d-1")
	expect(t, again, 200, "")
	if again.json["replayed"] != true || again.json["deleted"] != true {
		t.Fatalf("the discard retried under its key = %s, want it replayed", again.body)
	}
	expect(t, c.call(false, "POST", fk+"/discard", "", "Idempotency-Key", "d-2"), 404, "NotFound")
	expect(t, c.call(false, "GET", fk+"/files/outputs/r.txt", ""), 404, "NotFound")
}

// Another tenant's fork answers merge and discard like a missing one, byte for byte.
func TestForkOfAnotherTenantAnswersLikeAMissingOne(t *testing.T) {
	srv := twoTenantServer(t)
	expect(t, do(t, "PUT", srv.URL+"/v1/agents/a/workbenches/w/files/x.txt", strings.NewReader("x")), 201, "")
	expect(t, do(t, "POST", srv.URL+"/v1/agents/a/workbenches/w/fork", strings.NewReader(`{"fork":"f"}`), "Content-Type", "application/json"), 200, "")
	for _, op := range []string{"merge", "discard"} {
		body := map[string]string{"merge": `{"dry_run":true}`, "discard": `{}`}[op] // discard takes no arguments
		as := func(agent string) response {
			return do(t, "POST", srv.URL+"/v1/agents/"+agent+"/workbenches/f/"+op,
				strings.NewReader(body), "Content-Type", "application/json", "X-Tenant", "other")
		}
		hidden, missing := as("a"), as("nobody")
		expect(t, hidden, 404, "NotFound")
		if strings.ReplaceAll(string(hidden.body), `\"a\"`, `\"nobody\"`) != string(missing.body) {
			t.Fatalf("%s: another tenant's fork answers %s, a missing root %s", op, hidden.body, missing.body)
		}
	}
}

// Every route of the attempts reads its arguments the same way (rest.attempt): a key of
// 256 characters is refused, naming the header, before anything is made — the fork
// included, which took no key before.
func TestAttemptsRoutesRefuseABadIdempotencyKeyAlike(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r1\n"), 201, "")
	long := strings.Repeat("k", 256)
	for op, body := range map[string]string{"fork": `{"fork":"f1"}`, "merge": `{"dry_run":true}`,
		"rewind": `{"target":"time:0","dry_run":true}`, "discard": `{}`} {
		r := c.call(false, "POST", wb+"/"+op, body, "Content-Type", "application/json", "Idempotency-Key", long)
		expect(t, r, 400, "InvalidArguments")
		if !strings.Contains(string(r.body), "Idempotency-Key") {
			t.Fatalf("%s with a 256-character key = %s, want the header named", op, r.body)
		}
	}
	expect(t, c.call(false, "GET", "/v1/agents/a1/workbenches/f1", ""), 404, "NotFound")
}

// A merge retried under its Idempotency-Key after the parent wrote a path the first apply
// merged answers the first apply: that path is not reported as a conflict (the first took
// the fork's side there) and, asked to propose conflicts, the retry proposes nothing.
func TestAMergeReplayDoesNotReportWhatTheParentWroteSince(t *testing.T) {
	c := newChecker(t)
	wb, fk := "/v1/agents/a1/workbenches/w1", "/v1/agents/a1/workbenches/f1"
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r1\n"), 201, "")
	expect(t, c.post(true, wb+"/fork", `{"fork":"f1"}`), 200, "")
	expect(t, c.call(true, "PUT", fk+"/files/outputs/r.txt", "r-fork\n"), 200, "")
	p := c.post(true, fk+"/merge", `{"dry_run":true}`)
	expect(t, p, 200, "")
	apply := fmt.Sprintf(`{"token":%q,"propose_conflicts":true}`, p.json["token"])
	a := c.call(true, "POST", fk+"/merge", apply, "Content-Type", "application/json", "Idempotency-Key", "m-1")
	expect(t, a, 200, "")
	if got := fmt.Sprint(a.json["counts"]); got != "map[added:0 changed:1 conflicts:0 removed:0]" {
		t.Fatalf("apply counts = %s: %s", got, a.body)
	}
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r-parent-later\n"), 200, "")
	// The retry previews again, as `cairn merge --yes` does, and applies under the same key.
	p = c.post(true, fk+"/merge", `{"dry_run":true}`)
	expect(t, p, 200, "")
	apply = fmt.Sprintf(`{"token":%q,"propose_conflicts":true}`, p.json["token"])
	again := c.call(true, "POST", fk+"/merge", apply, "Content-Type", "application/json", "Idempotency-Key", "m-1")
	expect(t, again, 200, "")
	if again.json["replayed"] != true || again.json["generation"] != a.json["generation"] ||
		fmt.Sprint(again.json["counts"]) != fmt.Sprint(a.json["counts"]) || fmt.Sprint(again.json["conflicts"]) != "[]" {
		t.Fatalf("retry = %s, want the first apply %s replayed", again.body, a.body)
	}
	props := c.call(true, "GET", wb+"/proposals", "")
	expect(t, props, 200, "")
	if list, _ := props.json["proposals"].([]any); len(list) != 0 {
		t.Fatalf("the replay proposed %s", props.body)
	}
	if r := c.call(true, "GET", wb+"/files/outputs/r.txt", ""); string(r.body) != "r-parent-later\n" {
		t.Fatalf("outputs/r.txt after the replay = %q", r.body)
	}
}

// Live forks sent at once under one Idempotency-Key (a client retrying while its first
// attempt is still in flight) all answer the one fork the key made, the same pin, and the
// pins the others took on the way are retired: never a 500 because a racer's restore
// landed under the key first.
func TestForksRacingUnderOneKeyAllAnswerTheFirst(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r1\n"), 201, "")
	const rounds, racers = 4, 8
	for round := range rounds {
		fork, key := fmt.Sprintf("f%d", round), fmt.Sprintf("k-%d", round)
		type answer struct {
			status int
			body   map[string]any
			raw    string
		}
		answers := make([]answer, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				req, err := http.NewRequest("POST", c.url+wb+"/fork", strings.NewReader(`{"fork":"`+fork+`"}`))
				if err != nil {
					answers[i].raw = err.Error()
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answers[i].raw = err.Error()
					return
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				answers[i] = answer{status: resp.StatusCode, raw: string(raw)}
				_ = json.Unmarshal(raw, &answers[i].body)
			})
		}
		wg.Wait()
		var pin any
		for i, a := range answers {
			if a.status != http.StatusOK {
				t.Fatalf("round %d, racer %d: %d %s; want every racer answered the key's fork", round, i, a.status, a.raw)
			}
			if pin == nil {
				pin = a.body["pinned_snapshot_id"]
			}
			if a.body["fork_id"] != fork || a.body["pinned_snapshot_id"] != pin || pin == nil {
				t.Fatalf("round %d, racer %d: %s; want fork %s pinned by snapshot %v", round, i, a.raw, fork, pin)
			}
		}
		snaps := c.call(true, "GET", wb+"/snapshots", "")
		expect(t, snaps, 200, "")
		alive := 0
		for _, s := range snaps.json["snapshots"].([]any) {
			s := s.(map[string]any)
			ann, _ := s["annotation"].(map[string]any)
			md, _ := ann["metadata"].(map[string]any)
			if s["state"] == "alive" && md["pinned_by_fork"] == fork {
				alive++
				if s["snapshot_id"] != pin {
					t.Fatalf("round %d: snapshot %v pins %s alive, the fork's pin is %v", round, s["snapshot_id"], fork, pin)
				}
			}
		}
		if alive != 1 {
			t.Fatalf("round %d: %d live snapshots pin %s, want its one pin", round, alive, fork)
		}
	}
}

// A live fork's pinned base is not retired over REST while the fork lives: 409
// ForkRetentionActive (details.reason fork_base, details.fork, not retryable), and the fork
// still previews its merge; its discard then retires the pin.
func TestRetireOfALiveForksPinIsRefused(t *testing.T) {
	c := newChecker(t)
	par, kid := "/v1/agents/a1/workbenches/par", "/v1/agents/a1/workbenches/kid"
	expect(t, c.call(true, "PUT", par+"/files/outputs/r.txt", "r1\n"), 201, "")
	f := c.post(true, par+"/fork", `{"fork":"kid"}`)
	expect(t, f, 200, "")
	pin := fmt.Sprint(f.json["pinned_snapshot_id"])
	r := c.post(true, par+"/snapshots/retire", `{"snapshot_id":`+pin+`}`)
	expect(t, r, 409, "ForkRetentionActive")
	if d, _ := r.json["details"].(map[string]any); d["reason"] != "fork_base" || d["fork"] != "kid" || r.json["retryable"] != false {
		t.Fatalf("the retire of a live fork's pin = %s", r.body)
	}
	expect(t, c.post(true, kid+"/merge", `{"dry_run":true}`), 200, "")
	d := c.post(true, kid+"/discard", "")
	expect(t, d, 200, "")
	if fmt.Sprint(d.json["retired_snapshot_id"]) != pin {
		t.Fatalf("discard = %s, want the pin %s retired", d.body, pin)
	}
}

// A fork name's refusal shows the character it refuses as that character and its code
// point (escaped when it does not print), never a UTF-8 byte as the Latin-1 character of
// its value ("Ã" for é's first byte).
func TestForkNameRefusalShowsTheCharacter(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r\n"), 201, "")
	for body, want := range map[string]string{
		`{"fork":"café"}`:     `(byte 3 is 'é' U+00E9)`,
		`{"fork":"a\u202eb"}`: `(byte 1 is '\u202e' U+202E)`,
		`{"fork":"a\u0000b"}`: `(byte 1 is '\x00' U+0000)`,
	} {
		r := c.post(false, wb+"/fork", body)
		if expect(t, r, 400, "InvalidArguments"); r.json["details"].(map[string]any)["field"] != "fork" ||
			!strings.HasSuffix(r.json["message"].(string), want) {
			t.Fatalf("fork %s: %s, want a message ending %s", body, r.body, want)
		}
	}
}
