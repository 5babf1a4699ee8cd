package shard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/klauspost/compress/zstd"

	"github.com/cairnstore/cairn/meta"
)

// ErrNotEmpty: InstallSnapshot was given a directory that already holds a replica.
var ErrNotEmpty = errors.New("shard: directory already holds a replica")

// InstallSnapshot prepares dir, which must not hold a replica yet, so that Open (NodeID
// nodeID) starts a single-voter replica whose state is the snapshot open returns:
// the zstd-compressed meta snapshot stream a backup holds (the same bytes a Raft snapshot
// of this package holds). The snapshot becomes the replica's only Raft snapshot, at its
// shard version, term 1, with nodeID the group's one voter at Raft address addr (the
// embedded default's in-memory address is its node id; a cluster node's is its peer
// address, which its first leadership corrects if it differs); the log starts empty after it.
// The stream is read twice: once restored into a scratch FSM to check that it decodes
// whole, once copied into the snapshot store (whose CRC-64 Open checks).
//
// Errors: ErrNotEmpty when dir holds a Raft log or snapshot, the snapshot's decoding
// error (nothing is written then), or an I/O error.
func InstallSnapshot(dir, nodeID, addr string, open func() (io.ReadCloser, error)) error {
	for _, p := range []string{logFile, "snapshots"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return fmt.Errorf("%w: %s", ErrNotEmpty, filepath.Join(dir, p))
		}
	}
	version, err := CheckSnapshot(open)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	if err := bindServerID(dir, nodeID); err != nil {
		return err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("shard: open snapshots: %w", err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(nodeID))
	defer trans.Close()
	conf := raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(nodeID), Address: raft.ServerAddress(addr), Suffrage: raft.Voter}}}
	sink, err := snaps.Create(raft.SnapshotVersionMax, version, 1, conf, version, trans)
	if err != nil {
		return fmt.Errorf("shard: create snapshot: %w", err)
	}
	rc, err := open()
	if err == nil {
		_, err = io.Copy(sink, rc)
		rc.Close()
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("shard: write snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("shard: write snapshot: %w", err)
	}
	return nil
}

// CheckSnapshot decodes the whole zstd-compressed meta snapshot stream open returns (into
// a scratch FSM) and reports its shard version. Errors: the decoding error, or one for a
// snapshot of an empty shard.
func CheckSnapshot(open func() (io.ReadCloser, error)) (uint64, error) {
	rc, err := open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	zr, err := newSnapshotReader(rc)
	if err != nil {
		return 0, err
	}
	defer zr.Close()
	f := meta.New(meta.Options{})
	if err := f.Restore(zr); err != nil {
		return 0, fmt.Errorf("shard: snapshot does not decode: %w", err)
	}
	if f.AppliedVersion() == 0 {
		return 0, errors.New("shard: snapshot is of an empty shard (version 0)")
	}
	return f.AppliedVersion(), nil
}

// snapshotMaxWindowBytes bounds the zstd window a snapshot stream may declare, and so the
// history its decoder allocates. WriteSnapshot's encoder (SpeedFastest) has always used
// 4 MiB; a stream that declares more than this (a corrupt one, or one Cairn did not
// write, e.g. a tampered backup) is refused before its decoder allocates it, where
// klauspost/compress's own bound is 512 MiB per decoder (zstd.MaxWindowSize). In the
// synchronous decoder a single-segment frame's window is its declared content size, and
// the bound applies to it too (decoder.go, nextBlockSync, v1.20.4).
const snapshotMaxWindowBytes = 64 << 20

// newSnapshotReader is the decoder of a snapshot stream: synchronous (it starts no
// goroutine) and bounded by snapshotMaxWindowBytes.
func newSnapshotReader(r io.Reader) (*zstd.Decoder, error) {
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(snapshotMaxWindowBytes))
	if err != nil {
		return nil, fmt.Errorf("shard: snapshot decoder: %w", err)
	}
	return zr, nil
}

// WriteSnapshot writes snap as the zstd-compressed stream InstallSnapshot reads.
func WriteSnapshot(w io.Writer, snap *meta.Snapshot) error {
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	if _, err := snap.WriteTo(zw); err != nil {
		zw.Close()
		return err
	}
	return zw.Close()
}
