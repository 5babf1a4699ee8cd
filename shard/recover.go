package shard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/meta"
)

// ErrNoState: Recover was given a directory without a Raft log or snapshot (nothing to
// recover: a replica that never joined its group, or a wrong directory).
var ErrNoState = errors.New("shard: no Raft state to recover")

// Recovered is what Recover kept: the replica's whole log, replayed, became one Raft
// snapshot at LastIndex (term LastTerm) whose configuration has this replica as the only
// voter; Version is the shard version of the last command in it.
type Recovered struct {
	LastIndex uint64 `json:"last_index"`
	LastTerm  uint64 `json:"last_term"`
	Version   uint64 `json:"version"`
}

// Recover rewrites the closed replica in cfg.Dir so that, when opened again (Open, with
// no Bootstrap), it is its group's only voter and elects itself: the recovery of a shard
// that lost a majority of its voters (docs/runbook.md, "Recover a shard that lost a
// majority"). It is hashicorp/raft's RecoverCluster on the replica's own stores: every
// entry of the local log is replayed, after the newest snapshot, into a scratch meta.FSM
// (cfg.FSM, the options the live replica applies with) — entries the group may never
// have committed included, since the survivor's log is all that is left —, that state
// becomes a new snapshot carrying the one-voter configuration, and the log is emptied.
// The replica's own state machine lives in memory only, so nothing else on disk holds
// the old configuration. Entries other voters committed beyond this replica's log are
// lost: the caller says so before it calls Recover.
//
// The replica must be closed: Recover takes the directory's lock (ErrLocked while a
// replica has it open) and checks the directory's server id (ErrIdentity) and its storage
// (*DamagedError) as Open does. Errors: those, ErrNoState, an invalid Config, or an I/O
// error (the directory is then as RecoverCluster left it: run Recover again).
func Recover(cfg Config) (Recovered, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Recovered{}, err
	}
	if _, err := os.Stat(cfg.Dir); err != nil {
		return Recovered{}, fmt.Errorf("%w: %s (%v)", ErrNoState, cfg.Dir, err)
	}
	lock := flock.New(filepath.Join(cfg.Dir, "LOCK"))
	if locked, err := lock.TryLock(); err != nil || !locked {
		return Recovered{}, fmt.Errorf("%w: %s (%v)", ErrLocked, cfg.Dir, err)
	}
	defer lock.Unlock()
	if err := bindServerID(cfg.Dir, cfg.NodeID); err != nil {
		return Recovered{}, err
	}
	log, err := openLog(cfg.Dir)
	if err != nil {
		return Recovered{}, err
	}
	defer log.Close()
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft-recover", Level: hclog.Error, Output: slogWriter{cfg.Logger}, DisableTime: true})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog.Named("snapshots"))
	if err != nil {
		return Recovered{}, fmt.Errorf("shard: open snapshots: %w", err)
	}
	if err := checkSnapshots(snaps, cfg.Dir, log); err != nil {
		return Recovered{}, err
	}
	if ok, err := raft.HasExistingState(log, log, snaps); err != nil {
		return Recovered{}, fmt.Errorf("shard: inspect state: %w", err)
	} else if !ok {
		return Recovered{}, fmt.Errorf("%w: %s", ErrNoState, cfg.Dir)
	}
	addr := cfg.NodeID // the embedded default's in-memory address
	if cfg.Peer != nil {
		addr = cfg.Peer.Addr().String()
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(addr))
	defer trans.Close()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	fsm := &recoverFSM{fsm: meta.New(cfg.FSM)}
	conf := raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(cfg.NodeID), Address: raft.ServerAddress(addr), Suffrage: raft.Voter}}}
	if err := raft.RecoverCluster(rc, fsm, log, log, snaps, trans, conf); err != nil {
		return Recovered{}, fmt.Errorf("shard: recover %s: %w", cfg.Dir, err)
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		return Recovered{}, fmt.Errorf("shard: recover %s: the new snapshot is not listed (%v)", cfg.Dir, err)
	}
	return Recovered{LastIndex: metas[0].Index, LastTerm: metas[0].Term, Version: fsm.fsm.AppliedVersion()}, nil
}

// recoverFSM is the scratch state machine Recover replays the log into: raftFSM without a
// running replica around it (no waiters, no metrics).
type recoverFSM struct{ fsm *meta.FSM }

func (f *recoverFSM) Apply(l *raft.Log) any { return f.fsm.Apply(l.Index, l.Data) }

func (f *recoverFSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.fsm.Snapshot()}, nil
}

func (f *recoverFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	zr, err := newSnapshotReader(rc)
	if err != nil {
		return err
	}
	defer zr.Close()
	return f.fsm.Restore(zr)
}

// HasState reports whether dir holds a replica's Raft state: a log (or a log of an
// earlier build) or snapshots.
func HasState(dir string) bool {
	for _, name := range []string{logFile, legacyLogDir, "snapshots"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
