package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/ops/backup"
)

// addFileCommands registers the client commands over files: put, cat, ls, stat, import,
// export, and rm, append, edit.
func addFileCommands(root *cobra.Command) {
	root.AddCommand(newPutCommand(), newCatCommand(), newLsCommand(), newStatCommand(), newImportCommand(), newExportCommand())
	addChangeCommands(root)
}

// target is the agent root and workbench a command works on.
type target struct {
	agent, workbench string
}

// addTargetFlags registers --agent and --workbench on cmd.
func addTargetFlags(cmd *cobra.Command) *target {
	t := &target{}
	t.addFlags(cmd)
	return t
}

func (t *target) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.agent, "agent", envOr("CAIRN_AGENT", "default"), "agent root (env CAIRN_AGENT)")
	cmd.Flags().StringVar(&t.workbench, "workbench", "", "workbench id (required)")
}

func (t *target) check() error {
	if t.workbench == "" {
		return usageErrorf("--workbench is required")
	}
	if t.agent == "" {
		return usageErrorf("--agent must not be empty")
	}
	return nil
}

// snapshotTarget is a target a command reads live or, with --at-snapshot, as it was at a
// snapshot.
type snapshotTarget struct {
	target
	atSnapshot string
}

// addSnapshotTargetFlags registers --agent, --workbench and --at-snapshot on cmd; usage
// is the help line of --at-snapshot.
func addSnapshotTargetFlags(cmd *cobra.Command, usage string) *snapshotTarget {
	t := &snapshotTarget{}
	t.addFlags(cmd)
	cmd.Flags().StringVar(&t.atSnapshot, "at-snapshot", "", usage)
	return t
}

// checkAt checks the target and returns the snapshot --at-snapshot selects, the zero
// SnapshotRef for live state (snapshotFlag).
func (t *snapshotTarget) checkAt(cmd *cobra.Command) (client.SnapshotRef, error) {
	if err := t.check(); err != nil {
		return client.SnapshotRef{}, err
	}
	return snapshotFlag(cmd, t.atSnapshot)
}

// newClient returns a client for the --server of cmd, with its CA, client certificate
// and API key (httpClient). It retries retryable answers within
// client.DefaultRetryPolicy (a restarting node, a leader election).
func newClient(cmd *cobra.Command) *client.Client {
	server := defaultServer
	if f := cmd.Flag("server"); f != nil {
		server = f.Value.String()
	}
	return client.New(server, httpClient(cmd, server)).WithRetry(client.DefaultRetryPolicy())
}

