package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/server"
)

// newAdminKeyCommand is `cairn admin key` and its subcommands.
func newAdminKeyCommand() *cobra.Command {
	key := newGroupCommand("key", "Create, list and revoke API keys",
		newKeyCreateCommand(), newKeyListCommand(), newKeyRevokeCommand())
	key.Long = `Manage API keys. A key is shown once, at creation; the node keeps only its SHA-256
digest. By default the commands talk to a running node's admin listener
(--admin-server) with an admin key (--api-key or CAIRN_API_KEY) when the node requires
keys. Without a running node:

  --data-dir DIR   the data directory of a stopped embedded node (its LOCK is taken):
                   how the first admin key of an embedded node is made;
  --etcd ENDPOINTS the etcd of a cluster (comma-separated endpoints, the control
                   plane's default prefix): how a cluster's first admin key is made,
                   whether or not its nodes run. Every node sees the change at once.`
	key.PersistentFlags().String("data-dir", "", "manage the keys of a stopped embedded node's data directory")
	key.PersistentFlags().String("etcd", "", "manage a cluster's keys straight in its etcd (comma-separated endpoints)")
	return key
}

// withKeyClient runs f with a client of the key routes: in-process over a data directory
// or etcd, else the --admin-server.
func withKeyClient(cmd *cobra.Command, f func(c *client.Admin) error) error {
	dir, _ := cmd.Flags().GetString("data-dir")
	etcd, _ := cmd.Flags().GetString("etcd")
	switch {
	case dir != "" && etcd != "":
		return usageErrorf("--data-dir and --etcd name two different key stores: give one")
	case dir != "":
		keys, err := server.OpenDataDirKeys(dir)
		if err != nil {
			return err
		}
		defer keys.Close()
		return f(client.NewInProcessAdmin(server.KeyAdminHandler(keys)))
	case etcd != "":
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		defer cancel()
		keys, err := server.OpenEtcdKeys(ctx, splitEndpoints(etcd))
		if err != nil {
			return err
		}
		defer keys.Close()
		return f(client.NewInProcessAdmin(server.KeyAdminHandler(keys)))
	}
	return f(newAdminClient(cmd))
}

func newKeyCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create --name N (--agent A ... | --all-agents | --tenant T --workspace W) --scope S[,S...]",
		Short: "Create an API key and print it (once)",
		Long: `Create an API key for the agent roots named with --agent (repeatable) or every root
(--all-agents), holding the scopes of --scope (comma-separated: workspace:read,
workspace:write, review, admin; OpenWOP's manifest:read and proposals:apply are stored
as workspace:read and review). --tenant and --workspace bind it to one OpenWOP
tenant and workspace (host.workspace: the tenant is an agent root and the workspace a
workbench in it): on every surface (REST, MCP, the CLI, the change feed, OpenWOP) the key
then reaches that one workbench of the root, and no other, unless --agent names the root
too. --workbench W binds it to workbench W of its roots, and --prefix P (repeatable,
section-qualified: outputs/run1/) to the paths at or below P: a path outside answers as
a missing one, and a write there is refused. --expires D makes it stop working after D
(a Go duration such as 720h, or days such as 90d), --expires-at T at T (RFC 3339).
--s3 also makes an S3 credential for the S3 gateway
(cairn serve --s3-listen), printed as the access key id and secret access key to
give an S3 client; such a key acts in exactly one agent root. The key is printed once,
as the last line (with --json: the "secret" field, and "s3_secret_access_key"); neither
secret can be shown again. A key mints narrower keys itself with cairn key mint.`,
		Args: cobra.NoArgs,
	}
	return withKeyFlags(cmd, func(cmd *cobra.Command, req client.KeyRequest, print func(*client.APIKey, error) error) error {
		return withKeyClient(cmd, func(c *client.Admin) error { return print(c.CreateKey(cmd.Context(), req)) })
	})
}

// keyFlags are the flags that describe a new key (cairn admin key create, cairn key mint).
type keyFlags struct {
	req                client.KeyRequest
	scopes             string
	expires, expiresAt string
	asJSON             bool
}

// withKeyFlags registers the flags of a new key on cmd and makes it run send with the
// KeyRequest they describe and the function that prints the new key; it returns cmd.
func withKeyFlags(cmd *cobra.Command, send func(cmd *cobra.Command, req client.KeyRequest, print func(*client.APIKey, error) error) error) *cobra.Command {
	f := addKeyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		req, err := f.request()
		if err != nil {
			return err
		}
		return send(cmd, req, func(k *client.APIKey, err error) error { return f.print(cmd, k, err) })
	}
	return cmd
}

// addKeyFlags registers the flags of a new key on cmd.
func addKeyFlags(cmd *cobra.Command) *keyFlags {
	f := &keyFlags{}
	cmd.Flags().StringVar(&f.req.Name, "name", "", "a label for the key (who or what holds it)")
	cmd.Flags().StringArrayVar(&f.req.Agents, "agent", nil, "an agent root the key may use (repeatable)")
	cmd.Flags().BoolVar(&f.req.AllAgents, "all-agents", false, "the key may use every agent root")
	cmd.Flags().StringVar(&f.scopes, "scope", "", "comma-separated scopes: workspace:read, workspace:write, review, admin")
	cmd.Flags().StringVar(&f.req.Tenant, "tenant", "", "OpenWOP tenant the key is bound to (with --workspace)")
	cmd.Flags().StringVar(&f.req.Workspace, "workspace", "", "OpenWOP workspace the key is bound to (with --tenant)")
	cmd.Flags().StringVar(&f.expires, "expires", "", "the key stops working after this long (720h, 90d; default: never)")
	cmd.Flags().StringVar(&f.expiresAt, "expires-at", "", "the key stops working at this time (RFC 3339, such as 2030-01-02T15:04:05Z)")
	cmd.Flags().StringVar(&f.req.Workbench, "workbench", "", "bind the key to this one workbench of its roots")
	cmd.Flags().StringArrayVar(&f.req.Prefixes, "prefix", nil, "bind the key to the paths at or below this section-qualified prefix, such as outputs/run1/ (repeatable)")
	cmd.Flags().BoolVar(&f.req.S3, "s3", false, "also make an S3 credential (access key id and secret) for the S3 gateway; needs exactly one agent root")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, `print the server's JSON answer ({"id":…,"secret":…,…})`)
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("scope")
	cmd.MarkFlagsMutuallyExclusive("expires", "expires-at")
	return f
}

