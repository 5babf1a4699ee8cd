package client

import (
	"net/url"
	"strings"
	"testing"
)

// TestFileURLEscapesEachComponent: fileURL escapes the agent, the workbench and each path
// component on its own and joins the components with "/", as splitting, escaping and
// joining them does.
func TestFileURLEscapesEachComponent(t *testing.T) {
	tr := newTransport("http://h:1/", nil)
	for _, c := range []struct{ agent, wb, path string }{
		{"a", "w", "input/bench/list/f-000042.txt"},
		{"a b", "w/x", "input/with space/ü?#%.txt"},
		{"a", "w", ""},
		{"a", "w", "/lead//double/"},
		{"", "", "x"},
	} {
		comps := strings.Split(c.path, "/")
		for i, comp := range comps {
			comps[i] = url.PathEscape(comp)
		}
		want := "http://h:1/v1/agents/" + url.PathEscape(c.agent) + "/workbenches/" + url.PathEscape(c.wb) + "/files/" + strings.Join(comps, "/")
		if got := tr.fileURL(c.agent, c.wb, c.path); got != want {
			t.Errorf("fileURL(%q, %q, %q) = %q, want %q", c.agent, c.wb, c.path, got, want)
		}
	}
}
