package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lost update NoKV PR #491 closes: two writers read generation N and both replace the
// file at N. With expected_generation exactly one applies; the other is told the file's
// current generation, and the winner's bytes are what the file holds.
func TestPutFileExpectedGenerationLetsOneOfTwoRacingWritersWin(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	writers := []*sdk.ClientSession{connectHTTP(t, ts.URL+"/v1/agents/a/mcp"), connectHTTP(t, ts.URL+"/v1/agents/a/mcp")}
	file := args{"id": "w", "section": "outputs", "path": "report.md"}
	ok(t, writers[0], "workbench_put_file", with(file, "text", "v1"))
	for round := range 10 {
		var n [2]int64
		for i, cs := range writers {
			n[i] = ok(t, cs, "workbench_stat", file).card().int(t, "generation")
		}
		if n[0] != n[1] {
			t.Fatalf("round %d: the writers read generations %d and %d", round, n[0], n[1])
		}
		texts := []string{fmt.Sprintf("writer 0, round %d", round), fmt.Sprintf("writer 1, round %d", round)}
		results := make([]obj, 2)
		failed := make([]bool, 2)
		var wg sync.WaitGroup
		for i, cs := range writers {
			wg.Go(func() {
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_put_file",
					Arguments: with(file, "text", texts[i], "replace", true, "expected_generation", n[i])})
				if err != nil {
					t.Errorf("writer %d: protocol error: %v", i, err)
					return
				}
				results[i], failed[i] = decodeResult(res), res.IsError
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if failed[0] == failed[1] {
			t.Fatalf("round %d: writer 0 failed %v (%v), writer 1 failed %v (%v); want exactly one to apply",
				round, failed[0], results[0], failed[1], results[1])
		}
		win, lose := 0, 1
		if failed[0] {
			win, lose = 1, 0
		}
		gen := results[win].int(t, "generation")
		if gen <= n[win] {
			t.Errorf("round %d: the winner's generation %d is not past %d", round, gen, n[win])
		}
		if e := results[lose]; e["code"] != "Conflict" || e["retryable"] != false || e.details().int(t, "current_generation") != gen {
			t.Errorf("round %d: the loser got %v, want Conflict with details.current_generation %d", round, e, gen)
		}
		r := ok(t, writers[lose], "workbench_read", file)
		if got := r.list(t, "items")[0]["value"]; got != texts[win] {
			t.Errorf("round %d: the file holds %q, want the winner's %q", round, got, texts[win])
		}
	}
}

func TestPutFileExpectedGenerationRules(t *testing.T) {
	cs := connectInMemory(t, newService(t, 0), "a")
	file := args{"id": "w", "section": "input", "path": "x.txt"}
	gen := ok(t, cs, "workbench_put_file", with(file, "text", "one")).int(t, "generation")

	t.Run("a stale generation is Conflict naming the current one, and nothing changes", func(t *testing.T) {
		e := fails(t, cs, "workbench_put_file", with(file, "text", "two", "replace", true, "expected_generation", gen+1000), "Conflict")
		if e["retryable"] != false {
			t.Errorf("a stale expected_generation answered retryable %v: retrying cannot succeed", e["retryable"])
		}
		if e.details().int(t, "current_generation") != gen {
			t.Errorf("details %v, want current_generation %d", e.details(), gen)
		}
		if got := ok(t, cs, "workbench_stat", file).card().int(t, "generation"); got != gen {
			t.Errorf("generation %d after a refused write, want %d", got, gen)
		}
	})
	t.Run("the current generation applies", func(t *testing.T) {
		r := ok(t, cs, "workbench_put_file", with(file, "text", "two", "replace", true, "expected_generation", gen))
		if r.int(t, "generation") <= gen || r["replace"] != true {
			t.Errorf("result %v", r)
		}
	})
	t.Run("without replace it is InvalidArguments", func(t *testing.T) {
		invalid(t, cs, "workbench_put_file", with(file, "path", "new.txt", "text", "x", "expected_generation", gen), "expected_generation")
		invalid(t, cs, "workbench_put_file", with(file, "path", "new.txt", "text", "x", "replace", false, "expected_generation", gen), "expected_generation")
		fails(t, cs, "workbench_stat", with(file, "path", "new.txt"), "NotFound")
	})
	t.Run("zero, negative and fractional values are InvalidArguments", func(t *testing.T) {
		for _, v := range []any{0, -1, 1.5, "1"} {
			invalid(t, cs, "workbench_put_file", with(file, "text", "x", "replace", true, "expected_generation", v), "expected_generation")
		}
	})
	t.Run("on a missing file it is NotFound", func(t *testing.T) {
		fails(t, cs, "workbench_put_file", with(file, "path", "gone.txt", "text", "x", "replace", true, "expected_generation", gen), "NotFound")
	})
}

// with returns a copy of base with the key/value pairs kv set.
func with(base args, kv ...any) args {
	out := args{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// decodeResult decodes a tool result's text content (numbers as json.Number); nil when it
// has none. Unlike call it never stops the test, so goroutines may use it.
func decodeResult(res *sdk.CallToolResult) obj {
	if len(res.Content) != 1 {
		return nil
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text.Text)))
	dec.UseNumber()
	var out obj
	if dec.Decode(&out) != nil {
		return nil
	}
	return out
}