// request is the KeyRequest the flags describe.
func (f *keyFlags) request() (client.KeyRequest, error) {
	req := f.req
	for _, s := range strings.Split(f.scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			req.Scopes = append(req.Scopes, s)
		}
	}
	if f.expires != "" {
		d, err := parseExpiry(f.expires)
		if err != nil {
			return req, usageError{err}
		}
		req.ExpiresAt = time.Now().Add(d).UTC().Truncate(time.Second)
	}
	if f.expiresAt != "" {
		t, err := parseExpiresAt("--expires-at", f.expiresAt)
		if err != nil {
			return req, err
		}
		req.ExpiresAt = t
	}
	return req, nil
}

// print prints a new key k (or err): its description, then its secret as the last line.
func (f *keyFlags) print(cmd *cobra.Command, k *client.APIKey, err error) error {
	if err != nil {
		return err
	}
	if f.asJSON {
		return printRaw(cmd.OutOrStdout(), k.Raw)
	}
	printKey(cmd.OutOrStdout(), *k)
	fmt.Fprintln(cmd.OutOrStdout(), k.Secret)
	return nil
}

// parseExpiresAt reads an RFC 3339 time given with flag.
func parseExpiresAt(flag, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usageErrorf("%s %q: must be an RFC 3339 time such as 2030-01-02T15:04:05Z", flag, s)
	}
	return t.UTC(), nil
}

// parseExpiry reads a Go duration or a number of days ("90d"); it must be positive.
func parseExpiry(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("--expires %q: must be a duration such as 720h or a number of days such as 90d", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("--expires %q: must be a duration such as 720h or a number of days such as 90d", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("--expires %q: must be positive", s)
	}
	return d, nil
}

func newKeyListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the API keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKeyClient(cmd, func(c *client.Admin) error {
				list, err := c.ListKeys(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return printRaw(cmd.OutOrStdout(), list.Raw)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tAGENTS\tWORKBENCH\tPREFIXES\tSCOPES\tSTATE\tCREATED\tEXPIRES")
				for _, k := range list.Keys {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, orDash(agentsText(k)), bindingText(k),
						orDash(strings.Join(k.Prefixes, ",")), strings.Join(k.Scopes, ","), k.State, k.CreatedAt.Format(time.RFC3339), timeOrNever(k.ExpiresAt))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the keys as JSON")
	return cmd
}

func newKeyRevokeCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key (every node refuses it within seconds)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKeyClient(cmd, func(c *client.Admin) error {
				k, err := c.RevokeKey(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return printRaw(cmd.OutOrStdout(), k.Raw)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s) at %s\n", k.ID, k.Name, k.RevokedAt.Format(time.RFC3339))
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

// printKey prints a created key's description (the caller prints the secret after it).
func printKey(w io.Writer, k client.APIKey) {
	fmt.Fprintf(w, "id:      %s\nname:    %s\nagents:  %s\nscopes:  %s\n", k.ID, k.Name, agentsText(k), strings.Join(k.Scopes, ","))
	if k.Tenant != "" {
		fmt.Fprintf(w, "tenant:  %s/%s (the only workbench the key reaches of root %s)\n", k.Tenant, k.Workspace, k.Tenant)
	}
	if k.Workbench != "" {
		fmt.Fprintf(w, "workbench: %s (the only workbench the key reaches of its roots)\n", k.Workbench)
	}
	if len(k.Prefixes) > 0 {
		fmt.Fprintf(w, "prefixes: %s (the only paths the key reaches)\n", strings.Join(k.Prefixes, ","))
	}
	if k.MintedBy != "" {
		fmt.Fprintf(w, "minted by: %s (the key stops with it)\n", k.MintedBy)
	}
	if k.S3AccessKeyID != "" {
		fmt.Fprintf(w, "s3 access key id:     %s\n", k.S3AccessKeyID)
		if k.S3SecretAccessKey != "" {
			fmt.Fprintf(w, "s3 secret access key: %s (shown once)\n", k.S3SecretAccessKey)
		}
	}
	fmt.Fprintf(w, "expires: %s\nThe key below is shown once; store it now:\n", timeOrNever(k.ExpiresAt))
}

func agentsText(k client.APIKey) string {
	if k.AllAgents {
		return "*"
	}
	return strings.Join(k.Agents, ",")
}

// bindingText is the one workbench a key bound to an OpenWOP tenant·workspace reaches of
// its tenant's root ("tenant/workspace"), or the one workbench of its roots a key bound to
// a workbench reaches, or "-".
func bindingText(k client.APIKey) string {
	switch {
	case k.Tenant != "":
		return k.Tenant + "/" + k.Workspace
	case k.Workbench != "":
		return k.Workbench
	}
	return "-"
}

func timeOrNever(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}

// splitEndpoints splits a comma-separated --etcd value, dropping blanks.
func splitEndpoints(etcd string) []string {
	var endpoints []string
	for _, e := range strings.Split(etcd, ",") {
		if e = strings.TrimSpace(e); e != "" {
			endpoints = append(endpoints, e)
		}
	}
	return endpoints
}
