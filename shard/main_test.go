package shard

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a replica starts (Raft's, the WAL's, the leadership watcher, the idle
// ticker, the leadership verifier) ends when it is closed. The one exception is outside
// our control: hashicorp/raft never answers an entry still queued for a leader that shut
// down, so a Propose that gave up on it (ErrTimeout) leaves its waiter parked on the
// future for good.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*deferError).Error"))
}
