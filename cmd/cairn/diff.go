package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

func newDiffCommand() *cobra.Command {
	var (
		from, to string
		context  int
	)
	cmd := &cobra.Command{
		Use:   "diff ID [PATH] --from SIDE [--to SIDE] [--context N]",
		Short: "Show what changed between two versions of a workbench or a file",
		Long: "Compare two versions of workbench ID on the server. A SIDE is live (the workbench\n" +
			"now), generation:N (a retained version of PATH), snapshot:ID or snapshot:NAME, or\n" +
			"commit:IDENTITY (the 64-hex commit_identity); --to defaults to live.\n" +
			"With PATH: print the file's unified diff (--context lines around each change,\n" +
			"default 3; lines escaped as text, a CR before the newline as \\r); binary or\n" +
			"over-16-MiB bodies print their sizes and digests. Without PATH: print the paths\n" +
			"added (A), removed (D) or changed (M) between two states (live, snapshot, commit),\n" +
			"every page. --json prints the server's result objects, one per line.",
		Args: argsBetween(1, 2),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the old side (required)")
	cmd.Flags().StringVar(&to, "to", "live", "the new side")
	cmd.Flags().IntVar(&context, "context", 3, "file diffs: unchanged lines around each change")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if from == "" {
			return usageErrorf("--from is required")
		}
		req := client.DiffRequest{From: from, To: to}
		c, out := newClient(cmd), cmd.OutOrStdout()
		if len(args) == 2 {
			req.Path = args[1]
			if cmd.Flags().Changed("context") {
				req.Context = &context
			}
			res, err := c.Diff(cmd.Context(), o.agent, args[0], req)
			if err != nil {
				return err
			}
			if o.json {
				return printRaw(out, res.Raw)
			}
			return printFileDiff(out, res)
		}
		if cmd.Flags().Changed("context") {
			return usageErrorf("--context applies to a file diff; give PATH")
		}
		return eachPage(func(cursor string) (string, error) {
			req.Cursor = cursor
			res, err := c.Diff(cmd.Context(), o.agent, args[0], req)
			if err != nil {
				return "", err
			}
			if o.json {
				if err := printRaw(out, res.Raw); err != nil {
					return "", err
				}
			} else {
				for _, ch := range res.Changes {
					if _, err := fmt.Fprintf(out, "%s %s\n", changeLetter(ch.Change), ch.Path); err != nil {
						return "", err
					}
				}
			}
			return cursorOf(res.NextCursor), nil
		})
	}
	return cmd
}

// printFileDiff prints a file diff's unified text, or its sides' sizes and digests when
// there is none.
func printFileDiff(w io.Writer, res *client.DiffResult) error {
	if res.Text {
		_, err := io.WriteString(w, res.Unified)
		return err
	}
	var sides struct {
		From, To struct {
			SizeBytes int64  `json:"size_bytes"`
			DigestURI string `json:"digest_uri"`
		}
	}
	if err := json.Unmarshal(res.Raw, &sides); err != nil {
		return err
	}
	verb := "differ"
	if res.Identical {
		verb = "are identical"
	}
	reason := ""
	if res.Reason != nil {
		reason = *res.Reason
	}
	_, err := fmt.Fprintf(w, "no text diff (%s): bodies %s: %d bytes %s -> %d bytes %s\n", reason, verb,
		sides.From.SizeBytes, sides.From.DigestURI, sides.To.SizeBytes, sides.To.DigestURI)
	return err
}

func changeLetter(change string) string {
	switch change {
	case "added":
		return "A"
	case "removed":
		return "D"
	}
	return "M"
}
