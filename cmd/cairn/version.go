package main

import (
	"runtime/debug"
	"strings"
)

// buildVersion describes the binary from the build information Go records in it
// (runtime/debug.ReadBuildInfo): the module version ("(devel)" for a build from a
// working tree), the VCS commit and its time, "+modified" when the tree had changes,
// and the Go version. "unknown" when the binary carries no build information.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return describeBuild(info)
}

func describeBuild(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	parts := []string{version}
	if rev := settings["vcs.revision"]; rev != "" {
		commit := "commit " + rev
		if settings["vcs.modified"] == "true" {
			commit += "+modified"
		}
		if t := settings["vcs.time"]; t != "" {
			commit += " (" + t + ")"
		}
		parts = append(parts, commit)
	}
	parts = append(parts, info.GoVersion)
	return strings.Join(parts, ", ")
}
