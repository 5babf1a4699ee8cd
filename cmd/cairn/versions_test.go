package main

import (
	"strings"
	"testing"
)

// TestToolCommandsRefuseAnEmptyAgent: every command that takes --agent and --json
// (addOutputFlags) refuses --agent "" as a usage error before it sends anything; the
// server named here does not listen, so a request would fail otherwise.
func TestToolCommandsRefuseAnEmptyAgent(t *testing.T) {
	for _, args := range [][]string{
		{"diff", "w", "--from", "1"},
		{"workbench", "list"},
		{"workbench", "delete", "w"},
		{"usage"},
		{"aggregate"},
		{"catalog"},
		{"find"},
		{"propose", "w", "input/a.txt", "--text", "t"},
		{"proposals", "w"},
		{"decide", "w", "p", "accept"},
		{"search"},
		{"grep", "w", "x"},
		{"commit", "w", "--manifest", "m.json", "--content-digest", "sha256:00"},
		{"snapshot", "w"},
		{"snapshot", "create", "w"},
		{"snapshot", "renew", "w", "1"},
		{"snapshot", "retire", "w", "1"},
		{"snapshot", "list", "w"},
		{"restore", "w", "d", "--commit", "c"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, _, err := execCairn(t, append(args, "--agent", "", "--server", "http://127.0.0.1:1")...)
			if code, msg := describeError(err); code != "InvalidArguments" || !strings.Contains(msg, "--agent must not be empty") {
				t.Fatalf("cairn %s --agent \"\": %s: %s; want InvalidArguments naming --agent", strings.Join(args, " "), code, msg)
			}
		})
	}
}
