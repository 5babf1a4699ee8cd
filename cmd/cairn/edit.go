package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// addChangeCommands registers the commands that change files in place: rm, append, edit.
func addChangeCommands(root *cobra.Command) {
	root.AddCommand(newRmCommand(), newAppendCommand(), newEditCommand())
}

func newRmCommand() *cobra.Command {
	var (
		ifMatch        uint64
		force          bool
		idempotencyKey string
	)
	cmd := &cobra.Command{
		Use:   "rm --agent A --workbench W PATH... [--if-match G] [-f] [--idempotency-key K]",
		Short: "Delete files of a workbench",
		Long: "Delete each PATH (a file; directories are implicit and vanish with their last\n" +
			"file), printing one line per file. --if-match deletes only at that generation (one\n" +
			"PATH). -f ignores paths that do not exist. The first failure stops the command.\n" +
			"Every delete carries an Idempotency-Key (a random one per PATH unless\n" +
			"--idempotency-key is given, for one PATH), so a retry after a lost answer answers\n" +
			"as the first delete did.",
		Args: cobra.MinimumNArgs(1),
	}
	t := addTargetFlags(cmd)
	cmd.Flags().Uint64Var(&ifMatch, "if-match", 0, "delete only if the current generation is this one")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "ignore paths that do not exist")
	cmd.Flags().StringVar(&idempotencyKey, "idempotency-key", "", "key that makes a repeated delete return the first answer (one PATH; default: random)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		if ifMatch != 0 && len(args) > 1 {
			return usageErrorf("--if-match applies to one PATH, got %d", len(args))
		}
		if idempotencyKey != "" && len(args) > 1 {
			return usageErrorf("--idempotency-key applies to one PATH, got %d", len(args))
		}
		c := newClient(cmd)
		for _, p := range args {
			key := idempotencyKey
			if key == "" {
				key = randomKey()
			}
			res, err := c.Delete(cmd.Context(), t.agent, t.workbench, p, client.DeleteOptions{IfMatch: ifMatch, IdempotencyKey: key})
			if force && client.ErrorCode(err) == "NotFound" && ifMatch == 0 {
				continue
			}
			if err != nil {
				return sentUnderKey(key, fmt.Errorf("rm %s: %w", displayed(p), err))
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "deleted %s: generation %d\n", displayed(p), res.Generation); err != nil {
				return err
			}
		}
		return nil
	}
	return cmd
}

func newAppendCommand() *cobra.Command {
	var (
		contentType, idempotencyKey string
		ifMatch                     uint64
	)
	cmd := &cobra.Command{
		Use:   "append --agent A --workbench W PATH [FILE|-]",
		Short: "Append FILE or stdin to a file of a workbench, creating it if missing",
		Long: "Add the bytes of FILE, or of stdin when FILE is - or absent, to the end of PATH,\n" +
			"creating it when missing (--content-type then applies). The server's cost is the\n" +
			"appended bytes, whatever the file's size. Every append carries an Idempotency-Key\n" +
			"(a random one unless --idempotency-key is given), so a retry after a lost answer\n" +
			"never appends twice.",
		Args: argsBetween(1, 2),
	}
	t := addTargetFlags(cmd)
	cmd.Flags().StringVar(&contentType, "content-type", "", "content type when the append creates the file")
	cmd.Flags().Uint64Var(&ifMatch, "if-match", 0, "append only if the current generation is this one")
	cmd.Flags().StringVar(&idempotencyKey, "idempotency-key", "", "key that makes a repeated append return the first answer (default: random)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		body, size, closeBody, err := openSource(cmd, args)
		if err != nil {
			return err
		}
		defer closeBody()
		if idempotencyKey == "" {
			idempotencyKey = randomKey()
		}
		res, err := newClient(cmd).Append(cmd.Context(), t.agent, t.workbench, args[0], body, client.AppendOptions{
			ContentType: contentType, IfMatch: ifMatch, IdempotencyKey: idempotencyKey, Size: size})
		if err != nil {
			return sentUnderKey(idempotencyKey, err)
		}
		verb := "appended to"
		if res.Created {
			verb = "created"
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s: +%d bytes, %d bytes, generation %d\n",
			verb, displayed(args[0]), res.AppendedBytes, res.SizeBytes, res.Generation)
		return err
	}
	return cmd
}

// openSource opens the body of put and append: args[1], or stdin when it is "-" or
// absent. size is the byte count of a regular file, else -1.
func openSource(cmd *cobra.Command, args []string) (body io.Reader, size int64, closeFn func(), err error) {
	size, closeFn = -1, func() {}
	if len(args) < 2 || args[1] == "-" {
		return cmd.InOrStdin(), size, closeFn, nil
	}
	f, err := os.Open(args[1])
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, 0, nil, err
	case fi.IsDir():
		f.Close()
		return nil, 0, nil, usageErrorf("%s is a directory", args[1])
	case fi.Mode().IsRegular():
		size = fi.Size()
	}
	return f, size, func() { f.Close() }, nil
}

// randomKey is a fresh Idempotency-Key: 128 random bits in hex.
func randomKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

func newEditCommand() *cobra.Command {
	var (
		oldString, newString string
		replaceAll           bool
		ifMatch              uint64
	)
	cmd := &cobra.Command{
		Use:   "edit --agent A --workbench W PATH --old TEXT --new TEXT [--all] [--if-match G]",
		Short: "Replace text in a file of a workbench",
		Long: "Replace the exact text --old by --new in PATH (workbench_edit): --old must occur\n" +
			"exactly once (NoMatch, AmbiguousEdit otherwise) unless --all replaces every\n" +
			"occurrence. The file must be UTF-8 and at most 4 MiB. The write is conditional on\n" +
			"the generation read; after a concurrent write the edit waits, re-reads and tries\n" +
			"again (up to 20 times within 30 s, backing off). With --if-match it edits only\n" +
			"generation G and never retries: another generation fails with Conflict.\n" +
			"Content type and executable flag are kept.",
		Args: argsBetween(1, 1),
	}
	t := addTargetFlags(cmd)
	cmd.Flags().StringVar(&oldString, "old", "", "the text to replace (required)")
	cmd.Flags().StringVar(&newString, "new", "", "the replacement (may be empty)")
	cmd.Flags().BoolVar(&replaceAll, "all", false, "replace every occurrence")
	cmd.Flags().Uint64Var(&ifMatch, "if-match", 0, "edit only if the current generation is this one (no retry)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		if oldString == "" {
			return usageErrorf("--old is required and must not be empty")
		}
		if !cmd.Flags().Changed("new") {
			return usageErrorf("--new is required (--new '' deletes the text)")
		}
		res, err := newClient(cmd).Edit(cmd.Context(), t.agent, t.workbench, args[0],
			client.EditRequest{OldString: oldString, NewString: newString, ReplaceAll: replaceAll, IfMatch: ifMatch})
		if err != nil {
			return err
		}
		if res.NoChange {
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "unchanged %s: the replacement is identical, generation %d\n", displayed(args[0]), res.Generation)
			return err
		}
		noun := "replacements"
		if res.Replacements == 1 {
			noun = "replacement"
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "edited %s: %d %s, %d bytes, generation %d\n",
			displayed(args[0]), res.Replacements, noun, res.SizeBytes, res.Generation)
		return err
	}
	return cmd
}