func newPutCommand() *cobra.Command {
	var (
		contentType    string
		idempotencyKey string
		executable     bool
		ifMatch        uint64
		ifNoneMatch    bool
		fields         []string
	)
	cmd := &cobra.Command{
		Use:   "put --agent A --workbench W PATH [FILE|-]",
		Short: "Write a file into a workbench from FILE or stdin",
		Long: "Write the whole content of PATH (e.g. input/data.csv) from FILE, or from stdin when\n" +
			"FILE is - or absent. Without --if-match or --if-none-match the write is an upsert.\n" +
			"--executable defaults to FILE's owner-execute bit (false for stdin).\n" +
			"--field NAME=VALUE attaches a metadata field `cairn search` can query: NAME in\n" +
			"lower case, VALUE JSON when it parses as JSON (0.93, 12, true), else the text.\n" +
			"Every put carries an Idempotency-Key (a random one unless --idempotency-key is\n" +
			"given), so a retry after a lost answer replays the first write: it never writes a\n" +
			"second version, nor fails an --if-match the first attempt already moved past.",
		Args: argsBetween(1, 2),
	}
	t := addTargetFlags(cmd)
	cmd.Flags().StringVar(&contentType, "content-type", "", "content type of the body (default: the server's choice)")
	cmd.Flags().BoolVar(&executable, "executable", false, "mark the file executable")
	cmd.Flags().Uint64Var(&ifMatch, "if-match", 0, "write only if the current generation is this one")
	cmd.Flags().BoolVar(&ifNoneMatch, "if-none-match", false, "write only if PATH does not exist (create-only)")
	cmd.Flags().StringArrayVar(&fields, "field", nil, "attach a metadata field NAME=VALUE (repeatable)")
	cmd.Flags().StringVar(&idempotencyKey, "idempotency-key", "", "key that makes a repeated put return the first answer (default: random)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		attached, err := parseFieldFlags(fields)
		if err != nil {
			return err
		}
		if ifMatch != 0 && ifNoneMatch {
			return usageErrorf("--if-match and --if-none-match exclude each other")
		}
		path, src := args[0], "-"
		if len(args) == 2 {
			src = args[1]
		}
		var body io.Reader = cmd.InOrStdin()
		size := int64(-1)
		if src != "-" {
			f, err := os.Open(src)
			if err != nil {
				return err
			}
			defer f.Close()
			body = f
		}
		if f, ok := body.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				size = fi.Size()
				if src != "-" && !cmd.Flags().Changed("executable") {
					executable = fi.Mode()&0o100 != 0
				}
			} else if err == nil && fi.IsDir() {
				return usageErrorf("%s is a directory (use cairn import)", src)
			}
		}
		if idempotencyKey == "" {
			idempotencyKey = randomKey()
		}
		res, err := newClient(cmd).PutFile(cmd.Context(), t.agent, t.workbench, path, body, client.PutOptions{
			ContentType:    contentType,
			Executable:     executable,
			IfMatch:        ifMatch,
			IfNoneMatch:    ifNoneMatch,
			IdempotencyKey: idempotencyKey,
			Size:           size,
			Fields:         attached,
		})
		if err != nil {
			return sentUnderKey(idempotencyKey, err)
		}
		verb := "replaced"
		if res.Created {
			verb = "created"
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %d bytes, generation %d, %s\n",
			verb, displayed(path), res.SizeBytes, res.Generation, res.DigestURI)
		return err
	}
	return cmd
}

func newCatCommand() *cobra.Command {
	var generation uint64
	cmd := &cobra.Command{
		Use:     "cat --agent A --workbench W PATH [--at-snapshot ID|NAME | --generation N]",
		Aliases: []string{"get"},
		Short:   "Write a file of a workbench to stdout",
		Long: "Write the content of PATH to stdout: as it is now, with --at-snapshot as it was\n" +
			"at a snapshot (an id, digits, or a name; see cairn snapshot), or with\n" +
			"--generation the retained version with that generation (see cairn history).",
		Args: argsBetween(1, 1),
	}
	t := addSnapshotTargetFlags(cmd, "read at this snapshot (id or name)")
	cmd.Flags().Uint64Var(&generation, "generation", 0, "read the retained version with this generation")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		at, err := t.checkAt(cmd)
		if err != nil {
			return err
		}
		if cmd.Flags().Changed("generation") && (generation == 0 || t.atSnapshot != "") {
			return usageErrorf("--generation must be a generation (≥ 1) and does not combine with --at-snapshot")
		}
		body, _, err := newClient(cmd).GetFile(cmd.Context(), t.agent, t.workbench, args[0], client.GetOptions{AtSnapshot: at, Generation: generation})
		if err != nil {
			return err
		}
		defer body.Close()
		_, err = io.Copy(cmd.OutOrStdout(), body)
		return err
	}
	return cmd
}

