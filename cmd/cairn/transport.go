package main

import (
	"errors"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairnstore/cairn/api/client"
)

// The global flags that say how client commands reach a server beyond loopback, each
// with its environment variable (read when the flag is not given).
var transportFlags = []struct{ flag, env, usage string }{
	{"ca-file", "CAIRN_CA_FILE", "PEM CA bundle that signs the server's certificate (default: the system's CAs)"},
	{"client-cert", "CAIRN_CLIENT_CERT", "PEM client certificate, for a server that requires one (--tls-client-ca)"},
	{"client-key", "CAIRN_CLIENT_KEY", "PEM private key of --client-cert"},
	{"api-key", "CAIRN_API_KEY", "API key, sent as Authorization: Bearer (prefer the variable: a flag shows in the process list)"},
}

// addTransportFlags registers the transport flags on fs. Their defaults are empty, not
// the environment's value, so that --help never prints a key.
func addTransportFlags(fs *pflag.FlagSet) {
	for _, f := range transportFlags {
		fs.String(f.flag, "", f.usage+" (env "+f.env+")")
	}
}

// transportOptions returns cmd's transport settings: each flag, else its variable.
func transportOptions(cmd *cobra.Command) client.TransportOptions {
	v := make(map[string]string, len(transportFlags))
	for _, f := range transportFlags {
		if fl := cmd.Flag(f.flag); fl != nil && fl.Changed {
			v[f.flag] = fl.Value.String()
		} else {
			v[f.flag] = os.Getenv(f.env)
		}
	}
	return client.TransportOptions{CAFile: v["ca-file"], ClientCertFile: v["client-cert"], ClientKeyFile: v["client-key"], APIKey: v["api-key"]}
}

// httpClient returns the HTTP client of cmd's commands against server, with its
// transport settings. When they cannot be used (an unreadable CA file, half a
// certificate pair, a malformed key), every request of the client fails with that
// usage error before anything is sent, which the command then reports (not retried:
// only a refused connection is).
func httpClient(cmd *cobra.Command, server string) *http.Client {
	hc, err := client.NewHTTPClient(server, transportOptions(cmd))
	if err != nil {
		return &http.Client{Transport: refused{transportError(err)}}
	}
	return hc
}

// transportError is the usage error for err from client.NewHTTPClient, naming the flags
// the user writes (--client-cert) instead of the client's option fields (ClientCertFile).
func transportError(err error) error {
	var oe *client.OptionError
	if !errors.As(err, &oe) {
		return usageError{err}
	}
	msg := oe.Field + " " + oe.Rule
	if oe.Err != nil {
		msg += " (" + oe.Err.Error() + ")"
	}
	return usageError{errors.New(optionFlags.Replace(msg))}
}

// optionFlags turns client.TransportOptions field names into their flags.
var optionFlags = strings.NewReplacer("CAFile", "--ca-file", "ClientCertFile", "--client-cert",
	"ClientKeyFile", "--client-key", "APIKey", "--api-key", "server URL", "--server")

// refused is the transport of a client whose settings cannot be used.
type refused struct{ err error }

func (r refused) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, r.err
}
