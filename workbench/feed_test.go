package workbench_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

func writeFile(t *testing.T, svc *workbench.Service, path, body string) workbench.FileResult {
	t.Helper()
	res, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
		Body: strings.NewReader(body), CreateWorkbench: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// nextEvents reads the feed until it returned n events (each wait bounded).
func nextEvents(t *testing.T, f *workbench.Feed, n int) []meta.Event {
	t.Helper()
	var out []meta.Event
	for tries := 0; len(out) < n; tries++ {
		if tries == 50 {
			t.Fatalf("got %d events, want %d: %+v", len(out), n, out)
		}
		evs, err := f.Next(t.Context(), 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
	}
	return out
}

// A Feed hands out the feed's history, then each change as the replica applies it, and
// only the matching ones.
func TestFeedFollowsChangesAsTheyApply(t *testing.T) {
	svc, _ := newService(t, 4096)
	writeFile(t, svc, "input/a", "1")
	f, err := svc.Review.Events(t.Context(), "a", nil, meta.EventFilter{Prefix: "input"})
	if err != nil {
		t.Fatal(err)
	}
	if evs := nextEvents(t, f, 1); evs[0].Path != "input/a" || evs[0].Kind != meta.EventFilePut {
		t.Fatalf("history: %+v", evs)
	}
	// Nothing new: Next waits its bound and returns nothing.
	if evs, err := f.Next(t.Context(), 50*time.Millisecond); err != nil || len(evs) != 0 {
		t.Fatalf("idle Next: %+v, %v", evs, err)
	}
	writeFile(t, svc, "outputs/skip", "x") // not below the prefix
	res := writeFile(t, svc, "input/b", "2")
	evs := nextEvents(t, f, 1)
	if evs[0].Path != "input/b" || evs[0].Generation != res.Generation || evs[0].Ordinal != 1 {
		t.Fatalf("followed: %+v (write %+v)", evs, res)
	}
	// Resuming after a received position gives what followed it, exactly.
	from := evs[0].Position
	g, err := svc.Review.Events(t.Context(), "a", &from, meta.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := g.Next(t.Context(), 50*time.Millisecond); err != nil || len(evs) != 0 {
		t.Fatalf("after the newest event: %+v, %v", evs, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := g.Next(ctx, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with an ended context: %v", err)
	}
}

// A root that does not exist and one the principal may not use answer alike (workbench/auth/doc.go); without the read scope the answer is PermissionDenied.
func TestFeedAccessAndExpiry(t *testing.T) {
	svc, _ := newService(t, 4096)
	writeFile(t, svc, "input/a", "1")
	other := auth.WithPrincipal(t.Context(), auth.Principal{ID: "k", Agents: []string{"b"}, Scopes: auth.Scopes})
	noRead := auth.WithPrincipal(t.Context(), auth.Principal{ID: "k", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeWrite}})
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		agent string
		code  string
	}{
		{"a missing root", t.Context(), "nobody", workbench.CodeNotFound},
		{"a hidden root", other, "a", workbench.CodeNotFound},
		{"no read scope", noRead, "a", workbench.CodePermissionDenied},
		{"a bad agent", t.Context(), "-x", workbench.CodeInvalidArguments},
	} {
		_, err := svc.Review.Events(tc.ctx, tc.agent, nil, meta.EventFilter{})
		if e := workbench.AsError(err); e == nil || e.Code != tc.code {
			t.Fatalf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	_, err := svc.Review.Events(other, "nobody", nil, meta.EventFilter{})
	_, err2 := svc.Review.Events(other, "a", nil, meta.EventFilter{})
	if err.Error() != strings.Replace(err2.Error(), `"a"`, `"nobody"`, 1) {
		t.Fatalf("hidden and missing roots differ: %v / %v", err, err2)
	}
	if _, err := svc.Review.Events(t.Context(), "a", nil, meta.EventFilter{Prefix: "../x"}); workbench.AsError(err).Code != workbench.CodeInvalidArguments {
		t.Fatalf("bad prefix: %v", err)
	}
}
