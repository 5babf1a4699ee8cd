package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAnIDWithASlashIsRefusedAsTyped: --workbench ../w and --agent ../a are refused
// InvalidArguments naming the id as typed, never the escape (%2F) the request would have
// carried; a raw request that does carry %2F is still answered in terms of it.
func TestAnIDWithASlashIsRefusedAsTyped(t *testing.T) {
	_, srv := testNode(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"put", "--workbench", "../w", "input/x"}, `workbench id "../w": must not contain '/'`},
		{[]string{"ls", "--agent", "../a", "--workbench", "w"}, `agent id "../a": must not contain '/'`},
		{[]string{"workbench", "delete", "w/x"}, `workbench id "w/x": must not contain '/'`},
	} {
		_, _, err := execCairnIn(t.Context(), strings.NewReader("x"), append(tc.args, "--server", srv.URL)...)
		if code, msg := describeError(err); code != "InvalidArguments" || msg != tc.msg {
			t.Errorf("cairn %s: %s: %s; want InvalidArguments: %s", strings.Join(tc.args, " "), code, msg, tc.msg)
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/v1/agents/a/workbenches/..%2Fw", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"message":"id: must not contain an escaped '/' (%2F)"`) {
		t.Fatalf("raw PUT of ..%%2Fw: %d %s", resp.StatusCode, b)
	}
}