func newLsCommand() *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "ls --agent A --workbench W [DIR] [--at-snapshot ID|NAME] [--no-snapshot-fallback]",
		Short: "List a directory of a workbench",
		Long: "List the entries of DIR (default: the workbench top, where the five sections\n" +
			"appear as directories), one per line: kind, size in bytes, generation, name.\n" +
			"With -r, list everything below DIR, names relative to DIR. With --at-snapshot, list\n" +
			"the workbench as it was at a snapshot (an id, digits, or a name). Nothing is printed\n" +
			"before the listing is whole: one that others' writes invalidate while it is paged is\n" +
			"listed again from its first page (up to " + strconv.Itoa(client.ListingAttempts) + " times).\n" +
			fallbackHelp("ls lists"),
		Args: argsBetween(0, 1),
	}
	t := addSnapshotTargetFlags(cmd, "list at this snapshot (id or name)")
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "list recursively")
	noFallback := addFallbackFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		at, err := t.checkAt(cmd)
		if err != nil {
			return err
		}
		dir := ""
		if len(args) == 1 {
			dir = strings.TrimSuffix(args[0], "/")
		}
		command := "ls"
		if recursive {
			command = "ls -r"
		}
		c := newClient(cmd)
		fb := snapshotFallback(*noFallback, command, t.workbench, func(line string) { fmt.Fprintf(cmd.ErrOrStderr(), "cairn: %s\n", line) })
		// The listing is collected whole before a line is printed: a failure after part
		// of it must leave stdout empty.
		var out bytes.Buffer
		print := func(e client.Entry, name string) {
			kind, size, gen := "file", strconv.FormatInt(e.SizeBytes, 10), strconv.FormatUint(e.Generation, 10)
			name = displayed(name)
			if e.IsDir() {
				kind, size, gen, name = "dir", "-", "-", name+"/"
			}
			fmt.Fprintf(&out, "%-4s %12s %10s %s\n", kind, size, gen, name)
		}
		err = c.FallBackToSnapshot(cmd.Context(), t.agent, t.workbench, at, fb, func(at client.SnapshotRef) error {
			out.Reset()
			if recursive {
				prefix := ""
				if dir != "" {
					prefix = dir + "/"
				}
				// WalkAt lists each directory whole, again from its first page when the
				// workbench changed while it was paged; it can still fail after part of the tree.
				return c.WalkAt(cmd.Context(), t.agent, t.workbench, dir, at, func(e client.Entry) error {
					print(e, strings.TrimPrefix(e.FullPath(), prefix))
					return nil
				})
			}
			entries, err := c.ListAll(cmd.Context(), t.agent, t.workbench, dir, client.ListOptions{Limit: lsPageLimit, AtSnapshot: at})
			for _, e := range entries {
				print(e, e.Name)
			}
			return err
		})
		if err != nil {
			return listingError(err)
		}
		_, err = out.WriteTo(cmd.OutOrStdout())
		return err
	}
	return cmd
}

// lsPageLimit is the page size ls asks for: the most the server gives.
const lsPageLimit = 1000

// listingError is err of a listing, with the way out when the workbench kept changing
// under it: a listing at a snapshot is never invalidated by writes.
func listingError(err error) error {
	if errors.Is(err, client.ErrWorkbenchKeptChanging) {
		return fmt.Errorf("%w; to list a fixed state while it is being written, list with --at-snapshot (a snapshot taken with cairn snapshot create)", err)
	}
	return err
}

