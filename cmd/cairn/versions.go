package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// maxManifestBytes bounds the run manifest `cairn commit` reads: the server's bound on a
// tool request body (api/rest maxToolBody), so a larger one fails here, not half-sent.
const maxManifestBytes = 8 << 20

// addWorkbenchCommands registers the commands over the Workbench tools: commit, commits
// (the commit listing), snapshot (with renew, retire and list), restore, search, grep,
// aggregate, catalog and find.
func addWorkbenchCommands(root *cobra.Command) {
	root.AddCommand(newCommitCommand(), newCommitsCommand(), newSnapshotCommand(), newRestoreCommand(), newSearchCommand(), newGrepCommand())
	addMetadataCommands(root)
}

// outputFlags are --agent and --json, which every Workbench tool command takes.
type outputFlags struct {
	agent string
	json  bool
}

// addOutputFlags registers --agent and --json on cmd, and checks them (check) before
// cmd's RunE runs, so a command's RunE sees a valid agent.
func addOutputFlags(cmd *cobra.Command) *outputFlags {
	o := &outputFlags{}
	cmd.Flags().StringVar(&o.agent, "agent", envOr("CAIRN_AGENT", "default"), "agent root (env CAIRN_AGENT)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the server's result object (JSON) instead of a summary")
	cmd.PreRunE = func(*cobra.Command, []string) error { return o.check() }
	return o
}

func (o *outputFlags) check() error {
	if o.agent == "" {
		return usageErrorf("--agent must not be empty")
	}
	return nil
}

