package mcp

import (
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestAToolWriteWhoseCommitIsUnconfirmedAnswersOutcomeUnknown: over streamable HTTP, a
// write the replica committed but could not confirm (shard.ErrTimeout) is the tool error
// OutcomeUnknown, retryable, details.outcome "unknown", never Internal; reading back shows
// whether it applied (here it did).
func TestAToolWriteWhoseCommitIsUnconfirmedAnswersOutcomeUnknown(t *testing.T) {
	n, fc := workbenchtest.NewFaulty(t, workbench.Config{InlineMaxBytes: 4096})
	cs := connectHTTP(t, newHTTPServer(t, n.Service).URL+"/v1/agents/a/mcp")
	ok(t, cs, "workbench_create", args{"id": "w"})
	fc.Once(workbenchtest.AppliedButUnconfirmed)
	e := fails(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "r.txt", "text": "done"}, workbench.CodeOutcomeUnknown)
	if e["retryable"] != true || e.details()["outcome"] != "unknown" || e.details()["retry_after_ms"] == nil {
		t.Fatalf("an unconfirmed put_file: %v", e)
	}
	if r := ok(t, cs, "workbench_read", args{"id": "w", "section": "outputs", "path": "r.txt"}); r.int(t, "total_size_bytes") != int64(len("done")) {
		t.Fatalf("the unconfirmed write applied, yet reads %v", r)
	}
}
