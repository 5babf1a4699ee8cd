package mcp

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the surface, the SDK sessions and the test servers start is stopped by the
// end of the tests. The one exception is hashicorp/raft's, as in package shard's tests: a
// future queued for a leader that shut down is never answered, so the waiter a replica's
// leadership verifier left on it stays parked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*deferError).Error"))
}
