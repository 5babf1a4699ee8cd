package workbench_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// A condition the caller named that no longer holds fails the same way on every retry,
// so the Service answers it retryable: false whatever the surface in front (issue 25 item
// 7): a delete at a past generation, an append at a past generation, a workbench delete at
// a past revision. A surface that maps them (REST's 412) cannot be the only place that
// knows: MCP's cairn_workbench_delete and in-process callers get the Service's answer.
func TestTheServiceAnswersEveryFailedPreconditionNotRetryable(t *testing.T) {
	svc, _ := newService(t, 4096)
	ctx := t.Context()
	write := func(path, body string) uint64 {
		t.Helper()
		res, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path, Body: strings.NewReader(body), CreateWorkbench: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.Generation
	}
	past := write("input/f.txt", "one")
	write("input/f.txt", "two")
	wbs, err := svc.Lifecycle.ListWorkbenches(ctx, "a", "", 10)
	if err != nil || len(wbs.Workbenches) != 1 {
		t.Fatalf("workbenches %+v, %v", wbs, err)
	}
	rev := wbs.Workbenches[0].Revision

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"a delete at a past generation", func() error {
			_, err := svc.Writes.Delete(ctx, "a", "w", "input/f.txt", past, "")
			return err
		}},
		{"an append at a past generation", func() error {
			_, err := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "input/f.txt", Body: strings.NewReader("x"), IfGeneration: past})
			return err
		}},
		{"a workbench delete at a past revision", func() error {
			return svc.Lifecycle.DeleteWorkbench(ctx, "a", "w", rev-1, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *workbench.Error
			if err := tc.call(); !errors.As(err, &e) || e.Code != workbench.CodeConflict || e.Retryable {
				t.Fatalf("%v (%#v), want Conflict, not retryable", err, e)
			}
		})
	}
	if got := string(readAll(t, svc, "input/f.txt")); got != "two" {
		t.Fatalf("the failed preconditions changed the file: %q", got)
	}
}
