package shard

import (
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/meta"
)

// raftFSM adapts meta.FSM to raft.FSM.
type raftFSM struct{ s *Shard }

func (f *raftFSM) Apply(l *raft.Log) any {
	if f.s.cfg.beforeApply != nil {
		f.s.cfg.beforeApply(l)
	}
	start := time.Now()
	res := f.s.fsm.Apply(l.Index, l.Data)
	f.s.cfg.Metrics.since(timingApply, start)
	// Readers wait for shard versions, which exceed the log index by the FSM's version
	// shift once a root moved in (meta/move_import.go): wake them by the FSM's version.
	f.s.applied.notify(f.s.fsm.AppliedVersion())
	return res
}

func (f *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.s.fsm.Snapshot(), metrics: f.s.cfg.Metrics}, nil
}

func (f *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	start := time.Now()
	zr, err := newSnapshotReader(rc)
	if err != nil {
		return err
	}
	defer zr.Close()
	if err := f.s.fsm.Restore(zr); err != nil {
		return err
	}
	if f.s.opened.Load() { // not the restore of our own snapshot at start
		f.s.installs.Add(1)
		f.s.cfg.Metrics.since(timingInstall, start)
	}
	f.s.applied.notify(f.s.fsm.AppliedVersion())
	return nil
}

type fsmSnapshot struct {
	snap    *meta.Snapshot
	metrics *ReplicaMetrics
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	if err := WriteSnapshot(sink, s.snap); err != nil {
		sink.Cancel()
		return fmt.Errorf("shard: persist snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return err
	}
	s.metrics.since(timingPersist, start)
	return nil
}

func (s *fsmSnapshot) Release() {}
