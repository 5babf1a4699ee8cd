package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

// stableCodes are docs/workbench.md#errors' codes.
var stableCodes = []string{"InvalidArguments", "UnknownTool", "PayloadTooLarge", "NotFound", "NotArtifact",
	"NotDirectory", "AlreadyExists", "Conflict", "InvalidUtf8", "NoMatch", "AmbiguousEdit", "StructuredDecodeFailed",
	"ReadFenceChanged", "SnapshotNotFound", "SnapshotExpired", "ForkRetentionActive", "WorkbenchCommitConflict",
	"InvalidState", "ObjectUnavailable", "ResourceExhausted", "RoutingUnavailable", "DataCorrupted", "PermissionDenied", "Internal"}

// TestArbitraryArgumentsGetAToolResultNeverAFailure throws arbitrary argument objects at every
// tool: each call must come back as a well-formed tool result (never a protocol error, a
// panic or an Internal error), with a stable error code when it fails.
func TestArbitraryArgumentsGetAToolResultNeverAFailure(t *testing.T) {
	svc := newService(t, 1024)
	cs := connectInMemory(t, svc, "fuzz")
	var names []string
	for _, d := range tools {
		names = append(names, d.name)
	}
	strs := rapid.OneOf(
		rapid.SampledFrom([]string{"", "w", "w2", "input", "logs", "metadata", "secrets", "../x", "a//b", "/abs", "logs/x",
			"run_manifest.json", "x.json", "x.yaml", "d/x.txt", "d", "a\x00b", `a\b`, "é", strings.Repeat("a", 200),
			"{", "[1,2]", "x: .nan", "k: v", "line\nline", "structured", "bytes", "YQ==", "!!", "sha256:00"}),
		rapid.String(),
	)
	value := rapid.Deferred(func() *rapid.Generator[any] {
		return rapid.OneOf(
			rapid.Just[any](nil),
			rapid.Map(rapid.Bool(), func(b bool) any { return b }),
			rapid.Map(rapid.Int64Range(-3, 400), func(n int64) any { return n }),
			rapid.Map(rapid.SampledFrom([]float64{0.5, 1.0, 1e30, -1e30, 2.0, 1e2}), func(f float64) any { return f }),
			rapid.Map(strs, func(s string) any { return s }),
			rapid.Map(rapid.SliceOfN(strs, 0, 3), func(s []string) any { return s }),
			rapid.Map(rapid.MapOfN(strs, rapid.Int64Range(0, 3), 0, 2), func(m map[string]int64) any { return m }),
		)
	})
	tally := map[string]int{} // outcomes, logged to show what the inputs reached
	defer func() { t.Log(tally) }()
	rapid.Check(t, func(rt *rapid.T) {
		tool := rapid.SampledFrom(append(slices.Clone(names), "workbench_grep")).Draw(rt, "tool")
		var props []string
		if ts, ok := mustSchemaOK(tool); ok {
			props = sortedKeys(ts.schema.Properties)
		}
		a := map[string]any{
			"id":      rapid.SampledFrom([]string{"w", "w2"}).Draw(rt, "id"),
			"section": rapid.SampledFrom([]string{"input", "logs", "metadata"}).Draw(rt, "section"),
			"path":    rapid.SampledFrom([]string{"x.json", "x.yaml", "d/x.txt", "d"}).Draw(rt, "path"),
		}
		switch tool {
		case "workbench_put_file", "workbench_append":
			a["text"] = strs.Draw(rt, "text")
		case "workbench_edit":
			a["old_string"], a["new_string"] = strs.Draw(rt, "old"), strs.Draw(rt, "new")
		}
		for _, k := range rapid.SliceOfN(rapid.SampledFrom(append(props, "bogus")), 0, 2).Draw(rt, "keys") {
			a[k] = value.Draw(rt, k)
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: a})
		if err != nil {
			rt.Fatalf("%s %v: protocol error %v", tool, a, err)
		}
		if len(res.Content) != 1 {
			rt.Fatalf("%s: %d contents", tool, len(res.Content))
		}
		text := res.Content[0].(*sdk.TextContent).Text
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil || !strings.HasPrefix(text, `{"status":`) {
			rt.Fatalf("%s: malformed result %.200s", tool, text)
		}
		if res.IsError {
			code, _ := out["code"].(string)
			tally[code]++
			if !slices.Contains(stableCodes, code) || code == "Internal" {
				rt.Fatalf("%s %v: code %q: %v", tool, a, code, out["message"])
			}
			return
		}
		tally["success"]++
		if out["status"] != "success" {
			rt.Fatalf("%s: status %v without isError", tool, out["status"])
		}
	})
}

func mustSchemaOK(tool string) (*toolSchema, bool) {
	all, err := loadSchemas()
	if err != nil {
		return nil, false
	}
	s, ok := all[tool]
	return s, ok
}
