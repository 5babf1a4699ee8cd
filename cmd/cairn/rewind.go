package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

func newRewindCommand() *cobra.Command {
	var (
		req client.RewindRequest
		yes bool
	)
	cmd := &cobra.Command{
		Use:   "rewind ID --to TARGET [--prefix DIR | --path P ...] [--diff] [--yes | --token T]",
		Short: "Return a workbench's files to a snapshot, a commit or a past time, in place",
		Long: "Rewind workbench ID — all its files, those below --prefix, or the --path files —\n" +
			"to TARGET: snapshot:ID or snapshot:NAME, commit:IDENTITY, or time:T (RFC 3339 or Unix\n" +
			"milliseconds, within the root's history retention). Without --yes or --token it\n" +
			"previews: it prints the paths the rewind adds (A), removes (D) and changes (M), with\n" +
			"--diff their unified diffs, and the token that applies exactly that preview. --token T\n" +
			"applies a preview; --yes previews and applies at once. An apply is refused (Conflict)\n" +
			"when anything in the scope changed since the preview. Every rewound path becomes a new\n" +
			"version; its history keeps the old ones. --json prints the server's result objects.",
		Args: cobra.ExactArgs(1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&req.Target, "to", "", "the target (required)")
	cmd.Flags().StringVar(&req.Prefix, "prefix", "", "rewind only the files at or below this path (a directory, or one file)")
	cmd.Flags().StringArrayVar(&req.Paths, "path", nil, "rewind only this file (repeatable)")
	cmd.Flags().BoolVar(&req.FileDiffs, "diff", false, "preview: print each changed file's diff (the first 20)")
	cmd.Flags().StringVar(&req.Token, "token", "", "apply the preview that issued this token")
	cmd.Flags().BoolVar(&yes, "yes", false, "preview and apply at once")
	cmd.Flags().StringVar(&req.IdempotencyKey, "idempotency-key", "", "makes the apply safe to retry, --yes included: the same key, target and scope answer the first apply")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if req.Target == "" {
			return usageErrorf("--to is required")
		}
		if yes && req.Token != "" {
			return usageErrorf("give --yes or --token, not both")
		}
		c := newClient(cmd)
		call := func(preview bool, token string) (*client.RewindResult, error) {
			r := req
			r.DryRun, r.Token, r.FileDiffs = preview, token, req.FileDiffs && preview
			if preview {
				r.IdempotencyKey = ""
			}
			res, err := c.Rewind(cmd.Context(), o.agent, args[0], r)
			return res, sentUnderKey(r.IdempotencyKey, err)
		}
		return previewThenApply(cmd.OutOrStdout(), o, req.Token, yes, call,
			func(res *client.RewindResult) (string, json.RawMessage) { return res.Token, res.Raw }, printRewind)
	}
	return cmd
}

// previewThenApply is the flow `cairn rewind` and `cairn merge` share over call, the
// client's Rewind or Merge (a preview sends no idempotency key: it changes nothing): with a
// token it applies it; without one it previews, and with yes applies the preview's token
// at once. It prints the last answer: its raw JSON (--json, parts' raw) or its summary.
func previewThenApply[Res any](w io.Writer, o *outputFlags, token string, yes bool, call func(preview bool, token string) (*Res, error),
	parts func(*Res) (token string, raw json.RawMessage), summary func(io.Writer, *Res) error) error {
	if token == "" {
		res, err := call(true, "")
		if err != nil {
			return err
		}
		if !yes {
			return showAnswer(w, o, res, parts, summary)
		}
		token, _ = parts(res)
	}
	res, err := call(false, token)
	if err != nil {
		return withStalePaths(err)
	}
	return showAnswer(w, o, res, parts, summary)
}

// maxStalePaths is how many of a refused apply's changed paths its error line names.
const maxStalePaths = 10

// withStalePaths adds to an apply refused because paths changed since its preview
// (Conflict, details.paths) the paths themselves, which the server's message only counts.
func withStalePaths(err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "Conflict" {
		return err
	}
	list, _ := ce.Details["paths"].([]any)
	var paths []string
	for _, p := range list {
		if s, ok := p.(string); ok {
			paths = append(paths, s)
		}
	}
	if len(paths) == 0 {
		return err
	}
	named := strings.Join(paths[:min(len(paths), maxStalePaths)], ", ")
	if len(paths) > maxStalePaths {
		named += fmt.Sprintf(" and %d more", len(paths)-maxStalePaths)
	}
	return fmt.Errorf("%w (changed: %s)", err, named)
}

// showAnswer prints res: its raw JSON with --json, else its summary.
func showAnswer[Res any](w io.Writer, o *outputFlags, res *Res, parts func(*Res) (string, json.RawMessage), summary func(io.Writer, *Res) error) error {
	if o.json {
		_, raw := parts(res)
		return printRaw(w, raw)
	}
	return summary(w, res)
}

// printRewind prints a rewind's changes, their diffs, and the token or what it applied.
func printRewind(w io.Writer, res *client.RewindResult) error {
	for _, ch := range res.Changes {
		if _, err := fmt.Fprintf(w, "%s %s\n", changeLetter(ch.Change), ch.Path); err != nil {
			return err
		}
		if ch.Diff != nil && ch.Diff.Text {
			if _, err := io.WriteString(w, ch.Diff.Unified); err != nil {
				return err
			}
		}
	}
	var err error
	switch {
	case !res.Applied:
		_, err = fmt.Fprintf(w, "preview of %d change(s) to %s; apply with --token %s\n", len(res.Changes), res.Target, res.Token)
	case len(res.Changes) == 0:
		_, err = fmt.Fprintf(w, "nothing to rewind: the scope is as at %s\n", res.Target)
	default:
		_, err = fmt.Fprintf(w, "rewound %d path(s) to %s at generation %d\n", len(res.Changes), res.Target, res.Generation)
	}
	return err
}
