package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// addForkCommands adds fork, merge and discard (docs/architecture.md, "Attempts: fork and
// merge").
func addForkCommands(root *cobra.Command) {
	root.AddCommand(newForkCommand(), newMergeCommand(), newDiscardCommand())
}

func newForkCommand() *cobra.Command {
	var req client.ForkRequest
	cmd := &cobra.Command{
		Use:   "fork ID FORK [--at live|snapshot:S|commit:C] [--idempotency-key K] [--mint-key [--key-expires-at T]]",
		Short: "Make workbench FORK a zero-copy child of workbench ID, for a parallel attempt",
		Long: "Fork workbench ID into a new workbench FORK of the same agent root, at --at: live (the\n" +
			"default: the fork pins a snapshot of ID, so its base is exact and kept until the fork is\n" +
			"merged or discarded), snapshot:ID or snapshot:NAME, or commit:IDENTITY. No file body is\n" +
			"copied. Work in FORK, then `cairn merge FORK` or `cairn discard FORK`. --mint-key also\n" +
			"mints an API key bound to FORK alone, no broader than yours and stopped with it\n" +
			"(--key-expires-at: its expiry), printed once as the last line. --json prints the\n" +
			"server's result object.",
		Args: cobra.ExactArgs(2),
	}
	o := addOutputFlags(cmd)
	var keyExpiresAt string
	cmd.Flags().StringVar(&req.At, "at", "", "the base: live (default), snapshot:S or commit:C")
	cmd.Flags().StringVar(&req.IdempotencyKey, "idempotency-key", "", "makes the fork safe to retry: the same key answers the first fork")
	cmd.Flags().BoolVar(&req.MintKey, "mint-key", false, "also mint an API key bound to the fork, no broader than yours (printed once, last)")
	cmd.Flags().StringVar(&keyExpiresAt, "key-expires-at", "", "with --mint-key: when the fork's key stops working (RFC 3339; default: when yours does)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req.Fork = args[1]
		if keyExpiresAt != "" {
			t, err := parseExpiresAt("--key-expires-at", keyExpiresAt)
			if err != nil {
				return err
			}
			req.KeyExpiresAt = t
		}
		res, err := newClient(cmd).Fork(cmd.Context(), o.agent, args[0], req)
		if err != nil {
			return sentUnderKey(req.IdempotencyKey, err)
		}
		out := cmd.OutOrStdout()
		if o.json {
			return printRaw(out, res.Raw)
		}
		base := res.Base.Kind + ":"
		if res.Base.CommitID != nil {
			base += *res.Base.CommitID
		} else if res.Base.SnapshotID != nil {
			base += fmt.Sprint(*res.Base.SnapshotID)
		}
		pinned := ""
		if res.PinnedSnapshotID != nil {
			pinned = ", pinned until the fork is discarded"
		}
		if res.Replayed {
			pinned += " (already, under this idempotency key)"
		}
		if _, err = fmt.Fprintf(out, "forked %s into %s at %s%s (%d file(s))\n", res.ParentID, res.ForkID, base, pinned, res.RestoredFiles); err != nil || res.Key == nil {
			return err
		}
		printKey(out, *res.Key)
		_, err = fmt.Fprintln(out, res.Key.Secret)
		return err
	}
	return cmd
}