// printRaw writes a result object as the server sent it, one line.
func printRaw(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// printJSONLine writes v encoded as JSON (encoding/json), one line, with '<', '>' and '&'
// as themselves, as the server writes them.
func printJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printResult writes a command's answer: with --json (asJSON) the server's result
// object raw, one line (printRaw); else the one-line summary.
func printResult(w io.Writer, asJSON bool, raw json.RawMessage, summary string) error {
	if asJSON {
		return printRaw(w, raw)
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}

// replayed is verb ("committed"), or "already committed" for an answer that replays an
// earlier one.
func replayed(verb string, replay bool) string {
	if replay {
		return "already " + verb
	}
	return verb
}

// readInput reads what flag names: the file, or stdin for "-"; more than limit bytes is
// a usage error.
func readInput(cmd *cobra.Command, flag, file string, limit int) ([]byte, error) {
	var src io.Reader = cmd.InOrStdin()
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		src = f
	}
	data, err := io.ReadAll(io.LimitReader(src, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, usageErrorf("--%s: more than %d bytes", flag, limit)
	}
	return data, nil
}

// eachPage walks a paged listing: it calls page with the cursor "" (the first page), then
// with each cursor page returns, until page returns "" (the last page) or an error.
func eachPage(page func(cursor string) (next string, err error)) error {
	cursor := ""
	for {
		next, err := page(cursor)
		if err != nil || next == "" {
			return err
		}
		cursor = next
	}
}

// cursorOf is a listing's next cursor that JSON null ends: "" for nil.
func cursorOf(next *string) string {
	if next == nil {
		return ""
	}
	return *next
}

// keyFlag is --idempotency-key of a command whose write takes one (snapshot, renew,
// retire, commit, restore), as put's: the key given, else a random one (randomKey), so the
// client's own retries after a lost answer replay the first answer.
type keyFlag struct{ given string }

// keyHelp is the sentence of a keyed command's long help that says so.
const keyHelp = "The request carries an Idempotency-Key (a random one unless --idempotency-key is\n" +
	"given), so a retry after a lost answer replays the first answer and changes nothing\n" +
	"again; the same key with another request is refused (InvalidArguments)."

// addKeyFlag registers --idempotency-key on cmd, whose write is what ("snapshot").
func addKeyFlag(cmd *cobra.Command, what string) *keyFlag {
	k := &keyFlag{}
	cmd.Flags().StringVar(&k.given, "idempotency-key", "", "key that makes a repeated "+what+" return the first answer (default: random)")
	return k
}

// key is the key to send: the one given, else a fresh random one. Call it once per
// command run: the client sends its retries under it.
func (k *keyFlag) key() string {
	if k.given != "" {
		return k.given
	}
	return randomKey()
}

func newCommitCommand() *cobra.Command {
	var (
		manifest, digest string
		replace          bool
	)
	cmd := &cobra.Command{
		Use:   "commit ID --manifest FILE|- --content-digest sha256:HEX [--replace] [--idempotency-key K]",
		Short: "Seal a workbench's current files under a run manifest",
		Long: "Commit workbench ID (creating it if missing): publish metadata/run_manifest.json with\n" +
			"the JSON object read from FILE (or stdin for -) and seal the current files under a\n" +
			"commit identity derived from ID, --content-digest and the canonical manifest.\n" +
			"Repeating an identical commit is a replay; a different one fails with\n" +
			"WorkbenchCommitConflict unless --replace is given. Restore a commit with\n" +
			"`cairn restore ID DEST --commit IDENTITY`.\n" + keyHelp,
		Args: argsBetween(1, 1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&manifest, "manifest", "", "run manifest: a file holding a JSON object, or - for stdin (required)")
	cmd.Flags().StringVar(&digest, "content-digest", "", "the content digest you claim: sha256: and 64 lowercase hex (required)")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace a commit with a different identity")
	k := addKeyFlag(cmd, "commit")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if manifest == "" || digest == "" {
			return usageErrorf("--manifest and --content-digest are required")
		}
		data, err := readInput(cmd, "manifest", manifest, maxManifestBytes)
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			return usageErrorf("--manifest: %s is not valid JSON", manifestName(manifest))
		}
		key := k.key()
		res, err := newClient(cmd).Commit(cmd.Context(), o.agent, args[0], client.CommitRequest{
			Manifest: json.RawMessage(data), ContentDigestURI: digest, Replace: replace, IdempotencyKey: key})
		if err != nil {
			return sentUnderKey(key, err)
		}
		return printResult(cmd.OutOrStdout(), o.json, res.Raw, fmt.Sprintf("%s %s: generation %d, identity %s, tree %s",
			replayed("committed", res.IdempotentReplay), res.WorkbenchID, res.Generation, res.CommitIdentity, res.TreeDigestURI))
	}
	return cmd
}

// commitsHelp is the long help of `cairn commits`.
const commitsHelp = "List the commits of workbench ID, newest first (replaced ones too: a commit is\n" +
	"permanent), one per line: identity, generation, time sealed (UTC), head (* for the\n" +
	"head commit), who sealed it. --json prints each commit as the server sent it.\n" +
	"Restore one with `cairn restore ID DEST --commit IDENTITY`; compare one with the\n" +
	"live files with `cairn diff ID --from commit:IDENTITY`."

func newCommitsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "commits ID [--limit N]", Short: "List a workbench's commits, newest first", Long: commitsHelp, Args: argsBetween(1, 1)}
	o := addOutputFlags(cmd)
	limit := cmd.Flags().Int("limit", 0, "commits per page, 1..100, 0: the server's (the listing walks every page)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *limit < 0 || *limit > 100 {
			return usageErrorf("--limit must be between 1 and 100 (0: the server's page size), got %d", *limit)
		}
		return listCommits(cmd, o.agent, args[0], *limit, o.json)
	}
	return cmd
}

// listCommits prints every page of workbench wb's commits: a table, or with asJSON each
// commit as the server sent it, one a line.
func listCommits(cmd *cobra.Command, agent, wb string, limit int, asJSON bool) error {
	c, out := newClient(cmd), cmd.OutOrStdout()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "COMMIT\tGENERATION\tCOMMITTED\tHEAD\tBY")
	}
	err := eachPage(func(cursor string) (string, error) {
		page, err := c.ListCommits(cmd.Context(), agent, wb, cursor, limit)
		if err != nil {
			return "", err
		}
		if asJSON {
			var raw struct {
				Commits []json.RawMessage `json:"commits"`
			}
			if err := json.Unmarshal(page.Raw, &raw); err != nil {
				return "", err
			}
			for _, cm := range raw.Commits {
				if err := printRaw(out, cm); err != nil {
					return "", err
				}
			}
			return cursorOf(page.NextCursor), nil
		}
		for _, cm := range page.Commits {
			head := "-"
			if cm.Head {
				head = "*"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", cm.CommitIdentity, cm.Generation,
				cm.CommittedAt.UTC().Format(time.RFC3339), head, orDash(displayed(cm.Producer)))
		}
		return cursorOf(page.NextCursor), nil
	})
	if err != nil {
		return err
	}
	return tw.Flush()
}

