package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// defaultServer is the server URL when neither --server nor CAIRN_SERVER is given: the
// embedded default's listen address (ops.DefaultListen).
const defaultServer = "http://127.0.0.1:7070"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := newCLI()
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		reportError(root.ErrOrStderr(), err)
		os.Exit(1)
	}
}

// newCLI returns the whole command tree.
func newCLI() *cobra.Command {
	root := newRootCommand()
	addFileCommands(root)
	addWorkbenchCommands(root)
	addServerCommands(root)
	addAdminCommands(root)
	return root
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
	}
	root.PersistentFlags().String("server", envOr("CAIRN_SERVER", defaultServer),
		"Cairn server URL (env CAIRN_SERVER)")
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(flagError)
	return root
}
