package bench

import (
	"errors"
	"io"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCheckToolResultReadsTheStructuredContent checks that a call's outcome is read from
// the structured content the client decoded, and from the text only without it.
func TestCheckToolResultReadsTheStructuredContent(t *testing.T) {
	text := func(s string) []sdk.Content { return []sdk.Content{&sdk.TextContent{Text: s}} }
	cases := []struct {
		name     string
		res      *sdk.CallToolResult
		wantCode string // "" for success
		wantEOF  bool
	}{
		{"success", &sdk.CallToolResult{Content: text(`{"status":"success"}`), StructuredContent: map[string]any{"status": "success", "size_bytes": 3.0}}, "", false},
		{"an error envelope", &sdk.CallToolResult{Content: text(`{"status":"error","code":"NotFound","message":"no"}`),
			StructuredContent: map[string]any{"status": "error", "code": "NotFound", "message": "no"}, IsError: true}, "NotFound", false},
		{"isError whatever the status", &sdk.CallToolResult{StructuredContent: map[string]any{"status": "success"}, IsError: true}, "", false},
		{"no status", &sdk.CallToolResult{StructuredContent: map[string]any{}}, "", false},
		{"text only", &sdk.CallToolResult{Content: text(`{"status":"success"}`)}, "", false},
		{"text only, an error", &sdk.CallToolResult{Content: text(`{"status":"error","code":"Conflict","message":"m"}`), IsError: true}, "Conflict", false},
		{"text that is no JSON object", &sdk.CallToolResult{Content: text(`not json`)}, "", true},
		{"nothing", &sdk.CallToolResult{}, "", true},
	}
	for _, c := range cases {
		err := checkToolResult("workbench_stat", c.res)
		var me *MCPError
		switch {
		case c.wantEOF:
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: got %v, want a result that is not a JSON object", c.name, err)
			}
		case c.name == "success" || c.name == "text only":
			if err != nil {
				t.Errorf("%s: got %v, want success", c.name, err)
			}
		case !errors.As(err, &me) || me.Code != c.wantCode || me.Tool != "workbench_stat":
			t.Errorf("%s: got %v, want an MCPError with code %q", c.name, err, c.wantCode)
		}
	}
}
