package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// addDocumentCommands registers `cairn documents …`: the working-documents routes
// (docs/documents.md). Every command prints the server's answer as one JSON line; every
// write carries a client id (--request-id, --submission-id; random by default) that makes
// a retry answer the first answer.
func addDocumentCommands(root *cobra.Command) {
	cmd := &cobra.Command{Use: "documents", Short: "Working documents: create from an observation, edit, select context, propose, decide"}
	cmd.AddCommand(newDocumentsListCommand(), newDocumentShowCommand(), newDocumentCandidatesCommand(), newDocumentCreateCommand(),
		newDocumentEditCommand(), newDocumentSelectCommand(), newDocumentProposeCommand(), newDocumentDecideCommand())
	root.AddCommand(cmd)
}

// maxDocumentBodyBytes bounds what --file reads (the server takes at most 98 KB).
const maxDocumentBodyBytes = 1 << 20

func printJSON(cmd *cobra.Command, raw json.RawMessage, err error) error {
	if err != nil {
		return err
	}
	return printRaw(cmd.OutOrStdout(), raw)
}

func newDocumentsListCommand() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{Use: "list", Short: "List a page of the owner's working documents, in document id order", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := newClient(cmd).Documents.List(cmd.Context(), limit, cursor)
			return printJSON(cmd, raw, err)
		}}
	cmd.Flags().IntVar(&limit, "limit", 0, "documents per page, 1 to 1000 (default: the server's, 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "start after this page's nextCursor")
	return cmd
}

func newDocumentShowCommand() *cobra.Command {
	return &cobra.Command{Use: "show ID", Short: "Show a document: body, versions, selections, proposals with diffs, runs, judgments, events",
		Args: argsBetween(1, 1), RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := newClient(cmd).Documents.Get(cmd.Context(), args[0])
			return printJSON(cmd, raw, err)
		}}
}

func newDocumentCandidatesCommand() *cobra.Command {
	var doc string
	cmd := &cobra.Command{Use: "candidates [--document ID]", Short: "List the recent observations (and a document's versions) to create from or select",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := newClient(cmd).Documents.Candidates(cmd.Context(), doc)
			return printJSON(cmd, raw, err)
		}}
	cmd.Flags().StringVar(&doc, "document", "", "also list this document's versions")
	return cmd
}

// bodyFlags are a document write's --title and --text or --file.
type bodyFlags struct{ title, text, file, requestID string }

func addBodyFlags(cmd *cobra.Command) *bodyFlags {
	b := &bodyFlags{}
	cmd.Flags().StringVar(&b.title, "title", "", "the title (at most 200 characters)")
	cmd.Flags().StringVar(&b.text, "text", "", "the body as text")
	cmd.Flags().StringVar(&b.file, "file", "", "read the body from this file (- for stdin)")
	cmd.Flags().StringVar(&b.requestID, "request-id", "", "names the request for retries (default: random)")
	return b
}

// payload returns the title, body and requestId members.
func (b *bodyFlags) payload(cmd *cobra.Command) (map[string]any, error) {
	if cmd.Flags().Changed("text") == cmd.Flags().Changed("file") {
		return nil, usageErrorf("give exactly one of --text and --file")
	}
	text := b.text
	if b.file != "" {
		var r io.Reader = cmd.InOrStdin()
		if b.file != "-" {
			f, err := os.Open(b.file)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			r = f
		}
		raw, err := io.ReadAll(io.LimitReader(r, maxDocumentBodyBytes+1))
		if err != nil {
			return nil, err
		}
		if len(raw) > maxDocumentBodyBytes {
			return nil, usageErrorf("%s is larger than %d bytes", b.file, maxDocumentBodyBytes)
		}
		text = string(raw)
	}
	// A document is text: bytes that are not UTF-8 are refused here, as the server refuses
	// them, rather than sent as U+FFFD, which is what encoding them as JSON would make of them.
	for _, m := range []struct{ name, value string }{{"title", b.title}, {"body", text}} {
		if !utf8.ValidString(m.value) {
			return nil, usageErrorf("%s: must be Unicode text: valid UTF-8 (rule utf-8)", m.name)
		}
	}
	return map[string]any{"title": b.title, "body": text, "requestId": orRandom(b.requestID)}, nil
}

