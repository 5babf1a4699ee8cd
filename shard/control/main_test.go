package control

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the package starts (registration renewals, watches, controllers, the
// placement cache) ends when its owner is closed; the test etcd servers and clients are
// closed by the tests that start them. Stopped etcd members leave idle HTTP keep-alive
// connections of their peer transport behind for a while; the package itself uses no
// net/http, so those are ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
	)
}
