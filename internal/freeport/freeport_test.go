package freeport_test

import (
	"net"
	"testing"

	"github.com/cairnstore/cairn/internal/freeport"
)

func TestAnAddressItReturnsCanBeBoundOnLoopback(t *testing.T) {
	for _, addr := range []string{freeport.Addr(t), freeport.URL(t).Host, freeport.AddrOn(t, "127.0.0.1")} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("address %q: want 127.0.0.1:<port> (%v)", addr, err)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("bind %s: %v", addr, err)
		}
		l.Close()
	}
}