func newImportCommand() *cobra.Command {
	var (
		section     string
		concurrency int
		mirror      bool
		force       bool
	)
	cmd := &cobra.Command{
		Use:   "import DIR --agent A --workbench W [--section input] [--delete] [--force]",
		Short: "Upload a local directory into a workbench section",
		Long: "Upload every regular file under DIR to SECTION/<path relative to DIR>, creating the\n" +
			"workbench if needed. Symlinks are skipped with a warning. Files keep their\n" +
			"owner-execute bit as the executable flag. A file the workbench already holds with\n" +
			"the same bytes (SHA-256) and executable flag is skipped, so a re-run writes no new\n" +
			"versions; --force uploads every file. A request cut off by a broken connection or\n" +
			"answered with a retryable error is retried with backoff (up to 6 sends within 2\n" +
			"minutes); each upload carries an Idempotency-Key, so a retry never writes twice.\n" +
			"With --delete, files of SECTION that DIR does not have are deleted after every\n" +
			"upload succeeded (each only if unchanged since it was listed), so the section\n" +
			"mirrors DIR (at a snapshot taken for it when the section keeps changing while it is\n" +
			"listed; --no-snapshot-fallback fails instead). On a terminal, stderr shows a\n" +
			"progress bar.",
		Args: argsBetween(1, 1),
	}
	t := addTargetFlags(cmd)
	cmd.Flags().StringVar(&section, "section", client.DefaultImportSection, "section to import into")
	cmd.Flags().BoolVar(&mirror, "delete", false, "delete files of the section that DIR does not have")
	cmd.Flags().BoolVar(&force, "force", false, "upload every file, even one the workbench already holds unchanged")
	cmd.Flags().IntVar(&concurrency, "concurrency", client.DefaultConcurrency, "uploads in flight")
	noFallback := addFallbackFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := t.check(); err != nil {
			return err
		}
		bar := newTransferBar(cmd.ErrOrStderr(), "importing")
		defer bar.finish()
		stats, err := client.Import(cmd.Context(), newClient(cmd), client.ImportOptions{
			Agent: t.agent, Workbench: t.workbench, Section: section, Dir: args[0],
			Concurrency: concurrency,
			Start:       bar.start,
			Progress:    bar.progress,
			Warn:        bar.warn,
			Delete:      mirror,
			Force:       force,
			Fallback:    snapshotFallback(*noFallback, "import", t.workbench, bar.say),
		})
		bar.finish()
		if err != nil {
			return err
		}
		summary := transferSummary("imported", stats.Files, stats.Bytes, stats.Duration)
		if stats.Skipped > 0 {
			summary += fmt.Sprintf(", %d unchanged", stats.Skipped)
		}
		if mirror {
			summary += fmt.Sprintf(", deleted %d", stats.Deleted)
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), summary)
		return err
	}
	return cmd
}

func newExportCommand() *cobra.Command {
	var (
		section     string
		concurrency int
	)
	cmd := &cobra.Command{
		Use:   "export --agent A --workbench W [--section S] [--at-snapshot ID|NAME] [--no-snapshot-fallback] DIR",
		Short: "Download a workbench (or one section) into a local directory",
		Long: "Write every file of SECTION into DIR, or, without --section, the whole workbench\n" +
			"with each section as a subdirectory. Files appear whole (written to a temporary\n" +
			"file, then renamed); executable files get mode 0755, others 0644. With --at-snapshot,\n" +
			"export the workbench as it was at a snapshot (an id, digits, or a name), files\n" +
			"included. The tree is listed whole before any file is written (a directory again\n" +
			"from its first page, up to " + strconv.Itoa(client.ListingAttempts) + " times, when others' writes invalidate its listing);\n" +
			"an error means the export is incomplete.\n" +
			fallbackHelp("export exports"),
		Args: argsBetween(1, 1),
	}
	t := addSnapshotTargetFlags(cmd, "export at this snapshot (id or name)")
	cmd.Flags().StringVar(&section, "section", "", "section to export (default: all sections)")
	cmd.Flags().IntVar(&concurrency, "concurrency", client.DefaultConcurrency, "downloads in flight")
	noFallback := addFallbackFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		at, err := t.checkAt(cmd)
		if err != nil {
			return err
		}
		bar := newTransferBar(cmd.ErrOrStderr(), "exporting")
		defer bar.finish()
		stats, err := client.Export(cmd.Context(), newClient(cmd), client.ExportOptions{
			Agent: t.agent, Workbench: t.workbench, Section: section, Dir: args[0],
			Concurrency: concurrency,
			Start:       bar.start,
			Progress:    bar.progress,
			AtSnapshot:  at,
			Fallback:    snapshotFallback(*noFallback, "export", t.workbench, bar.say),
		})
		bar.finish()
		if errors.Is(err, client.ErrWorkbenchKeptChanging) {
			return fmt.Errorf("%w; no file was written, and running the export again is safe (with --at-snapshot, it exports a fixed state)", err)
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), transferSummary("exported", stats.Files, stats.Bytes, stats.Duration))
		return err
	}
	return cmd
}

