//go:build pprof

package main

// Built with -tags pprof (make bench-report does), every cairn command serves
// net/http/pprof at http://$CAIRN_PPROF_LISTEN/debug/pprof/ when that variable names a
// loopback address, so that the benchmark report can take a CPU profile of `cairn serve`
// under load. A default build has no profiling endpoint at all.

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
)

// pprofListenEnv names the variable holding the profiling endpoint's address.
const pprofListenEnv = "CAIRN_PPROF_LISTEN"

func init() {
	addr := os.Getenv(pprofListenEnv)
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "cairn: %s=%q: want a loopback host:port (127.0.0.1:6060)\n", pprofListenEnv, addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cairn: %s: %v\n", pprofListenEnv, err)
		os.Exit(2)
	}
	// The listener lives as long as the process: it is a debugging aid of this build only.
	go http.Serve(ln, nil) //nolint:errcheck // returns only when the process exits
}
