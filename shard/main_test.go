package shard

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a replica starts (Raft's, the WAL's, the leadership watcher, the idle
// ticker, the leadership verifier) ends when it is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