func newMergeCommand() *cobra.Command {
	var (
		req client.MergeRequest
		yes bool
	)
	cmd := &cobra.Command{
		Use:   "merge FORK [--yes | --token T] [--propose-conflicts] [--idempotency-key K]",
		Short: "Merge a fork back into the workbench it was forked from",
		Long: "Merge workbench FORK into its parent, three ways per path: a path only the fork changed\n" +
			"since its base is added (A), removed (D) or changed (M) in the parent; a path both changed\n" +
			"differently is a conflict (C), never overwritten. Without --yes or --token it previews:\n" +
			"it prints those lines and the token that applies exactly that preview. --token T applies a\n" +
			"preview; --yes previews and applies at once. An apply lands every change as one command,\n" +
			"refused (Conflict) when anything in the parent changed since the preview.\n" +
			"--propose-conflicts makes the apply turn each conflict into a proposal against the\n" +
			"parent's head (see `cairn proposals`). --json prints the server's result objects.",
		Args: cobra.ExactArgs(1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&req.Token, "token", "", "apply the preview that issued this token")
	cmd.Flags().BoolVar(&yes, "yes", false, "preview and apply at once")
	cmd.Flags().BoolVar(&req.ProposeConflicts, "propose-conflicts", false, "apply: make each conflict a proposal against the parent")
	cmd.Flags().StringVar(&req.IdempotencyKey, "idempotency-key", "", "makes the apply safe to retry")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if yes && req.Token != "" {
			return usageErrorf("give --yes or --token, not both")
		}
		c := newClient(cmd)
		call := func(preview bool, token string) (*client.MergeResult, error) {
			r := req
			if preview {
				r = client.MergeRequest{DryRun: true}
			}
			r.Token = token
			res, err := c.Merge(cmd.Context(), o.agent, args[0], r)
			return res, sentUnderKey(r.IdempotencyKey, err)
		}
		return previewThenApply(cmd.OutOrStdout(), o, req.Token, yes, call,
			func(res *client.MergeResult) (string, json.RawMessage) { return res.Token, res.Raw }, printMerge)
	}
	return cmd
}

// printMerge prints a merge's changes and conflicts, and the token or what it applied.
func printMerge(w io.Writer, res *client.MergeResult) error {
	for _, ch := range res.Changes {
		if _, err := fmt.Fprintf(w, "%s %s\n", changeLetter(ch.Change), ch.Path); err != nil {
			return err
		}
	}
	for _, c := range res.Conflicts {
		line := "C " + c.Path
		if c.Reason == "deleted_on_fork" || c.Reason == "deleted_on_parent" {
			line += " (" + strings.ReplaceAll(c.Reason, "_", " ") + ")"
		}
		if c.ClashWith != "" {
			line += " (clashes with " + c.ClashWith + ")"
		}
		switch {
		case c.ProposalID != "":
			line += " (proposed: " + c.ProposalID + ")"
		case c.ProposalError != "":
			line += " (not proposed: " + c.ProposalError + ")"
		case c.NotProposed != "":
			line += " (not proposed: " + c.NotProposed + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	var err error
	switch {
	case !res.Applied:
		_, err = fmt.Fprintf(w, "preview of %d change(s) and %d conflict(s) from %s into %s; apply with --token %s\n",
			len(res.Changes), len(res.Conflicts), res.ForkID, res.ParentID, res.Token)
	case len(res.Changes) == 0:
		_, err = fmt.Fprintf(w, "nothing to merge from %s into %s; %d conflict(s) left as they are\n", res.ForkID, res.ParentID, len(res.Conflicts))
	default:
		_, err = fmt.Fprintf(w, "merged %d path(s) from %s into %s at generation %d; %d conflict(s) left as they are\n",
			len(res.Changes), res.ForkID, res.ParentID, res.Generation, len(res.Conflicts))
	}
	return err
}

func newDiscardCommand() *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "discard FORK [--idempotency-key K]",
		Short: "Release a fork: retire the snapshot it pinned and delete it",
		Long: "Discard workbench FORK: retire the snapshot of its parent a live fork pinned (a snapshot\n" +
			"or commit you named as the base stays) and delete FORK with its files, snapshots and\n" +
			"commits. --json prints the server's result object.",
		Args: cobra.ExactArgs(1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&key, "idempotency-key", "", "makes the discard safe to retry")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		res, err := newClient(cmd).Discard(cmd.Context(), o.agent, args[0], key)
		if err != nil {
			return sentUnderKey(key, err)
		}
		out := cmd.OutOrStdout()
		if o.json {
			return printRaw(out, res.Raw)
		}
		line := "discarded " + res.ForkID
		if res.RetiredSnapshotID != nil {
			line += fmt.Sprintf(", retired snapshot %d of %s", *res.RetiredSnapshotID, res.ParentID)
		}
		if res.Replayed {
			line += " (already, under this idempotency key)"
		}
		_, err = fmt.Fprintln(out, line)
		return err
	}
	return cmd
}
