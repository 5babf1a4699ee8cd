package rest_test

import (
	"strings"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// A root fenced for a move between shards refuses writes with the retryable
// RoutingUnavailable (503, Retry-After), naming nothing internal, while reads go on; once
// the fence lifts the same write applies.
func TestWriteToAMovingRootIsRetryable(t *testing.T) {
	node := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	srv := serveNode(t, node)
	f := srv.URL + "/v1/agents/a/workbenches/w/files/outputs/x"
	expect(t, do(t, "PUT", f, strings.NewReader("one")), 201, "")
	ref := meta.MoveRef{Agent: "a", MoveID: "m1"}
	node.MustPropose(t, meta.MoveFence{MoveRef: ref})

	r := do(t, "PUT", f, strings.NewReader("two"), "Idempotency-Key", "k1")
	expect(t, r, 503, workbench.CodeRoutingUnavailable)
	if r.json["retryable"] != true || r.header.Get("Retry-After") == "" {
		t.Fatalf("refused write: retryable %v, Retry-After %q", r.json["retryable"], r.header.Get("Retry-After"))
	}
	for _, internal := range []string{"meta", "RootMoving", "m1", "shard 0", "Move"} {
		if strings.Contains(string(r.body), internal) {
			t.Fatalf("the refusal names %q: %s", internal, r.body)
		}
	}
	got := roundTrip(t, "GET", f, nil)
	if got.status != 200 || string(got.body) != "one" {
		t.Fatalf("read of a fenced root: %d %q", got.status, got.body)
	}

	node.MustPropose(t, meta.MoveLift{MoveRef: ref})
	expect(t, do(t, "PUT", f, strings.NewReader("two"), "Idempotency-Key", "k1"), 200, "")
	if got := roundTrip(t, "GET", f, nil); string(got.body) != "two" {
		t.Fatalf("after the fence lifted: %q", got.body)
	}
}
