package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// fallbackFlag is the opt-out of the snapshot fallback of the commands that list a whole
// directory or tree (ls, export, import): with it, a workbench that keeps changing while
// it is listed fails the command as it did before the fallback existed.
const fallbackFlag = "no-snapshot-fallback"

// addFallbackFlag registers --no-snapshot-fallback on cmd; true in the result disables
// the fallback.
func addFallbackFlag(cmd *cobra.Command) *bool {
	off := new(bool)
	cmd.Flags().BoolVar(off, fallbackFlag, false,
		"fail when the workbench keeps changing while it is listed, instead of reading it at a snapshot taken for the command")
	return off
}

// fallbackHelp is the help text's paragraph on the fallback; what is the command's
// reading ("ls lists", "export exports").
func fallbackHelp(what string) string {
	return "If the workbench keeps changing while it is listed (a write lands between the pages of\n" +
		"each of " + fmt.Sprint(client.ListingAttempts) + " listings), " + what + " it at a snapshot taken for the purpose instead\n" +
		"(lease 1 day, retired when the command ends, whatever the outcome; one line on stderr\n" +
		"names it): one consistent image. Taking it needs workspace:write and a free slot of\n" +
		"the workbench's snapshot quota; without them the command fails with ReadFenceChanged\n" +
		"and says why. --" + fallbackFlag + " fails at once instead."
}

// snapshotFallback is the fallback of command (the words that name it in the snapshot's
// reason and on stderr, "ls -r", "export") reading workbench wb of the agent root, or nil
// when off. say prints one line on stderr (without the "cairn: " it adds).
func snapshotFallback(off bool, command, wb string, say func(string)) *client.SnapshotFallback {
	if off {
		return nil
	}
	return &client.SnapshotFallback{
		Reason: "cairn " + command + ": a consistent listing of a workbench that kept changing",
		Taken: func(s *client.Snapshot) {
			say(fmt.Sprintf("workbench %s kept changing while it was listed; %s reads it at snapshot %d, taken for it and retired when it ends",
				displayed(wb), command, s.SnapshotID))
		},
		NotRetired: func(s *client.Snapshot, err error) {
			say(fmt.Sprintf("warning: snapshot %d of %s was not retired (%v); its lease ends it within %d day, or retire it with cairn snapshot retire %s %d",
				s.SnapshotID, displayed(wb), err, client.FallbackTTLDays, displayed(wb), s.SnapshotID))
		},
	}
}
