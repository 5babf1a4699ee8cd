package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
)

func TestTheLeanStatLaneStatsTheScenariosFiles(t *testing.T) {
	rep, _ := runScenario(t, ScenarioStat, func(c *Config) { c.LeanHTTP = true; c.Files = 4 })
	if !rep.Params.LeanHTTP {
		t.Error("the report's parameters do not say the run used the lean client")
	}
}

// The lean lane checks every answer as Stat would: a missing file, or one whose size is
// not the scenario's, is a failed operation naming what was wrong.
func TestTheLeanStatLaneRefusesAWrongAnswer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Server, cfg.Agent, cfg.Workbench, cfg.Scenario = newNode(t), "bench", "w-lean", ScenarioStat
	cfg.LeanHTTP, cfg.SizeBytes = true, 8
	c := client.New(cfg.Server, nil)
	if _, err := c.PutFile(t.Context(), cfg.Agent, cfg.Workbench, "input/a b/f", bytes.NewReader(make([]byte, 8)), client.PutOptions{Size: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutFile(t.Context(), cfg.Agent, cfg.Workbench, "input/short", bytes.NewReader(make([]byte, 7)), client.PutOptions{Size: 7}); err != nil {
		t.Fatal(err)
	}
	l, err := newLeanStat(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.stat(t.Context(), "input/a b/f"); err != nil {
		t.Errorf("a file of the scenario's size, at a path to escape: %v", err)
	}
	for path, want := range map[string]string{
		"input/missing": "status 404",
		"input/short":   "Content-Length 7",
	} {
		if err := l.stat(t.Context(), path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("stat %s: %v, want an error saying %q", path, err, want)
		}
	}
}

// The MCP lean lane reads an answer as checkToolResult reads the go-sdk's: the response
// to its own request, a tool's error envelope as an *MCPError with its code, and anything
// else as a failed call naming what was wrong.
func TestReadToolAnswer(t *testing.T) {
	for _, c := range []struct {
		name, body string
		wantCode   string // an *MCPError with this code; "" with want "" is success
		want       string // a plain error saying this
	}{
		{"success", `{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"status":"success","size_bytes":3},"isError":false}}`, "", ""},
		{"an error envelope", `{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"status":"error","code":"NotFound","message":"no"},"isError":true}}`, "NotFound", ""},
		{"isError whatever the status", `{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"status":"success"},"isError":true}}`, "", "MCPError"},
		{"no status", `{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{}}}`, "", "MCPError"},
		{"another request's answer", `{"jsonrpc":"2.0","id":8,"result":{"structuredContent":{"status":"success"}}}`, "", "another request"},
		{"no id", `{"jsonrpc":"2.0","result":{"structuredContent":{"status":"success"}}}`, "", "another request"},
		{"a JSON-RPC error", `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad params"}}`, "", "JSON-RPC error -32602: bad params"},
		{"no structured content", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{}"}]}}`, "", "no structured content"},
		{"not JSON", `<html>`, "", "not JSON-RPC"},
	} {
		err := readToolAnswer("workbench_stat", 7, []byte(c.body))
		var me *MCPError
		switch {
		case c.wantCode == "" && c.want == "":
			if err != nil {
				t.Errorf("%s: %v, want success", c.name, err)
			}
		case c.want == "MCPError" || c.wantCode != "":
			if !errors.As(err, &me) || me.Code != c.wantCode || me.Tool != "workbench_stat" {
				t.Errorf("%s: %v, want an MCPError with code %q", c.name, err, c.wantCode)
			}
		case err == nil || errors.As(err, &me) || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// Against a node, the MCP lean lane's call of a missing file is the tool's NotFound, and
// a call the server refuses at the protocol level (a header that names another tool than
// the body) is a failed call, not a success.
func TestTheLeanMCPLaneRefusesAWrongAnswer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Server, cfg.Agent, cfg.Workbench, cfg.Scenario = newNode(t), "bench", "w-lean", ScenarioMCP
	cfg.LeanHTTP = true
	if _, err := client.New(cfg.Server, nil).CreateWorkbench(t.Context(), cfg.Agent, cfg.Workbench); err != nil {
		t.Fatal(err)
	}
	l, err := newLeanMCP(cfg, 1, newMCPSessions(cfg.Server, cfg.Agent, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.connect(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"id": cfg.Workbench, "section": "input", "path": "missing.txt"}
	var me *MCPError
	if err := l.call(t.Context(), "workbench_stat", args); !errors.As(err, &me) || me.Code != "NotFound" {
		t.Errorf("stat of a missing file: %v, want the tool's NotFound", err)
	}
	if err := l.call(t.Context(), "workbench_list", map[string]any{"id": cfg.Workbench}); err != nil {
		t.Errorf("list of the workbench: %v", err)
	}
	l.version = "1999-01-01"
	if err := l.call(t.Context(), "workbench_list", map[string]any{"id": cfg.Workbench}); err == nil || errors.As(err, &me) {
		t.Errorf("a call with a protocol version the server does not speak: %v, want a failed call", err)
	}
}
