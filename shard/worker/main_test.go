package worker_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a Set starts ends by Close (the replicas the tests open end by theirs).
// The one exception is the replica's, outside this package: hashicorp/raft never answers
// an entry still queued for a leader that shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*deferError).Error"))
}
