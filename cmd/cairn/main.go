package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
)

// defaultServer is the server URL when neither --server nor CAIRN_SERVER is given: the
// embedded default's listen address (ops.DefaultListen).
const defaultServer = "http://127.0.0.1:7070"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := newCLI()
	cmd, err := root.ExecuteContextC(ctx)
	stop()
	if err != nil {
		if !errors.Is(err, errNoMatch) {
			reportError(root.ErrOrStderr(), err)
		}
		os.Exit(exitCode(cmd, err))
	}
}

// errNoMatch is returned by a command that found nothing (grep): main exits 1 without
// printing an error.
var errNoMatch = errors.New("no match")

// errorExitAnnotation, on a command, is the exit status of its failures when it is not 1
// (grep: 2, so that 1 keeps meaning "no match" as in grep(1)).
const errorExitAnnotation = "cairn.error-exit"

// exitCode is the status main exits with after err from cmd: 1 for errNoMatch, else
// cmd's errorExitAnnotation, else 1.
func exitCode(cmd *cobra.Command, err error) int {
	if errors.Is(err, errNoMatch) || cmd == nil {
		return 1
	}
	if v, ok := cmd.Annotations[errorExitAnnotation]; ok {
		if n, perr := strconv.Atoi(v); perr == nil {
			return n
		}
	}
	return 1
}

// newCLI returns the whole command tree.
func newCLI() *cobra.Command {
	root := newRootCommand()
	addFileCommands(root)
	addWorkbenchCommands(root)
	root.AddCommand(newDiffCommand())
	root.AddCommand(newRewindCommand()) // rewind.go
	addForkCommands(root)               // fork.go
	addLifecycleCommands(root)
	addProposalCommands(root) // proposals.go
	addDocumentCommands(root) // documents.go
	addServerCommands(root)
	addAdminCommands(root)
	addHistoryCommands(root)            // history.go
	root.AddCommand(newEventsCommand()) // events.go
	root.AddCommand(newKeyCommand())    // key.go
	argErrorsAreUsageErrors(root)
	return root
}

// argErrorsAreUsageErrors makes the positional-argument check of cmd and of every command
// below it return a usage error (InvalidArguments, naming the command), as flag errors are
// (flagError): cobra's own checks (ExactArgs, NoArgs, …) return plain errors, which
// reportError would label Internal.
func argErrorsAreUsageErrors(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			if err == nil || errors.As(err, new(usageError)) {
				return err
			}
			return usageErrorf("%s: %w", c.CommandPath(), err)
		}
	}
	for _, sub := range cmd.Commands() {
		argErrorsAreUsageErrors(sub)
	}
}

// newRootCommand returns the bare `cairn` command with its persistent flags.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Cairn: versioned, content-addressed storage for AI-agent workspaces",
		SilenceUsage:  true,
		SilenceErrors: true, // reportError prints the one error line
		Args:          cobra.ArbitraryArgs,
		RunE:          runRoot,
		Version:       buildVersion(),
	}
	root.SetVersionTemplate("cairn {{.Version}}\n")
	root.PersistentFlags().String("server", envOr("CAIRN_SERVER", defaultServer),
		"Cairn server URL (env CAIRN_SERVER)")
	addTransportFlags(root.PersistentFlags())
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(flagError)
	return root
}