// transferSummary formats the one-line result of an import or export:
// "imported 11523 files, 133.4 MB in 12.3 s (10.8 MB/s)" (MB = 10^6 bytes).
func transferSummary(verb string, files, bytes int64, d time.Duration) string {
	noun := "files"
	if files == 1 {
		noun = "file"
	}
	mb := float64(bytes) / 1e6
	secs := d.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = mb / secs
	}
	return fmt.Sprintf("%s %d %s, %.1f MB in %.1f s (%.1f MB/s)", verb, files, noun, mb, secs, rate)
}

// transferBar shows transfer progress on stderr when stderr is a terminal, and prints
// warnings on their own lines without tearing the bar.
type transferBar struct {
	mu         sync.Mutex
	w          io.Writer
	tty        bool
	verb       string
	bar        *progressbar.ProgressBar
	totalFiles int64
	lastFiles  int64
}

func newTransferBar(w io.Writer, verb string) *transferBar {
	f, ok := w.(*os.File)
	return &transferBar{w: w, verb: verb, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (b *transferBar) start(files, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.tty || bytes <= 0 {
		return
	}
	b.totalFiles = files
	b.bar = progressbar.NewOptions64(bytes,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(b.description()),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)
}

func (b *transferBar) description() string {
	return fmt.Sprintf("%s %d/%d files", b.verb, b.lastFiles, b.totalFiles)
}

func (b *transferBar) progress(files, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil {
		return
	}
	if files != b.lastFiles {
		b.lastFiles = files
		b.bar.Describe(b.description())
	}
	if bytes > b.bar.GetMax64() {
		b.bar.ChangeMax64(bytes) // a file grew since it was listed
	}
	_ = b.bar.Set64(bytes)
}

func (b *transferBar) warn(msg string) { b.say("warning: " + msg) }

// say prints "cairn: " and msg on a line of its own, without tearing the bar.
func (b *transferBar) say(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Clear()
	}
	fmt.Fprintf(b.w, "cairn: %s\n", msg)
}

// finish removes the bar; safe to call more than once.
func (b *transferBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Exit()
		_ = b.bar.Clear()
		b.bar = nil
	}
}

// codedError is an error a command reports under a code of its choosing (a published
// one: Unavailable, InvalidArguments, ...).
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// keyedError is the error of a write sent under an idempotency key: sending it again with
// the same key is safe, which describeError says when the answer was lost.
type keyedError struct {
	key string
	err error
}

func (e *keyedError) Error() string { return e.err.Error() }
func (e *keyedError) Unwrap() error { return e.err }

// sentUnderKey returns err as the error of a write sent under key (err itself when it is
// nil or key is "").
func sentUnderKey(key string, err error) error {
	if err == nil || key == "" {
		return err
	}
	return &keyedError{key: key, err: err}
}

// usageError is a mistake in the command line: reported as InvalidArguments.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// flagError marks cobra's flag parsing errors as usage errors, without the Go parser's
// words pflag passes through ("strconv.ParseInt: parsing "x": value out of range" says
// "value out of range").
func flagError(_ *cobra.Command, err error) error {
	return usageError{errors.New(goParserText.ReplaceAllString(err.Error(), ""))}
}

// goParserText is the prefix strconv's errors put before their reason.
var goParserText = regexp.MustCompile(`strconv\.Parse\w+: parsing "[^"]*": `)

// argsBetween accepts min..max positional arguments.
func argsBetween(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return usageErrorf("%s: want %s, got %d arguments", cmd.CommandPath(), argCount(min, max), len(args))
		}
		return nil
	}
}

func argCount(min, max int) string {
	if min == max {
		return strconv.Itoa(min)
	}
	return fmt.Sprintf("%d to %d", min, max)
}

// newGroupCommand is a command that only holds subcommands (`cairn admin`, `cairn
// workbench`, …): it takes no arguments and prints its help when run on its own.
func newGroupCommand(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(subs...)
	return cmd
}