// write sends a version write to route (Documents.Write): the payload's members and member
// key with value, and prints the answer.
func (b *bodyFlags) write(cmd *cobra.Command, route, key, value string) error {
	p, err := b.payload(cmd)
	if err != nil {
		return err
	}
	p[key] = value
	raw, err := newClient(cmd).Documents.Write(cmd.Context(), route, p)
	return printJSON(cmd, raw, err)
}

func orRandom(id string) string {
	if id == "" {
		return randomKey()
	}
	return id
}

func newDocumentCreateCommand() *cobra.Command {
	var origin string
	cmd := &cobra.Command{Use: "create --origin EVENT --title T (--text S | --file F)", Short: "Create a working document from an observation",
		Args: cobra.NoArgs}
	b := addBodyFlags(cmd)
	cmd.Flags().StringVar(&origin, "origin", "", "the observation's eventId (cairn documents candidates)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return b.write(cmd, "documents", "originEventId", origin)
	}
	return cmd
}

func newDocumentEditCommand() *cobra.Command {
	var base string
	cmd := &cobra.Command{Use: "edit ID --base VERSION --title T (--text S | --file F)", Short: "Save an operator edit on the head (409 StaleBaseError otherwise)",
		Args: argsBetween(1, 1)}
	b := addBodyFlags(cmd)
	cmd.Flags().StringVar(&base, "base", "", "the version the edit is based on: the head")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return b.write(cmd, "documents/"+url.PathEscape(args[0])+"/versions", "baseVersionId", base)
	}
	return cmd
}

func newDocumentSelectCommand() *cobra.Command {
	var events, versions []string
	var requestID string
	cmd := &cobra.Command{Use: "select ID [--event E]... [--version V]...", Short: "Select the exact context a runner receives (an immutable snapshot)",
		Args: argsBetween(1, 1), RunE: func(cmd *cobra.Command, args []string) error {
			p := map[string]any{"selectedEventIds": nonNil(events), "selectedVersionIds": nonNil(versions), "requestId": orRandom(requestID)}
			raw, err := newClient(cmd).Documents.Write(cmd.Context(), "documents/"+url.PathEscape(args[0])+"/selections", p)
			return printJSON(cmd, raw, err)
		}}
	cmd.Flags().StringArrayVar(&events, "event", nil, "an observation's eventId (repeatable)")
	cmd.Flags().StringArrayVar(&versions, "version", nil, "a versionId of the document (repeatable)")
	cmd.Flags().StringVar(&requestID, "request-id", "", "names the request for retries (default: random)")
	return cmd
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func newDocumentProposeCommand() *cobra.Command {
	var selection, runner, base, requestID string
	cmd := &cobra.Command{Use: "propose ID --selection S --base VERSION [--runner R]", Short: "Request a proposal from a runner",
		Args: argsBetween(1, 1), RunE: func(cmd *cobra.Command, args []string) error {
			p := map[string]any{"selectionId": selection, "runnerId": runner, "baseVersionId": base, "requestId": orRandom(requestID)}
			raw, err := newClient(cmd).Documents.Write(cmd.Context(), "documents/"+url.PathEscape(args[0])+"/proposals", p)
			return printJSON(cmd, raw, err)
		}}
	cmd.Flags().StringVar(&selection, "selection", "", "the selectionId")
	cmd.Flags().StringVar(&runner, "runner", "fixture-deterministic@1", "the runner")
	cmd.Flags().StringVar(&base, "base", "", "the head version the proposal replaces")
	cmd.Flags().StringVar(&requestID, "request-id", "", "names the request for retries (default: random)")
	return cmd
}

func newDocumentDecideCommand() *cobra.Command {
	var submissionID string
	cmd := &cobra.Command{Use: "decide PROPOSAL accept|reject", Short: "Accept or reject a proposal (a judgment is recorded)",
		Args: argsBetween(2, 2), RunE: func(cmd *cobra.Command, args []string) error {
			if args[1] != "accept" && args[1] != "reject" {
				return usageErrorf("the decision must be accept or reject, not %q", args[1])
			}
			p := map[string]any{"disposition": args[1], "submissionId": orRandom(submissionID)}
			raw, err := newClient(cmd).Documents.Write(cmd.Context(), "proposals/"+url.PathEscape(args[0])+"/decisions", p)
			if err != nil {
				return fmt.Errorf("decide %s: %w", args[0], err)
			}
			return printRaw(cmd.OutOrStdout(), raw)
		}}
	cmd.Flags().StringVar(&submissionID, "submission-id", "", "names the decision for retries (default: random)")
	return cmd
}