func manifestName(arg string) string {
	if arg == "-" {
		return "stdin"
	}
	return arg
}

func newSnapshotCommand() *cobra.Command {
	create := newSnapshotCreateCommand("snapshot ID [--name N] [--ttl-days D] [--reason R] [--metadata JSON] [--idempotency-key K]")
	create.Short = "Snapshot a workbench; renew, retire and list snapshots"
	create.Long = "Mint a leased, read-only point in time of workbench ID (`cairn snapshot create ID` is\n" +
		"the same, for a workbench named like a subcommand). Read at it with\n" +
		"`cairn cat|ls|export --at-snapshot ID|NAME`, restore from it with `cairn restore`.\n" +
		"A snapshot is alive until its lease passes (--ttl-days, default 7, at most 90), then\n" +
		"expired (renew revives it) until the server reaps it; retire ends it at once.\n" +
		"A NAME resolves to the newest snapshot minted with it.\n" + keyHelp
	create.AddCommand(newSnapshotCreateCommand("create ID [--name N] [--ttl-days D] [--reason R] [--metadata JSON] [--idempotency-key K]"),
		newSnapshotRenewCommand(), newSnapshotRetireCommand(), newSnapshotListCommand())
	return create
}

func newSnapshotCreateCommand(use string) *cobra.Command {
	var (
		name, reason, metadata string
		ttlDays                int
	)
	cmd := &cobra.Command{
		Use:   use,
		Short: "Snapshot a workbench",
		Long:  "Mint a leased, read-only point in time of workbench ID (`cairn snapshot --help`).\n" + keyHelp,
		Args:  argsBetween(1, 1),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&name, "name", "", "name the snapshot")
	cmd.Flags().IntVar(&ttlDays, "ttl-days", 0, "lease in days, 1..90 (default: the server's, 7)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the snapshot exists (1..256 characters)")
	cmd.Flags().StringVar(&metadata, "metadata", "", `annotation: a JSON object, e.g. '{"run":7}'`)
	k := addKeyFlag(cmd, "snapshot")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("ttl-days") && ttlDays == 0 {
			return usageErrorf("--ttl-days must be between 1 and 90")
		}
		req := client.SnapshotRequest{Name: name, TTLDays: ttlDays, Reason: reason, IdempotencyKey: k.key()}
		if metadata != "" {
			if !json.Valid([]byte(metadata)) {
				return usageErrorf("--metadata is not valid JSON")
			}
			req.Metadata = json.RawMessage(metadata)
		}
		snap, err := newClient(cmd).Snapshot(cmd.Context(), o.agent, args[0], req)
		if err != nil {
			return sentUnderKey(req.IdempotencyKey, err)
		}
		return printResult(cmd.OutOrStdout(), o.json, snap.Raw, "snapshot "+describeSnapshot(snap))
	}
	return cmd
}

// describeSnapshot is the one-line summary of a snapshot record:
// `3 "v1" of w1: alive until 2026-01-09T10:00:00Z (7 days), read version 42`.
func describeSnapshot(s *client.Snapshot) string {
	name := ""
	if s.Name != "" {
		name = " " + strconv.Quote(s.Name)
	}
	return fmt.Sprintf("%d%s of %s: %s until %s (%d days), read version %d", s.SnapshotID, name, s.WorkbenchID,
		s.State, s.LeaseExpires().UTC().Format(time.RFC3339), s.TTLDays, s.ReadVersion)
}