// runRoot runs `cairn` itself: help without arguments, a usage error for an unknown
// command (cobra would otherwise print help and succeed).
func runRoot(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageErrorf("%s; see cairn --help", msg)
}

// reportError prints err as the one line "cairn: <code>: <message>".
func reportError(w io.Writer, err error) {
	code, msg := describeError(err)
	fmt.Fprintf(w, "cairn: %s: %s\n", code, msg)
}

// describeError returns the code and message for err. For a server error the message is
// err's text with the server's "<code>: <message>" shortened to the message, so wrapping
// context ("import docs/a.txt: ...") is kept and the code is not printed twice.
func describeError(err error) (code, msg string) {
	var (
		ce      *client.Error
		ue      usageError
		closed  *shardsClosedError
		coded   *codedError
		keyed   *keyedError
		moved   *rootMoveError
		urlErr  *url.Error
		netErr  net.Error
		pathErr *fs.PathError
	)
	msg = err.Error()
	switch {
	case errors.As(err, &ce):
		short := ce.Message
		if short == "" {
			short = http.StatusText(ce.HTTPStatus)
		}
		return ce.Code, strings.Replace(msg, ce.Error(), short, 1)
	case errors.As(err, &coded):
		return coded.code, msg
	case errors.As(err, &ue), errors.Is(err, client.ErrUnsafePath), errors.As(err, new(*ops.ConfigError)):
		// A setting the node refused when it opened (a TLS file that does not load, a
		// setting the cluster contradicts) is the operator's, as a flag the parser refused.
		return "InvalidArguments", msg
	case errors.As(err, &closed):
		return "Timeout", msg
	case errors.As(err, &moved):
		return moved.code(), msg
	case errors.Is(err, context.Canceled):
		return "Canceled", msg
	case errors.Is(err, server.ErrDataDirLocked):
		return "DataDirLocked", msg
	case errors.Is(err, server.ErrStorageDamaged):
		return "DataCorrupted", msg
	case errors.Is(err, backup.ErrRestoreIncomplete):
		// A restore cut off: `cairn admin restore` run again finishes it.
		return "InvalidState", msg
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, server.ErrBucketMissing):
		return "NotFound", msg
	case errors.Is(err, server.ErrObjectStoreUnavailable):
		// The object store could not be reached or refused the credentials at start.
		return "ObjectUnavailable", msg
	case errors.As(err, &pathErr) && !errors.As(err, &urlErr):
		// A local file the command reads or writes. An errno satisfies net.Error, so
		// without this case a file's error would read as the network's (Unavailable).
		return localFileCode(pathErr.Err), msg
	case errors.As(err, &urlErr) && urlErr.Op != "Get" && urlErr.Op != "Head" && brokeAfterSending(err):
		// A write sent in full whose answer never came: the node may have applied it (a
		// kill -9 after the commit) or not; say so, rather than only the transport's error,
		// and say how to send it again safely where the command can (keyed).
		msg += ": the connection broke after the request was sent, so whether it took effect is unknown;"
		if errors.As(err, &keyed) {
			return "Unavailable", msg + " sending it again with --idempotency-key " + keyed.key + " is safe (the node applies it at most once)"
		}
		return "Unavailable", msg + " look before sending it again"
	case errors.As(err, &urlErr), errors.As(err, &netErr), errors.Is(err, client.ErrNotReady):
		return "Unavailable", msg
	default:
		return "Internal", msg
	}
}

// localFileCode is the code of a local file's error (fs.ErrNotExist is NotFound before
// it): a permission the user lacks, a full disk, or a path the command cannot use as
// given (a directory, a path through a file, a read-only file system).
func localFileCode(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "PermissionDenied"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "ResourceExhausted"
	}
	return "InvalidArguments"
}

// brokeAfterSending reports whether a request's transport error is the connection ending
// after the request went out (end of stream, a reset, a broken pipe) rather than one that
// kept it from being sent (a refused connection, a name or certificate that failed).
func brokeAfterSending(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// envOr returns the environment variable key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
