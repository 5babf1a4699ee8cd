package main

import (
	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
)

// newKeyCommand is `cairn key`: what a key does for itself on the client listener
// (--server, --api-key), as against `cairn admin key`, the operator's.
func newKeyCommand() *cobra.Command {
	return newGroupCommand("key", "Mint API keys narrower than your own", newKeyMintCommand())
}

func newKeyMintCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mint --name N (--agent A ... | --tenant T --workspace W) --scope S[,S...] [--workbench W] [--prefix P ...] [--expires D | --expires-at T]",
		Short: "Mint a key no broader than the one you use, and print it (once)",
		Long: `Mint an API key with the key you use (--api-key or CAIRN_API_KEY), through the
server's POST /v1/keys, without an operator: to hand a sub-agent a key for one
workbench, a few directories and an hour. The flags are cairn admin key create's. The
new key may reach no agent root, workbench or path your key does not, hold no scope it
lacks, and expire no later than it (a key of yours that expires needs --expires or
--expires-at); anything broader is refused (PermissionDenied, naming the field). It is
recorded as minted by your key: revoking or expiring yours stops it. The key is printed
once, as the last line (with --json: the "secret" field).`,
		Args: cobra.NoArgs,
	}
	return withKeyFlags(cmd, func(cmd *cobra.Command, req client.KeyRequest, print func(*client.APIKey, error) error) error {
		return print(newClient(cmd).MintKey(cmd.Context(), req))
	})
}
