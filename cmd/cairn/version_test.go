package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	for _, tt := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"a release build names its version", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3, go1.26.8"},
		{"a build from a tree names the commit", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "false"}}},
			"(devel), commit abc123 (2026-01-02T03:04:05Z), go1.26.8"},
		{"a modified tree says so", debug.BuildInfo{GoVersion: "go1.26.8",
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel), commit abc123+modified, go1.26.8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeBuild(&tt.info); got != tt.want {
				t.Errorf("describeBuild = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVersionFlagPrintsTheBuild(t *testing.T) {
	out, _, err := execCairn(t, "--version")
	if err != nil || !strings.HasPrefix(out, "cairn ") || !strings.Contains(out, "go1.") {
		t.Fatalf("cairn --version: %v, %q; want \"cairn <version>, ..., go1.N\"", err, out)
	}
}