// snapshotArg selects the snapshot of renew and retire: the SNAPSHOT argument (digits: an
// id, else a name) or --name.
func snapshotArg(args []string, name string) (client.SnapshotRef, error) {
	switch {
	case len(args) == 2 && name != "":
		return client.SnapshotRef{}, usageErrorf("give SNAPSHOT or --name, not both")
	case len(args) == 2:
		return client.ParseSnapshotRef(args[1]), nil
	case name != "":
		return client.SnapshotName(name), nil
	}
	return client.SnapshotRef{}, usageErrorf("give SNAPSHOT (an id or a name) or --name")
}

func newSnapshotRenewCommand() *cobra.Command {
	var (
		name    string
		ttlDays int
	)
	cmd := &cobra.Command{
		Use:   "renew ID (SNAPSHOT | --name NAME) [--ttl-days D] [--idempotency-key K]",
		Short: "Extend a snapshot's lease to now + --ttl-days",
		Long: "Set the lease of a snapshot of workbench ID to now + --ttl-days (default 7). SNAPSHOT\n" +
			"is an id (digits) or a name; --name selects by a name made of digits only. A renew\n" +
			"never shortens a lease, and revives an expired snapshot until the server reaps it.\n" + keyHelp,
		Args: argsBetween(1, 2),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&name, "name", "", "select the snapshot by this name")
	cmd.Flags().IntVar(&ttlDays, "ttl-days", 0, "new lease from now, in days, 1..90 (default: the server's, 7)")
	k := addKeyFlag(cmd, "renew")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ref, err := snapshotArg(args, name)
		if err != nil {
			return err
		}
		if cmd.Flags().Changed("ttl-days") && ttlDays == 0 {
			return usageErrorf("--ttl-days must be between 1 and 90")
		}
		key := k.key()
		snap, err := newClient(cmd).RenewSnapshot(cmd.Context(), o.agent, args[0], ref, ttlDays, client.KeyOptions{IdempotencyKey: key})
		if err != nil {
			return sentUnderKey(key, err)
		}
		return printResult(cmd.OutOrStdout(), o.json, snap.Raw, "renewed snapshot "+describeSnapshot(snap))
	}
	return cmd
}

func newSnapshotRetireCommand() *cobra.Command {
	var name, reason string
	cmd := &cobra.Command{
		Use:   "retire ID (SNAPSHOT | --name NAME) [--reason R] [--idempotency-key K]",
		Short: "End a snapshot now",
		Long: "Retire a snapshot of workbench ID: reads at it fail with SnapshotExpired from then on.\n" +
			"SNAPSHOT is an id (digits) or a name; --name selects by a name made of digits only.\n" +
			"Retiring a retired snapshot succeeds and reports the original reason. A fork's pin that a\n" +
			"live fork has as its base is refused (ForkRetentionActive): discard the fork first.\n" + keyHelp,
		Args: argsBetween(1, 2),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&name, "name", "", "select the snapshot by this name")
	cmd.Flags().StringVar(&reason, "reason", "", "why it is retired (1..256 characters)")
	k := addKeyFlag(cmd, "retire")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ref, err := snapshotArg(args, name)
		if err != nil {
			return err
		}
		key := k.key()
		res, err := newClient(cmd).RetireSnapshot(cmd.Context(), o.agent, args[0], ref, reason, client.KeyOptions{IdempotencyKey: key})
		if err != nil {
			return sentUnderKey(key, err)
		}
		line := fmt.Sprintf("retired snapshot %d of %s", res.SnapshotID, res.WorkbenchID)
		if !res.Retired {
			line = fmt.Sprintf("snapshot %d of %s was already retired", res.SnapshotID, res.WorkbenchID)
		}
		if res.Reason != "" {
			line += fmt.Sprintf(" (reason: %s)", displayed(res.Reason))
		}
		return printResult(cmd.OutOrStdout(), o.json, res.Raw, line)
	}
	return cmd
}

func newSnapshotListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list ID",
		Short: "List a workbench's snapshots",
		Long: "List every snapshot of workbench ID, oldest first, one per line: id, state, lease\n" +
			"expiry (UTC), lease in days, read version, name (- for none), reason.",
		Args: argsBetween(1, 1),
	}
	o := addOutputFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		list, err := newClient(cmd).ListSnapshots(cmd.Context(), o.agent, args[0])
		if err != nil {
			return err
		}
		if o.json {
			return printRaw(cmd.OutOrStdout(), list.Raw)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tLEASE EXPIRES\tTTL\tREAD VERSION\tNAME\tREASON")
		for _, s := range list.Snapshots {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", s.SnapshotID, s.State, s.LeaseExpires().UTC().Format(time.RFC3339),
				s.TTLDays, s.ReadVersion, orDash(displayed(s.Name)), orDash(displayed(s.Annotation.Reason)))
		}
		return tw.Flush()
	}
	return cmd
}

// orDash is s, or "-" for an empty s (a table's empty cell).
func orDash(s string) string { return cmp.Or(s, "-") }

func newRestoreCommand() *cobra.Command {
	var snapshot, commit string
	cmd := &cobra.Command{
		Use:   "restore ID DEST (--snapshot ID|NAME | --commit IDENTITY) [--idempotency-key K]",
		Short: "Restore a snapshot or a commit of a workbench into a new workbench",
		Long: "Create workbench DEST (it must not exist) with the files workbench ID had at a\n" +
			"snapshot (--snapshot: an id, digits, or a name) or at a commit (--commit: the\n" +
			"64-hex commit identity `cairn commit` prints). ID is unchanged; file bodies are\n" +
			"shared, not copied; DEST appears whole when the restore completes and is\n" +
			"committed, with metadata/restore_manifest.json. Repeating the same restore is a\n" +
			"replay.\n" + keyHelp,
		Args: argsBetween(2, 2),
	}
	o := addOutputFlags(cmd)
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "restore from this snapshot (id or name)")
	cmd.Flags().StringVar(&commit, "commit", "", "restore from the commit with this identity")
	k := addKeyFlag(cmd, "restore")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if (snapshot == "") == (commit == "") {
			return usageErrorf("give exactly one of --snapshot and --commit")
		}
		req := client.RestoreRequest{Destination: args[1], AtCommit: commit, IdempotencyKey: k.key()}
		if snapshot != "" {
			req.AtSnapshot = client.ParseSnapshotRef(snapshot)
		}
		res, err := newClient(cmd).Restore(cmd.Context(), o.agent, args[0], req)
		if err != nil {
			return sentUnderKey(req.IdempotencyKey, err)
		}
		from := "commit " + res.CommitID
		if res.CommitID == "" {
			from = fmt.Sprintf("snapshot %d", res.SnapshotID)
		}
		return printResult(cmd.OutOrStdout(), o.json, res.Raw, fmt.Sprintf("%s %s at %s into %s: %d files, generation %d, operation %s",
			replayed("restored", res.IdempotentReplay), res.SourceWorkbenchID, from, res.DestinationWorkbenchID, res.RestoredFiles,
			res.DestinationGeneration, res.OperationID))
	}
	return cmd
}

// snapshotFlag reads an --at-snapshot value: "" for live state, digits for an id, else a
// name. A flag given empty is a usage error rather than a silent live read.
func snapshotFlag(cmd *cobra.Command, v string) (client.SnapshotRef, error) {
	if v == "" {
		if cmd.Flags().Changed("at-snapshot") {
			return client.SnapshotRef{}, usageErrorf("--at-snapshot must not be empty")
		}
		return client.SnapshotRef{}, nil
	}
	return client.ParseSnapshotRef(v), nil
}

// parseFieldFlags reads `put --field NAME=VALUE` flags; VALUE as parseValue reads it,
// and only scalars (the server attaches strings, numbers and booleans).
func parseFieldFlags(flags []string) (map[string]any, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(flags))
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, usageErrorf("--field %q: want NAME=VALUE", f)
		}
		v := parseValue(value)
		switch v.(type) {
		case string, bool, json.Number:
		default:
			return nil, usageErrorf("--field %q: the value must be a string, a number or true/false", f)
		}
		out[name] = v
	}
	return out, nil
}
