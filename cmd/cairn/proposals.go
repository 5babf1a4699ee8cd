package main

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// addProposalCommands registers `cairn propose`, `cairn proposals` and `cairn decide`
// (review-gated changes; REST …/proposals).
func addProposalCommands(root *cobra.Command) {
	root.AddCommand(newProposeCommand(), newProposalsCommand(), newDecideCommand())
}

// maxProposalBytes bounds the body `cairn propose` reads (the server's MCP payload cap is
// the real bound; this keeps a mistaken device file from being read for ever).
const maxProposalBytes = 64 << 20

func newProposeCommand() *cobra.Command {
	var (
		file, text, oldS, newS, reason, requestID, contentType, supersedes string
		base                                                               int64
		replaceAll                                                         bool
		evidence                                                           []string
	)
	cmd := &cobra.Command{
		Use:   "propose WB PATH (--file F|- | --text T | --old S --new S) [--base N] [--evidence REF]... [--reason R] [--request-id ID]",
		Short: "Propose a change to one file, to be accepted or rejected with `cairn decide`",
		Long: "Propose a new body for PATH (its full path in workbench WB, e.g. outputs/report.md) against an\n" +
			"exact base generation: --base N (0: the file must not exist; default: its head now). The body\n" +
			"comes from --file (- for stdin), --text, or --old/--new, an edit the server applies to the head.\n" +
			"--evidence names what the proposal rests on, each frozen with its digest:\n" +
			"file:PATH@GENERATION, snapshot:ID, commit:IDENTITY (in WB; file:OTHER//PATH@GEN for another).\n" +
			"Nothing is visible until the proposal is accepted. --request-id names the proposal (a retry\n" +
			"with the same id and content answers the first); by default a random one.",
		Args: argsBetween(2, 2),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&file, "file", "", "read the proposed body from this file (- for stdin)")
	cmd.Flags().StringVar(&text, "text", "", "the proposed body as text")
	cmd.Flags().StringVar(&oldS, "old", "", "an edit: the text to replace in the head")
	cmd.Flags().StringVar(&newS, "new", "", "an edit: its replacement")
	cmd.Flags().BoolVar(&replaceAll, "replace-all", false, "an edit: replace every occurrence")
	cmd.Flags().Int64Var(&base, "base", -1, "base generation (0: the file must not exist; default: the head now)")
	cmd.Flags().StringArrayVar(&evidence, "evidence", nil, "evidence: file:PATH@GEN, snapshot:ID or commit:IDENTITY (repeatable)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the change is proposed")
	cmd.Flags().StringVar(&requestID, "request-id", "", "names the proposal for retries (default: random)")
	cmd.Flags().StringVar(&contentType, "content-type", "", "content type of the proposed body")
	cmd.Flags().StringVar(&supersedes, "supersedes", "", "a pending proposal of the same path this one replaces")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req := client.ProposeRequest{Path: args[1], Reason: reason, RequestID: requestID, ContentType: contentType, Supersedes: supersedes}
		if req.RequestID == "" {
			req.RequestID = randomKey()
		}
		if base >= 0 {
			b := uint64(base)
			req.BaseGeneration = &b
		}
		n := 0
		for _, set := range []bool{cmd.Flags().Changed("file"), cmd.Flags().Changed("text"), cmd.Flags().Changed("old") || cmd.Flags().Changed("new")} {
			if set {
				n++
			}
		}
		if n != 1 {
			return usageErrorf("give exactly one of --file, --text and --old/--new")
		}
		switch {
		case cmd.Flags().Changed("text"):
			req.Text = &text
		case cmd.Flags().Changed("file"):
			data, err := readInput(cmd, "file", file, maxProposalBytes)
			if err != nil {
				return err
			}
			if utf8.Valid(data) {
				s := string(data)
				req.Text = &s
			} else {
				s := base64.StdEncoding.EncodeToString(data)
				req.Base64 = &s
			}
		default:
			if oldS == "" {
				return usageErrorf("--old must not be empty")
			}
			req.Edit = &client.ProposalEdit{OldString: oldS, NewString: newS, ReplaceAll: replaceAll}
		}
		for _, e := range evidence {
			ref, err := parseEvidence(e)
			if err != nil {
				return err
			}
			req.Evidence = append(req.Evidence, ref)
		}
		p, err := newClient(cmd).Proposals.Propose(cmd.Context(), o.agent, args[0], req)
		if err != nil {
			return err
		}
		return printResult(cmd.OutOrStdout(), o.json, p.Raw, fmt.Sprintf("%s %s: %s at base %d, %d bytes, %s%s",
			replayed("proposed", p.Replayed), p.ID, p.Path, p.BaseGeneration, p.SizeBytes, p.State, staleNote(p)))
	}
	return cmd
}

