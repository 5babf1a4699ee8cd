package shard

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// replayPoll is how often a replica that opened with log entries to apply checks whether
// it has applied them.
const replayPoll = 100 * time.Millisecond

// replayState is what a replica's log held past its last snapshot when it opened.
type replayState struct {
	snapshot uint64 // the index of the newest snapshot, 0 without one
	last     uint64 // the log's last index
}

// entries is how many log entries the replica applies on top of its snapshot.
func (r replayState) entries() uint64 {
	if r.last > r.snapshot {
		return r.last - r.snapshot
	}
	return 0
}

// replayAtOpen reads what the replica's log holds past its newest snapshot.
func (s *Shard) replayAtOpen() (replayState, error) {
	var r replayState
	metas, err := s.snaps.List()
	if err != nil {
		return r, err
	}
	if len(metas) > 0 {
		r.snapshot = metas[0].Index // newest first
	}
	r.last, err = s.log.LastIndex()
	return r, err
}

// compactAfterReplay waits until the replica has applied the log entries it opened with
// (a leader after its election's barrier, a follower once it learns the commit index),
// logs how long that took, and takes a snapshot at once when they were more than
// Config.SnapshotThreshold. Raft itself checks the threshold only every SnapshotInterval
// to twice that (2 to 4 minutes by default), so a node killed more often than that
// replayed a longer log on every start and never compacted it. It runs as a goroutine
// counted in s.wg and ends when the replica closes.
func (s *Shard) compactAfterReplay(r replayState, opened time.Time) {
	defer s.wg.Done()
	n := r.entries()
	if n == 0 {
		return
	}
	log := s.cfg.Logger.With("entries", n, "snapshot_index", r.snapshot)
	if s.cfg.ShardID != "" { // the embedded node's one shard has no id
		log = log.With("shard", s.cfg.ShardID)
	}
	log.Info("shard: applying the log entries past the last snapshot")
	t := time.NewTicker(replayPoll)
	defer t.Stop()
	for s.raft.AppliedIndex() < r.last {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
	log.Info("shard: applied the log entries past the last snapshot", "took", time.Since(opened).Round(time.Millisecond))
	if n < s.cfg.SnapshotThreshold {
		return
	}
	if err := s.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) && !errors.Is(err, raft.ErrRaftShutdown) {
		log.Warn("shard: snapshot after applying the log failed; Raft tries again at its next check", "err", err)
	}
}
