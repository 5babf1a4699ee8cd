package freeport

import (
	"net"
	"net/url"
	"testing"
)

// Addr returns "127.0.0.1:<port>" with a port that was free a moment ago.
func Addr(tb testing.TB) string {
	tb.Helper()
	return AddrOn(tb, "127.0.0.1")
}

// AddrOn returns "<host>:<port>" with a port of host that was free a moment ago.
func AddrOn(tb testing.TB, host string) string {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		tb.Fatalf("freeport: find a free port on %s: %v", host, err)
		return ""
	}
	defer l.Close()
	return l.Addr().String()
}

// URL returns http://127.0.0.1:<port> with a port that was free a moment ago.
func URL(tb testing.TB) url.URL {
	tb.Helper()
	return url.URL{Scheme: "http", Host: Addr(tb)}
}
