package shard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fakeEntry is a raft.IndexFuture: answered with err after the entry got index idx, or
// never (never).
type fakeEntry struct {
	idx   uint64
	err   error
	never chan struct{}
}

func (f *fakeEntry) Error() error {
	if f.never != nil {
		<-f.never
	}
	return f.err
}

func (f *fakeEntry) Index() uint64 { return f.idx }

// What a proposal or a membership change answers for each end of its entry's future
// (awaitEntry): a shutdown after the entry was written to the log is an unknown outcome,
// never "nothing applied"; a future raft never answers ends at the timeout, or when the
// caller's context does, as an unknown outcome.
func TestAwaitEntryAnswersEachEndOfAnEntry(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		f       *fakeEntry
		timeout time.Duration
		want    error
	}{
		{"answered", context.Background(), &fakeEntry{idx: 7}, time.Minute, nil},
		{"shut down after the entry was written", context.Background(), &fakeEntry{idx: 7, err: raft.ErrRaftShutdown}, time.Minute, ErrTimeout},
		{"shut down before the log", context.Background(), &fakeEntry{err: raft.ErrRaftShutdown}, time.Minute, ErrClosed},
		{"deposed before the log", context.Background(), &fakeEntry{err: raft.ErrNotLeader}, time.Minute, ErrNotLeader},
		{"deposed after the entry went out", context.Background(), &fakeEntry{idx: 7, err: raft.ErrLeadershipLost}, time.Minute, ErrTimeout},
		{"never answered", context.Background(), &fakeEntry{idx: 7, never: never}, 20 * time.Millisecond, ErrTimeout},
		{"never answered, the caller gone", cancelled, &fakeEntry{idx: 7, never: never}, time.Minute, ErrTimeout},
	} {
		err := awaitEntry(c.ctx, c.f, c.timeout)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if errors.Is(err, ErrTimeout) && errors.Is(err, ErrClosed) {
			t.Errorf("%s: %v is both an unknown outcome and nothing applied", c.name, err)
		}
	}
}