// parseEvidence reads file:PATH@GEN, snapshot:ID or commit:IDENTITY; WORKBENCH// before
// the rest names another workbench of the root (file:other//outputs/a.md@3).
func parseEvidence(s string) (client.EvidenceRef, error) {
	kind, rest, ok := strings.Cut(s, ":")
	bad := func() (client.EvidenceRef, error) {
		return client.EvidenceRef{}, usageErrorf("--evidence %q: want file:PATH@GEN, snapshot:ID or commit:IDENTITY", s)
	}
	if !ok || rest == "" {
		return bad()
	}
	ref := client.EvidenceRef{Kind: kind}
	if wb, r, ok := strings.Cut(rest, "//"); ok {
		ref.Workbench, rest = wb, r
	}
	switch kind {
	case "file":
		p, g, ok := strings.Cut(rest, "@")
		gen, err := strconv.ParseUint(g, 10, 64)
		if !ok || err != nil || p == "" {
			return bad()
		}
		ref.Path, ref.Generation = p, gen
	case "snapshot":
		id, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return bad()
		}
		ref.SnapshotID = id
	case "commit":
		ref.Commit = rest
	case "feed":
		ref.Position = rest
	default:
		return bad()
	}
	return ref, nil
}

func staleNote(p *client.Proposal) string {
	if !p.Stale {
		return ""
	}
	head := "none"
	if p.HeadGeneration != nil {
		head = strconv.FormatUint(*p.HeadGeneration, 10)
	}
	return " (stale: the head is " + head + ")"
}

func newProposalsCommand() *cobra.Command {
	var (
		path, state, id string
		judgments, body bool
		limit           int
	)
	cmd := &cobra.Command{
		Use:   "proposals WB [--path P] [--state S] [--judgments] [--id PROPOSAL [--body]]",
		Short: "List a workbench's proposals or decisions, or show one proposal",
		Long: "List the proposals of workbench WB in creation order (--path, --state pending|accepted|\n" +
			"rejected|superseded), one per line: id, state, path, base, head, stale. --judgments lists\n" +
			"the decisions instead, one JSON object per line. --json prints each page's result object, one\n" +
			"per line. --id shows one proposal (--body: with its bytes and diff; use --json).",
		Args: argsBetween(1, 1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&path, "path", "", "only proposals of this path")
	cmd.Flags().StringVar(&state, "state", "", "only proposals in this state")
	cmd.Flags().BoolVar(&judgments, "judgments", false, "list the decisions (judgments)")
	cmd.Flags().StringVar(&id, "id", "", "show this proposal")
	cmd.Flags().BoolVar(&body, "body", false, "with --id: include the proposed bytes and the diff")
	cmd.Flags().IntVar(&limit, "limit", 0, "items per page (the listing walks every page)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		proposals, out := newClient(cmd).Proposals, cmd.OutOrStdout()
		if id != "" {
			p, err := proposals.Get(cmd.Context(), o.agent, args[0], id, body)
			if err != nil {
				return err
			}
			return printResult(out, o.json || body, p.Raw, fmt.Sprintf("%s %s %s base %d%s, %d bytes, by %s: %s",
				p.ID, p.State, p.Path, p.BaseGeneration, staleNote(p), p.SizeBytes, p.Proposer, p.Reason))
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		if !o.json && !judgments {
			fmt.Fprintln(tw, "PROPOSAL\tSTATE\tPATH\tBASE\tHEAD\tSTALE")
		}
		q := client.ProposalQuery{Path: path, State: state, Limit: limit, Judgments: judgments}
		err := eachPage(func(cursor string) (string, error) {
			q.Cursor = cursor
			page, err := proposals.List(cmd.Context(), o.agent, args[0], q)
			if err != nil {
				return "", err
			}
			if o.json {
				return cursorOf(page.NextCursor), printRaw(out, page.Raw)
			}
			for _, j := range page.Judgments {
				if err := printRaw(out, j); err != nil {
					return "", err
				}
			}
			for _, p := range page.Proposals {
				head := "-"
				if p.HeadGeneration != nil {
					head = strconv.FormatUint(*p.HeadGeneration, 10)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%v\n", p.ID, p.State, p.Path, p.BaseGeneration, head, p.Stale)
			}
			return cursorOf(page.NextCursor), nil
		})
		if err != nil {
			return err
		}
		return tw.Flush()
	}
	return cmd
}

func newDecideCommand() *cobra.Command {
	var reason, submission string
	cmd := &cobra.Command{
		Use:   "decide WB PROPOSAL accept|reject [--reason R] [--submission-id ID]",
		Short: "Accept or reject a proposal (needs the review scope)",
		Long: "Decide proposal PROPOSAL of workbench WB. accept publishes its bytes only if the file is\n" +
			"still at the proposal's base (else Conflict with the head generation, nothing written);\n" +
			"reject records only. --submission-id names the decision for retries (default: random).",
		Args: argsBetween(3, 3),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why")
	cmd.Flags().StringVar(&submission, "submission-id", "", "names the decision for retries (default: random)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if args[2] != "accept" && args[2] != "reject" {
			return usageErrorf("the decision is accept or reject, not %q", args[2])
		}
		if submission == "" {
			submission = randomKey()
		}
		p, err := newClient(cmd).Proposals.Decide(cmd.Context(), o.agent, args[0], args[1],
			client.DecideRequest{Disposition: args[2], Reason: reason, SubmissionID: submission})
		if err != nil {
			return err
		}
		msg := fmt.Sprintf("%s %s: %s", p.State, p.ID, p.Path)
		if p.ResultGeneration != nil {
			msg += fmt.Sprintf(" at generation %d", *p.ResultGeneration)
		}
		return printResult(cmd.OutOrStdout(), o.json, p.Raw, msg)
	}
	return cmd
}
